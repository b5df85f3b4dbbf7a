#!/usr/bin/env bash
# The same coordinator job on a Spark standalone cluster.
#
#   deploy/run-cluster.sh spark://MASTER:7077 [--config cluster.toml]    an existing cluster
#   deploy/run-cluster.sh local-cluster [--config cluster.toml]          a master and one worker
#                                                                        started here, for a try-out
# The cluster's machines each need this repository set up (deploy/setup.sh) at the same path,
# and the checkpoint ([stream] checkpoint) must be on storage all of them share. Kafka and the
# topics must exist (deploy/topics.py creates the topics), and so must the read model's Redis ([redis]
# url, reached from the driver; `python -m deploy.redis_local start`), or set [redis] enabled = false.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
"$ROOT/deploy/setup.sh"
PY="$ROOT/.venv/bin/python"
master="${1:?usage: deploy/run-cluster.sh spark://MASTER:7077|local-cluster [run_stream.py options]}"
shift
if [ "$master" = "local-cluster" ]; then
  master="$("$PY" -m deploy.standalone start-master --host 127.0.0.1 --port 7077)"
  "$PY" -m deploy.standalone start-worker "$master" --cores 2 --memory 2g
  trap '"$PY" -m deploy.standalone stop' EXIT
fi
export COORD_SPARK_MASTER="$master"
export PYSPARK_PYTHON="$PY"
"$PY" run_stream.py "$@"
