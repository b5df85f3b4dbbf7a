"""DescribeShareGroupOffsets (90): the group's partition reads the share-partition summaries it
owns and asks the other coordinator partitions over the internal channel (coordinator/share/admin.py).
Follows GroupCoordinatorService.describeShareGroupOffsets / describeShareGroupAllOffsets and
GroupCoordinatorServiceTest.testDescribeShareGroupOffsets* (unknown topic: -1 with the zero id; a
failed or missing read: -1)."""

from __future__ import annotations

import json

from coordinator.api import lookup
from coordinator.errors import Errors
from coordinator.group.share.offsets_admin import END_OFFSETS_KEY_PREFIX, END_OFFSETS_QUERY, end_offsets_key
from coordinator.metadata import BROADCAST_KEY, ZERO_UUID
from coordinator.routing import coordinator_partition, key_for_partition
from coordinator.share.keys import share_partition_key
from tests.consumer.consumer_group_helpers import topic_id
from tests.core_driver import CoreDriver

GROUP = "share-g"
TOPIC = "orders"
TID = topic_id(TOPIC)
N = 50


def metadata(d: CoreDriver, partitions: int = 8) -> None:
    d.send(
        "UpdateMetadata",
        0,
        {"topicStates": [{"topicName": TOPIC, "topicId": TID, "numPartitions": partitions}]},
        key=BROADCAST_KEY,
    )


def describe(d: CoreDriver, topics=None, group=GROUP, version: int = 0) -> dict | None:
    return d.send("DescribeShareGroupOffsets", version, {"groups": [{"groupId": group, "topics": topics}]}, key=group)


def init_and_write(d: CoreDriver, partition: int, start: int, leader_epoch: int = 1) -> None:
    """Initialized, then read by a leader at `leader_epoch` (only a read records it, Kafka 4.4.0) and
    written."""
    key = share_partition_key(GROUP, TID, partition)
    d.send(
        "InitializeShareGroupState",
        0,
        {
            "groupId": GROUP,
            "topics": [{"topicId": TID, "partitions": [{"partition": partition, "stateEpoch": 0, "startOffset": 0}]}],
        },
        key=key,
    )
    d.send(
        "ReadShareGroupState",
        0,
        {
            "groupId": GROUP,
            "topics": [{"topicId": TID, "partitions": [{"partition": partition, "leaderEpoch": leader_epoch}]}],
        },
        key=key,
    )
    r = d.send(
        "WriteShareGroupState",
        0,
        {
            "groupId": GROUP,
            "topics": [
                {
                    "topicId": TID,
                    "partitions": [
                        {
                            "partition": partition,
                            "stateEpoch": 0,
                            "leaderEpoch": leader_epoch,
                            "startOffset": start,
                            "stateBatches": [],
                        }
                    ],
                }
            ],
        },
        key=key,
    )
    assert r["results"][0]["partitions"][0]["errorCode"] == 0


def test_describe_share_group_offsets_on_one_partition():
    """All share-partitions on the group's partition: answered at once."""
    d = CoreDriver(GROUP, coordinator_partitions=1)
    metadata(d)
    init_and_write(d, 0, start=5)
    resp = describe(d, [{"topicName": TOPIC, "partitions": [0, 1]}, {"topicName": "missing", "partitions": [0]}])
    [g] = resp["groups"]
    assert g["errorCode"] == 0
    assert g["topics"] == [
        {
            "topicName": TOPIC,
            "topicId": TID,
            "partitions": [
                {"partitionIndex": 0, "startOffset": 5, "leaderEpoch": 1, "errorCode": 0, "errorMessage": None},
                {"partitionIndex": 1, "startOffset": -1, "leaderEpoch": 0, "errorCode": 0, "errorMessage": None},
            ],
        },
        {
            "topicName": "missing",
            "topicId": ZERO_UUID,
            "partitions": [
                {"partitionIndex": 0, "startOffset": -1, "leaderEpoch": 0, "errorCode": 0, "errorMessage": None}
            ],
        },
    ]


def write_complete(d: CoreDriver, partition: int, start: int, complete: int, leader_epoch: int = 1) -> None:
    """InitializeShareGroupState at 0, then a partition leader's WriteShareGroupState v1 (KIP-1226)
    at `start` with its deliveryCompleteCount."""
    init_and_write(d, partition, start=0, leader_epoch=leader_epoch)
    key = share_partition_key(GROUP, TID, partition)
    written = {
        "partition": partition,
        "stateEpoch": 0,
        "leaderEpoch": leader_epoch,
        "startOffset": start,
        "deliveryCompleteCount": complete,
        "stateBatches": [],
    }
    r = d.send(
        "WriteShareGroupState", 1, {"groupId": GROUP, "topics": [{"topicId": TID, "partitions": [written]}]}, key=key
    )
    assert r["results"][0]["partitions"][0]["errorCode"] == 0


def end_offsets_query(d: CoreDriver) -> tuple[str, dict]:
    """The end-offsets query the group's partition sent the driver's responder (its last one)."""
    queries = [(k, e) for k, e in d.internal_requests if e["apiKey"] == END_OFFSETS_QUERY]
    assert queries, d.internal_requests
    return queries[-1]


def answer_end_offsets(d: CoreDriver, query: dict, offsets: dict[tuple[str, int], tuple[int, int]]) -> None:
    """The responder's ShareEndOffsetsAnswer: {(topic, partition): (offset, error code)} of the
    partitions asked (one left out of `offsets` is left out of the answer)."""
    body = query["request"]
    topics = [
        {
            "topicName": t["topicName"],
            "partitions": [
                {
                    "partitionIndex": p,
                    "offset": offsets[(t["topicName"], p)][0],
                    "errorCode": offsets[(t["topicName"], p)][1],
                }
                for p in t["partitions"]
                if (t["topicName"], p) in offsets
            ],
        }
        for t in body["topics"]
    ]
    d.send_raw(
        json.dumps(
            {
                "apiKey": "ShareEndOffsetsAnswer",
                "apiVersion": 0,
                "correlationId": body["queryId"],
                "clientId": "share-end-offsets-responder",
                "request": {"queryId": body["queryId"], "topics": topics},
            }
        ).encode(),
        key=key_for_partition(body["fromPartition"], d.config["coordinator.partitions"]),
    )


def test_describe_share_group_offsets_v1_lag_is_end_minus_start_minus_delivery_complete_count():
    """computeShareGroupLagAndBuildResponse: lag = end offset - start offset - deliveryCompleteCount
    for a share-partition whose summary is initialized (shouldComputeSharePartitionLag), -1 for one
    without state; the end offset comes from the driver's responder (Kafka: listLatestOffsets), asked
    only for the partitions that need it. Everything else is v0's answer."""
    d = CoreDriver(GROUP, coordinator_partitions=1)
    metadata(d)
    write_complete(d, 0, start=5, complete=2)
    topics = [{"topicName": TOPIC, "partitions": [0, 1]}]
    v0 = describe(d, topics)["groups"][0]  # v0: no lag, no end offsets asked, answered at once
    assert not [e for _, e in d.internal_requests if e["apiKey"] == END_OFFSETS_QUERY]
    assert describe(d, topics, version=1) is None  # parked until the end offsets come
    cid = d.last_cid
    key, query = end_offsets_query(d)
    assert key == end_offsets_key(d.partition_id) and key.startswith(END_OFFSETS_KEY_PREFIX)
    assert query["request"]["topics"] == [{"topicName": TOPIC, "partitions": [0]}]
    answer_end_offsets(d, query, {(TOPIC, 0): (20, 0)})
    parts = d.response(cid)["groups"][0]["topics"][0]["partitions"]
    assert [(p["startOffset"], p["lag"]) for p in parts] == [(5, 20 - 5 - 2), (-1, -1)]
    assert [{k: v for k, v in p.items() if k != "lag"} for p in parts] == v0["topics"][0]["partitions"]
    assert "lag" not in v0["topics"][0]["partitions"][0]
    assert not any(k.startswith("_") for p in parts for k in p)


def test_describe_share_group_offsets_v1_without_initialized_state_needs_no_end_offsets():
    """Nothing to compute (no state, a delivery complete count of -1, an unknown topic): lag -1,
    answered in the request's own batch, no end-offsets query."""
    d = CoreDriver(GROUP, coordinator_partitions=1)
    metadata(d)
    init_and_write(d, 0, start=5)  # a v0 write above the start offset: deliveryCompleteCount -1
    resp = describe(
        d, [{"topicName": TOPIC, "partitions": [0, 1]}, {"topicName": "missing", "partitions": [0]}], version=1
    )
    assert [[(p["startOffset"], p["lag"]) for p in t["partitions"]] for t in resp["groups"][0]["topics"]] == [
        [(5, -1), (-1, -1)],
        [(-1, -1)],
    ]
    assert not d.internal_requests


def test_describe_share_group_offsets_v1_end_offset_errors_are_the_partitions_errors():
    """A partition whose end offset came with an error (LEADER_NOT_AVAILABLE: no leader) gets that
    error, start offset and leader epoch 0 and lag -1, as Kafka builds it; one the answer leaves out
    UNKNOWN_TOPIC_OR_PARTITION (NetworkPartitionMetadataClient.handleResponse)."""
    d = CoreDriver(GROUP, coordinator_partitions=1)
    metadata(d)
    for p in (0, 1, 2):
        write_complete(d, p, start=5, complete=0, leader_epoch=4)
    assert describe(d, [{"topicName": TOPIC, "partitions": [0, 1, 2]}], version=1) is None
    cid = d.last_cid
    _, query = end_offsets_query(d)
    answer_end_offsets(d, query, {(TOPIC, 0): (9, 0), (TOPIC, 1): (-1, Errors.LEADER_NOT_AVAILABLE.code)})
    parts = d.response(cid)["groups"][0]["topics"][0]["partitions"]
    assert parts[0] == {
        "partitionIndex": 0,
        "startOffset": 5,
        "leaderEpoch": 4,
        "lag": 4,
        "errorCode": 0,
        "errorMessage": None,
    }
    assert parts[1] == {
        "partitionIndex": 1,
        "startOffset": 0,
        "leaderEpoch": 0,
        "lag": -1,
        "errorCode": Errors.LEADER_NOT_AVAILABLE.code,
        "errorMessage": Errors.LEADER_NOT_AVAILABLE.message,
    }
    assert (parts[2]["errorCode"], parts[2]["lag"]) == (Errors.UNKNOWN_TOPIC_OR_PARTITION.code, -1)


def test_describe_share_group_offsets_v1_responder_timeout_is_request_timed_out():
    """No end offsets within share.admin.timeout.ms: REQUEST_TIMED_OUT on the partitions that needed
    them (Kafka's listLatestOffsets whose ListOffsets timed out); a late answer changes nothing."""
    d = CoreDriver(GROUP, coordinator_partitions=1)
    metadata(d)
    write_complete(d, 0, start=5, complete=1)
    assert describe(d, [{"topicName": TOPIC, "partitions": [0, 1]}], version=1) is None
    cid = d.last_cid
    _, query = end_offsets_query(d)
    d.advance(d.config["share.admin.timeout.ms"])
    parts = d.response(cid)["groups"][0]["topics"][0]["partitions"]
    assert [(p["errorCode"], p["startOffset"], p["lag"]) for p in parts] == [
        (Errors.REQUEST_TIMED_OUT.code, 0, -1),
        (0, -1, -1),
    ]
    answered = len(d.response_envelopes)
    answer_end_offsets(d, query, {(TOPIC, 0): (9, 0)})
    assert len(d.response_envelopes) == answered and not d.component("share").admin_state().get("pending")


def test_describe_share_group_offsets_v1_a_second_answer_is_dropped():
    """A replayed query makes the responder answer twice: the request completes with the first."""
    d = CoreDriver(GROUP, coordinator_partitions=1)
    metadata(d)
    write_complete(d, 0, start=5, complete=1)
    describe(d, [{"topicName": TOPIC, "partitions": [0]}], version=1)
    cid = d.last_cid
    _, query = end_offsets_query(d)
    answer_end_offsets(d, query, {(TOPIC, 0): (9, 0)})
    answer_end_offsets(d, query, {(TOPIC, 0): (50, 0)})
    assert [r for r, _ in d.response_envelopes if r.correlation_id == cid].__len__() == 1
    assert d.response(cid)["groups"][0]["topics"][0]["partitions"][0]["lag"] == 3


def test_share_end_offsets_answer_is_refused_on_the_public_request_topic():
    """Only the driver's responder answers end offsets: the internal API from a client is refused
    and the parked request still waits."""
    d = CoreDriver(GROUP, coordinator_partitions=1)
    metadata(d)
    write_complete(d, 0, start=5, complete=1)
    describe(d, [{"topicName": TOPIC, "partitions": [0]}], version=1)
    cid = d.last_cid
    forged = {
        "apiKey": "ShareEndOffsetsAnswer",
        "apiVersion": 0,
        "correlationId": 991,
        "clientId": "mallory",
        "request": {
            "queryId": 0,
            "topics": [{"topicName": TOPIC, "partitions": [{"partitionIndex": 0, "offset": 10**9, "errorCode": 0}]}],
        },
    }
    d.send_raw(json.dumps(forged).encode(), key=GROUP, internal=False)
    assert d.responses[991]["errorCode"] != 0
    assert d.response(cid) is None and d.component("share").admin_state()["pending"]


def test_describe_share_group_offsets_not_coordinator_and_no_metadata():
    d = CoreDriver(GROUP)
    other = next(f"g{i}" for i in range(1000) if not d.partition.owns(f"g{i}"))
    resp = d.send("DescribeShareGroupOffsets", 0, {"groups": [{"groupId": other, "topics": []}]}, key=GROUP)
    assert resp["groups"][0]["errorCode"] == Errors.NOT_COORDINATOR.code
    assert (
        describe(d, [{"topicName": TOPIC, "partitions": [0]}])["groups"][0]["errorCode"]
        == Errors.COORDINATOR_NOT_AVAILABLE.code
    )  # no metadata yet


def _remote_partition() -> int:
    """A partition of TOPIC whose share-partition key is not on the group's coordinator partition."""
    g = coordinator_partition(GROUP, N)
    return next(p for p in range(100) if coordinator_partition(share_partition_key(GROUP, TID, p), N) != g)


def test_describe_share_group_offsets_across_partitions():
    """The group's partition parks the request, asks the share-partition's owner, and answers
    when the answer arrives."""
    grp = CoreDriver(GROUP)
    remote = _remote_partition()
    owner = CoreDriver(share_partition_key(GROUP, TID, remote))
    for d in (grp, owner):
        metadata(d, partitions=100)
    init_and_write(owner, remote, start=42, leader_epoch=3)
    assert describe(grp, [{"topicName": TOPIC, "partitions": [remote]}]) is None  # parked
    cid = grp.last_cid
    [(key, envelope)] = grp.internal_requests
    assert envelope["apiKey"] == "ShareStateSummaryQuery"
    assert coordinator_partition(key, N) == owner.partition_id
    owner.send_raw(json.dumps(envelope).encode(), key=key)
    [(back_key, answer)] = owner.internal_requests
    assert answer["apiKey"] == "ShareStateSummaryAnswer" and coordinator_partition(back_key, N) == grp.partition_id
    grp.send_raw(json.dumps(answer).encode(), key=back_key)
    [g] = grp.response(cid)["groups"]
    assert g["topics"][0]["partitions"] == [
        {"partitionIndex": remote, "startOffset": 42, "leaderEpoch": 3, "errorCode": 0, "errorMessage": None}
    ]


def test_describe_share_group_offsets_timeout_answers_uninitialized():
    """No answer within share.admin.timeout.ms: the missing partitions are -1, as Kafka answers a
    failed read; a late answer is dropped."""
    grp = CoreDriver(GROUP)
    metadata(grp, partitions=100)
    remote = _remote_partition()
    assert describe(grp, [{"topicName": TOPIC, "partitions": [remote]}]) is None
    cid = grp.last_cid
    grp.advance(30_000)
    [g] = grp.response(cid)["groups"]
    assert g["topics"][0]["partitions"][0]["startOffset"] == -1


def _describe_remote_v1(end_first: bool) -> tuple[CoreDriver, dict]:
    """A v1 describe of a share-partition another coordinator partition owns (deliveryCompleteCount
    3 at start offset 42), both answers delivered in the order asked; returns the group's driver
    and its answer."""
    grp = CoreDriver(GROUP)
    remote = _remote_partition()
    owner = CoreDriver(share_partition_key(GROUP, TID, remote))
    for d in (grp, owner):
        metadata(d, partitions=100)
    init_and_write(owner, remote, start=0, leader_epoch=3)
    written = {
        "partition": remote,
        "stateEpoch": 0,
        "leaderEpoch": 3,
        "startOffset": 42,
        "deliveryCompleteCount": 3,
        "stateBatches": [],
    }
    owner.send(
        "WriteShareGroupState",
        1,
        {"groupId": GROUP, "topics": [{"topicId": TID, "partitions": [written]}]},
        key=share_partition_key(GROUP, TID, remote),
    )
    assert describe(grp, [{"topicName": TOPIC, "partitions": [remote]}], version=1) is None
    cid = grp.last_cid
    # One batch asks both: the summary's owner and the responder (no extra micro-batch for the lag).
    [(key, summary_query), (_, end_query)] = grp.internal_requests
    assert (summary_query["apiKey"], end_query["apiKey"]) == ("ShareStateSummaryQuery", END_OFFSETS_QUERY)
    assert end_query["request"]["topics"] == [{"topicName": TOPIC, "partitions": [remote]}]

    def summary() -> None:
        owner.send_raw(json.dumps(summary_query).encode(), key=key)
        [(back_key, answer)] = owner.internal_requests
        assert answer["request"]["summaries"][0]["deliveryCompleteCount"] == 3
        grp.send_raw(json.dumps(answer).encode(), key=back_key)

    def end() -> None:
        answer_end_offsets(grp, end_query, {(TOPIC, remote): (100, 0)})

    first, second = (end, summary) if end_first else (summary, end)
    first()
    assert grp.response(cid) is None  # still waiting for the other answer
    second()
    return grp, grp.response(cid)


def test_describe_share_group_offsets_v1_across_partitions():
    """The summary of another partition's share-partition carries its deliveryCompleteCount; the lag
    is computed once both the summary and the end offsets are in, whichever comes first."""
    for end_first in (False, True):
        _, resp = _describe_remote_v1(end_first)
        [p] = resp["groups"][0]["topics"][0]["partitions"]
        assert (p["startOffset"], p["leaderEpoch"], p["lag"], p["errorCode"]) == (42, 3, 100 - 42 - 3, 0)


def test_describe_share_group_offsets_v1_replays_to_the_same_answer_and_state():
    """Deterministic on replay: the same records (request, then the recorded answers) give the same
    answer and the same stored state, whatever the end offsets are now."""
    runs = [_describe_remote_v1(end_first=True) for _ in range(2)]
    assert runs[0][1] == runs[1][1]
    assert runs[0][0].stored().payload == runs[1][0].stored().payload
    assert not runs[0][0].component("share").admin_state().get("pending")


def test_a_summary_answer_written_before_delivery_complete_count_reads_minus_one():
    """ShareStateSummaryAnswer gained deliveryCompleteCount (default -1): an answer without it (a
    record written by the previous release) parses, and its partition's lag is not computed."""
    spec = lookup("ShareStateSummaryAnswer")
    old = {
        "queryId": 1,
        "groupId": GROUP,
        "summaries": [{"topicId": TID, "partition": 0, "startOffset": 4, "leaderEpoch": 1, "errorCode": 0}],
    }
    assert spec.request.validate(old, 0)["summaries"][0]["deliveryCompleteCount"] == -1


def test_describe_share_group_all_offsets_uses_the_initialized_partitions():
    """`topics: null`: every initialized share-partition of the group (ShareGroupStatePartitionMetadata);
    the heartbeat initialized both at start offset -1 with the group epoch as state epoch."""
    d = CoreDriver(GROUP, coordinator_partitions=1)
    metadata(d, partitions=2)
    d.send(
        "ShareGroupHeartbeat",
        1,
        {
            "groupId": GROUP,
            "memberId": "m1-aaaaaaaaaaaaaaaaaaaa",
            "memberEpoch": 0,
            "rackId": None,
            "subscribedTopicNames": [TOPIC],
        },
        key=GROUP,
    )
    key = share_partition_key(GROUP, TID, 1)
    r = d.send(
        "WriteShareGroupState",
        0,
        {
            "groupId": GROUP,
            "topics": [
                {
                    "topicId": TID,
                    "partitions": [
                        {"partition": 1, "stateEpoch": 2, "leaderEpoch": 1, "startOffset": 9, "stateBatches": []}
                    ],
                }
            ],
        },
        key=key,
    )
    assert r["results"][0]["partitions"][0]["errorCode"] == 0
    [g] = describe(d, None)["groups"]
    assert [(p["partitionIndex"], p["startOffset"]) for p in g["topics"][0]["partitions"]] == [(0, -1), (1, 9)]


def _alter(d: CoreDriver, offsets: dict, topic: str = TOPIC) -> dict | None:
    return d.send(
        "AlterShareGroupOffsets",
        0,
        {
            "groupId": GROUP,
            "topics": [
                {
                    "topicName": topic,
                    "partitions": [{"partitionIndex": p, "startOffset": o} for p, o in offsets.items()],
                }
            ],
        },
        key=GROUP,
    )


def test_describe_share_group_offsets_v1_lag_of_altered_offsets():
    """AlterShareGroupOffsets initializes at the new start offset with deliveryCompleteCount 0
    (ShareCoordinatorShard.initializeState), so the lag is end offset - start offset; the partition
    the heartbeat initialized at -1 has none (the differential test's step against the broker)."""
    d = CoreDriver(GROUP, coordinator_partitions=1)
    metadata(d, partitions=2)
    m = "m1-aaaaaaaaaaaaaaaaaaaa"
    heartbeat = {"groupId": GROUP, "memberId": m, "memberEpoch": 0, "rackId": None, "subscribedTopicNames": [TOPIC]}
    d.send("ShareGroupHeartbeat", 1, heartbeat, key=GROUP)
    d.send("ShareGroupHeartbeat", 1, {**heartbeat, "memberEpoch": -1}, key=GROUP)
    assert _alter(d, {0: 0})["responses"][0]["partitions"][0]["errorCode"] == 0
    assert describe(d, [{"topicName": TOPIC, "partitions": [0, 1]}], version=1) is None
    cid = d.last_cid
    _, query = end_offsets_query(d)
    assert query["request"]["topics"] == [{"topicName": TOPIC, "partitions": [0]}]
    answer_end_offsets(d, query, {(TOPIC, 0): (3, 0)})
    parts = d.response(cid)["groups"][0]["topics"][0]["partitions"]
    assert [(p["startOffset"], p["lag"]) for p in parts] == [(0, 3), (-1, -1)]


def test_alter_share_group_offsets_requires_an_empty_share_group():
    """ShareGroup.validateOffsetsAlterable / GroupMetadataManager.shareGroup: GROUP_ID_NOT_FOUND for
    an unknown group, NON_EMPTY_GROUP while it has members; the messages are the errors' own
    (GroupCoordinatorService: AlterShareGroupOffsetsRequest.getErrorResponse(Errors))."""
    d = CoreDriver(GROUP, coordinator_partitions=1)
    metadata(d)
    r = _alter(d, {0: 3})
    assert (r["errorCode"], r["errorMessage"]) == (Errors.GROUP_ID_NOT_FOUND.code, Errors.GROUP_ID_NOT_FOUND.message)
    d.send(
        "ShareGroupHeartbeat",
        1,
        {
            "groupId": GROUP,
            "memberId": "m1-aaaaaaaaaaaaaaaaaaaa",
            "memberEpoch": 0,
            "rackId": None,
            "subscribedTopicNames": [TOPIC],
        },
        key=GROUP,
    )
    r = _alter(d, {0: 3})
    assert (r["errorCode"], r["errorMessage"], r["responses"]) == (68, "The group is not empty.", [])


def test_alter_share_group_offsets_initializes_the_share_partitions():
    """completeAlterShareGroupOffsets + persisterInitialize: known partitions get the new start
    offset (state epoch = the group epoch), unknown ones UNKNOWN_TOPIC_OR_PARTITION; describe shows it."""
    d = CoreDriver(GROUP, coordinator_partitions=1)
    metadata(d, partitions=2)
    m = "m1-aaaaaaaaaaaaaaaaaaaa"
    d.send(
        "ShareGroupHeartbeat",
        1,
        {"groupId": GROUP, "memberId": m, "memberEpoch": 0, "rackId": None, "subscribedTopicNames": [TOPIC]},
        key=GROUP,
    )
    d.send(
        "ShareGroupHeartbeat",
        1,
        {"groupId": GROUP, "memberId": m, "memberEpoch": -1, "rackId": None, "subscribedTopicNames": None},
        key=GROUP,
    )
    resp = _alter(d, {0: 7, 5: 1})
    assert resp["errorCode"] == 0
    assert [(p["partitionIndex"], p["errorCode"]) for p in resp["responses"][0]["partitions"]] == [(0, 0), (5, 3)]
    [g] = describe(d, [{"topicName": TOPIC, "partitions": [0]}])["groups"]
    assert g["topics"][0]["partitions"][0]["startOffset"] == 7
    state = d.component("share").states[share_partition_key(GROUP, TID, 0)]
    assert state["offset"]["stateEpoch"] == 3  # the group epoch after the join and the leave


def test_alter_share_group_offsets_across_partitions():
    grp = CoreDriver(GROUP)
    remote = _remote_partition()
    owner = CoreDriver(share_partition_key(GROUP, TID, remote))
    for d in (grp, owner):
        metadata(d, partitions=100)
    grp.send(
        "ShareGroupHeartbeat",
        1,
        {
            "groupId": GROUP,
            "memberId": "m1-aaaaaaaaaaaaaaaaaaaa",
            "memberEpoch": 0,
            "rackId": None,
            "subscribedTopicNames": [TOPIC],
        },
        key=GROUP,
    )
    grp.send(
        "ShareGroupHeartbeat",
        1,
        {
            "groupId": GROUP,
            "memberId": "m1-aaaaaaaaaaaaaaaaaaaa",
            "memberEpoch": -1,
            "rackId": None,
            "subscribedTopicNames": None,
        },
        key=GROUP,
    )
    grp.internal_requests.clear()  # the heartbeat's own initialization queries (not answered here)
    assert _alter(grp, {remote: 11}) is None  # parked
    cid = grp.last_cid
    [(key, envelope)] = grp.internal_requests
    assert envelope["request"]["op"] == "initialize"
    owner.send_raw(json.dumps(envelope).encode(), key=key)
    [(back_key, answer)] = owner.internal_requests
    grp.send_raw(json.dumps(answer).encode(), key=back_key)
    resp = grp.response(cid)
    assert resp["responses"][0]["partitions"] == [{"partitionIndex": remote, "errorCode": 0, "errorMessage": None}]
    assert owner.component("share").states[share_partition_key(GROUP, TID, remote)]["offset"]["startOffset"] == 11
    # completeAlterShareGroupOffsets: the altered share-partition is recorded initialized.
    info = grp.component("groups").groups[GROUP].state_partition_metadata
    assert remote in info["initialized"][TID]["partitions"]


def _delete(d: CoreDriver, topics: list[str]) -> dict | None:
    return d.send(
        "DeleteShareGroupOffsets", 0, {"groupId": GROUP, "topics": [{"topicName": t} for t in topics]}, key=GROUP
    )


def deliver(grp: CoreDriver, owners: dict[int, CoreDriver]) -> int:
    """The group partition's internal queries to their owners (one CoreDriver per coordinator
    partition, with the topic metadata) and the answers back, until none is left."""
    n = 0
    while grp.internal_requests:
        pending, grp.internal_requests = grp.internal_requests, []
        for key, envelope in pending:
            pid = coordinator_partition(key, N)
            if pid not in owners:
                owners[pid] = CoreDriver(key)
                metadata(owners[pid], partitions=100)
            target = owners[pid]
            target.send_raw(json.dumps(envelope).encode(), key=key)
            answers, target.internal_requests = target.internal_requests, []
            for back_key, answer in answers:
                grp.send_raw(json.dumps(answer).encode(), key=back_key)
            n += 1
    return n


def test_delete_share_group_offsets():
    """GroupCoordinatorService.deleteShareGroupOffsets: an empty share group; the state of the
    topic's initialized share-partitions is deleted (with its tombstones), across coordinator
    partitions, and the topic leaves deleting afterwards (completeDeleteShareGroupOffsets); an
    unknown topic is UNKNOWN_TOPIC_OR_PARTITION, a known one without initialized share-partitions too
    ("There is no offset information to delete.")."""
    grp = CoreDriver(GROUP)
    remote = _remote_partition()
    owners = {grp.partition_id: grp}
    grp.send(
        "UpdateMetadata",
        0,
        {
            "topicStates": [
                {"topicName": TOPIC, "topicId": TID, "numPartitions": 100},
                {"topicName": "other", "topicId": topic_id("other"), "numPartitions": 1},
            ]
        },
        key=BROADCAST_KEY,
    )
    m = "m1-aaaaaaaaaaaaaaaaaaaa"
    grp.send(
        "ShareGroupHeartbeat",
        1,
        {"groupId": GROUP, "memberId": m, "memberEpoch": 0, "rackId": None, "subscribedTopicNames": [TOPIC]},
        key=GROUP,
    )
    assert deliver(grp, owners) > 0  # the share-partitions are initialized
    assert _delete(grp, [TOPIC])["errorCode"] == Errors.NON_EMPTY_GROUP.code
    grp.send(
        "ShareGroupHeartbeat",
        1,
        {"groupId": GROUP, "memberId": m, "memberEpoch": -1, "rackId": None, "subscribedTopicNames": None},
        key=GROUP,
    )
    owner = owners[coordinator_partition(share_partition_key(GROUP, TID, remote), N)]
    assert share_partition_key(GROUP, TID, remote) in owner.component("share").states
    assert _delete(grp, [TOPIC, "missing", "other"]) is None  # waits for the other owners
    cid = grp.last_cid
    info = grp.component("groups").groups[GROUP].state_partition_metadata
    assert info["initialized"] == {} and info["deleting"] == {TID: TOPIC}
    deliver(grp, owners)
    resp = grp.response(cid)
    assert resp["errorCode"] == 0
    assert [(t["topicName"], t["errorCode"], t["errorMessage"]) for t in resp["responses"]] == [
        (TOPIC, 0, None),
        ("missing", 3, "This server does not host this topic-partition."),
        ("other", 3, "There is no offset information to delete."),
    ]
    assert all(not k.startswith("_") for t in resp["responses"] for k in t)
    assert share_partition_key(GROUP, TID, remote) not in owner.component("share").states
    assert grp.component("groups").groups[GROUP].state_partition_metadata["deleting"] == {}
    # Nothing initialized any more: the topic has no offset information to delete.
    r = _delete(grp, [TOPIC])
    assert [(t["errorCode"], t["errorMessage"]) for t in r["responses"]] == [
        (3, "There is no offset information to delete.")
    ]


def local_share_group(grp: CoreDriver) -> tuple[str, str, str]:
    """A share group subscribed to a one-partition topic whose share-partition is hosted by the
    group's own coordinator partition, initialized: (topic name, topic id, member id)."""
    name = next(
        f"local-{i}"
        for i in range(10_000)
        if coordinator_partition(share_partition_key(GROUP, topic_id(f"local-{i}"), 0), N) == grp.partition_id
    )
    tid = topic_id(name)
    grp.send(
        "UpdateMetadata",
        0,
        {"topicStates": [{"topicName": name, "topicId": tid, "numPartitions": 1}]},
        key=BROADCAST_KEY,
    )
    m = "m1-aaaaaaaaaaaaaaaaaaaa"
    heartbeat = {"groupId": GROUP, "memberId": m, "memberEpoch": 0, "rackId": None, "subscribedTopicNames": [name]}
    grp.send("ShareGroupHeartbeat", 1, heartbeat, key=GROUP)
    deliver(grp, {grp.partition_id: grp})
    return name, tid, m


def test_delete_share_group_offsets_served_by_its_own_partition_in_one_result():
    """A topic whose only share-partition is hosted by the group's own coordinator partition: the
    move to deleting, the state's deletion and the move out of deleting are one handler's result,
    the second record computed from the first (not replayed yet); the log rebuilds the same."""
    grp = CoreDriver(GROUP)
    name, tid, m = local_share_group(grp)
    assert list(grp.component("groups").groups[GROUP].state_partition_metadata["initialized"]) == [tid]
    leave = {"groupId": GROUP, "memberId": m, "memberEpoch": -1, "rackId": None, "subscribedTopicNames": None}
    grp.send("ShareGroupHeartbeat", 1, leave, key=GROUP)
    assert share_partition_key(GROUP, tid, 0) in grp.component("share").states
    mark = len(grp.records)
    resp = _delete(grp, [name])
    assert resp is not None and [(t["topicName"], t["errorCode"]) for t in resp["responses"]] == [(name, 0)]
    assert share_partition_key(GROUP, tid, 0) not in grp.component("share").states
    info = grp.component("groups").groups[GROUP].state_partition_metadata
    assert info["initialized"] == {} and info["deleting"] == {}
    written = [v for k, v in grp.records[mark:] if "ShareGroupStatePartitionMetadata" in k]
    assert [w["deletingTopics"] for w in written] == [[{"topicId": tid, "topicName": name}], []]
    rebuilt = grp.rebuilt().component("groups").groups[GROUP].state_partition_metadata
    assert (rebuilt["initialized"], rebuilt["deleting"]) == ({}, {})


def test_delete_groups_of_a_share_group_served_by_its_own_partition():
    """DeleteGroups of a share group whose only share-partition is hosted by the group's own
    coordinator partition: the move to deleting is one result, replayed (the group still there)
    before the next step deletes the state and writes the group's tombstones, all in one request;
    the handler itself applies nothing, and the log rebuilds the same (no group, no state)."""
    from coordinator.messages import ReplyTo, Request
    from tests.core_driver import call_handler

    grp = CoreDriver(GROUP)
    name, tid, m = local_share_group(grp)
    leave = {"groupId": GROUP, "memberId": m, "memberEpoch": -1, "rackId": None, "subscribedTopicNames": None}
    grp.send("ShareGroupHeartbeat", 1, leave, key=GROUP)
    key = share_partition_key(GROUP, tid, 0)
    assert key in grp.component("share").states

    # The handler, called directly: its first result holds the move to deleting; nothing applied.
    seen: list = []
    request = Request(ReplyTo("DeleteGroups", 2, 1, "c"), {"groupsNames": [GROUP]}, grp.now, GROUP, (0, 1))

    def call(part):
        result = call_handler(part, "DeleteGroups", request)
        seen.append((result, part.component("groups").groups.get(GROUP).state_partition_metadata["deleting"]))

    grp.call(call)
    [(result, deleting_before)] = seen
    assert deleting_before == {} and result.steps is not None and result.response is None
    assert [r.value["deletingTopics"] for r in result.records] == [[{"topicId": tid, "topicName": name}]]

    mark = len(grp.records)
    resp = grp.send("DeleteGroups", 2, {"groupsNames": [GROUP]}, key=GROUP)
    assert resp is not None and resp["results"] == [{"groupId": GROUP, "errorCode": 0}]  # answered at once
    assert grp.component("groups").groups.get(GROUP) is None and key not in grp.component("share").states
    kinds = [json.loads(k)[0] for k, _ in grp.records[mark:]]
    assert kinds[0] == "ShareGroupStatePartitionMetadata" and kinds[-1] == "ShareGroupMetadata"
    rebuilt = grp.rebuilt()
    assert rebuilt.component("groups").groups.get(GROUP) is None and key not in rebuilt.component("share").states
