#!/usr/bin/env python3
"""What an idle service costs, and how late its timers fire with no traffic.

    .venv/bin/python bench/idle_cost.py [--settle 60] [--measure 30] [--late 0] [--timers 20]
                                        [--modes wakeups,spark-timeouts,hotspot-jit,identity]

Each mode starts the whole service the way a user does, `deploy/run-local.sh --config <bench
config> --no-gateway` (the coordinator query, the read-model projector with its own local Redis,
the metadata publisher, the metrics endpoint and the dashboard; its own broker port, topics and
checkpoint), one mode after the other (never together: the machine has 2 cores):

- `wakeups`: the service as it runs by default (`[stream] timer_wakeups = true`: a micro-batch only
  when a record arrives; the driver wakes the partitions whose timers fall due);
- `spark-timeouts`: `timer_wakeups = false`, Spark's own way (a micro-batch at every trigger to look
  for timed-out state): how the service ran before;
- `hotspot-jit`: `wakeups` with HotSpot's own C2 thresholds (`[spark] driver_java_options` without
  the defaults' `-XX:Tier4*`): how the JIT ran before;
- `identity`: the identity pipeline (`[stream] step = "identity"`, the same Spark machinery with a
  state function that echoes) under the default settings: the reference.

1. **Idle**: once READY, `--settle` seconds without a request, then the CPU time of the service's
   whole process tree (driver, JVM, Python workers) over `--measure` seconds, in cores, and the
   micro-batches that ran meanwhile; and the Spark JVM's share by thread (Linux thread names): the JIT
   compilers (still compiling what the idle loop runs, a cost that fades over minutes), the queries'
   trigger loops (each trigger asks the broker for the sources' end offsets), the Kafka clients,
   GC and the rest. With `--late S`, the same measure again S seconds later.
2. **Timers** (coordinator modes): `--timers` transactions left open (InitProducerId with a 1-3 s
   timeout, AddPartitionsToTxn) and `--timers` classic members left pending (JoinGroup answered
   MEMBER_ID_REQUIRED, never joined again: 6 s sessions), then nothing: every TransactionAbortedByTimeout and MemberSessionExpired event,
   with its lateness = the event record's timestamp (when the sink wrote it) minus the timer's due
   time (its deadline, the event's `timeMs`, plus the margin its batch must be past it: `[stream]
   timer_read_margin_ms` with wakes, 0 on one broker; `timer_grace_ms` with Spark's timeouts).
   Printed: p50/p99/max of the lateness, and of the lateness from the deadline itself.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.latency import percentile, stop_job, wait_line, write_config  # noqa: E402
from client import CoordinatorClient  # noqa: E402
from client.topic_reader import end_offsets, read_records  # noqa: E402
from deploy.kafka_local import SINGLE_BROKER_TOPICS, LocalKafka, free_port  # noqa: E402
from deploy.redis_local import LocalRedis  # noqa: E402
from streaming.config import StreamConfig  # noqa: E402
from streaming.status import read_status, status_path  # noqa: E402
from tests.integration.harness import new_member_join, wait_topics_known  # noqa: E402

MODES = {
    "wakeups": ("coordinator", ""),
    "spark-timeouts": ("coordinator", "[stream]\ntimer_wakeups = false\n"),
    "hotspot-jit": ("coordinator", '[spark]\ndriver_java_options = "-XX:-UsePerfData"\n'),
    "identity": ("identity", ""),
}
TICKS = os.sysconf("SC_CLK_TCK")


def tree_cpu_s(root_pid: int) -> dict[int, tuple[str, float]]:
    """CPU seconds (user + system, and of reaped children) of `root_pid` and its descendants, by
    kind of process: the Spark JVM, the driver's Python, the Python workers (the broker and Redis
    that run-local.sh starts are left out)."""
    parents, stats, cmds = {}, {}, {}
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            raw = (d / "stat").read_text()
            cmd = (d / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        fields = raw[raw.rindex(")") + 2 :].split()
        pid = int(d.name)
        parents[pid] = int(fields[1])
        stats[pid] = sum(int(f) for f in fields[11:15]) / TICKS
        cmds[pid] = cmd
    tree, frontier = {root_pid}, [root_pid]
    while frontier:
        p = frontier.pop()
        for child, parent in parents.items():
            if parent == p and child not in tree:
                tree.add(child)
                frontier.append(child)
    out = {}
    for pid in tree & set(stats):
        cmd = cmds[pid]
        if "kafka.Kafka " in cmd or "redis-server" in cmd:
            continue  # run-local.sh's broker and Redis: not the service
        kind = (
            "jvm"
            if "java" in cmd.split(" ")[0]
            else "workers"
            if "worker_daemon" in cmd or "pyspark.worker" in cmd or "pyspark.daemon" in cmd
            else "driver"
            if "run_stream.py" in cmd
            else "other"
        )
        out[pid] = (kind, stats[pid])
    return out


# The Spark JVM's threads by what they do (Linux thread names, cut at 15 characters).
JVM_THREADS = (
    ("jit", ("C1 CompilerThre", "C2 CompilerThre")),
    ("triggers", ("stream executio",)),  # each query's trigger loop: latestOffset, progress
    ("kafka", ("kafka-",)),  # the sources' admin clients, the sink's producers
    ("gc", ("GC Thread", "G1 ", "VM Thread")),
)


def jvm_threads_cpu(pids) -> dict[str, float]:
    """CPU seconds of the JVMs' threads by `JVM_THREADS` kind ("other" for the rest), live threads only."""
    out = {kind: 0.0 for kind, _ in JVM_THREADS} | {"other": 0.0}
    for pid in pids:
        for task in Path(f"/proc/{pid}/task").glob("*"):
            try:
                raw, comm = (task / "stat").read_text(), (task / "comm").read_text()
            except OSError:
                continue
            fields = raw[raw.rindex(")") + 2 :].split()
            kind = next((k for k, prefixes in JVM_THREADS if comm.startswith(prefixes)), "other")
            out[kind] += (int(fields[11]) + int(fields[12])) / TICKS
    return out


def cores_between(before: dict, after: dict, elapsed_s: float) -> dict[str, float]:
    """Cores used per kind of process between two `tree_cpu_s` readings. A process that ended in
    between (an idle Python worker Spark retires after a minute) takes its last CPU with it."""
    out = {"jvm": 0.0, "driver": 0.0, "workers": 0.0, "other": 0.0}
    for pid, (kind, cpu) in after.items():
        out[kind] += max(0.0, cpu - before.get(pid, (kind, 0.0))[1]) / elapsed_s
    out["total"] = sum(out.values())
    return out


def batches_since(cfg: StreamConfig, after_id: int) -> list[dict]:
    doc = read_status(status_path(cfg.checkpoint)) or {}
    return [b for b in doc.get("batches", []) if b["batchId"] > after_id]


def last_batch_id(cfg: StreamConfig) -> int:
    doc = read_status(status_path(cfg.checkpoint)) or {}
    return max((b["batchId"] for b in doc.get("batches", [])), default=-1)


def start_timers(cfg: StreamConfig, bootstrap: str, n: int, data_topic: str) -> set[tuple[str, str]]:
    """`n` open transactions and `n` static classic members left to expire; the events expected."""
    tag = uuid.uuid4().hex[:6]
    expected: set[tuple[str, str]] = set()
    with CoordinatorClient(
        bootstrap, f"idle-bench-{tag}", requests_topic=cfg.topics["requests"], responses_topic=cfg.topics["responses"]
    ) as c:
        inits = {}
        for i in range(n):
            tid = f"idle-tx-{tag}-{i}"
            body = {
                "transactionalId": tid,
                "transactionTimeoutMs": 1000 + (i % 3) * 1000,
                "producerId": -1,
                "producerEpoch": -1,
            }
            inits[tid] = c.send("InitProducerId", 5, body, key=tid)
        adds = {}
        for tid, cid in inits.items():
            r = c.wait(cid, timeout=120)["response"]
            body = {
                "v3AndBelowTransactionalId": tid,
                "v3AndBelowProducerId": r["producerId"],
                "v3AndBelowProducerEpoch": r["producerEpoch"],
                "v3AndBelowTopics": [{"name": data_topic, "partitions": [0]}],
            }
            adds[tid] = c.send("AddPartitionsToTxn", 3, body, key=tid)
        for tid, cid in adds.items():
            c.wait(cid, timeout=120)
            expected.add((tid, "TransactionAbortedByTimeout"))
        joins = {}
        for i in range(n):  # MEMBER_ID_REQUIRED: each member stays pending until its session expires
            group = f"idle-group-{tag}-{i}"
            body = new_member_join(group)
            joins[group] = c.send("JoinGroup", 9, body, key=group)
        for group, cid in joins.items():
            c.wait(cid, timeout=120)
            expected.add((group, "MemberSessionExpired"))
    return expected


def fired_timers(cfg: StreamConfig, bootstrap: str, start: dict, expected: set, timeout_s: float) -> list[dict]:
    def parse(recs) -> dict[tuple[str, str], dict]:
        got: dict[tuple[str, str], dict] = {}
        for r in recs:
            key = (r.key or b"").decode(errors="replace")
            if not r.value:
                continue
            body = json.loads(r.value)
            if (key, body.get("event")) in expected:
                got.setdefault((key, body["event"]), {**body, "writtenMs": r.timestamp})
        return got

    recs = read_records(
        bootstrap,
        cfg.topics["events"],
        timeout_s=timeout_s,
        start=start,
        until=lambda recs: len(parse(recs)) == len(expected),
    )
    return list(parse(recs).values())


def run_mode(name: str, work: Path, port: int, args) -> dict:
    step, extra = MODES[name]
    prefix = f"idle-{name}"
    variant = extra  # write_config gives Redis, the gateway and the metrics endpoint free ports
    cfg = write_config(work / f"{prefix}.toml", port, prefix, step, "200 milliseconds", variant)
    redis_port = int(cfg.redis["url"].rsplit(":", 1)[1].split("/")[0])
    log_file = work / f"{prefix}.log"
    out: dict = {"mode": name}
    with open(log_file, "wb") as log:
        proc = subprocess.Popen(
            [str(ROOT / "deploy" / "run-local.sh"), "--config", str(work / f"{prefix}.toml"), "--no-gateway"],
            cwd=ROOT,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env=dict(os.environ, PYTHONUNBUFFERED="1"),
        )
    try:
        wait_line(log_file, b"COORDINATOR-READY", proc, timeout=300)
        time.sleep(args.settle)  # the idle window itself: no request is sent
        before, first_batch, t0 = tree_cpu_s(proc.pid), last_batch_id(cfg), time.monotonic()
        jvms = [pid for pid, (kind, _) in before.items() if kind == "jvm"]
        threads_before = jvm_threads_cpu(jvms)
        time.sleep(args.measure)
        after, elapsed = tree_cpu_s(proc.pid), time.monotonic() - t0
        threads_after = jvm_threads_cpu(jvms)
        out["cores"], out["load"] = cores_between(before, after, elapsed), os.getloadavg()[0]
        out["jvm_threads"] = {k: max(0.0, threads_after[k] - threads_before[k]) / elapsed for k in threads_after}
        time.sleep(1.5)  # the status file is written every second
        out["idle_batches"] = len(batches_since(cfg, first_batch))
        out["idle_s"] = elapsed
        if args.late:  # the same measure later on: what is left once the JIT compilers are done
            time.sleep(args.late)
            before, t0 = tree_cpu_s(proc.pid), time.monotonic()
            threads_before = jvm_threads_cpu(jvms)
            time.sleep(args.measure)
            after, elapsed = tree_cpu_s(proc.pid), time.monotonic() - t0
            threads_after = jvm_threads_cpu(jvms)
            out["late"] = {
                "cores": cores_between(before, after, elapsed),
                "load": os.getloadavg()[0],
                "jvm_threads": {k: max(0.0, threads_after[k] - threads_before[k]) / elapsed for k in threads_after},
            }
        if step == "coordinator" and args.timers:
            bootstrap = f"127.0.0.1:{port}"
            data_topic = f"{prefix}-data"
            wait_topics_known(ServiceHandle(cfg, bootstrap), {data_topic: 1})  # type: ignore[arg-type]
            start = end_offsets(bootstrap, cfg.topics["events"])
            expected = start_timers(cfg, bootstrap, args.timers, data_topic)
            fired = fired_timers(cfg, bootstrap, start, expected, timeout_s=120)
            # When the batch may fire a timer: its deadline plus the read margin when wakes start
            # batches, plus the grace when only Spark's batch time can (streaming/query.py).
            # (deploy/run-local.sh tells the job its one broker's topics have one replica.)
            wakes = bool(cfg.stream["timer_wakeups"])
            one_broker = StreamConfig({**cfg.raw, "topics": {**cfg.topics, **SINGLE_BROKER_TOPICS}})
            grace = one_broker.timer_read_margin_ms if wakes else int(cfg.stream["timer_grace_ms"])
            out["timers"] = {
                "expected": len(expected),
                "fired": len(fired),
                "late_ms": [e["writtenMs"] - (e["timeMs"] + grace) for e in fired],
                "after_deadline_ms": [e["writtenMs"] - e["timeMs"] for e in fired],
            }
    finally:
        stop_job(proc)
        LocalRedis(ROOT / ".run" / f"redis-{redis_port}", redis_port).stop()
        shutil.rmtree(ROOT / ".run" / f"redis-{redis_port}", ignore_errors=True)
    return out


class ServiceHandle:
    """What tests/integration/harness.wait_topics_known uses of a job."""

    def __init__(self, cfg: StreamConfig, bootstrap: str):
        self.cfg, self.bootstrap = cfg, bootstrap

    def client(self) -> CoordinatorClient:
        return CoordinatorClient(
            self.bootstrap,
            f"idle-bench-probe-{uuid.uuid4().hex[:6]}",
            requests_topic=self.cfg.topics["requests"],
            responses_topic=self.cfg.topics["responses"],
        )

    def tail(self) -> str:
        return ""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--settle", type=float, default=60.0, help="seconds idle before measuring (JIT warm-up)")
    ap.add_argument("--measure", type=float, default=30.0, help="seconds of CPU measured")
    ap.add_argument(
        "--late", type=float, default=0.0, help="measure again this many seconds after the first measure (0: not)"
    )
    ap.add_argument("--timers", type=int, default=20, help="transactions and classic members left to time out")
    ap.add_argument("--modes", default="wakeups,spark-timeouts,identity")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-idle-"))
    port = free_port()
    results = []
    try:
        for name in args.modes.split(","):
            results.append(run_mode(name, work, port, args))
    finally:
        LocalKafka(ROOT / ".run" / f"kafka-{port}", port).stop(timeout=10)
        shutil.rmtree(ROOT / ".run" / f"kafka-{port}", ignore_errors=True)
    shutil.rmtree(work, ignore_errors=True)  # kept (with the jobs' logs) when a mode failed
    load = os.getloadavg()
    print(f"\nIdle service, {args.measure:.0f} s measured after {args.settle:.0f} s idle (load average {load[0]:.1f})")
    print(f"{'mode':16}{'cores':>8}{'jvm':>8}{'driver':>8}{'workers':>9}{'batches':>9}{'load':>7}")
    for r in results:
        c = r["cores"]
        print(
            f"{r['mode']:16}{c['total']:8.3f}{c['jvm']:8.3f}{c['driver']:8.3f}{c['workers']:9.3f}{r['idle_batches']:9d}{r['load']:7.1f}"
        )
    print("\nThe JVM's cores by thread: the JIT compilers, the queries' trigger loops, Kafka clients, GC, the rest")
    print(f"{'mode':16}" + "".join(f"{k:>9}" for k in results[0]["jvm_threads"]) if results else "")
    for r in results:
        print(f"{r['mode']:16}" + "".join(f"{v:9.3f}" for v in r["jvm_threads"].values()))
    late = [r for r in results if "late" in r]
    if late:
        print(
            f"\nThe same, {args.measure:.0f} s measured {args.late:.0f} s later (JIT compilers, trigger loops, ... as above)"
        )
        for r in late:
            c, t = r["late"]["cores"], r["late"]["jvm_threads"]
            print(
                f"{r['mode']:16}{c['total']:8.3f}{c['jvm']:8.3f}{c['driver']:8.3f}{c['workers']:9.3f}"
                f"{r['late']['load']:7.1f}   " + "".join(f"{v:9.3f}" for v in t.values())
            )
    timed = [r for r in results if "timers" in r]
    if timed:
        print(
            "\nTimer lateness with no traffic (ms): event written minus due time (deadline + margin); and minus the deadline"
        )
        print(f"{'mode':16}{'fired':>10}{'p50':>8}{'p99':>8}{'max':>8}   {'p50':>8}{'p99':>8} (from deadline)")
        for r in timed:
            t = r["timers"]
            late, raw = t["late_ms"], t["after_deadline_ms"]
            print(
                f"{r['mode']:16}{t['fired']:>5}/{t['expected']:<4}{percentile(late, 50):8.0f}{percentile(late, 99):8.0f}"
                f"{max(late, default=float('nan')):8.0f}   {percentile(raw, 50):8.0f}{percentile(raw, 99):8.0f}"
            )
    base = next((r for r in results if r["mode"] == "identity"), None)
    if base:
        for r in results:
            if r is not base:
                print(
                    f"{r['mode']}: {r['cores']['total'] / max(base['cores']['total'], 1e-9):.2f}x identity's idle CPU"
                )
    return 0


if __name__ == "__main__":
    sys.exit(main())
