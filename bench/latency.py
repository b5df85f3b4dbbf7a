#!/usr/bin/env python3
"""Where a request's round trip goes, and how long a new user waits for the first answer.

    .venv/bin/python bench/latency.py [--requests 150] [--steps coordinator,identity] [--trigger "200 milliseconds"]
                                      [--variants all|NAME,...] [--variant-requests 60]

For each step (the real coordinator step and the identity step, one after the other, never
together: the machine has 2 cores), the service is started the way a new user starts it,
`deploy/run-local.sh --config <bench config>` (its own broker port, topics and checkpoint), and:

1. **First answer**, cold: each step starts its own broker (a new data directory, so formatted too),
   Redis and gateway on free ports, and stops them after. A client is created the moment run-local.sh
   is launched and sends the README's FindCoordinator request at once; printed: seconds from launch
   to the answer, to the job's milestones (Spark session, topics, query started, READY) and to the
   end of its first micro-batches, and the CPU seconds each process spent until the answer (less
   sensitive to other load on the machine than the wall clock).
2. **Round trips**: `--requests` FindCoordinator requests one at a time, each timed from the client's
   send to its receipt of the answer, and split using the request's broker append time
   (LogAppendTime), the micro-batch that read it (from its offset and the batches' end offsets in
   the job's status file, i.e. Spark's progress reports), that batch's phases, and the answer
   record's timestamp (set by the sink's producer when it sends it):

   | part | from → to |
   |---|---|
   | produce | client send → broker ack (acks=all) |
   | wait for a batch | broker append → start of the micro-batch that reads it |
   | latestOffset | the Kafka source asks the broker for the end offsets |
   | walCommit | the offsets log is written to the checkpoint |
   | plan | getBatch + queryPlanning |
   | run until answered | tasks: source fetch, shuffle, Python step, state store, until the sink sends the answer |
   | deliver | sink send → client receipt (broker append, client fetch) |

   Printed next to p50/p99 of the round trip and the median micro-batch duration of the same run.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kafka import KafkaConsumer, KafkaProducer, TopicPartition  # noqa: E402

from client import CoordinatorClient  # noqa: E402
from client.request_client import response_partition  # noqa: E402
from deploy.kafka_local import LocalKafka, free_port  # noqa: E402
from streaming.config import SERVICE_TOPICS, StreamConfig  # noqa: E402
from streaming.status import iso_ms, read_status, status_path  # noqa: E402

# Settings compared with --variants, each a change from the defaults (TOML lines added to the
# service's configuration). "as before" undoes the start-up and floor fixes of issue 10 together.
VARIANTS = {
    "defaults": "",
    "as before": (
        "[stream]\nsource_fetch_max_wait_ms = 500\n[spark.conf]\n"
        '"spark.python.daemon.module" = "pyspark.daemon"\n'
        '"spark.sql.streaming.checkpointFileManagerClass" = '
        '"org.apache.spark.sql.execution.streaming.checkpointing.FileContextBasedCheckpointFileManager"\n'
        '"spark.hadoop.fs.file.impl" = "org.apache.hadoop.fs.LocalFileSystem"\n'
    ),
    "fetch wait 500 ms": "[stream]\nsource_fetch_max_wait_ms = 500\n",
    "pyspark's daemon": '[spark.conf]\n"spark.python.daemon.module" = "pyspark.daemon"\n',
    "1 shuffle partition": "[stream]\nshuffle_partitions = 1\n",
    "trigger 50 ms": '[stream]\ntrigger_interval = "50 milliseconds"\n',
    "hotspot JIT": '[spark]\ndriver_java_options = "-XX:-UsePerfData"\n',  # C2's own thresholds
    "whole-stage codegen": '[spark.conf]\n"spark.sql.codegen.wholeStage" = "true"\n',  # Spark's default
    "hdfs state store": '[stream]\nstate_store = "hdfs"\n',
    "no changelog ckpt": (
        '[spark.conf]\n"spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled" = "false"\n'
    ),
}

PARTS = ("produce", "wait for a batch", "latestOffset", "walCommit", "plan", "run until answered", "deliver")


def percentile(values: list[float], p: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, int(round(p / 100 * (len(s) - 1))))] if s else float("nan")


def write_config(path: Path, port: int, prefix: str, step: str, trigger: str, variant: str = "") -> StreamConfig:
    """The bench's configuration file; `variant` adds TOML tables ([stream] keys merge with ours).
    Redis, the gateway and the metrics endpoint get free ports of their own, so the bench neither
    meets nor stops another setup's."""
    names = SERVICE_TOPICS
    topics = "\n".join(f'{n} = "{prefix}-{n.replace("_", "-")}"' for n in names)
    stream_extra, other = "", variant
    if variant.startswith("[stream]\n"):
        body = variant[len("[stream]\n") :]
        cut = body.find("\n[")
        stream_extra, other = (body, "") if cut < 0 else (body[: cut + 1], body[cut + 1 :])
    if "trigger_interval" in stream_extra:
        trigger_line = ""
    else:
        trigger_line = f'trigger_interval = "{trigger}"\n'
    path.write_text(
        f'[kafka]\nbootstrap_servers = "127.0.0.1:{port}"\n[topics]\n{topics}\n'
        f'[stream]\ncheckpoint = "{path.parent / (prefix + "-checkpoint")}"\nstep = "{step}"\n'
        f"{trigger_line}{stream_extra}"
        f'[redis]\nurl = "redis://127.0.0.1:{free_port()}/0"\n[gateway]\nbase_port = {free_port()}\n'
        f"[metrics]\nport = {free_port()}\n{other}"
    )
    return StreamConfig.load(path, environ={})


class BatchLog(threading.Thread):
    """Accumulates the job's micro-batches from its status file (it keeps only the recent ones)."""

    def __init__(self, path: Path):
        super().__init__(daemon=True)
        self.path, self.halt = path, threading.Event()
        self.batches: dict = {}
        self.start()

    def run(self) -> None:
        while not self.halt.wait(1.0):
            self.poll()

    def poll(self) -> None:
        doc = read_status(self.path)
        for b in (doc or {}).get("batches", []):
            self.batches.setdefault(b["batchId"], b)


CLOCK_TICK = os.sysconf("SC_CLK_TCK")


def session_cpu() -> dict[int, float]:
    """CPU seconds by session id of every live process, each with its reaped children's (so a
    launcher that exec'd or waited for a finished helper counts it too)."""
    by_session: dict[int, float] = {}
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            fields = (d / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        sid = int(fields[3])
        by_session[sid] = by_session.get(sid, 0.0) + sum(int(f) for f in fields[11:15]) / CLOCK_TICK
    return by_session


def startup_cpu(proc_pid: int, cfg: StreamConfig, port: int) -> dict[str, float]:
    """CPU seconds spent so far by what run-local.sh started: the job (its launcher, Spark's JVM,
    the Python workers), the broker, the gateway and Redis (each in a session of its own).
    Less sensitive to other load on the machine than the wall-clock times."""
    from urllib.parse import urlparse

    from deploy import gateway_local
    from deploy.pidfile import running_pid

    cpu = session_cpu()
    redis_port = urlparse(cfg.redis["url"]).port
    pids = {
        "job (driver, Spark JVM, Python workers)": proc_pid,
        "broker": running_pid(ROOT / ".run" / f"kafka-{port}" / "broker.pid"),
        "gateway": running_pid(gateway_local.PIDFILE),
        "redis": running_pid(ROOT / ".run" / f"redis-{redis_port}" / "redis.pid"),
    }
    return {name: cpu.get(pid, 0.0) for name, pid in pids.items() if pid is not None}


def first_answer(port: int, cfg: StreamConfig, launched: float, out: dict) -> None:
    """The README example, run the moment the service is launched."""
    try:
        with CoordinatorClient(
            f"127.0.0.1:{port}",
            client_id="example",
            requests_topic=cfg.topics["requests"],
            responses_topic=cfg.topics["responses"],
        ) as c:
            out["client_ready_s"] = time.monotonic() - launched  # the broker and its response topic found
            c.request("FindCoordinator", 4, {"keyType": 0, "coordinatorKeys": ["my-group"]})
            out["first_answer_s"] = time.monotonic() - launched
            out["cpu_at_first_answer"] = startup_cpu(out["pid"], cfg, port)
    except Exception as e:  # noqa: BLE001 - reported in the table
        out["first_answer_error"] = repr(e)


LOG_TIME = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}) INFO run_stream: (.*)$", re.M)
MILESTONES = (
    ("starting:", "job process started"),
    ("Spark session up", "Spark session up"),
    ("answers and the topics exist", "broker answers, topics exist"),
    ("coordinator query", "query started"),
    ("READY", "self-check answered (READY)"),
)


def startup_timeline(log_text: str, status: dict | None, launched_at: float) -> list[tuple[str, float | None]]:
    """Seconds from the launch of run-local.sh (`launched_at`, epoch seconds) to each milestone the
    job logs, then the first micro-batches: when each ended, and its phases."""
    from datetime import datetime

    stamps = [(datetime.strptime(t, "%Y-%m-%d %H:%M:%S,%f").timestamp(), msg) for t, msg in LOG_TIME.findall(log_text)]
    out: list[tuple[str, float | None]] = []
    for needle, label in MILESTONES:
        hit = next((t for t, msg in stamps if msg.startswith(needle) or needle in msg), None)
        if hit is not None:
            out.append((label, hit - launched_at))
    for b in ((status or {}).get("batches") or [])[:3]:
        d = b["durationMs"]
        ended = iso_ms(b["timestamp"]) / 1000 + d.get("triggerExecution", 0) / 1000 - launched_at
        out.append(
            (
                f"batch {b['batchId']} ended: {d.get('triggerExecution', 0) / 1000:.2f} s long (addBatch "
                f"{d.get('addBatch', 0) / 1000:.2f}, planning {d.get('queryPlanning', 0) / 1000:.2f})",
                ended,
            )
        )
    return out


def wait_line(log_file: Path, marker: bytes, proc: subprocess.Popen, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if marker in log_file.read_bytes():
            return
        if proc.poll() is not None:
            raise RuntimeError(f"run-local.sh exited {proc.returncode}:\n{log_file.read_text()[-3000:]}")
        time.sleep(0.05)
    raise TimeoutError(f"no {marker!r} in {timeout}s:\n{log_file.read_text()[-3000:]}")


def round_trips(cfg: StreamConfig, port: int, n: int, batches: BatchLog) -> dict:
    client_id = f"bench-{os.getpid()}-{time.time_ns()}"
    producer = KafkaProducer(bootstrap_servers=f"127.0.0.1:{port}", acks="all", linger_ms=0)
    consumer = KafkaConsumer(bootstrap_servers=f"127.0.0.1:{port}", group_id=None, fetch_max_wait_ms=100)
    parts = consumer.partitions_for_topic(cfg.topics["responses"])
    tp = TopicPartition(cfg.topics["responses"], response_partition(client_id, len(parts)))
    consumer.assign([tp])
    consumer.seek_to_end(tp)
    consumer.position(tp)
    samples = []
    try:
        for i in range(n + 10):  # the first 10 warm up (connections, Python workers' caches)
            env = {
                "apiKey": "FindCoordinator",
                "apiVersion": 4,
                "correlationId": i,
                "clientId": client_id,
                "request": {"keyType": 0, "coordinatorKeys": [f"group-{i}"]},
            }
            t_send = time.time()
            meta = producer.send(cfg.topics["requests"], key=f"group-{i}".encode(), value=json.dumps(env).encode()).get(
                timeout=30
            )
            t_ack = time.time()
            answer = None
            while answer is None:
                for recs in consumer.poll(timeout_ms=100).values():
                    for r in recs:
                        if r.key == client_id.encode() and json.loads(r.value)["correlationId"] == i:
                            answer = r
            t_recv = time.time()
            if i >= 10:
                samples.append(
                    {
                        "t_send": t_send,
                        "t_ack": t_ack,
                        "t_append": meta.timestamp / 1000,
                        "topic": meta.topic,
                        "partition": meta.partition,
                        "offset": meta.offset,
                        "t_answer": answer.timestamp / 1000,
                        "t_recv": t_recv,
                    }
                )
    finally:
        producer.close()
        consumer.close()
    time.sleep(2.5)  # the status file is rewritten every second: let it show the last batches
    batches.poll()
    return breakdown(samples, batches.batches)


def batch_of(sample: dict, batches: list[dict]) -> dict | None:
    """The first micro-batch whose end offsets cover the request."""
    for b in batches:
        for end in b.get("endOffsets") or []:
            if end and isinstance(end, dict):
                off = (end.get(sample["topic"]) or {}).get(str(sample["partition"]))
                if off is not None and off > sample["offset"]:
                    return b
    return None


def breakdown(samples: list[dict], batches_by_id: dict) -> dict:
    batches = [batches_by_id[k] for k in sorted(batches_by_id)]
    for b in batches:
        if isinstance(b.get("endOffsets"), list):
            b["endOffsets"] = [json.loads(e) if isinstance(e, str) else e for e in b["endOffsets"]]
    rows, round_trip = [], []
    first_batch = None
    for s in samples:
        b = batch_of(s, batches)
        round_trip.append((s["t_recv"] - s["t_send"]) * 1000)
        if b is None:
            continue
        first_batch = first_batch if first_batch is not None else b["batchId"]
        d = b["durationMs"]
        start = iso_ms(b["timestamp"]) / 1000
        before_run = (
            d.get("latestOffset", 0) + d.get("walCommit", 0) + d.get("getBatch", 0) + d.get("queryPlanning", 0)
        ) / 1000
        rows.append(
            {
                "produce": s["t_ack"] - s["t_send"],
                "wait for a batch": start - s["t_append"],
                "latestOffset": d.get("latestOffset", 0) / 1000,
                "walCommit": d.get("walCommit", 0) / 1000,
                "plan": (d.get("getBatch", 0) + d.get("queryPlanning", 0)) / 1000,
                "run until answered": s["t_answer"] - (start + before_run),
                "deliver": s["t_recv"] - s["t_answer"],
            }
        )
    window = [b for b in batches if first_batch is not None and b["batchId"] >= first_batch]
    durations = [b["durationMs"].get("triggerExecution", 0) for b in window]
    state_ms = (
        {
            k: statistics.mean((b["state"] or {}).get(k) or 0 for b in window)
            for k in ("allUpdatesTimeMs", "allRemovalsTimeMs", "commitTimeMs")
        }
        if window
        else {}
    )
    return {
        "n": len(samples),
        "attributed": len(rows),
        "parts": {p: statistics.mean(r[p] for r in rows) * 1000 for p in PARTS} if rows else {},
        "p50": statistics.median(round_trip),
        "p99": percentile(round_trip, 99),
        "mean": statistics.mean(round_trip),
        "batch_p50": statistics.median(durations) if durations else float("nan"),
        "batch_phases": {
            k: statistics.median(b["durationMs"].get(k, 0) for b in window)
            for k in (
                "latestOffset",
                "walCommit",
                "getBatch",
                "queryPlanning",
                "addBatch",
                "commitOffsets",
                "triggerExecution",
            )
        }
        if window
        else {},
        "state_ms": state_ms,
    }


def run_step(step: str, work: Path, args, variant: str = "", name: str = "", requests: int = 0) -> dict:
    """One cold start (a broker of its own, on a free port) and the round trips; everything it
    started is stopped before it returns."""
    port = free_port()
    prefix = f"bench-{step}" + ("-" + re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-") if name else "")
    cfg = write_config(work / f"{prefix}.toml", port, prefix, step, args.trigger, variant)
    log_file = work / f"{prefix}.log"
    launched, launched_at = time.monotonic(), time.time()
    out: dict = {}
    with open(log_file, "wb") as log:
        proc = subprocess.Popen(
            [str(ROOT / "deploy" / "run-local.sh"), "--config", str(work / f"{prefix}.toml")],
            cwd=ROOT,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env=dict(os.environ, PYTHONUNBUFFERED="1"),
        )
    out["pid"] = proc.pid
    asker = threading.Thread(target=first_answer, args=(port, cfg, launched, out), daemon=True)
    asker.start()
    batches = None
    try:
        wait_line(log_file, b"COORDINATOR-READY", proc, timeout=300)
        out["ready_s"] = time.monotonic() - launched
        asker.join(timeout=300)
        text = log_file.read_text(errors="replace")
        out["log_lines"] = len(text.splitlines())
        out["timeline"] = startup_timeline(text, read_status(status_path(cfg.checkpoint)), launched_at)
        batches = BatchLog(status_path(cfg.checkpoint))
        out.update(round_trips(cfg, port, requests or args.requests, batches))
    finally:
        out["load"] = os.getloadavg()[0]
        if batches:
            batches.halt.set()
        stop_job(proc)
        stop_local(cfg, port)
    return out


def load_seen(results: dict) -> str:
    loads = [r["load"] for r in results.values() if "load" in r]
    return f"{min(loads):.1f}-{max(loads):.1f} (1-minute, at each step's end)" if loads else "?"


def stop_job(proc: subprocess.Popen) -> None:
    """Stop the job run-local.sh became: SIGTERM (the driver stops the query and Spark), then its
    whole process group if it is still there after a minute."""
    if proc.poll() is None:
        os.kill(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)


def stop_local(cfg: StreamConfig, port: int) -> None:
    """The broker, Redis and gateway run-local.sh started for this step (it leaves them running)."""
    from urllib.parse import urlparse

    from deploy import gateway_local
    from deploy.pidfile import terminate
    from deploy.redis_local import LocalRedis

    terminate(gateway_local.PIDFILE, 10)
    redis_port = urlparse(cfg.redis["url"]).port
    LocalRedis(ROOT / ".run" / f"redis-{redis_port}", redis_port).stop()
    broker_dir = ROOT / ".run" / f"kafka-{port}"
    LocalKafka(broker_dir, port).stop(timeout=30)
    shutil.rmtree(broker_dir, ignore_errors=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--requests", type=int, default=150)
    ap.add_argument("--steps", default="coordinator,identity")
    ap.add_argument("--trigger", default="200 milliseconds")
    ap.add_argument(
        "--variants",
        default="",
        help="also run the coordinator step with these settings "
        f"(comma-separated names, or 'all'): {', '.join(VARIANTS)}",
    )
    ap.add_argument("--variant-requests", type=int, default=60)
    args = ap.parse_args()
    variants = list(VARIANTS) if args.variants == "all" else [v for v in args.variants.split(",") if v]
    work = Path(tempfile.mkdtemp(prefix="bench-latency-"))
    results = {step: run_step(step, work, args) for step in args.steps.split(",")}
    varied = {v: run_step("coordinator", work, args, VARIANTS[v], v, args.variant_requests) for v in variants}
    steps = list(results)
    print(
        f"\nRound trip of a FindCoordinator, local[2], trigger {args.trigger}, {args.requests} requests "
        f"one at a time (means, ms)"
    )
    print(f"{'part':24}" + "".join(f"{s:>14}" for s in steps))
    for p in PARTS:
        print(f"{p:24}" + "".join(f"{results[s]['parts'].get(p, float('nan')):14.1f}" for s in steps))
    print(f"{'= sum of the parts':24}" + "".join(f"{sum(results[s]['parts'].values()):14.1f}" for s in steps))
    print(f"{'round trip mean':24}" + "".join(f"{results[s]['mean']:14.1f}" for s in steps))
    for label, key in (("round trip p50", "p50"), ("round trip p99", "p99"), ("micro-batch p50", "batch_p50")):
        print(f"{label:24}" + "".join(f"{results[s][key]:14.1f}" for s in steps))
    print(
        f"{'p50 / micro-batch p50':24}" + "".join(f"{results[s]['p50'] / results[s]['batch_p50']:14.2f}" for s in steps)
    )
    print("\nMicro-batch phases (medians, ms) and the stateful step's task times (means, summed over tasks)")
    for k in (
        "latestOffset",
        "walCommit",
        "getBatch",
        "queryPlanning",
        "addBatch",
        "commitOffsets",
        "triggerExecution",
    ):
        print(f"{k:24}" + "".join(f"{results[s]['batch_phases'].get(k, float('nan')):14.1f}" for s in steps))
    for k in ("allUpdatesTimeMs", "allRemovalsTimeMs", "commitTimeMs"):
        print(f"{k:24}" + "".join(f"{results[s]['state_ms'].get(k, float('nan')):14.1f}" for s in steps))
    print(
        "\nFirst answer (the README example sent the moment deploy/run-local.sh is launched; each step "
        f"cold: a new broker, Redis and gateway). Load average during the run: {load_seen(results)}"
    )
    for s in steps:
        r = results[s]
        first = f"{r['first_answer_s']:.1f} s" if "first_answer_s" in r else r.get("first_answer_error")
        print(
            f"  {s:12} READY after {r['ready_s']:.1f} s, first answer after {first}, "
            f"{r['log_lines']} console lines until then; {r['attributed']}/{r['n']} requests attributed"
        )
        if "client_ready_s" in r:
            print(f"      the README client found the broker and the response topic at {r['client_ready_s']:.1f} s")
        for label, at in r.get("timeline", []):
            print(f"      {label}" + ("" if at is None else f" at {at:.1f} s"))
        cpu = r.get("cpu_at_first_answer") or {}
        if cpu:
            print(
                f"      CPU seconds until the first answer: {sum(cpu.values()):.1f} ("
                + ", ".join(f"{k} {v:.1f}" for k, v in cpu.items())
                + ")"
            )
    if varied:
        print(
            f"\nCoordinator step with other settings ({args.variant_requests} requests each, same broker, "
            f"one after the other; ms)"
        )
        print(
            f"{'settings':22}{'p50':>8}{'p99':>8}{'batch p50':>11}{'p50/batch':>11}{'addBatch':>10}"
            f"{'python':>9}{'READY s':>9}"
        )
        for v, r in varied.items():
            py = r["state_ms"].get("allUpdatesTimeMs", 0) + r["state_ms"].get("allRemovalsTimeMs", 0)
            print(
                f"{v:22}{r['p50']:8.0f}{r['p99']:8.0f}{r['batch_p50']:11.0f}{r['p50'] / r['batch_p50']:11.2f}"
                f"{r['batch_phases'].get('addBatch', float('nan')):10.0f}{py:9.0f}{r['ready_s']:9.1f}"
            )
        print("(python: the stateful step's update and timeout time, summed over its tasks)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
