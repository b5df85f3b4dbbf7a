"""The share coordinator's state APIs through the real coordinator (envelope, schema, run_batch,
chunked state between requests), ported from Kafka's ShareCoordinatorShardTest (one test here per
test there, named after it) and the routing of ShareCoordinatorService / KafkaApis.findCoordinator."""

from __future__ import annotations

import pytest

from coordinator import CoordinatorPartition
from coordinator.errors import Errors
from coordinator.metadata import BROADCAST_KEY
from coordinator.records import record_key
from coordinator.share.keys import share_partition_key
from tests.consumer.consumer_group_helpers import topic_id
from tests.core_driver import CoreDriver

GROUP_ID, PARTITION = "group1", 0
TOPIC = "topic1"
TOPIC_ID = topic_id(TOPIC)
KEY = share_partition_key(GROUP_ID, TOPIC_ID, PARTITION)


class Shard:
    """A coordinator partition owning KEY, spoken to with the share-state APIs."""

    def __init__(self, topics: dict | None = None, **overrides):
        # One coordinator partition by default: every share-partition key is this shard's, as in
        # ShareCoordinatorShardTest (routing is tested on its own below).
        overrides.setdefault("coordinator_partitions", 1)
        self.d = CoreDriver(KEY, **overrides)
        if topics is not False:
            states = [
                {"topicName": t, "topicId": topic_id(t), "numPartitions": n} for t, n in (topics or {TOPIC: 3}).items()
            ]
            self.d.send("UpdateMetadata", 0, {"topicStates": states}, key=BROADCAST_KEY)

    def call(
        self, api: str, partitions: list[dict], group_id: str = GROUP_ID, tid: str = TOPIC_ID, version: int = 0
    ) -> dict:
        body = {"groupId": group_id, "topics": [{"topicId": tid, "partitions": partitions}]}
        return self.d.send(api, version, body, key=share_partition_key(group_id, tid, partitions[0]["partition"]))

    def one(self, api: str, group_id: str = GROUP_ID, tid: str = TOPIC_ID, version: int = 0, **partition) -> dict:
        partition.setdefault("partition", PARTITION)
        [result] = self.call(api, [partition], group_id, tid, version)["results"]
        [p] = result["partitions"]
        return p

    def initialize(self, state_epoch: int = 0, start_offset: int = 0, **kw) -> dict:
        return self.one("InitializeShareGroupState", stateEpoch=state_epoch, startOffset=start_offset, **kw)

    def write(self, *, state_epoch=0, leader_epoch=0, start_offset=0, batches=(), **kw) -> dict:
        return self.one(
            "WriteShareGroupState",
            stateEpoch=state_epoch,
            leaderEpoch=leader_epoch,
            startOffset=start_offset,
            stateBatches=[batch(*b) for b in batches],
            **kw,
        )

    def read(self, leader_epoch=0, **kw) -> dict:
        return self.one("ReadShareGroupState", leaderEpoch=leader_epoch, **kw)

    def summary(self, leader_epoch=0, **kw) -> dict:
        return self.one("ReadShareGroupStateSummary", leaderEpoch=leader_epoch, **kw)

    def delete(self, **kw) -> dict:
        return self.one("DeleteShareGroupState", **kw)

    def state(self, key: str = KEY) -> dict | None:
        return self.d.component("share").states.get(key)

    def records(self, since: int = 0):
        return self.d.records[since:]

    def rebuilt(self, records=None) -> CoordinatorPartition:
        recs = self.d.records if records is None else records
        return self.d.rebuilt(recs)


def batch(first, last, state, count) -> dict:
    return {"firstOffset": first, "lastOffset": last, "deliveryState": state, "deliveryCount": count}


def keys(records):
    return [k for k, _ in records]


@pytest.fixture
def shard():
    return Shard()


def test_write_fails_on_uninitialized_partition(shard):
    """testWriteFailsOnUninitializedPartition."""
    p = shard.write(batches=[(0, 10, 0, 1)])
    assert (p["errorCode"], p["errorMessage"]) == (
        Errors.INVALID_REQUEST.code,
        "Write operation on uninitialized share partition not allowed.",
    )
    assert not [k for k in keys(shard.records()) if k.startswith('["Share')]


def test_write_state_success(shard):
    """testWriteStateSuccess: an update record with the same snapshot epoch."""
    shard.initialize()
    start = len(shard.records())
    assert shard.write(batches=[(0, 10, 0, 1)]) == {"partition": 0, "errorCode": 0, "errorMessage": None}
    [(key, value)] = shard.records(start)
    assert key == record_key("ShareUpdate", GROUP_ID, TOPIC_ID, PARTITION, 0)
    assert value == {
        "type": "ShareUpdate",
        "snapshotEpoch": 0,
        "leaderEpoch": 0,
        "startOffset": 0,
        "deliveryCompleteCount": 0,  # a v0 write (count -1) at the same start offset keeps the state's
        "stateBatches": [batch(0, 10, 0, 1)],
    }
    state = shard.state()
    assert state["leaderEpoch"] == 0
    assert state["offset"]["stateBatches"] == [batch(0, 10, 0, 1)]


def test_write_state_sequential_requests_with_higher_state_epoch_are_updates(shard):
    """Kafka 4.4.0's generateShareStateRecord (4.1.1's testWriteStateSequentialRequestsWithHigher
    StateEpochCreateShareSnapshots no longer holds): a higher state epoch in a write neither makes a
    snapshot nor changes the state epoch (only initialization sets it)."""
    shard.initialize(state_epoch=1)
    start = len(shard.records())
    shard.write(state_epoch=1, batches=[(0, 10, 0, 1)])
    shard.write(state_epoch=1, batches=[(11, 12, 0, 1)])
    assert shard.write(state_epoch=2, batches=[(13, 14, 0, 1)])["errorCode"] == 0
    kinds = [k.split(",")[0] for k in keys(shard.records(start))]
    assert kinds == ['["ShareUpdate"', '["ShareUpdate"', '["ShareUpdate"']
    assert shard.state()["stateEpoch"] == 1 and shard.state()["offset"]["stateEpoch"] == 1
    assert shard.state()["offset"]["stateBatches"] == [batch(0, 14, 0, 1)]  # contiguous, same state: combined
    assert shard.read()["stateEpoch"] == 1
    # The state epoch 1 is still not fenced, and initialization moves it.
    assert shard.write(state_epoch=1, batches=[])["errorCode"] == 0
    shard.initialize(state_epoch=2, start_offset=20)
    assert shard.write(state_epoch=1, batches=[])["errorCode"] == Errors.FENCED_STATE_EPOCH.code


def test_subsequent_write_state_snapshot_epoch_updates_successfully():
    """testSubsequentWriteStateSnapshotEpochUpdatesSuccessfully: with 0 updates per snapshot every
    write is a snapshot with the next snapshot epoch."""
    shard = Shard(share_coordinator_snapshot_update_records_per_snapshot=0)
    shard.initialize()
    shard.write(batches=[(0, 10, 0, 1)])
    shard.write(batches=[(11, 12, 0, 1)])
    offset = shard.state()["offset"]
    assert offset["snapshotEpoch"] == 2
    assert offset["stateBatches"] == [batch(0, 12, 0, 1)]


def test_write_state_invalid_request_data(shard):
    """testWriteStateInvalidRequestData: a negative partition, a null (zero) topic id, and (Kafka
    4.4.0's maybeGetWriteStateError, checked before the state exists) a negative leader or state
    epoch: 4.1.1 took -1 for "unchanged"."""
    p = shard.write(partition=-1, batches=[(0, 10, 0, 1)])
    assert (p["errorCode"], p["errorMessage"]) == (
        Errors.INVALID_REQUEST.code,
        "The partition id cannot be a negative number.",
    )
    # The zero id is no null over the wire (the differential test: Kafka 4.4.0 answers it as any id).
    assert (
        shard.write(tid="AAAAAAAAAAAAAAAAAAAAAA")["errorMessage"]
        == "Write operation on uninitialized share partition not allowed."
    )
    for kw, message in (
        ({"leader_epoch": -1}, "The leader epoch cannot be a negative number."),
        ({"state_epoch": -1}, "The state epoch cannot be a negative number."),
        ({"leader_epoch": -2, "state_epoch": -1}, "The leader epoch cannot be a negative number."),
    ):
        for initialized in (False, True):
            if initialized:
                shard.initialize()
            start = len(shard.records())
            p = shard.write(batches=[(0, 10, 0, 1)], **kw)
            assert (p["errorCode"], p["errorMessage"]) == (Errors.INVALID_REQUEST.code, message)
            assert shard.records(start) == []


def test_write_state_fenced_leader_epoch_error(shard):
    """testWriteStateFencedLeaderEpochError: the leader epoch a read recorded (Kafka 4.4.0: a write
    does not record one) fences older writers."""
    shard.initialize()
    assert shard.read(leader_epoch=5)["errorCode"] == Errors.NONE.code
    assert shard.write(leader_epoch=5, batches=[(0, 10, 0, 1)])["errorCode"] == Errors.NONE.code
    p = shard.write(leader_epoch=3, batches=[(11, 12, 0, 1)])
    assert (p["errorCode"], p["errorMessage"]) == (
        Errors.FENCED_LEADER_EPOCH.code,
        "The leader epoch in the request is older than the epoch on the broker.",
    )
    assert shard.state()["leaderEpoch"] == 5


def test_write_state_fenced_state_epoch_error(shard):
    """testWriteStateFencedStateEpochError."""
    shard.initialize(state_epoch=5)
    p = shard.write(state_epoch=3, batches=[(0, 10, 0, 1)])
    assert p["errorCode"] == Errors.FENCED_STATE_EPOCH.code


def test_write_unknown_topic_or_partition():
    """testWriteNullMetadataImage's metadata check: an unknown topic or partition (once the
    coordinator has metadata)."""
    shard = Shard()
    shard.initialize()
    assert shard.write(partition=7, batches=[])["errorCode"] == Errors.INVALID_REQUEST.code  # uninitialized first
    assert shard.initialize(partition=7)["errorCode"] == Errors.UNKNOWN_TOPIC_OR_PARTITION.code
    assert shard.initialize(tid=topic_id("nope"))["errorCode"] == Errors.UNKNOWN_TOPIC_OR_PARTITION.code


def test_read_fails_on_uninitialized_partition(shard):
    """testReadFailsOnUninitializedPartition."""
    p = shard.read()
    assert (p["errorCode"], p["errorMessage"]) == (
        Errors.INVALID_REQUEST.code,
        "Read operation on uninitialized share partition not allowed.",
    )


def test_read_state_success(shard):
    """testReadStateSuccess."""
    shard.initialize()
    shard.write(batches=[(0, 10, 0, 1)])
    assert shard.read() == {
        "partition": 0,
        "errorCode": 0,
        "errorMessage": None,
        "stateEpoch": 0,
        "startOffset": 0,
        "stateBatches": [batch(0, 10, 0, 1)],
    }


def test_read_state_summary_success(shard):
    """testReadStateSummarySuccess, and a share-partition without state (PartitionFactory's defaults)."""
    assert shard.summary() == {
        "partition": 0,
        "errorCode": 0,
        "errorMessage": None,
        "stateEpoch": 0,
        "leaderEpoch": 0,
        "startOffset": -1,
    }
    shard.initialize(state_epoch=2, start_offset=5)
    shard.read(leader_epoch=3)
    shard.write(state_epoch=2, leader_epoch=3, start_offset=7, batches=[(7, 10, 0, 1)])
    assert shard.summary() == {
        "partition": 0,
        "errorCode": 0,
        "errorMessage": None,
        "stateEpoch": 2,
        "leaderEpoch": 3,
        "startOffset": 7,
    }


def test_read_state_invalid_request_data(shard):
    """testReadStateInvalidRequestData / testReadStateSummaryInvalidRequestData; a read with a
    negative leader epoch is INVALID_REQUEST (Kafka 4.4.0's maybeGetReadStateError; 4.1.1 read
    without recording one), a summary's leader epoch is not checked."""
    assert shard.read(partition=-1)["errorCode"] == Errors.INVALID_REQUEST.code
    assert shard.summary(partition=-1)["errorCode"] == Errors.INVALID_REQUEST.code
    for initialized in (False, True):
        if initialized:
            shard.initialize()
        start = len(shard.records())
        p = shard.read(leader_epoch=-1)
        assert (p["errorCode"], p["errorMessage"]) == (
            Errors.INVALID_REQUEST.code,
            "The leader epoch cannot be a negative number.",
        )
        assert shard.records(start) == []
    assert shard.summary(leader_epoch=-1)["errorCode"] == Errors.NONE.code


def test_read_state_fenced_leader_epoch_error(shard):
    """testReadStateFencedLeaderEpochError."""
    shard.initialize()
    shard.read(leader_epoch=5)
    shard.write(leader_epoch=5, batches=[(0, 10, 0, 1)])
    assert shard.read(leader_epoch=3)["errorCode"] == Errors.FENCED_LEADER_EPOCH.code


def test_non_sequential_batch_updates():
    """testNonSequentialBatchUpdates: moving the start offset keeps batch 2."""
    shard = Shard(share_coordinator_snapshot_update_records_per_snapshot=0)
    shard.initialize()
    shard.write(start_offset=100, batches=[(100, 109, 1, 1), (110, 119, 1, 2), (120, 129, 1, 0)])
    shard.write(start_offset=-1, batches=[(100, 109, 2, 1)])
    start = len(shard.records())
    shard.write(start_offset=110, batches=[(120, 129, 2, 1)])
    [(_, snapshot)] = shard.records(start)
    assert snapshot["snapshotEpoch"] == 3 and snapshot["startOffset"] == 110
    assert snapshot["stateBatches"] == [batch(110, 119, 1, 2), batch(120, 129, 2, 1)]


def test_read_state_leader_epoch_update_success(shard):
    """testReadStateLeaderEpochUpdateSuccess: a read with a new leader epoch records it."""
    shard.initialize()
    start = len(shard.records())
    p = shard.read(leader_epoch=2)
    assert (p["errorCode"], p["startOffset"], p["stateEpoch"]) == (0, 0, 0)
    [(key, value)] = shard.records(start)
    assert key.startswith('["ShareUpdate"') and value["leaderEpoch"] == 2 and value["stateBatches"] == []
    assert shard.state()["leaderEpoch"] == 2


def test_read_state_leader_epoch_update_no_update(shard):
    """testReadStateLeaderEpochUpdateNoUpdate: the same leader epoch writes nothing."""
    shard.initialize()
    shard.read(leader_epoch=2)
    start = len(shard.records())
    shard.read(leader_epoch=2)
    assert shard.records(start) == []


def test_delete_state_success(shard):
    """testDeleteStateSuccess: tombstones for the update slots, then the snapshot."""
    shard.initialize()
    shard.write(batches=[(0, 10, 0, 1)])
    shard.write(batches=[(11, 20, 0, 1)])
    start = len(shard.records())
    assert shard.delete() == {"partition": 0, "errorCode": 0, "errorMessage": None}
    assert shard.records(start) == [
        (record_key("ShareUpdate", GROUP_ID, TOPIC_ID, PARTITION, 0), None),
        (record_key("ShareUpdate", GROUP_ID, TOPIC_ID, PARTITION, 1), None),
        (record_key("ShareSnapshot", GROUP_ID, TOPIC_ID, PARTITION), None),
    ]
    assert shard.state() is None
    assert shard.read()["errorCode"] == Errors.INVALID_REQUEST.code


def test_delete_state_uninitialized_record(shard):
    """testDeleteStateUnintializedRecord: nothing to delete, no error, no record."""
    start = len(shard.records())
    assert shard.delete()["errorCode"] == Errors.NONE.code
    assert shard.records(start) == []


def test_delete_state_invalid_request_data(shard):
    """testDeleteStateInvalidRequestData / testDeleteTopicIdNonExistentInMetadataImage /
    testDeletePartitionIdNonExistentInMetadataImage."""
    assert shard.delete(partition=-1)["errorCode"] == Errors.INVALID_REQUEST.code
    assert shard.delete(tid=topic_id("nope"))["errorCode"] == Errors.UNKNOWN_TOPIC_OR_PARTITION.code
    assert shard.delete(partition=5)["errorCode"] == Errors.UNKNOWN_TOPIC_OR_PARTITION.code


def test_initialize_state_success(shard):
    """testInitializeStateSuccess: a snapshot with snapshot epoch 0, leader epoch 0, no batches."""
    start = len(shard.records())
    assert shard.initialize(state_epoch=0, start_offset=10) == {"partition": 0, "errorCode": 0, "errorMessage": None}
    [(key, value)] = shard.records(start)
    assert key == record_key("ShareSnapshot", GROUP_ID, TOPIC_ID, PARTITION)
    assert value == {
        "type": "ShareSnapshot",
        "snapshotEpoch": 0,
        "stateEpoch": 0,
        "leaderEpoch": 0,
        "startOffset": 10,
        "deliveryCompleteCount": 0,  # ShareGroupOffset.fromRequest: a known start offset counts from 0
        "createTimestamp": shard.d.now,
        "writeTimestamp": shard.d.now,
        "stateBatches": [],
    }
    # Initializing again is a fresh start, with the next snapshot epoch.
    shard.write(batches=[(10, 20, 0, 1)])
    shard.initialize(state_epoch=1, start_offset=30)
    offset = shard.state()["offset"]
    assert (offset["snapshotEpoch"], offset["startOffset"], offset["stateBatches"]) == (1, 30, [])


def test_initialize_state_invalid_request_data(shard):
    """testInitializeStateInvalidRequestData / ...TopicIdNonExistentInMetadataImage /
    ...PartitionIdNonExistentInMetadataImage, and a fenced state epoch."""
    assert shard.initialize(partition=-1)["errorCode"] == Errors.INVALID_REQUEST.code
    zero = shard.initialize(tid="AAAAAAAAAAAAAAAAAAAAAA")  # no null over the wire: an unknown topic
    assert (zero["errorCode"], zero["errorMessage"]) == (
        Errors.UNKNOWN_TOPIC_OR_PARTITION.code,
        "This server does not host this topic-partition.",
    )
    assert shard.initialize(partition=3)["errorCode"] == Errors.UNKNOWN_TOPIC_OR_PARTITION.code
    shard.initialize(state_epoch=5)
    fenced = shard.initialize(state_epoch=4)
    assert (fenced["errorCode"], fenced["errorMessage"]) == (
        Errors.FENCED_STATE_EPOCH.code,
        "The coordinator rejected the request because the state epoch did not match.",  # Kafka 4.4.0's
    )
    # Kafka 4.4.0's maybeGetInitializeStateError: a negative state epoch.
    p = shard.initialize(state_epoch=-1)
    assert (p["errorCode"], p["errorMessage"]) == (
        Errors.INVALID_REQUEST.code,
        "The state epoch cannot be a negative number.",
    )


def test_replay_with_share_snapshot_and_updates(shard):
    """testReplayWithShareSnapshot: the state rebuilt from the log is the live one, also after the
    log is compacted (latest value per key, in log order)."""
    shard.initialize()
    for i in range(6):
        shard.write(leader_epoch=i, batches=[(i * 10, i * 10 + 9, 2, 1)])
    live = shard.state()
    rebuilt = shard.rebuilt().component("share").states[KEY]
    assert rebuilt["offset"] == live["offset"] and rebuilt["leaderEpoch"] == live["leaderEpoch"]
    compacted = {}
    for k, v in shard.records():
        compacted.pop(k, None)
        compacted[k] = v
    assert shard.rebuilt(list(compacted.items())).component("share").states[KEY]["offset"] == live["offset"]


def test_replay_after_compaction_with_snapshot_cycles():
    """Update slots are reused after each snapshot; compaction keeps the latest value per slot, and
    the stale ones precede the latest snapshot, so the rebuilt state is still the live one."""
    shard = Shard(share_coordinator_snapshot_update_records_per_snapshot=3)
    shard.initialize()
    for i in range(11):
        shard.write(start_offset=i, batches=[(i * 10, i * 10 + 4, 2, 1), (i * 10 + 5, i * 10 + 9, 0, i % 3)])
    live = shard.state()["offset"]
    compacted: dict = {}
    for k, v in shard.records():
        compacted.pop(k, None)
        compacted[k] = v
    assert shard.rebuilt(list(compacted.items())).component("share").states[KEY]["offset"] == live
    # Deleted: nothing of it comes back from the compacted log (the slots have tombstones).
    shard.delete()
    compacted = {}
    for k, v in shard.records():
        compacted.pop(k, None)
        compacted[k] = v
    assert KEY not in shard.rebuilt([(k, v) for k, v in compacted.items() if v is not None]).component("share").states


def test_not_coordinator_for_another_partitions_share_partition():
    """ShareCoordinatorService routes each share-partition to its own shard: here a partition owned
    by another coordinator partition is answered NOT_COORDINATOR, the others are served."""
    shard = Shard(coordinator_partitions=50)
    other = next(p for p in range(1, 200) if not shard.d.partition.owns(share_partition_key(GROUP_ID, TOPIC_ID, p)))
    shard.initialize()
    body = {
        "groupId": GROUP_ID,
        "topics": [
            {
                "topicId": TOPIC_ID,
                "partitions": [{"partition": 0, "leaderEpoch": 0}, {"partition": other, "leaderEpoch": 0}],
            }
        ],
    }
    resp = shard.d.send("ReadShareGroupState", 0, body, key=KEY)
    assert [p["errorCode"] for p in resp["results"][0]["partitions"]] == [0, Errors.NOT_COORDINATOR.code]


def test_empty_requests_are_answered_empty(shard):
    """ShareCoordinatorService: no topics, a topic without partitions, or an empty group id."""
    for body in (
        {"groupId": GROUP_ID, "topics": []},
        {"groupId": GROUP_ID, "topics": [{"topicId": TOPIC_ID, "partitions": []}]},
        {"groupId": "", "topics": [{"topicId": TOPIC_ID, "partitions": [{"partition": 0, "leaderEpoch": 0}]}]},
    ):
        assert shard.d.send("ReadShareGroupState", 0, body, key=KEY) == {"results": []}


def test_find_coordinator_share_key_type():
    """KafkaApis.getCoordinator for keyType 2 (SHARE): v6+, key `groupId:topicId:partition`."""
    from coordinator.routing import coordinator_partition

    d = CoreDriver(KEY)
    resp = d.send("FindCoordinator", 6, {"keyType": 2, "coordinatorKeys": [KEY, "bad-key"]}, key=KEY)
    good, bad = resp["coordinators"]
    assert (good["errorCode"], good["nodeId"]) == (0, coordinator_partition(KEY, d.config["coordinator.partitions"]))
    assert (bad["errorCode"], bad["nodeId"]) == (Errors.INVALID_REQUEST.code, -1)
    resp = d.send("FindCoordinator", 5, {"keyType": 2, "coordinatorKeys": [KEY]}, key=KEY)
    assert resp["coordinators"][0]["errorCode"] == Errors.INVALID_REQUEST.code


# ====================================================================== KIP-1226: deliveryCompleteCount
def test_write_state_v1_records_the_delivery_complete_count():
    """WriteShareGroupState v1 / ReadShareGroupStateSummary v1 (KIP-1226), as Kafka 4.4.0's
    generateShareStateRecord counts: at the same start offset the larger count, below it (or -1,
    unchanged) the state's, above it the write's; in the update and snapshot records alike."""
    shard = Shard(share_coordinator_snapshot_update_records_per_snapshot=1)
    assert shard.summary(version=1)["deliveryCompleteCount"] == -1  # no state: PartitionFactory's default
    shard.initialize(start_offset=0)
    assert shard.summary(version=1)["deliveryCompleteCount"] == 0
    start = len(shard.records())
    for count, first in ((7, 0), (8, 11), (9, 13)):
        assert shard.write(version=1, deliveryCompleteCount=count, batches=[(first, first + 1, 2, 1)])["errorCode"] == 0
    written = shard.records(start)
    assert [(k.split(",")[0], v["deliveryCompleteCount"]) for k, v in written] == [
        ('["ShareUpdate"', 7),
        ('["ShareSnapshot"', 8),  # the cycle's one update used up
        ('["ShareUpdate"', 9),
    ]
    p = shard.summary(version=1)
    assert (p["startOffset"], p["leaderEpoch"], p["deliveryCompleteCount"]) == (0, 0, 9)
    assert "deliveryCompleteCount" not in shard.summary(version=0)  # v0 has no such field

    def count_after(**write) -> int:
        assert shard.write(**write)["errorCode"] == 0
        return shard.summary(version=1)["deliveryCompleteCount"]

    assert count_after(batches=[(15, 16, 2, 1)]) == 9  # v0 (-1) at the same start offset
    assert count_after(version=1, deliveryCompleteCount=4) == 9  # the larger at the same start offset
    assert count_after(version=1, start_offset=5, deliveryCompleteCount=2) == 2  # a new start offset
    assert count_after(version=1, start_offset=-1, deliveryCompleteCount=100) == 2  # start unchanged
    assert count_after(version=1, start_offset=3, deliveryCompleteCount=100) == 2  # below it: unchanged too
    # The state rebuilt from the log has the same count.
    rebuilt = shard.rebuilt().component("share").states.get(KEY)
    assert rebuilt["offset"]["deliveryCompleteCount"] == 2 == shard.state()["offset"]["deliveryCompleteCount"]


def test_initialize_and_leader_epoch_update_keep_the_delivery_complete_count():
    """ShareGroupOffset.fromRequest(Initialize...): -1 for an unknown start offset, 0 for a known one;
    readStateAndMaybeUpdateLeaderEpoch writes the count the state has."""
    shard = Shard()
    shard.initialize(start_offset=-1)
    assert shard.summary(version=1)["deliveryCompleteCount"] == -1
    shard.initialize(state_epoch=1, start_offset=5)
    shard.write(version=1, state_epoch=1, start_offset=5, deliveryCompleteCount=3)
    start = len(shard.records())
    shard.read(leader_epoch=4)
    [(_, value)] = shard.records(start)
    assert value["leaderEpoch"] == 4 and value["deliveryCompleteCount"] == 3
    assert shard.summary(version=1, leader_epoch=4)["deliveryCompleteCount"] == 3


def test_a_share_state_written_before_kip_1226_loads():
    """A checkpointed state and state-log records from before the field (no deliveryCompleteCount
    anywhere) load and replay; the count reads -1, the records' tagged default."""
    import state

    shard = Shard()
    shard.initialize(start_offset=0)
    shard.write(batches=[(0, 10, 0, 1)])
    snapshot = shard.d.partition.to_json()
    for entry in snapshot["components"]["share"]["states"].values():
        del entry["offset"]["deliveryCompleteCount"]
    loaded = state.StoredState(*state.encode(snapshot)).load(shard.d.partition_id, shard.d.partition.config)
    offset = loaded.component("share").share_partition_state(GROUP_ID, TOPIC_ID, PARTITION)
    assert "deliveryCompleteCount" not in offset and offset["startOffset"] == 0
    old_records = [
        (k, {n: v for n, v in value.items() if n != "deliveryCompleteCount"} if value else value)
        for k, value in shard.records()
    ]
    replayed = shard.rebuilt(old_records).component("share").states.get(KEY)
    assert replayed["offset"]["deliveryCompleteCount"] == -1
    # The loaded state serves v1 and takes v1 writes.
    shard.d._continue_with(loaded)  # the next batches start from the old state
    assert shard.summary(version=1)["deliveryCompleteCount"] == -1
    assert shard.write(version=1, deliveryCompleteCount=11, batches=[(11, 12, 2, 1)])["errorCode"] == 0
    assert shard.summary(version=1)["deliveryCompleteCount"] == 11


# ====================================================================== Kafka 4.4.0's write rules
def test_write_state_start_offset_never_moves_back(shard):
    """Kafka 4.4.0's generateShareStateRecord: the written start offset is the larger of the write's
    and the state's (4.1.1 took the write's), in an update and in a snapshot alike; batches below it
    are dropped."""
    shard.initialize(start_offset=0)
    shard.write(start_offset=10, batches=[(10, 19, 0, 1)])
    start = len(shard.records())
    shard.write(start_offset=5, batches=[(5, 12, 2, 2), (20, 25, 0, 1)])
    [(_, update)] = shard.records(start)
    assert update["startOffset"] == 10 and update["stateBatches"] == [batch(10, 12, 2, 2), batch(20, 25, 0, 1)]
    p = shard.read()
    assert p["startOffset"] == 10
    assert p["stateBatches"] == [batch(10, 12, 2, 2), batch(13, 25, 0, 1)]  # contiguous, equal: joined
    shard.write(start_offset=-1, batches=[])
    assert shard.read()["startOffset"] == 10
    shard.write(start_offset=13, batches=[])
    assert shard.read()["startOffset"] == 13 and shard.read()["stateBatches"] == [batch(13, 25, 0, 1)]
    # The same in the snapshot that ends a cycle.
    every = Shard(share_coordinator_snapshot_update_records_per_snapshot=0)
    every.initialize(start_offset=30)
    start = len(every.records())
    every.write(start_offset=20, batches=[(20, 40, 0, 1)])
    [(key, snapshot)] = every.records(start)
    assert key.startswith('["ShareSnapshot"') and snapshot["startOffset"] == 30
    assert snapshot["stateBatches"] == [batch(30, 40, 0, 1)]


def test_write_state_does_not_update_leader_epoch(shard):
    """Kafka 4.4.0: a write records the state's leader epoch, not its own (only a read at a new
    leader epoch records that, readStateAndMaybeUpdateLeaderEpoch); so a write with a higher epoch
    does not fence the writers after it."""
    shard.initialize()
    start = len(shard.records())
    assert shard.write(leader_epoch=5, batches=[(0, 10, 0, 1)])["errorCode"] == 0
    [(_, update)] = shard.records(start)
    assert update["leaderEpoch"] == 0
    assert shard.state()["leaderEpoch"] == 0 and shard.summary()["leaderEpoch"] == 0
    assert shard.write(leader_epoch=3, batches=[])["errorCode"] == 0
    assert shard.read(leader_epoch=2)["errorCode"] == 0  # records 2
    assert (shard.state()["leaderEpoch"], shard.summary()["leaderEpoch"]) == (2, 2)
    assert shard.write(leader_epoch=1, batches=[])["errorCode"] == Errors.FENCED_LEADER_EPOCH.code
    # A snapshot written by a write keeps the state's leader epoch too.
    every = Shard(share_coordinator_snapshot_update_records_per_snapshot=0)
    every.initialize()
    every.read(leader_epoch=4)
    every.write(leader_epoch=9, batches=[])
    assert (every.state()["offset"]["leaderEpoch"], every.state()["leaderEpoch"]) == (4, 4)


def test_snapshot_when_the_cycles_updates_are_used_up():
    """Kafka 4.4.0's snapshotUpdateCount: an update adds one (the first makes it 1), a write finding
    it at share.coordinator.snapshot.update.records.per.snapshot writes a snapshot instead, which
    starts it again; an initialization's snapshot does not (it is not at the limit). Replaying the
    log, compacted or not, gives the live state and count."""
    shard = Shard(share_coordinator_snapshot_update_records_per_snapshot=2)
    shard.initialize()
    start = len(shard.records())
    for i in range(6):
        shard.write(start_offset=i, batches=[(i * 10, i * 10 + 9, 0, 1)])
    kinds = [k.split(",")[0].strip('["') for k in keys(shard.records(start))]
    assert kinds == ["ShareUpdate", "ShareUpdate", "ShareSnapshot"] * 2
    assert shard.state()["offset"]["snapshotEpoch"] == 2
    shard.write(batches=[])  # 1 update of the new cycle
    shard.initialize(state_epoch=1, start_offset=100)
    start = len(shard.records())
    shard.write(state_epoch=1, start_offset=100, batches=[])
    shard.write(state_epoch=1, start_offset=100, batches=[])
    assert [k.split(",")[0].strip('["') for k in keys(shard.records(start))] == ["ShareUpdate", "ShareSnapshot"]
    live = shard.state()
    compacted: dict = {}
    for k, v in shard.records():
        compacted.pop(k, None)
        compacted[k] = v
    for records in (None, list(compacted.items())):
        rebuilt = shard.rebuilt(records).component("share").states[KEY]
        assert rebuilt["offset"] == live["offset"] and rebuilt["updates"] == live["updates"] == 0


def test_a_share_state_checkpointed_before_updates_were_counted_loads():
    """A state checkpointed when only the last update's slot was kept (`updateCount`, counting from
    0): its count is the slot + 1, and the next update takes the next slot."""
    import state

    shard = Shard(share_coordinator_snapshot_update_records_per_snapshot=3)
    shard.initialize()
    shard.write(batches=[(0, 1, 0, 1)])
    shard.write(batches=[(2, 3, 0, 1)])
    snapshot = shard.d.partition.to_json()
    [entry] = snapshot["components"]["share"]["states"].values()
    assert (entry.pop("updates"), entry["updateCount"]) == (2, 1)
    loaded = state.StoredState(*state.encode(snapshot)).load(shard.d.partition_id, shard.d.partition.config)
    shard.d._continue_with(loaded)
    start = len(shard.records())
    shard.write(batches=[(4, 5, 0, 1)])
    shard.write(batches=[(6, 7, 0, 1)])
    assert keys(shard.records(start)) == [
        record_key("ShareUpdate", GROUP_ID, TOPIC_ID, PARTITION, 2),
        record_key("ShareSnapshot", GROUP_ID, TOPIC_ID, PARTITION),
    ]
    assert shard.read()["stateBatches"] == [batch(0, 7, 0, 1)]


def test_a_blank_group_id_is_served():
    """ShareCoordinatorService.isGroupIdEmpty: only an empty group id is answered empty."""
    shard = Shard()
    assert shard.initialize(group_id=" ")["errorCode"] == 0
    assert shard.read(group_id=" ")["startOffset"] == 0
