"""Per-partition assignment epochs of consumer-group members (Kafka 4.3+, KIP-1251).

The member side mirrors Kafka's ConsumerGroupMemberTest and UtilsTest (the record's tagged
`AssignmentEpochs`); the commit side, through the real coordinator (a CoreDriver), mirrors
OffsetMetadataManagerTest / GroupMetadataManagerTest: an OffsetCommit or TxnOffsetCommit at an
older member epoch is accepted for the partitions assigned to the member at or before that epoch,
and refused as a whole otherwise (STALE_MEMBER_EPOCH; TxnOffsetCommit before v6:
ILLEGAL_GENERATION)."""

from __future__ import annotations

from coordinator.errors import Errors
from coordinator.group.consumer.member import ConsumerGroupMember, MemberState
from coordinator.records import record_key
from tests.consumer.consumer_group_helpers import ConsumerGroupTestClient, mock_assignor

__all__ = ["mock_assignor"]  # the fixture

GROUP = "fooup"
FOO = "foo"
E = Errors


# ====================================================================== the member and its record
def test_update_with_consumer_group_current_member_assignment_value():
    """Kafka's testUpdateWithConsumerGroupCurrentMemberAssignmentValue: a record without epochs
    (written before 4.3) gives every partition the member epoch."""
    member = ConsumerGroupMember("member-id").with_assignment_value(
        {
            "memberEpoch": 10,
            "previousMemberEpoch": 9,
            "assignedPartitions": {"t1": [0, 1, 2]},
            "partitionsPendingRevocation": {"t2": [3, 4, 5]},
        }
    )
    assert (member.member_epoch, member.previous_member_epoch) == (10, 9)
    assert member.partition_epochs == {"t1": {0: 10, 1: 10, 2: 10}, "t2": {3: 10, 4: 10, 5: 10}}


def test_update_with_consumer_group_current_member_assignment_value_with_negative_epoch():
    """Kafka's ...WithNegativeEpoch: a leaving static member (-2) gives epoch 0, not -2."""
    member = ConsumerGroupMember("member-id").with_assignment_value(
        {
            "memberEpoch": -2,
            "previousMemberEpoch": 5,
            "assignedPartitions": {"t1": [0, 1, 2]},
            "partitionsPendingRevocation": {"t2": [3, 4, 5]},
        }
    )
    assert member.partition_epochs == {"t1": {0: 0, 1: 0, 2: 0}, "t2": {3: 0, 4: 0, 5: 0}}


def test_assignment_from_topic_partitions_with_epochs_and_with_a_wrong_count():
    """UtilsTest's assignmentFromTopicPartitions: the epochs are taken when there is one per
    partition; otherwise (Kafka logs an error) the topic's partitions get the member epoch."""
    member = ConsumerGroupMember("m").with_assignment_value(
        {
            "memberEpoch": 12,
            "assignedPartitions": {"t1": [0, 1], "t2": [0, 1]},
            "assignedPartitionsAssignmentEpochs": {"t1": [7, 12], "t2": [3]},
            "partitionsPendingRevocation": {"t3": [4]},
            "partitionsPendingRevocationAssignmentEpochs": {"t3": [5]},
        }
    )
    assert member.partition_epochs == {"t1": {0: 7, 1: 12}, "t2": {0: 12, 1: 12}, "t3": {4: 5}}


def test_assigned_and_pending_revocation_epoch():
    """Kafka's testAssignedAndPendingRevocationEpoch."""
    member = ConsumerGroupMember(
        "member-id",
        assigned_partitions={"t1": {1, 2, 3}},
        partitions_pending_revocation={"t2": {4, 5, 6}},
        partition_epochs={"t1": dict.fromkeys((1, 2, 3), 10), "t2": dict.fromkeys((4, 5, 6), 9)},
    )
    for p in (1, 2, 3):
        assert member.assignment_epoch("t1", p) == 10 and member.pending_revocation_epoch("t1", p) is None
    for p in (4, 5, 6):
        assert member.pending_revocation_epoch("t2", p) == 9 and member.assignment_epoch("t2", p) is None
    assert member.assignment_epoch("t1", 10) is None and member.pending_revocation_epoch("t2", 10) is None
    assert member.assignment_epoch("unassigned", 0) is None and member.pending_revocation_epoch("unassigned", 0) is None


def test_new_consumer_group_current_assignment_record_carries_the_epochs():
    """GroupCoordinatorRecordHelpersTest: the record's epochs, aligned with its partitions, and
    the member rebuilt from it is the same member."""
    member = ConsumerGroupMember(
        "m",
        member_epoch=12,
        previous_member_epoch=11,
        state=MemberState.UNREVOKED_PARTITIONS,
        assigned_partitions={"t1": {2, 0}},
        partitions_pending_revocation={"t2": {1}},
        partition_epochs={"t1": {0: 12, 2: 7}, "t2": {1: 3}},
    )
    value = member.assignment_value()
    assert value == {
        "memberEpoch": 12,
        "previousMemberEpoch": 11,
        "state": "UNREVOKED_PARTITIONS",
        "assignedPartitions": {"t1": [0, 2]},
        "partitionsPendingRevocation": {"t2": [1]},
        "assignedPartitionsAssignmentEpochs": {"t1": [12, 7]},
        "partitionsPendingRevocationAssignmentEpochs": {"t2": [3]},
    }
    assert ConsumerGroupMember("m").with_assignment_value(value) == member
    assert ConsumerGroupMember.from_json(member.to_json()) == member


def test_a_member_built_without_epochs_gets_its_member_epoch():
    member = ConsumerGroupMember("m", member_epoch=4, assigned_partitions={"t": {0, 1}}, partition_epochs={"t": {1: 2}})
    assert member.partition_epochs == {"t": {0: 4, 1: 2}}
    # Dropping a partition drops its epoch; the others keep theirs.
    assert member.replace(assigned_partitions={"t": {1}}).partition_epochs == {"t": {1: 2}}


# ====================================================================== commits at older epochs
def client() -> ConsumerGroupTestClient:
    return ConsumerGroupTestClient(
        GROUP,
        {FOO: 4},
        group_consumer_assignors=["mock"],
        transaction_partition_verification_enable=False,
    )


def commit(c, member_id: str, epoch: int, partitions, version: int = 9) -> list[int]:
    body = {
        "groupId": GROUP,
        "generationIdOrMemberEpoch": epoch,
        "memberId": member_id,
        "groupInstanceId": None,
        "topics": [
            {
                "name": FOO,
                "partitions": [
                    {"partitionIndex": p, "committedOffset": 10, "committedMetadata": ""} for p in partitions
                ],
            }
        ],
    }
    return [p["errorCode"] for p in c.send("OffsetCommit", version, body)["topics"][0]["partitions"]]


def txn_commit(c, member_id: str, epoch: int, partitions, version: int) -> list[int]:
    parts = [
        {"partitionIndex": p, "committedOffset": 10, "committedLeaderEpoch": -1, "committedMetadata": ""}
        for p in partitions
    ]
    if version >= 6:  # KIP-1319: topics by id
        topic = {"topicId": next(tid for tid, name in c.names.items() if name == FOO), "partitions": parts}
    else:
        topic = {"name": FOO, "partitions": parts}
    body = {
        "transactionalId": "txn",
        "groupId": GROUP,
        "producerId": 5,
        "producerEpoch": 0,
        "generationIdOrMemberEpoch": epoch,
        "memberId": member_id,
        "groupInstanceId": None,
        "topics": [topic],
    }
    return [p["errorCode"] for p in c.send("TxnOffsetCommit", version, body)["topics"][0]["partitions"]]


def two_members_after_a_rebalance(c, mock_assignor) -> tuple[int, int]:
    """m1 gets foo 0-3; m2 joins and takes foo 2-3 (m1 revokes them first). Returns (e1, e2):
    m1's first epoch, at which it keeps foo 0-1, and the epoch of the rebalance, at which m2
    got foo 2-3."""
    mock_assignor.prepare({"m1": {FOO: {0, 1, 2, 3}}})
    e1 = c.join("m1", [FOO], assignor="mock")["memberEpoch"]
    mock_assignor.prepare({"m1": {FOO: {0, 1}}, "m2": {FOO: {2, 3}}})
    e2 = c.join("m2", [FOO], assignor="mock")["memberEpoch"]
    assert e2 > e1
    assert c.heartbeat("m1", e1)["memberEpoch"] == e1  # revoke foo 2-3 first
    assert c.heartbeat("m1", e1, owned={FOO: [0, 1]})["memberEpoch"] == e2
    assert c.heartbeat("m2", e2)["memberEpoch"] == e2
    assert c.member("m1").partition_epochs == {FOO: {0: e1, 1: e1}}
    assert c.member("m2").partition_epochs == {FOO: {2: e2, 3: e2}}
    return e1, e2


def test_consumer_group_offset_commit_with_an_older_member_epoch(mock_assignor):
    """An older epoch is accepted for partitions the member got at or before it, refused for
    the whole request otherwise (GroupMetadataManager/OffsetMetadataManager, Kafka 4.3+)."""
    c = client()
    e1, e2 = two_members_after_a_rebalance(c, mock_assignor)
    assert commit(c, "m1", e1, [0, 1]) == [0, 0]  # kept since e1
    mark = len(c.records())
    assert commit(c, "m1", e1, [0, 2]) == [E.STALE_MEMBER_EPOCH.code] * 2  # foo-2 is m2's now
    assert c.records(mark) == []  # nothing written for a refused request
    assert commit(c, "m2", e2, [2, 3]) == [0, 0]
    assert commit(c, "m2", e2 - 1, [2]) == [E.STALE_MEMBER_EPOCH.code]  # older than foo-2's epoch
    assert commit(c, "m1", e2 + 1, [0]) == [E.STALE_MEMBER_EPOCH.code]  # newer than the member's
    # m2 leaves; m1 gets foo 2-3 at a new epoch e3 and keeps foo 0-1 at e1.
    mock_assignor.prepare({"m1": {FOO: {0, 1, 2, 3}}})
    c.heartbeat("m2", -1)
    e3 = c.heartbeat("m1", e2)["memberEpoch"]
    assert e3 > e2 and c.member("m1").partition_epochs == {FOO: {0: e1, 1: e1, 2: e3, 3: e3}}
    assert commit(c, "m1", e2, [0, 1]) == [0, 0]
    assert commit(c, "m1", e2, [0, 3]) == [E.STALE_MEMBER_EPOCH.code] * 2
    assert commit(c, "m1", e3, [0, 1, 2, 3]) == [0] * 4
    # The epochs survive a rebuild from the state log.
    assert c.rebuilt().component("groups").groups[GROUP].members["m1"] == c.member("m1")


def test_consumer_group_transactional_offset_commit_with_an_older_member_epoch(mock_assignor):
    """TxnOffsetCommit: the same rule; STALE_MEMBER_EPOCH from v6 (KIP-1319), ILLEGAL_GENERATION
    before."""
    c = client()
    e1, e2 = two_members_after_a_rebalance(c, mock_assignor)
    for version in (3, 4, 5, 6):
        assert txn_commit(c, "m1", e1, [0, 1], version) == [0, 0]
        refused = E.STALE_MEMBER_EPOCH if version >= 6 else E.ILLEGAL_GENERATION
        assert txn_commit(c, "m1", e1, [1, 2], version) == [refused.code] * 2
        assert txn_commit(c, "m2", e1, [3], version) == [refused.code]
        assert txn_commit(c, "m2", e2 + 1, [3], version) == [refused.code]


def test_classic_protocol_member_commits_at_an_older_generation(mock_assignor):
    """A classic member of a consumer group is checked the same way, with ILLEGAL_GENERATION
    (testValidateOffsetCommitWithClassicProtocolMember, through the coordinator)."""
    c = client()
    e1, e2 = two_members_after_a_rebalance(c, mock_assignor)
    group = c.group()
    m1 = group.members["m1"]
    c.inject(
        [
            (
                record_key("ConsumerGroupMemberMetadata", GROUP, "m1"),
                {
                    **m1.metadata_value(),
                    "classicMemberMetadata": {"sessionTimeoutMs": 45000, "supportedProtocols": []},
                },
            )
        ]
    )
    assert c.member("m1").use_classic_protocol
    assert commit(c, "m1", e1, [0], version=8) == [0]
    assert commit(c, "m1", e1, [2], version=8) == [E.ILLEGAL_GENERATION.code]


def test_leaving_static_member_resets_assignment_epochs_to_zero(mock_assignor):
    """consumerGroupStaticMemberGroupLeave (Kafka 4.3+): the record written for the leaving static
    member (epoch -2) has its partitions at epoch 0, so the member that takes its place owns them
    from epoch 0."""
    c = client()
    mock_assignor.prepare({"m1": {FOO: {0, 1}}})
    e1 = c.join("m1", [FOO], assignor="mock", instance_id="i1")["memberEpoch"]
    assert e1 > 0 and c.member("m1").partition_epochs == {FOO: {0: e1, 1: e1}}
    mark = len(c.records())
    assert c.heartbeat("m1", -2, instance_id="i1")["memberEpoch"] == -2
    [(key, value)] = c.records(mark)
    assert key == record_key("ConsumerGroupCurrentMemberAssignment", GROUP, "m1")
    assert value["assignedPartitionsAssignmentEpochs"] == {FOO: [0, 0]}
    assert c.member("m1").partition_epochs == {FOO: {0: 0, 1: 0}}
    # The instance rejoins under a new member id: it keeps the partitions, from epoch 0.
    resp = c.join("m1b", [FOO], assignor="mock", instance_id="i1")
    assert resp["errorCode"] == 0
    assert c.member("m1b").partition_epochs == {FOO: {0: 0, 1: 0}}
    assert resp["memberEpoch"] > 0 and commit(c, "m1b", 0, [0, 1]) == [0, 0]


def test_a_snapshot_written_before_the_epochs_still_loads():
    """The state of a previous release (members without the epoch fields) loads: each partition at
    its member's epoch, as a replayed Kafka 4.2 record; saved again, the epochs are written."""
    from coordinator.group.consumer.group import ConsumerGroup

    old = ConsumerGroup("g")
    old.update_member(ConsumerGroupMember("m", member_epoch=5, assigned_partitions={"t": {0, 1}}))
    snapshot = old.to_json()
    for member in snapshot["members"].values():
        del member["assignedPartitionsAssignmentEpochs"], member["partitionsPendingRevocationAssignmentEpochs"]
    loaded = ConsumerGroup.from_json(snapshot)
    assert loaded.members["m"].partition_epochs == {"t": {0: 5, 1: 5}}
    assert loaded.to_json()["members"]["m"]["assignedPartitionsAssignmentEpochs"] == {"t": [5, 5]}
