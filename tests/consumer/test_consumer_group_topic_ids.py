"""Assignments follow topic ids, as Kafka's (keyed by Uuid) do: a topic deleted and re-created under
the same name is a different topic, so its old partitions are revoked and the new topic's are
assigned anew (CurrentAssignmentBuilder: revoke first, then assign at the new epoch)."""

from __future__ import annotations

from coordinator.group.consumer.manager import unknown_topic_key
from coordinator.records import record_key
from tests.consumer.consumer_group_helpers import GROUP, ConsumerGroupTestClient

OLD_ID, NEW_ID = "AAAAAAAAAAAAAAAAAAAAAQ", "AAAAAAAAAAAAAAAAAAAAAg"


def client(topics: dict[str, int]) -> ConsumerGroupTestClient:
    c = ConsumerGroupTestClient()
    c.set_topics(topics, ids={"foo": OLD_ID})
    return c


def wire(resp) -> list | None:
    a = resp["assignment"]
    return None if a is None else [(tp["topicId"], sorted(tp["partitions"])) for tp in a["topicPartitions"]]


def stable_member(c) -> None:
    resp = c.join("m1", ["foo"])
    assert (resp["memberEpoch"], wire(resp)) == (2, [(OLD_ID, [0, 1])])
    resp = c.heartbeat("m1", 2, owned_ids=[{"topicId": OLD_ID, "partitions": [0, 1]}])
    assert resp["memberEpoch"] == 2 and str(c.group().state) == "Stable"


def test_recreated_topic_loses_its_assignment():
    c = client({"foo": 2})
    stable_member(c)
    mark = len(c.records())
    c.set_topics({"foo": 2}, ids={"foo": NEW_ID})  # deleted and re-created: same name, new id
    ghost = unknown_topic_key(OLD_ID)
    assert [k for k, _ in c.records(mark)] == [
        record_key("ConsumerGroupCurrentMemberAssignment", GROUP, "m1"),
        record_key("ConsumerGroupTargetAssignmentMember", GROUP, "m1"),
    ]
    assert c.records(mark)[0][1]["assignedPartitions"] == {ghost: [0, 1]}
    # The member still owns the old topic's partitions: it must revoke them first (no epoch bump,
    # an empty assignment, then none as it did not change), as long as it reports them.
    for expected in ([], None):
        resp = c.heartbeat("m1", 2, owned_ids=[{"topicId": OLD_ID, "partitions": [0, 1]}])
        assert (resp["errorCode"], resp["memberEpoch"], wire(resp)) == (0, 2, expected)
    member = c.group().members["m1"]
    assert (str(member.state), dict(member.partitions_pending_revocation)) == (
        "MemberState.UNREVOKED_PARTITIONS",
        {ghost: frozenset({0, 1})},
    )
    assert c.group().group_epoch == 3 and dict(c.group().target_assignment["m1"]) == {"foo": frozenset({0, 1})}
    # Once revoked, the new topic's partitions come at the new epoch, under the new id.
    resp = c.heartbeat("m1", 2, owned_ids=[])
    assert (resp["memberEpoch"], wire(resp)) == (3, [(NEW_ID, [0, 1])])
    [described] = c.describe()
    assert [tp["topicId"] for tp in described["members"][0]["assignment"]["topicPartitions"]] == [NEW_ID]


def test_topic_deleted_then_recreated_in_two_metadata_updates():
    c = client({"foo": 2, "bar": 1})
    stable_member(c)
    c.set_topics({"bar": 1})  # foo deleted
    c.set_topics({"foo": 2, "bar": 1}, ids={"foo": NEW_ID})  # and re-created before the next heartbeat
    resp = c.heartbeat("m1", 2, owned_ids=[{"topicId": OLD_ID, "partitions": [0, 1]}])
    assert (resp["memberEpoch"], wire(resp)) == (2, [])
    resp = c.heartbeat("m1", 2, owned_ids=[])
    assert (resp["memberEpoch"], wire(resp)) == (3, [(NEW_ID, [0, 1])])


def test_unchanged_topics_and_new_partitions_keep_their_assignments():
    c = client({"foo": 2})
    stable_member(c)
    mark = len(c.records())
    c.set_topics({"foo": 3}, ids={"foo": OLD_ID})  # more partitions, same topic
    assert c.records(mark) == []
    resp = c.heartbeat("m1", 2, owned_ids=[{"topicId": OLD_ID, "partitions": [0, 1]}])
    assert (resp["memberEpoch"], wire(resp)) == (3, [(OLD_ID, [0, 1, 2])])


def test_renamed_assignments_survive_a_rebuild_from_the_state_log():
    c = client({"foo": 2})
    stable_member(c)
    c.set_topics({"foo": 2}, ids={"foo": NEW_ID})
    rebuilt = c.rebuilt().component("groups").groups[GROUP]
    assert dict(rebuilt.members["m1"].assigned_partitions) == {unknown_topic_key(OLD_ID): frozenset({0, 1})}
