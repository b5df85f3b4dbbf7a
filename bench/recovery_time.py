#!/usr/bin/env python3
"""Recovery time: from SIGKILL of the job to its first answer, by state size and backlog.

    .venv/bin/python bench/recovery_time.py [--groups 0,20000] [--backlog 0,4000] [--max-offsets 1000]

One broker; for each state size a fresh job (never two at once: the machine has 2 cores) is loaded
with `groups` simple groups with one committed offset each, then, for each backlog, SIGKILLed (its
whole process group), `backlog` OffsetCommit requests are sent while it is down, a FindCoordinator
probe after them, and the job is restarted on its checkpoint. Measured: kill -> the probe's answer
(what `coordinator-drill` reports as the recovery time), and of that, kill -> the query started
(COORDINATOR-STREAM-STARTED: JVM, Spark session, state store). With `--max-offsets`
(stream.max_offsets_per_trigger) the backlog is read in about backlog / max-offsets micro-batches
(Spark splits each batch's share over the request topic's partitions, so the probe, in one of
them, may come a batch or so earlier).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from deploy.kafka_local import LocalKafka, free_port  # noqa: E402
from tests.integration.harness import StreamJob  # noqa: E402


def commit_body(group: str, offset: int) -> dict:
    return {
        "groupId": group,
        "generationIdOrMemberEpoch": -1,
        "memberId": "",
        "groupInstanceId": None,
        "topics": [
            {
                "name": "orders",
                "partitions": [
                    {
                        "partitionIndex": 0,
                        "committedOffset": offset,
                        "committedLeaderEpoch": -1,
                        "committedMetadata": "",
                    }
                ],
            }
        ],
    }


def send_bulk(client, groups: list[str], offset: int) -> None:
    for i, g in enumerate(groups):
        client.send("OffsetCommit", 9, commit_body(g, offset), key=g, flush=False)
        if i % 5000 == 4999:
            client.flush()
    client.flush()


def measure(job: StreamJob, client, backlog: int, round_: int) -> dict:
    job.wait_caught_up(timeout=1800)
    t_kill = time.monotonic()
    job.kill()
    send_bulk(client, [f"backlog-{round_}-{i}" for i in range(backlog)], round_)
    probe = client.send("FindCoordinator", 4, {"keyType": 0, "coordinatorKeys": ["probe"]}, key="probe")
    mark = job.launch()
    job.wait_for_line(mark, b"COORDINATOR-STREAM-STARTED", timeout=600)
    started = time.monotonic() - t_kill
    client.wait(probe, timeout=1800)
    return {"started_s": started, "first_answer_s": time.monotonic() - t_kill}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--groups", default="0,20000", help="state sizes (groups with a committed offset)")
    ap.add_argument("--backlog", default="0,4000", help="requests sent while the job is down")
    ap.add_argument("--max-offsets", type=int, default=1000, help="stream.max_offsets_per_trigger")
    ap.add_argument("--partitions", type=int, default=10, help="coordinator.partitions")
    args = ap.parse_args()
    sizes = [int(x) for x in args.groups.split(",")]
    backlogs = [int(x) for x in args.backlog.split(",")]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        kafka = LocalKafka(Path(tmp) / "kafka", free_port(), free_port())
        kafka.start()
        try:
            for size in sizes:
                job = StreamJob(
                    kafka.bootstrap,
                    Path(tmp) / f"job-{size}",
                    f"recovery-{size}",
                    stream={"max_offsets_per_trigger": args.max_offsets},
                    coordinator={"coordinator.partitions": args.partitions},
                )
                job.start(timeout=600)
                client = job.client("recovery-bench", startup_timeout=600)
                try:
                    t0 = time.monotonic()
                    send_bulk(client, [f"state-{i}" for i in range(size)], 1)
                    job.wait_caught_up(timeout=3600)
                    print(f"{size} groups loaded in {time.monotonic() - t0:.0f}s", flush=True)
                    for n, backlog in enumerate(backlogs):
                        r = measure(job, client, backlog, n)
                        rows.append((size, backlog, -(-backlog // args.max_offsets), r))
                        print(
                            f"groups {size:>7}  backlog {backlog:>6}  started {r['started_s']:6.1f}s  "
                            f"first answer {r['first_answer_s']:6.1f}s",
                            flush=True,
                        )
                finally:
                    client.close()
                    job.stop()
        finally:
            kafka.stop(timeout=3)
    print(
        f"\nkill -> first answer (coordinator.partitions {args.partitions}, "
        f"max_offsets_per_trigger {args.max_offsets}, RocksDB state store)"
    )
    print("| groups in state | requests sent while down | batches to read (about) | query started | first answer |")
    print("|---:|---:|---:|---:|---:|")
    for size, backlog, batches, r in rows:
        print(f"| {size} | {backlog} | {batches + 1} | {r['started_s']:.1f} s | {r['first_answer_s']:.1f} s |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
