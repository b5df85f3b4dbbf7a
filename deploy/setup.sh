#!/usr/bin/env bash
# Install everything the project needs that is missing: a Python virtualenv with the pinned
# packages (.venv) and the Kafka broker and Spark-Kafka connector jars from Maven Central
# (.cache/jars). Idempotent: each step is skipped when its inputs have not changed.
#   deploy/setup.sh                  everything
#   deploy/setup.sh --no-archive     everything but the class-data archives (the Spark driver's and
#                                    the Kafka broker's: the last step)
#   deploy/setup.sh --archive-only   only those archives (deploy/test.sh makes them while lint runs)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
STEPS="${1:-all}"
PYTHON="${PYTHON:-python3}"
mkdir -p .cache

need() { command -v "$1" >/dev/null 2>&1 || { echo "setup: '$1' is required but not installed" >&2; exit 1; }; }
need "$PYTHON"; need java; need mvn
# The installed pyspark's jars, found without importing pyspark (a second of CPU on every run).
pyspark_jars() { ls -d "$ROOT"/.venv/lib/python3*/site-packages/pyspark/jars | head -n 1; }

# --- The class-data archives (JDK CDS): every Spark driver (deploy/jvm_archive.py) and every Kafka
# broker and its storage tool (deploy/kafka_archive.py) start with the classes already parsed and
# verified. Each is remade when what it was written from changes (its inputs below: the jars, the
# JDK, its training, for the broker its launch too); a failure only costs the speed-up.
spark_driver_inputs() {
  stat -c '%n %s %Y' "$(pyspark_jars)"/*.jar .cache/jars/spark/*.jar .cache/jars/own/*.jar
  java -version 2>&1; cat deploy/jvm_archive.py
}
kafka_broker_inputs() {
  stat -c '%n %s %Y' .cache/jars/kafka/*.jar
  java -version 2>&1; cat deploy/kafka_archive.py deploy/kafka_local.py
}
# build_archive NAME INPUTS MODULE LOG WRITING FAILED WITHOUT: .cache/jvm/NAME.jsa, by `python -m MODULE`.
build_archive() {
  local stamp=".cache/jvm/$1.stamp" jsa=".cache/jvm/$1.jsa"
  local want; want="$("$2" | sha256sum | cut -d' ' -f1)"
  if [ -f "$jsa" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$want" ]; then return; fi
  echo "setup: $5" >&2
  mkdir -p .cache/jvm
  rm -f "$jsa"
  if .venv/bin/python -m "$3" > ".cache/jvm/$4" 2>&1; then
    echo "$want" > "$stamp"
  else
    echo "setup: $6 (see .cache/jvm/$4); $7" >&2
  fi
}
build_jvm_archive() {
  build_archive spark-driver spark_driver_inputs deploy.jvm_archive archive.log \
    "writing the Spark driver's class-data archive into .cache/jvm (once, ~1 min)" \
    "no class-data archive" "Spark starts without it"
}
build_kafka_archive() {
  build_archive kafka-broker kafka_broker_inputs deploy.kafka_archive kafka-archive.log \
    "writing the Kafka broker's class-data archive into .cache/jvm (once, ~10 s)" \
    "no Kafka class-data archive" "brokers start without it"
}
build_archives() {  # the two at once: each is mostly one JVM's single-threaded start-up
  build_kafka_archive &
  local kafka=$!
  build_jvm_archive
  wait "$kafka" || true
}
case "$STEPS" in
  all | --no-archive) ;;
  --archive-only) build_archives; exit 0 ;;
  *) echo "usage: deploy/setup.sh [--no-archive | --archive-only]" >&2; exit 2 ;;
esac

# --- Redis (the read model, docs/operations.md): Debian's server, run by deploy/redis_local.py ----
# Only the binary: the system service is neither enabled nor started (policy-rc.d refuses it).
if ! command -v redis-server >/dev/null 2>&1; then
  echo "setup: installing Debian's redis-server" >&2
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "setup: redis-server is missing and there is no apt-get; install Redis >= 6 by hand" >&2; exit 1
  fi
  rc=/usr/sbin/policy-rc.d; had_rc=0; [ -e "$rc" ] && had_rc=1
  [ "$had_rc" = 1 ] || { printf '#!/bin/sh\nexit 101\n' > "$rc"; chmod +x "$rc"; }
  if ! DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends redis-server \
      > .cache/apt.log 2>&1; then
    DEBIAN_FRONTEND=noninteractive apt-get update -q >> .cache/apt.log 2>&1 || true
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends redis-server \
      >> .cache/apt.log 2>&1 || { [ "$had_rc" = 1 ] || rm -f "$rc"; cat .cache/apt.log >&2; exit 1; }
  fi
  [ "$had_rc" = 1 ] || rm -f "$rc"
  systemctl disable redis-server >/dev/null 2>&1 || true  # the package enables it; we run our own
fi

# --- Chromium (the dashboard's browser test, tests/integration/test_dashboard_e2e.py) ------------
if ! command -v chromium >/dev/null 2>&1; then
  echo "setup: installing Debian's chromium" >&2
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "setup: chromium is missing and there is no apt-get; install Chromium by hand" >&2; exit 1
  fi
  if ! DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium > .cache/apt-chromium.log 2>&1; then
    DEBIAN_FRONTEND=noninteractive apt-get update -q >> .cache/apt-chromium.log 2>&1 || true
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium >> .cache/apt-chromium.log 2>&1 \
      || { cat .cache/apt-chromium.log >&2; exit 1; }
  fi
fi

# --- Python packages -------------------------------------------------------------------------
stamp=.cache/venv.stamp
want="$(sha256sum pyproject.toml | cut -d' ' -f1)"
if [ ! -x .venv/bin/python ] || [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  echo "setup: installing Python packages into .venv" >&2
  [ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
  if ! .venv/bin/python -m pip install --quiet -e ".[dev]" > .cache/pip.log 2>&1; then
    cat .cache/pip.log >&2; exit 1
  fi
  echo "$want" > "$stamp"
fi

# --- JVM artifacts ---------------------------------------------------------------------------
fetch_jars() {  # pom, output dir
  local pom="$1" out="$2" stamp="$2.stamp"
  local want; want="$(sha256sum "$pom" deploy/maven-settings.xml | sha256sum | cut -d' ' -f1)"
  if [ -d "$out" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$want" ]; then return; fi
  echo "setup: resolving $(basename "$pom") from Maven Central into $out" >&2
  rm -rf "$out"
  # Our own settings file: Spark's parent POM names a mirror this machine cannot reach.
  if ! mvn -q -B -s deploy/maven-settings.xml -f "$pom" dependency:copy-dependencies \
      -DincludeScope=runtime -DoutputDirectory="$ROOT/$out" > .cache/mvn.log 2>&1; then
    cat .cache/mvn.log >&2; exit 1
  fi
  echo "$want" > "$stamp"
}
fetch_jars deploy/kafka-broker.pom.xml .cache/jars/kafka
fetch_jars deploy/spark-kafka.pom.xml .cache/jars/spark

# --- The service's own JVM classes (deploy/java): compiled against the installed Spark's jars ---
# NoForkLocalFileSystem: Hadoop's local file system without a chmod process per created file
# (streaming/session.py uses it for file: checkpoints); CoordinatorPartition: Kafka's routing as a
# Spark SQL function (streaming/routing.py).
build_own_jar() {
  local out=.cache/jars/own/coordinator-jvm.jar stamp=.cache/jars/own.stamp
  local jars; jars="$(pyspark_jars)"
  local want; want="$( (find deploy/java -name '*.java' -print0 | sort -z | xargs -0 cat; ls "$jars") | sha256sum | cut -d' ' -f1)"
  if [ -f "$out" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$want" ]; then return; fi
  echo "setup: compiling deploy/java into $out" >&2
  local classes=.cache/jars/own.classes
  rm -rf "$classes" && mkdir -p "$classes" "$(dirname "$out")"
  javac -nowarn -d "$classes" -cp "$(ls "$jars"/hadoop-client-api-*.jar):$(ls "$jars"/spark-sql-api_*.jar)" \
    $(find deploy/java -name '*.java')
  jar cf "$out" -C "$classes" .
  echo "$want" > "$stamp"
}
need javac; need jar
build_own_jar

[ "$STEPS" = --no-archive ] || build_archives
