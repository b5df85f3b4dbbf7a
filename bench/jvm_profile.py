#!/usr/bin/env python3
"""Where the Spark JVM's CPU goes during a burst, identity next to coordinator (JDK Flight Recorder).

    .venv/bin/python bench/jvm_profile.py [--bursts 2] [--burst 20000] [--keep DIR]

One broker and both jobs up at once (as `bench/throughput.py --rounds`), warmed with a burst each;
then `--bursts` bursts per job, ABBA, each recorded by JFR (`jcmd <jvm> JFR.start settings=profile`
before it, `JFR.stop` after). Printed per job: the JVM's execution samples (threads running Java
code; JFR's own left out) by what their stack is in: the routing expression (Java's String.hashCode
computed in SQL: hex, regex, conv), the sink, the state store, the shuffle, the Kafka source, the
Python runner's Arrow transfer, planning on the driver, the rest. Samples are few (JFR samples Java
code only, ~every 10-20 ms per thread): the shares are indicative, not a measure to a percent.
"""

from __future__ import annotations

import argparse
import collections
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.throughput import TOPIC, TOPIC_PARTITIONS, CpuMeter, burst, start_jobs, stop_jobs, warm_up  # noqa: E402
from deploy.kafka_local import LocalKafka, free_port  # noqa: E402
from tests.integration.harness import create_data_topics  # noqa: E402

STEPS = ("identity", "coordinator")
# First match wins: a stack that routes and then shuffles counts as routing.
CATEGORIES = (
    (
        "routing expression",
        ("NumberConverter", "Byte.valueOf", "regex.", "RegExpExtract", "ArrayAggregate", "LambdaFunction"),
    ),
    ("sink (rows to the producer)", ("kafka010.KafkaRowWriter", "kafka010.KafkaDataWriter", "KafkaProducer.send")),
    ("sink producer's I/O", ("producer.internals.Sender",)),
    ("state store", ("rocksdb", "RocksDB", "StateStore")),
    ("Python runner (Arrow)", ("python.PythonArrow", "ArrowWriter", "ArrowColumnVector", "PythonRunner")),
    (
        "Kafka source",
        ("kafka010.KafkaDataConsumer", "kafka010.consumer", "consumer.KafkaConsumer", "consumer.internals"),
    ),
    ("shuffle", ("shuffle.", "ShuffleWriter", "UnsafeExternalSorter")),
    ("planning, driver", ("MicroBatchExecution", "QueryExecution", "catalyst.analysis", "catalyst.optimizer")),
)


def jcmd() -> str:
    found = shutil.which("jcmd")
    if found:
        return found
    java = Path(shutil.which("java") or "java").resolve()
    return str(java.parent / "jcmd")


def jvm_pid(driver_pid: int) -> str:
    pids = subprocess.run(["pgrep", "-P", str(driver_pid), "java"], capture_output=True, text=True).stdout.split()
    if not pids:
        raise RuntimeError(f"no JVM under the driver {driver_pid}")
    return pids[0]


def samples(recording: Path) -> list[str]:
    """The stack of each execution sample (JFR's own threads' left out)."""
    jfr = str(Path(jcmd()).parent / "jfr")
    text = subprocess.run(
        [jfr, "print", "--events", "jdk.ExecutionSample", "--stack-depth", "64", str(recording)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    stacks = [ev.split("stackTrace = [", 1)[-1] for ev in text.split("jdk.ExecutionSample {")[1:]]
    return [s for s in stacks if "jdk.jfr." not in s]


def category(stack: str) -> str:
    for name, keys in CATEGORIES:
        if any(k in stack for k in keys):
            return name
    return "the rest"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bursts", type=int, default=2)
    ap.add_argument("--burst", type=int, default=20000)
    ap.add_argument("--groups", type=int, default=1000)
    ap.add_argument("--keep", help="keep the recordings in this directory")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-jvm-profile-"))
    out = Path(args.keep) if args.keep else work / "jfr"
    out.mkdir(parents=True, exist_ok=True)
    broker = LocalKafka(work / "kafka", free_port(), free_port()).start()
    groups = [f"throughput-group-{i}" for i in range(args.groups)]
    jobs, clients = {}, {}
    recordings: dict[str, list[Path]] = {m: [] for m in STEPS}
    try:
        create_data_topics(broker.bootstrap, {TOPIC: TOPIC_PARTITIONS})
        jobs, clients = start_jobs(broker, work, STEPS, "jp", "bench-jvm-profile")
        for mode in STEPS:
            warm_up(clients[mode], groups)
            burst(clients[mode], groups, args.burst, CpuMeter(jobs[mode], broker))
        for r in range(args.bursts):
            for mode in STEPS if r % 2 == 0 else STEPS[::-1]:
                pid = jvm_pid(jobs[mode].proc.pid)
                name = f"{mode}-{r}"
                subprocess.run(
                    [jcmd(), pid, "JFR.start", f"name={name}", "settings=profile"], check=True, capture_output=True
                )
                result = burst(clients[mode], groups, args.burst, CpuMeter(jobs[mode], broker))
                path = out / f"{name}.jfr"
                subprocess.run(
                    [jcmd(), pid, "JFR.stop", f"name={name}", f"filename={path}"], check=True, capture_output=True
                )
                recordings[mode].append(path)
                print(f"burst {r + 1} {mode}: {result['rate']:.0f} req/s", file=sys.stderr)
    finally:
        stop_jobs(jobs, clients)
        broker.stop(timeout=3)

    counts = {m: collections.Counter(category(s) for p in recordings[m] for s in samples(p)) for m in STEPS}
    names = [n for n, _ in CATEGORIES] + ["the rest"]
    print(f"\nJVM execution samples during {args.bursts} bursts of {args.burst} OffsetCommits per job (JFR, profile)")
    print(f"{'':30}" + "".join(f"{m:>20}" for m in STEPS))
    for n in names:
        cells = []
        for m in STEPS:
            total = sum(counts[m].values()) or 1
            cells.append(f"{counts[m][n]:>8} ({counts[m][n] * 100 / total:4.0f} %)")
        print(f"{n:30}" + "".join(f"{c:>20}" for c in cells))
    print(f"{'all':30}" + "".join(f"{sum(counts[m].values()):>20}" for m in STEPS))
    if args.keep:
        print(f"recordings kept in {out} (jfr print --events jdk.ExecutionSample <file>)")
    else:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
