"""DescribeShareGroupOffsets (90): the group's partition reads the share-partition summaries it
owns and asks the other coordinator partitions over the internal channel (coordinator/share/admin.py).
Follows GroupCoordinatorService.describeShareGroupOffsets / describeShareGroupAllOffsets and
GroupCoordinatorServiceTest.testDescribeShareGroupOffsets* (unknown topic: -1 with the zero id; a
failed or missing read: -1)."""

from __future__ import annotations

import json

from coordinator.errors import Errors
from coordinator.metadata import BROADCAST_KEY, ZERO_UUID
from coordinator.routing import coordinator_partition
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


def test_describe_share_group_offsets_v1_answers_the_lag_it_cannot_compute():
    """DescribeShareGroupOffsets v1 (KIP-1226) adds `lag`; Kafka computes it with the partition's end
    offset (a ListOffsets), which the service's core does not have: -1, Kafka's UNINITIALIZED_LAG
    (docs/protocol.md). Everything else is v0's answer."""
    d = CoreDriver(GROUP, coordinator_partitions=1)
    metadata(d)
    init_and_write(d, 0, start=5)
    topics = [{"topicName": TOPIC, "partitions": [0, 1]}]
    v0, v1 = describe(d, topics)["groups"][0], describe(d, topics, version=1)["groups"][0]
    parts = v1["topics"][0]["partitions"]
    assert [(p["startOffset"], p["lag"]) for p in parts] == [(5, -1), (-1, -1)]
    assert [{k: v for k, v in p.items() if k != "lag"} for p in parts] == v0["topics"][0]["partitions"]
    assert "lag" not in v0["topics"][0]["partitions"][0]


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
