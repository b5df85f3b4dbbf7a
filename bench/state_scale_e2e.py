#!/usr/bin/env python3
"""End to end: does a steady heartbeat/commit load slow down when the service holds a lot of state?

    .venv/bin/python bench/state_scale_e2e.py [--groups 100000] [--offsets-per-group 10]
                                              [--members 20] [--seconds 60]

One broker, two jobs run one after the other (never together: the machine has 2 cores):
- "empty": a fresh job;
- "loaded": a fresh job first loaded with `--groups` groups with committed offsets (OffsetCommit
  requests sent in bulk; the groups' ids spread them over all coordinator partitions).
Then the same steady load on each: `--members` KIP-848 members (each in its own group) send a
ConsumerGroupHeartbeat and an OffsetCommit of their group's partitions every second. Measured in
the steady window: the request round trip (send to response) and the micro-batch duration (from
the checkpoint: offsets/N written when batch N starts, commits/N when it is committed).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from client import CoordinatorClient  # noqa: E402
from deploy.kafka_local import LocalKafka, free_port  # noqa: E402
from tests.integration.harness import StreamJob  # noqa: E402


class TimedClient(CoordinatorClient):
    """Notes when each response arrives."""

    def __init__(self, *a, **kw):
        self.arrived: dict[int, float] = {}
        super().__init__(*a, **kw)

    def _accept(self, key, value):
        super()._accept(key, value)
        now = time.monotonic()
        with self._lock:
            for cid in self._responses.keys() - self.arrived.keys():
                self.arrived[cid] = now


def commit_body(group: str, partitions: int, offset: int, member: str = "", epoch: int = -1) -> dict:
    return {
        "groupId": group,
        "generationIdOrMemberEpoch": epoch,
        "memberId": member,
        "groupInstanceId": None,
        "topics": [
            {
                "name": "orders",
                "partitions": [
                    {
                        "partitionIndex": p,
                        "committedOffset": offset + p,
                        "committedLeaderEpoch": -1,
                        "committedMetadata": "",
                    }
                    for p in range(partitions)
                ],
            }
        ],
    }


def load_groups(job: StreamJob, groups: int, offsets: int) -> float:
    """Commit offsets for `groups` simple groups, in bulk; returns seconds until all are applied."""
    client = job.client("bench-loader")
    t0 = time.monotonic()
    try:
        for i in range(groups):
            client.send("OffsetCommit", 9, commit_body(f"loaded-group-{i}", offsets, 1000), flush=False)
            if i % 5000 == 4999:
                client.flush()
        client.flush()
        job.wait_caught_up(timeout=3600)
        return time.monotonic() - t0
    finally:
        client.close()


def batch_durations(checkpoint: Path, since: float, until: float) -> list[float]:
    """Durations (ms) of the micro-batches committed in [since, until] (wall-clock seconds)."""
    out = []
    for commit in (checkpoint / "commits").glob("[0-9]*"):
        started = checkpoint / "offsets" / commit.name
        end = commit.stat().st_mtime
        if since <= end <= until and started.exists():
            out.append((end - started.stat().st_mtime) * 1000)
    return out


def steady_load(job: StreamJob, members: int, offsets: int, seconds: float) -> dict:
    client = TimedClient(
        job.bootstrap, "bench-steady", requests_topic=job.topics["requests"], responses_topic=job.topics["responses"]
    )
    try:
        # Join all members at once (one by one, the first ones' sessions could expire before the
        # last one joined when batches are slow).
        joins = {
            f"steady-group-{m}": client.send(
                "ConsumerGroupHeartbeat",
                1,
                {
                    "groupId": f"steady-group-{m}",
                    "memberId": f"member-{m}",
                    "memberEpoch": 0,
                    "rebalanceTimeoutMs": 60000,
                    "subscribedTopicNames": ["orders"],
                    "topicPartitions": [],
                },
                flush=False,
            )
            for m in range(members)
        }
        client.flush()
        epochs = {}
        for group, cid in joins.items():
            resp = client.wait(cid, timeout=120)["response"]
            assert resp["errorCode"] == 0, resp
            epochs[group] = resp["memberEpoch"]
        sent: dict[int, float] = {}
        errors: dict[str, int] = {}  # "api:errorCode" -> count
        start_wall, t_end = time.time(), time.monotonic() + seconds
        round_no = 0
        while time.monotonic() < t_end:
            t_round = time.monotonic()
            round_no += 1
            cids = []
            for m in range(members):
                group = f"steady-group-{m}"
                cids.append(
                    client.send(
                        "ConsumerGroupHeartbeat",
                        1,
                        {"groupId": group, "memberId": f"member-{m}", "memberEpoch": epochs[group]},
                        flush=False,
                    )
                )
                cids.append(
                    client.send(
                        "OffsetCommit",
                        9,
                        commit_body(group, offsets, round_no * 100, member=f"member-{m}", epoch=epochs[group]),
                        flush=False,
                    )
                )
            client.flush()
            now = time.monotonic()
            sent.update((cid, now) for cid in cids)
            for n, cid in enumerate(cids):
                envelope = client.wait(cid, timeout=120)
                resp = envelope["response"]
                codes = [resp.get("errorCode", 0)] + [
                    p["errorCode"] for t in resp.get("topics", []) for p in t["partitions"]
                ]
                code = next((c for c in codes if c), 0)
                if code:
                    name = f"{envelope['apiKey']}:{code}"
                    errors[name] = errors.get(name, 0) + 1
                elif resp.get("memberEpoch") is not None:
                    epochs[f"steady-group-{n // 2}"] = resp["memberEpoch"]
            time.sleep(max(0.0, 1.0 - (time.monotonic() - t_round)))
        end_wall = time.time()
        rtts = [(client.arrived[c] - t) * 1000 for c, t in sent.items() if c in client.arrived]
        durations = batch_durations(Path(job.cfg.checkpoint), start_wall, end_wall)
        return {
            "rtt_p50": statistics.median(rtts),
            "rtt_p99": sorted(rtts)[int(0.99 * (len(rtts) - 1))],
            "batch_p50": statistics.median(durations),
            "batches": len(durations),
            "requests": len(rtts),
            "errors": errors,
        }
    finally:
        client.close()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--groups", type=int, default=100_000)
    ap.add_argument("--offsets-per-group", type=int, default=10)
    ap.add_argument("--members", type=int, default=20)
    ap.add_argument("--seconds", type=float, default=60)
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-state-e2e-"))
    broker = LocalKafka(work / "kafka", free_port(), free_port()).start()
    results, load_s = {}, None
    try:
        for mode in ("empty", "loaded"):
            job = StreamJob(broker.bootstrap, work / mode, f"bench-{mode}").start()
            try:
                if mode == "loaded":
                    load_s = load_groups(job, args.groups, args.offsets_per_group)
                    print(f"loaded {args.groups} groups in {load_s:.0f}s", file=sys.stderr, flush=True)
                results[mode] = steady_load(job, args.members, args.offsets_per_group, args.seconds)
                print(mode, results[mode], file=sys.stderr, flush=True)
            finally:
                job.stop()
    finally:
        broker.stop(timeout=3)
    empty, loaded = results["empty"], results["loaded"]
    print(
        f"\nsteady load: {args.members} KIP-848 members, each a heartbeat and a commit of "
        f"{args.offsets_per_group} offsets per second, for {args.seconds:.0f}s; loaded job: {args.groups} groups "
        f"x {args.offsets_per_group} offsets over all coordinator partitions (loaded in {load_s:.0f}s)"
    )
    print(f"{'':28}{'empty':>10}{'loaded':>10}{'ratio':>8}")
    for name, key in (
        ("micro-batch p50 (ms)", "batch_p50"),
        ("round trip p50 (ms)", "rtt_p50"),
        ("round trip p99 (ms)", "rtt_p99"),
    ):
        print(f"{name:28}{empty[key]:10.0f}{loaded[key]:10.0f}{loaded[key] / empty[key]:8.2f}")
    print(
        f"batches measured: {empty['batches']} / {loaded['batches']}; requests: {empty['requests']} / "
        f"{loaded['requests']}; error responses (api:code): {empty['errors']} / {loaded['errors']}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
