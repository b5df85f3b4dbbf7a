#!/usr/bin/env python3
"""OffsetCommit throughput of the coordinator step next to the identity step, in one run.

    .venv/bin/python bench/throughput.py [--burst 20000] [--rates 1000,2000,3000,4000,5000]
                                         [--seconds 20] [--groups 1000] [--steps identity,coordinator]
                                         [--rounds 1]
    .venv/bin/python bench/throughput.py --in-process [--batch 400] [--batches 40] [--opcodes] [--profile N]

One broker; the two jobs run one after the other, never together (the machine has 2 cores): the
real coordinator step and the identity step (`[stream] step = "identity"`: the same Spark pipeline
with a state function that answers every request with an empty response). Each job gets the same
load, JSON OffsetCommit requests of simple groups (one offset each, `--groups` groups spread over
all coordinator partitions) from one client:

- **burst**: `--burst` requests produced as fast as the client can; requests per second from the
  first send to the last response;
- **`--rounds N`** (N > 1): both jobs are started at once (an idle job runs no micro-batch) and
  take turns, ABBA: N bursts each, then each paced rate on one and the other, so that a machine
  whose load drifts during the run weighs on both; the ratio is printed per round;
- **paced**: `--seconds` of requests at each rate of `--rates` (ascending, until one falls behind),
  each request's round trip timed from its send to its response. A rate *keeps up* when the round
  trip p50 of the requests sent in the second half of the window is at most `--max-rtt-ms`: a job
  that falls behind builds a backlog, and the round trips grow through the window.

Printed: both steps' figures side by side, the ratios, the highest rate that keeps up, and the CPU
time per request of the job's processes (driver, JVM, Python workers), the broker's and the client's
during the burst: on a machine shared with other work the rates move with its load, the CPU per
request much less.

`--in-process`: the two state functions alone, called as Spark calls them (one coordinator
partition, frames of `--batch` OffsetCommit records, the state carried from batch to batch), CPU
time per request: the Python part of the difference, without Spark, the broker or the client.
`--opcodes` adds the Python bytecodes per request (deterministic: the same on a busy machine),
`--profile N` cProfile's N costliest functions of the coordinator step.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.idle_cost import tree_cpu_s  # noqa: E402
from client import CoordinatorClient  # noqa: E402
from deploy.kafka_local import LocalKafka, free_port  # noqa: E402
from tests.integration.harness import StreamJob, create_data_topics, simple_commit  # noqa: E402

TOPIC = "bench-throughput-orders"
TOPIC_PARTITIONS = 8


class TimedClient(CoordinatorClient):
    """Notes when each response arrives (monotonic seconds, by correlation id)."""

    def __init__(self, *a, **kw):
        self.arrived: dict[int, float] = {}
        super().__init__(*a, **kw)

    def _accept(self, key, value):
        now = time.monotonic()
        super()._accept(key, value)
        try:
            cid = json.loads(value)["correlationId"]
        except (TypeError, ValueError, KeyError):
            return
        with self._lock:
            self.arrived.setdefault(cid, now)

    def send_commit(self, group: str, offset: int) -> int:
        cid = self.next_correlation_id()
        body = simple_commit(group, {TOPIC: {offset % TOPIC_PARTITIONS: offset}})
        envelope = {"apiKey": "OffsetCommit", "apiVersion": 9, "correlationId": cid, "clientId": self.client_id}
        self.send_raw(json.dumps({**envelope, "request": body}).encode(), key=group, flush=False)
        return cid

    def wait_all(self, cids: list[int], timeout: float) -> list[dict]:
        return [self.wait(cid, timeout=timeout)["response"] for cid in cids]


_TICK = os.sysconf("SC_CLK_TCK")


def group_cpu_seconds(pgid: int) -> float:
    """CPU time (user + system, reaped children included) of the live processes of a process group."""
    total = 0
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rpartition(")")[2].split()
        except OSError:
            continue
        if int(fields[2]) == pgid:  # fields after the name: state, ppid, pgrp, ...
            total += sum(int(x) for x in fields[11:15])  # utime, stime, cutime, cstime
    return total / _TICK


CPU_LINES = (
    ("job", "burst: CPU per request, job (ms)"),
    ("workers", "  of it the Python workers (ms)"),
    ("broker", "burst: CPU per request, broker (ms)"),
    ("client", "burst: CPU per request, client (ms)"),
)


class CpuMeter:
    """CPU seconds used by the job (driver, JVM, Python workers), the broker and this client.

    The job is its process tree, not its process group: Spark's Python worker daemon makes a group
    of its own, so the workers (where the state function runs) are outside the job's group."""

    def __init__(self, job: StreamJob, broker: LocalKafka):
        self.job_pid, self.broker_pgid = job.proc.pid, broker.pid()

    def read(self) -> dict[str, float]:
        by_pid = tree_cpu_s(self.job_pid)
        cpu = {
            "job": sum(s for _, s in by_pid.values()),
            "workers": sum(s for kind, s in by_pid.values() if kind == "workers"),
        }
        if self.broker_pgid:
            cpu["broker"] = group_cpu_seconds(self.broker_pgid)
        t = os.times()
        cpu["client"] = t.user + t.system
        return cpu

    @staticmethod
    def per_request(before: dict, after: dict, n: int) -> dict[str, float]:
        """Milliseconds of CPU per request, by part."""
        return {k: (after[k] - before[k]) * 1000 / n for k in after}


def percentile(values: list[float], p: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, int(round(p / 100 * (len(s) - 1))))]


def errors_in(responses: list[dict]) -> int:
    return sum(
        1
        for r in responses
        if r.get("errorCode", 0) or any(p["errorCode"] for t in r.get("topics", []) for p in t["partitions"])
    )


def warm_up(client: TimedClient, groups: list[str]) -> None:
    """Until a commit succeeds (the job's Python workers are up and it knows the data topic), then a
    round over every group (so the burst does not create them)."""
    deadline = time.monotonic() + 180
    while True:
        cid = client.send_commit(groups[0], 0)
        client.flush()
        (resp,) = client.wait_all([cid], timeout=180)
        if not errors_in([resp]):
            break
        if time.monotonic() > deadline:
            raise RuntimeError(f"no successful commit in 180 s: {resp}")
        time.sleep(1)
    cids = [client.send_commit(g, 0) for g in groups]
    client.flush()
    client.wait_all(cids, timeout=300)


def batches_between(job: StreamJob, since_wall: float, until_wall: float, timeout_s: float = 10) -> list[dict]:
    """The job's micro-batches that started in [since, until] (a burst, a paced window's second half),
    from its status file's progress reports (written by the driver every few seconds): rows and
    milliseconds (whole, and addBatch: the tasks)."""
    from streaming.status import iso_ms, read_status, status_path

    deadline = time.monotonic() + timeout_s
    while True:
        doc = read_status(status_path(job.cfg.checkpoint)) or {}
        batches = doc.get("batches") or []
        if (batches and iso_ms(batches[-1]["timestamp"]) >= until_wall * 1000) or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    return [
        {
            "rows": b["numInputRows"],
            "ms": b["durationMs"].get("triggerExecution"),
            "addBatch": b["durationMs"].get("addBatch"),
        }
        for b in batches
        if since_wall * 1000 - 1000 <= iso_ms(b["timestamp"]) <= until_wall * 1000
    ]


def burst(client: TimedClient, groups: list[str], n: int, cpu: CpuMeter, job: StreamJob | None = None) -> dict:
    before = cpu.read()
    wall0 = time.time()
    t0 = time.monotonic()
    cids = [client.send_commit(groups[i % len(groups)], i) for i in range(n)]
    client.flush()
    sent = time.monotonic() - t0
    responses = client.wait_all(cids, timeout=900)
    last = max(client.arrived[c] for c in cids)
    cpu_ms = CpuMeter.per_request(before, cpu.read(), n)
    batches = [] if job is None else batches_between(job, wall0, wall0 + (last - t0))
    return {
        "batches": [(b["rows"], b["ms"], b["addBatch"]) for b in batches],
        "rate": n / (last - t0),
        "send_rate": n / sent,
        # from the last send to the last answer: how far behind the client the job ended the burst
        "tail_s": last - t0 - sent,
        "errors": errors_in(responses),
        "cpu_ms": cpu_ms,
    }


def paced(client: TimedClient, groups: list[str], rate: int, seconds: float, job: StreamJob | None = None) -> dict:
    sent: dict[int, float] = {}
    wall0 = time.time()
    t0 = time.monotonic()
    i = 0
    while (now := time.monotonic()) < t0 + seconds:
        due = int((now - t0) * rate)
        while i < due:
            cid = client.send_commit(groups[i % len(groups)], i)
            sent[cid] = time.monotonic()
            i += 1
        client.flush()
        time.sleep(0.005)
    responses = client.wait_all(list(sent), timeout=900)
    rtts = [(client.arrived[c] - t) * 1000 for c, t in sent.items()]
    second_half = [(client.arrived[c] - t) * 1000 for c, t in sent.items() if t >= t0 + seconds / 2]
    batches = [] if job is None else batches_between(job, wall0 + seconds / 2, wall0 + seconds)
    return {
        # the micro-batches of the window's second half: requests, ms, addBatch ms (medians)
        "batches_2nd_half": {
            k: statistics.median(b[k] or 0 for b in batches) if batches else None for k in ("rows", "ms", "addBatch")
        },
        "rate": rate,
        "achieved": len(sent) / seconds,
        "p50": statistics.median(rtts),
        "p99": percentile(rtts, 99),
        "late_p50": statistics.median(second_half),
        "errors": errors_in(responses),
    }


def measure(broker: LocalKafka, work: Path, mode: str, args) -> dict:
    job = StreamJob(broker.bootstrap, work / mode, f"tp-{mode}", stream={"step": mode}).start()
    client = TimedClient(
        broker.bootstrap,
        f"bench-throughput-{mode}",
        requests_topic=job.topics["requests"],
        responses_topic=job.topics["responses"],
    )
    groups = [f"throughput-group-{i}" for i in range(args.groups)]
    try:
        warm_up(client, groups)
        result = {"burst": burst(client, groups, args.burst, CpuMeter(job, broker)), "paced": []}
        print(f"{mode}: burst {result['burst']}", file=sys.stderr, flush=True)
        for rate in args.rates:
            r = paced(client, groups, rate, args.seconds)
            r["keeps_up"] = r["late_p50"] <= args.max_rtt_ms
            result["paced"].append(r)
            print(f"{mode}: paced {r}", file=sys.stderr, flush=True)
            if not r["keeps_up"]:
                break
        return result
    finally:
        client.close()
        job.stop()


def start_jobs(
    broker: LocalKafka, work: Path, steps, prefix: str, client_prefix: str
) -> tuple[dict[str, StreamJob], dict[str, TimedClient]]:
    """A job per step (`[stream] step`), all up at once, each with a client of its own."""
    jobs, clients = {}, {}
    for mode in steps:
        jobs[mode] = StreamJob(broker.bootstrap, work / mode, f"{prefix}-{mode}", stream={"step": mode}).start()
        clients[mode] = TimedClient(
            broker.bootstrap,
            f"{client_prefix}-{mode}",
            requests_topic=jobs[mode].topics["requests"],
            responses_topic=jobs[mode].topics["responses"],
        )
    return jobs, clients


def stop_jobs(jobs: dict[str, StreamJob], clients: dict[str, TimedClient]) -> None:
    """The clients and jobs `start_jobs` started."""
    for c in clients.values():
        c.close()
    for j in jobs.values():
        j.stop()


def measure_interleaved(broker: LocalKafka, work: Path, steps: list[str], args) -> dict:
    """Both jobs started at once (an idle job costs almost nothing: no micro-batch without a
    record), then `--rounds` rounds of one burst on each, the order alternating (ABBA), and the
    paced rates the same way: a machine whose load drifts weighs on both steps alike."""
    jobs: dict[str, StreamJob] = {}
    clients: dict[str, TimedClient] = {}
    groups = [f"throughput-group-{i}" for i in range(args.groups)]
    results: dict[str, dict] = {m: {"bursts": [], "paced": []} for m in steps}
    try:
        jobs, clients = start_jobs(broker, work, steps, "tp", "bench-throughput")
        for mode in steps:
            warm_up(clients[mode], groups)
        for r in range(args.rounds):
            for mode in steps if r % 2 == 0 else steps[::-1]:
                b = burst(clients[mode], groups, args.burst, CpuMeter(jobs[mode], broker), jobs[mode])
                results[mode]["bursts"].append(b)
                print(f"round {r + 1} {mode}: burst {b}", file=sys.stderr, flush=True)
        for i, rate in enumerate(args.rates):
            for mode in steps if i % 2 == 0 else steps[::-1]:
                pr = paced(clients[mode], groups, rate, args.seconds, jobs[mode])
                pr["keeps_up"] = pr["late_p50"] <= args.max_rtt_ms
                results[mode]["paced"].append(pr)
                print(f"{mode}: paced {pr}", file=sys.stderr, flush=True)
            if not any(results[m]["paced"][-1]["keeps_up"] for m in steps):
                break
    finally:
        stop_jobs(jobs, clients)
    for mode in steps:  # the figures the one-round table prints: each burst's median
        bursts = results[mode]["bursts"]
        results[mode]["burst"] = {
            "rate": statistics.median(b["rate"] for b in bursts),
            "send_rate": statistics.median(b["send_rate"] for b in bursts),
            "tail_s": statistics.median(b["tail_s"] for b in bursts),
            "errors": sum(b["errors"] for b in bursts),
            "cpu_ms": {k: statistics.median(b["cpu_ms"][k] for b in bursts) for k in bursts[0]["cpu_ms"]},
        }
    return results


class FakeGroupState:
    """The parts of Spark's GroupState the state functions use."""

    def __init__(self, now_ms: int):
        self.blob, self.now = None, now_ms

    exists = property(lambda self: self.blob is not None)
    get = property(lambda self: self.blob)

    def update(self, blob) -> None:
        self.blob = blob

    def setTimeoutDuration(self, ms: int) -> None:
        pass

    def getCurrentProcessingTimeMs(self) -> int:
        return self.now


def in_process(args) -> int:
    import pandas as pd

    from coordinator import coordinator_partition
    from streaming.step import StepSettings, make_identity_step, make_step

    partition = 7
    groups = [
        g for g in (f"throughput-group-{i}" for i in range(args.groups * 60)) if coordinator_partition(g) == partition
    ]
    groups = groups[: max(1, args.groups // 50)]  # the share of one of the 50 partitions

    def frame(batch: int, now: int) -> pd.DataFrame:
        first = batch * args.batch
        keys = [groups[i % len(groups)] for i in range(first, first + args.batch)]
        values = [
            json.dumps(
                {
                    "apiKey": "OffsetCommit",
                    "apiVersion": 9,
                    "correlationId": i,
                    "clientId": "bench",
                    "request": simple_commit(key, {TOPIC: {i % TOPIC_PARTITIONS: i}}),
                }
            ).encode()
            for i, key in zip(range(first, first + args.batch), keys, strict=True)
        ]
        n = len(values)
        return pd.DataFrame(
            {
                "key": keys,
                "value": values,
                "value_size": [len(v) for v in values],
                "ts_ms": [now] * n,
                "src_partition": [0] * n,
                "src_offset": list(range(first, first + n)),
                "key_valid": [True] * n,
                "internal": [False] * n,
                "mac": [None] * n,  # the internal channel's headers (null for a client's record)
                "stamp": [None] * n,
            }
        )

    settings = StepSettings(
        coordinator={"coordinator.timer.grace.ms": 1000},
        responses_topic="r",
        events_topic="e",
        state_log_topic="s",
        requests_topic="q",
    )
    steps = {"identity": make_identity_step(settings), "coordinator": make_step(settings)}
    frames = [frame(b, 1_000_000 + 200 * b) for b in range(args.batches)]
    cpu: dict[str, list[float]] = {name: [] for name in steps}
    states = {name: FakeGroupState(1_000_000) for name in steps}
    for b, pdf in enumerate(frames):  # alternating, so that the machine's load falls on both
        for name, step in steps.items():
            gs = states[name]
            gs.now = 1_000_000 + 200 * (b + 1)
            t = time.process_time()
            for out in step((partition,), iter([pdf]), gs):
                assert len(out) >= len(pdf)
            if b >= 2:  # warm-up batches
                cpu[name].append((time.process_time() - t) / len(pdf) * 1e6)
    if args.profile:
        profile_step(steps["coordinator"], frames, partition, args.profile)
    if args.opcodes:
        print(
            "Python bytecodes per request (batches 2-4, deterministic): "
            + ", ".join(f"{name} {count_opcodes(step, frames, partition):.0f}" for name, step in steps.items())
        )
    ident, coord = statistics.median(cpu["identity"]), statistics.median(cpu["coordinator"])
    print(
        f"state function alone, one partition, batches of {args.batch} OffsetCommits "
        f"(median of {len(cpu['identity'])} batches), CPU us per request:"
    )
    print(f"identity {ident:.1f}, coordinator {coord:.1f}, identity / coordinator {ident / coord:.2f}")
    return 0


def profile_step(step, frames, partition: int, top: int) -> None:
    """cProfile of the coordinator step over the frames again (on a fresh state), the `top`
    functions by own time: where the time goes (cProfile's cost per call inflates small functions)."""
    import cProfile
    import pstats

    gs = FakeGroupState(1_000_000)
    profiler = cProfile.Profile()
    for b, pdf in enumerate(frames):
        gs.now = 1_000_000 + 200 * (b + 1)
        if b == 2:
            profiler.enable()
        for _ in step((partition,), iter([pdf]), gs):
            pass
    profiler.disable()
    pstats.Stats(profiler, stream=sys.stderr).sort_stats("tottime").print_stats(top)


def count_opcodes(step, frames, partition: int) -> float:
    """Python bytecodes the step runs per request over batches 2-4 (on a fresh state): a figure the
    machine's load does not move, for comparing two versions of the code."""
    gs, ops = FakeGroupState(1_000_000), [0]

    def tracer(frame, event, arg):
        frame.f_trace_opcodes = True
        if event == "opcode":
            ops[0] += 1
        return tracer

    counted = 0
    for b, pdf in enumerate(frames[:5]):
        gs.now = 1_000_000 + 200 * (b + 1)
        if b >= 2:
            sys.settrace(tracer)
            counted += len(pdf)
        for _ in step((partition,), iter([pdf]), gs):
            pass
        sys.settrace(None)
    return ops[0] / counted


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--burst", type=int, default=20000)
    ap.add_argument("--rates", default="1000,2000,3000,4000,5000")
    ap.add_argument("--seconds", type=float, default=20)
    ap.add_argument("--groups", type=int, default=1000)
    ap.add_argument("--max-rtt-ms", type=float, default=1500)
    ap.add_argument("--steps", default="identity,coordinator")
    ap.add_argument(
        "--rounds",
        type=int,
        default=1,
        help="more than 1: both jobs up at once, bursts (and paced rates) alternating between them",
    )
    ap.add_argument("--in-process", action="store_true")
    ap.add_argument("--batch", type=int, default=400)
    ap.add_argument("--batches", type=int, default=40)
    ap.add_argument("--profile", type=int, default=0, help="--in-process: print cProfile's N costliest functions")
    ap.add_argument("--opcodes", action="store_true", help="--in-process: Python bytecodes per request too")
    args = ap.parse_args()
    if args.in_process:
        return in_process(args)
    args.rates = sorted(int(r) for r in args.rates.split(","))
    steps = args.steps.split(",")
    work = Path(tempfile.mkdtemp(prefix="bench-throughput-"))
    broker = LocalKafka(work / "kafka", free_port(), free_port()).start()
    results = {}
    try:
        create_data_topics(broker.bootstrap, {TOPIC: TOPIC_PARTITIONS})
        if args.rounds > 1:
            results = measure_interleaved(broker, work, steps, args)
        else:
            for mode in steps:
                results[mode] = measure(broker, work, mode, args)
    finally:
        broker.stop(timeout=3)
    if args.rounds > 1:
        print(f"\nbursts of {args.burst}, {args.rounds} rounds, alternating (ABBA); requests/s per round:")
        for r in range(args.rounds):
            rates = [results[m]["bursts"][r]["rate"] for m in steps]
            ratio = f"   ratio {rates[1] / rates[0]:.2f}" if len(steps) == 2 else ""
            print(f"  round {r + 1}: " + ", ".join(f"{m} {v:.0f}" for m, v in zip(steps, rates, strict=True)) + ratio)
        if len(steps) == 2:
            ratios = [
                results[steps[1]]["bursts"][r]["rate"] / results[steps[0]]["bursts"][r]["rate"]
                for r in range(args.rounds)
            ]
            print(
                f"  burst ratio per round: median {statistics.median(ratios):.2f}, min {min(ratios):.2f}, max {max(ratios):.2f}"
            )
        print("(the table's burst rows: the median of the rounds)")
    print(
        f"\nOffsetCommit (JSON path, one offset, {args.groups} simple groups), local[2]: burst of {args.burst}, "
        f"then {args.seconds:.0f} s at each paced rate; keeps up = 2nd-half round trip p50 <= {args.max_rtt_ms:.0f} ms"
    )
    print(f"{'':34}" + "".join(f"{m:>14}" for m in steps) + ("       ratio" if len(steps) == 2 else ""))

    def line(name: str, values: list[float | None], fmt: str = "14.0f") -> None:
        cells = "".join(f"{v:{fmt}}" if v is not None else f"{'-':>14}" for v in values)
        ratio = ""
        if len(values) == 2 and values[0] and values[1] is not None:
            ratio = f"{values[1] / values[0]:12.2f}"
        print(f"{name:34}{cells}{ratio}")

    line("burst (req/s)", [results[m]["burst"]["rate"] for m in steps])
    line("burst: last send to last answer (s)", [results[m]["burst"]["tail_s"] for m in steps], "14.2f")
    for part, name in CPU_LINES:
        line(name, [results[m]["burst"]["cpu_ms"][part] for m in steps], "14.3f")
    # Both cores are busy through a burst: its rate follows this sum (docs/operations.md, *Throughput*).
    line(
        "burst: CPU, job + broker (ms)",
        [results[m]["burst"]["cpu_ms"]["job"] + results[m]["burst"]["cpu_ms"]["broker"] for m in steps],
        "14.3f",
    )
    for rate in args.rates:
        rows = [next((r for r in results[m]["paced"] if r["rate"] == rate), None) for m in steps]
        if all(r is None for r in rows):
            break
        line(f"paced {rate}/s: round trip p50 (ms)", [r and r["p50"] for r in rows])
        line(f"paced {rate}/s: round trip p99 (ms)", [r and r["p99"] for r in rows])
        line(f"paced {rate}/s: 2nd-half p50 (ms)", [r and r["late_p50"] for r in rows])
        print(f"{'':34}" + "".join(f"{('keeps up' if r['keeps_up'] else 'behind') if r else '-':>14}" for r in rows))
    highest = [max((r["rate"] for r in results[m]["paced"] if r["keeps_up"]), default=0) for m in steps]
    line("highest paced rate that keeps up", [float(h) for h in highest])
    print(
        "client send rate in the burst (req/s): "
        + ", ".join(f"{m} {results[m]['burst']['send_rate']:.0f}" for m in steps)
        + "; error responses: "
        + ", ".join(
            f"{m} {results[m]['burst']['errors'] + sum(r['errors'] for r in results[m]['paced'])}" for m in steps
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
