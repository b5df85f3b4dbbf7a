"""Read the coordinator state out of a checkpoint (the job may be stopped or running).

    python -m streaming.inspect_state --checkpoint .run/checkpoint [--partition 12] [--batch N]

Prints one JSON object: coordinator partition -> decoded snapshot (and its Spark timeout). Uses
Spark's `statestore` batch reader, so it needs no running job; for recovery drills and support.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import state as state_codec
from streaming.session import HDFS_PROVIDER, ROCKSDB_PROVIDER


def committed_progress(checkpoint: str) -> tuple[int, dict[str, dict[int, int]], int] | None:
    """(batch id, source end offsets {topic: {partition: offset}}, batch time) of the latest
    committed micro-batch, read from the checkpoint's offset and commit logs; None before the
    first commit."""
    root = Path(checkpoint)
    commits = [int(p.name) for p in (root / "commits").glob("[0-9]*")] if (root / "commits").exists() else []
    if not commits:
        return None
    batch = max(commits)
    lines = (root / "offsets" / str(batch)).read_text().splitlines()
    meta = json.loads(lines[1])
    offsets = {topic: {int(p): o for p, o in parts.items()} for topic, parts in json.loads(lines[2]).items()}
    return batch, offsets, int(meta.get("batchTimestampMs", 0))


def read_states(
    checkpoint: str, *, state_store: str = "rocksdb", batch_id: int | None = None, spark=None
) -> dict[int, dict]:

    own = spark is None
    if own:
        from .session import local_session

        provider = ROCKSDB_PROVIDER if state_store == "rocksdb" else HDFS_PROVIDER
        spark = local_session("inspect-state", **{"spark.sql.streaming.stateStore.providerClass": provider})
    try:
        # Spark 4.2's state stores report to the driver's StateStoreCoordinator, which a session
        # starts with its streaming query manager: without it, a session that never ran a stream
        # fails to load the state (`Cannot find endpoint: ...StateStoreCoordinator`).
        spark.streams  # noqa: B018
        reader = spark.read.format("statestore")
        if batch_id is not None:
            reader = reader.option("batchId", batch_id)
        out: dict[int, dict] = {}
        for row in reader.load(checkpoint).collect():
            gs = row.value.groupState
            if gs is None:
                continue
            snapshot = state_codec.decode(gs.format, bytes(gs.payload))
            if "timeoutTimestamp" in row.value.__fields__:  # a checkpoint without Spark's timeouts has none
                snapshot["sparkTimeoutTimestamp"] = row.value.timeoutTimestamp
            out[int(row.key.cp)] = snapshot
        return out
    finally:
        if own:
            spark.stop()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--checkpoint", required=True)
    ap.add_argument("--partition", type=int)
    ap.add_argument("--batch", type=int, help="batch id (default: the latest committed)")
    ap.add_argument("--state-store", default="rocksdb", choices=["rocksdb", "hdfs"])
    args = ap.parse_args(argv)
    states = read_states(args.checkpoint, state_store=args.state_store, batch_id=args.batch)
    shown: dict[int, dict | None] = dict(states)
    if args.partition is not None:
        shown = {args.partition: states.get(args.partition)}  # null if it has no state
    json.dump({str(k): v for k, v in sorted(shown.items())}, sys.stdout, indent=1, ensure_ascii=False)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
