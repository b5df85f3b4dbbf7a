"""The internal channel's replay guard in the core (coordinator/channel.py): a stamped internal
record older than what its publisher sent before is dropped and reported; metadata never moves
back; publishers that restart (the driver) or whose state was rebuilt (a partition) are not
refused; a partition stamps its own requests deterministically."""

from __future__ import annotations

import json

import state
from coordinator import CoordinatorConfig, CoordinatorPartition, coordinator_partition
from coordinator.batch import InputRecord, run_batch
from coordinator.channel import InternalChannel
from coordinator.envelope import BROADCAST_KEY
from coordinator.routing import key_for_partition

CONFIG = CoordinatorConfig()
OWNER = coordinator_partition(BROADCAST_KEY, 50)


def metadata(topics: dict[str, int], cid: int = 1) -> bytes:
    states = [{"topicName": t, "numPartitions": n} for t, n in topics.items()]
    return json.dumps(
        {
            "apiKey": "UpdateMetadata",
            "apiVersion": 0,
            "correlationId": cid,
            "clientId": "coordinator-metadata-publisher",
            "request": {"topicStates": states},
        }
    ).encode()


class Stored:
    """A partition's stored state between batches, as the stream keeps it."""

    def __init__(self, pid: int):
        self.pid, self.blob = pid, None

    def batch(self, records, batch_time: int = 10_000):
        stored = None if self.blob is None else state.StoredState(*self.blob)

        def load():
            return CoordinatorPartition(self.pid, CONFIG) if stored is None else stored.load(self.pid, CONFIG)

        part, out = run_batch(load, records, batch_time)
        self.blob = state.encode_partition(part)
        return part, out


def broadcast(value: bytes, offset: int, stamp, time_ms: int = 1) -> InputRecord:
    return InputRecord(BROADCAST_KEY, value, time_ms, 0, offset, internal=True, stamp=stamp)


def replays(out) -> list[dict]:
    return [e.body for e in out.events if e.body["event"] == "ReplayedInternalRecord"]


def test_admission_rules():
    c = InternalChannel(CoordinatorPartition(0, CONFIG))
    assert c.admit(None) is None  # nothing stamped seen yet: a previous release's record
    assert c.admit(("metadata-publisher", 1, 0)) is None
    assert c.admit(("metadata-publisher", 1, 0)) is not None  # the same again
    assert c.admit(("metadata-publisher", 1, 5)) is None  # gaps are fine (other partitions' records)
    assert c.admit(("metadata-publisher", 1, 3)) is not None
    assert c.admit(("metadata-publisher", 2, 0)) is None  # a restarted publisher: a new epoch
    assert c.admit(("metadata-publisher", 1, 9)) is not None  # its previous epoch is over
    # Publishers are independent: two coordinator partitions number their requests each.
    assert c.admit(("partition-3", 100, 0)) is None and c.admit(("partition-4", 50, 0)) is None
    assert c.admit(("partition-3", 100, 1)) is None and c.admit(("partition-4", 50, 0)) is not None
    assert c.admit(None) is not None  # unstamped, once stamped records arrive: refused


def test_a_replayed_broadcast_is_dropped_reported_once_and_metadata_stays():
    old, new = metadata({"orders": 3}), metadata({"orders": 3, "payments": 1}, 2)
    owner, other = Stored(OWNER), Stored((OWNER + 1) % 50)
    for s in (owner, other):
        s.batch([broadcast(old, 0, ("metadata-publisher", 1, 0)), broadcast(new, 1, ("metadata-publisher", 1, 1))])
    for s in (owner, other):
        part, out = s.batch([broadcast(old, 2, ("metadata-publisher", 1, 0))], 11_000)
        assert part.component("metadata").topics == {"orders": 3, "payments": 1}
        assert part.component("metadata").exists("payments")
        if s is owner:
            [event] = replays(out)
            assert event["requestOffset"] == 2 and (event["lastEpoch"], event["lastSequence"]) == (1, 1)
        else:
            assert replays(out) == []  # a broadcast reaches every partition; its key's owner reports it


def test_a_replay_inside_one_batch_after_the_newer_record_is_dropped():
    s = Stored(OWNER)
    part, out = s.batch(
        [
            broadcast(metadata({"a": 1}), 0, ("metadata-publisher", 3, 4), time_ms=5),
            broadcast(metadata({"b": 1}), 1, ("metadata-publisher", 3, 2), time_ms=6),
        ]
    )
    assert part.component("metadata").topics == {"a": 1} and len(replays(out)) == 1


def test_a_state_from_before_the_guard_accepts_old_records_until_the_first_stamped_one():
    s = Stored(OWNER)
    s.batch([])  # a state written without the channel's chunk, as the previous release wrote it
    part, out = s.batch([broadcast(metadata({"a": 1}), 0, None)])
    assert part.component("metadata").topics == {"a": 1} and replays(out) == []
    part, out = s.batch([broadcast(metadata({"b": 1}), 1, ("metadata-publisher", 1, 0))])
    assert part.component("metadata").topics == {"b": 1}
    part, out = s.batch([broadcast(metadata({"a": 1}), 2, None)])  # an old record replayed after that
    assert part.component("metadata").topics == {"b": 1} and len(replays(out)) == 1


def _txn_requests(pid: int, producer_id: int = 5000) -> list[InputRecord]:
    """Client requests that make partition `pid`'s transaction coordinator send an internal request
    (AddOffsetsToTxn's notice to the group's partition; the first producer id of partition 5 is
    5000)."""
    txn = key_for_partition(pid, 50, prefix="txn-")
    group = key_for_partition((pid + 1) % 50, 50, prefix="grp-")

    def env(api, version, cid, body):
        return json.dumps(
            {"apiKey": api, "apiVersion": version, "correlationId": cid, "clientId": "c", "request": body}
        ).encode()

    return [
        InputRecord(txn, env("InitProducerId", 4, 1, {"transactionalId": txn, "transactionTimeoutMs": 60000}), 1, 0, 0),
        InputRecord(
            txn,
            env(
                "AddOffsetsToTxn",
                3,
                2,
                {"transactionalId": txn, "producerId": producer_id, "producerEpoch": 0, "groupId": group},
            ),
            2,
            0,
            1,
        ),
    ]


def test_a_partition_stamps_its_requests_deterministically_and_a_rebuilt_one_takes_a_later_epoch():
    pid = 5
    first, again = Stored(pid), Stored(pid)
    _, out = first.batch(_txn_requests(pid), 20_000)
    _, out2 = again.batch(_txn_requests(pid), 20_000)  # a replayed micro-batch: same input, same time
    assert out.requests and [r.stamp for r in out.requests] == [r.stamp for r in out2.requests]
    assert [r.stamp for r in out.requests] == [(f"partition-{pid}", 20_000, i) for i in range(len(out.requests))]
    # A later batch goes on with the sequence; a state rebuilt from nothing starts a later epoch.
    rebuilt = Stored(pid)
    _, out3 = rebuilt.batch(_txn_requests(pid), 30_000)
    assert out3.requests[0].stamp == (f"partition-{pid}", 30_000, 0)
    receiver = InternalChannel(CoordinatorPartition(0, CONFIG))
    assert all(receiver.admit(r.stamp) is None for r in out.requests + out3.requests)
    assert receiver.admit(out.requests[0].stamp) is not None
