"""ConsumerGroupHeartbeat through the real coordinator (envelope, schema, run_batch, state encoded
between requests), mirroring Kafka's GroupMetadataManagerConsumerGroupTest (kafka-rules.md §2b)."""

from __future__ import annotations

import pytest

from coordinator.errors import Errors
from coordinator.group.consumer.member import ConsumerGroupMember, MemberState
from coordinator.records import record_key
from tests.consumer.consumer_group_helpers import GROUP, ConsumerGroupTestClient, assignment_of, mock_assignor, topic_id

__all__ = ["mock_assignor"]  # the fixture

STABLE, UNREVOKED, UNRELEASED = (
    MemberState.STABLE,
    MemberState.UNREVOKED_PARTITIONS,
    MemberState.UNRELEASED_PARTITIONS,
)


def client(**kw) -> ConsumerGroupTestClient:
    kw.setdefault("topics", {"foo": 6, "bar": 3})
    return ConsumerGroupTestClient(**kw)


def stable_member(member_id, epoch, assigned, topics=("foo", "bar"), **kw) -> ConsumerGroupMember:
    return ConsumerGroupMember(
        member_id,
        member_epoch=epoch,
        previous_member_epoch=epoch - 1,
        state=STABLE,
        client_id="client",
        rebalance_timeout_ms=5000,
        subscribed_topic_names=frozenset(topics),
        server_assignor_name=kw.pop("assignor", "mock"),
        assigned_partitions=assigned,
        **kw,
    )


def keys(records):
    return [k for k, _ in records]


def rk(kind, *ids):
    return record_key(kind, GROUP, *ids)


# ====================================================================== validation
@pytest.mark.parametrize(
    "body,message",
    [
        ({"groupId": "", "memberId": "m", "memberEpoch": 1}, "GroupId can't be empty."),
        ({"groupId": GROUP, "memberId": "", "memberEpoch": 0}, "MemberId can't be empty."),
        (
            {
                "groupId": GROUP,
                "memberId": "m",
                "memberEpoch": 0,
                "topicPartitions": [],
                "subscribedTopicNames": ["foo"],
            },
            "RebalanceTimeoutMs must be provided in first request.",
        ),
        (
            {
                "groupId": GROUP,
                "memberId": "m",
                "memberEpoch": 0,
                "rebalanceTimeoutMs": 5000,
                "subscribedTopicNames": ["foo"],
            },
            "TopicPartitions must be empty when (re-)joining.",
        ),
        (
            {"groupId": GROUP, "memberId": "m", "memberEpoch": 0, "rebalanceTimeoutMs": 5000, "topicPartitions": []},
            "Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when (re-)joining.",
        ),
        ({"groupId": GROUP, "memberId": "m", "memberEpoch": 1, "instanceId": ""}, "InstanceId can't be empty."),
        ({"groupId": GROUP, "memberId": "m", "memberEpoch": 1, "rackId": " "}, "RackId can't be empty."),
        ({"groupId": GROUP, "memberId": "m", "memberEpoch": -2}, "InstanceId can't be null."),
        ({"groupId": GROUP, "memberId": "m", "memberEpoch": -3}, "MemberEpoch is invalid."),
    ],
)
def test_consumer_heartbeat_request_validation(body, message):
    c = client(group_id=body["groupId"])  # the partition the request is routed to
    resp = c.send("ConsumerGroupHeartbeat", 1, body)
    assert resp == {
        "throttleTimeMs": 0,
        "errorCode": Errors.INVALID_REQUEST.code,
        "errorMessage": message,
        "memberId": None,
        "memberEpoch": 0,
        "heartbeatIntervalMs": 0,
        "assignment": None,
    }
    assert c.records() == [] and c.group() is None


def test_unsupported_assignor_lists_the_configured_ones():
    c = client()
    resp = c.join("m", ["foo"], assignor="sticky")
    assert resp["errorCode"] == Errors.UNSUPPORTED_ASSIGNOR.code
    # Kafka lists its HashMap's keys: "uniform" hashes to an earlier bucket than "range".
    assert resp["errorMessage"] == "ServerAssignor sticky is not supported. Supported assignors: uniform, range."
    c2 = client(group_consumer_assignors=["range"])
    assert (
        c2.join("m", ["foo"], assignor="uniform")["errorMessage"]
        == "ServerAssignor uniform is not supported. Supported assignors: range."
    )


def test_owned_partitions_must_name_topics_by_id():
    c = client()
    resp = c.heartbeat("m", 1, owned_ids=[{"topicName": "foo", "partitions": [0]}])
    assert resp["errorCode"] == Errors.INVALID_REQUEST.code and "topicId" in resp["errorMessage"]


# ====================================================================== joining
def test_member_id_generation():
    """testMemberIdGeneration: version 0 lets the coordinator generate the id."""
    c = ConsumerGroupTestClient()  # no metadata: nothing to assign
    resp = c.heartbeat("", 0, version=0, topics=["foo", "bar"], rebalance_timeout=5000, owned={})
    assert resp["errorCode"] == 0 and resp["memberEpoch"] == 2
    member_id = resp["memberId"]
    assert len(member_id) == 22 and not member_id.startswith("-")
    assert resp["assignment"] == {"topicPartitions": []}
    assert c.group().members[member_id].member_epoch == 2
    # Version 1 requires the client to bring its own id.
    assert (
        c.heartbeat("", 0, topics=["foo"], rebalance_timeout=5000, owned={})["errorMessage"]
        == "MemberId can't be empty."
    )


def test_unknown_group_id():
    c = client()
    resp = c.heartbeat("m", 100, topics=["foo"], rebalance_timeout=5000, owned={})
    assert (resp["errorCode"], resp["errorMessage"]) == (
        Errors.GROUP_ID_NOT_FOUND.code,
        f"Consumer group {GROUP} not found.",
    )


def test_unknown_member_id_joins_consumer_group():
    c = client()
    c.join("m1", ["foo", "bar"])
    resp = c.heartbeat("other", 1, topics=["foo", "bar"], rebalance_timeout=5000, owned={})
    assert (resp["errorCode"], resp["errorMessage"]) == (
        Errors.UNKNOWN_MEMBER_ID.code,
        f"Member other is not a member of group {GROUP}.",
    )


def test_consumer_group_member_epoch_validation(mock_assignor):
    c = client(group_consumer_assignors=["mock"])
    member = stable_member("m", 100, {"foo": frozenset({1, 2, 3})})
    c.inject_group(100, [member])
    for epoch in (200, 50):
        resp = c.heartbeat("m", epoch, topics=["foo", "bar"], rebalance_timeout=5000)
        assert resp["errorCode"] == Errors.FENCED_MEMBER_EPOCH.code
    assert c.heartbeat("m", 200)["errorMessage"] == (
        "The consumer group member has a greater member epoch (200) than the one known by the group coordinator "
        "(100). The member must abandon all its partitions and rejoin."
    )
    # The previous epoch without owned partitions: fenced.
    assert (
        c.heartbeat("m", 99, topics=["foo", "bar"], rebalance_timeout=5000)["errorCode"]
        == Errors.FENCED_MEMBER_EPOCH.code
    )
    # The previous epoch with a subset of its partitions: the response with epoch 100 was lost.
    resp = c.heartbeat("m", 99, topics=["foo", "bar"], rebalance_timeout=5000, owned={"foo": [1, 2]})
    assert resp["errorCode"] == 0 and resp["memberEpoch"] == 100


def test_member_joins_empty_consumer_group(mock_assignor):
    c = client(group_consumer_assignors=["mock"])
    mock_assignor.prepare({"m": {"foo": {0, 1, 2, 3, 4, 5}, "bar": {0, 1, 2}}})
    assert c.group() is None
    resp = c.heartbeat("m", 0, assignor="mock", rebalance_timeout=5000, topics=["foo", "bar"], owned={})
    assert resp == {
        "throttleTimeMs": 0,
        "errorCode": 0,
        "errorMessage": None,
        "memberId": "m",
        "memberEpoch": 2,
        "heartbeatIntervalMs": 5000,
        "assignment": {
            "topicPartitions": [
                {"topicId": topic_id("bar"), "partitions": [0, 1, 2]},
                {"topicId": topic_id("foo"), "partitions": [0, 1, 2, 3, 4, 5]},
            ]
        },
    }
    expected_member = stable_member("m", 2, {"foo": frozenset(range(6)), "bar": frozenset(range(3))}).replace(
        previous_member_epoch=0
    )
    assert c.member("m") == expected_member
    assert keys(c.records()) == [
        rk("ConsumerGroupMemberMetadata", "m"),
        rk("ConsumerGroupMetadata"),
        rk("ConsumerGroupTargetAssignmentMember", "m"),
        rk("ConsumerGroupTargetAssignmentMetadata"),
        rk("ConsumerGroupCurrentMemberAssignment", "m"),
    ]
    records = dict(c.records())
    assert records[rk("ConsumerGroupMetadata")]["epoch"] == 2
    assert records[rk("ConsumerGroupTargetAssignmentMetadata")] == {
        "type": "ConsumerGroupTargetAssignmentMetadata",
        "assignmentEpoch": 2,
        "assignmentTimestamp": c.d.now,
    }
    assert records[rk("ConsumerGroupCurrentMemberAssignment", "m")] == {
        "type": "ConsumerGroupCurrentMemberAssignment",
        "memberEpoch": 2,
        "previousMemberEpoch": 0,
        "state": "STABLE",
        "assignedPartitions": {"bar": [0, 1, 2], "foo": [0, 1, 2, 3, 4, 5]},
        "partitionsPendingRevocation": {},
        # Kafka 4.3+'s AssignmentEpochs: every partition assigned at epoch 2.
        "assignedPartitionsAssignmentEpochs": {"bar": [2, 2, 2], "foo": [2, 2, 2, 2, 2, 2]},
        "partitionsPendingRevocationAssignmentEpochs": {},
    }
    assert str(c.group().state) == "Stable"


def test_updating_subscription_triggers_new_target_assignment(mock_assignor):
    c = client(group_consumer_assignors=["mock"])
    c.inject_group(10, [stable_member("m", 10, {"foo": frozenset(range(6))}, topics=("foo",))])
    mock_assignor.prepare({"m": {"foo": set(range(6)), "bar": {0, 1, 2}}})
    mark = len(c.records())
    resp = c.heartbeat("m", 10, topics=["foo", "bar"])
    assert resp["memberEpoch"] == 11
    assert c.assignment(resp) == {"bar": [0, 1, 2], "foo": [0, 1, 2, 3, 4, 5]}
    assert keys(c.records(mark)) == [
        rk("ConsumerGroupMemberMetadata", "m"),
        rk("ConsumerGroupMetadata"),
        rk("ConsumerGroupTargetAssignmentMember", "m"),
        rk("ConsumerGroupTargetAssignmentMetadata"),
        rk("ConsumerGroupCurrentMemberAssignment", "m"),
    ]


def test_new_joining_member_triggers_new_target_assignment_with_the_default_uniform_assignor():
    c = client()
    r1 = c.join("m1", ["foo", "bar"])
    assert (r1["memberEpoch"], c.assignment(r1)) == (2, {"bar": [0, 1, 2], "foo": [0, 1, 2, 3, 4, 5]})
    r2 = c.join("m2", ["foo", "bar"])
    assert r2["memberEpoch"] == 3 and c.assignment(r2) == {}  # everything is still owned by m1
    assert str(c.group().state) == "Reconciling"
    targets = {m: {t: sorted(p) for t, p in a.items()} for m, a in c.group().target_assignment.items()}
    sizes = sorted(sum(len(p) for p in a.values()) for a in targets.values())
    assert sizes == [4, 5]  # uniform: balanced within one partition


def test_group_max_size_reached():
    c = client(group_consumer_max_size=1)
    c.join("m1", ["foo"])
    resp = c.join("m2", ["foo"])
    assert (resp["errorCode"], resp["errorMessage"]) == (
        Errors.GROUP_MAX_SIZE_REACHED.code,
        "The consumer group has reached its maximum capacity of 1 members.",
    )
    assert c.heartbeat("m1", 2)["errorCode"] == 0  # members already in the group are fine


def test_server_assignor_choice_follows_the_members():
    c = client()
    c.join("m1", ["foo"], assignor="range")
    c.join("m2", ["foo"], assignor="range")
    [g] = c.describe()
    assert g["assignorName"] == "range"
    computed = c.events("TargetAssignmentComputed")
    assert [e["assignor"] for e in computed] == ["range", "range"]
    # range: m1 gets 0-2, m2 gets 3-5.
    assert {m: assignment_of_target(c, m) for m in ("m1", "m2")} == {"m1": {"foo": [0, 1, 2]}, "m2": {"foo": [3, 4, 5]}}


def assignment_of_target(c, member_id):
    return {t: sorted(p) for t, p in c.group().target_assignment[member_id].items()}


def test_assignor_failure_is_unknown_server_error(mock_assignor):
    from coordinator.group.consumer.assignors import PartitionAssignorException

    def fail(spec, describer):
        raise PartitionAssignorException("Assignment failed.")

    mock_assignor.assign = fail
    c = client(group_consumer_assignors=["mock"])
    resp = c.join("m", ["foo"])
    assert (resp["errorCode"], resp["errorMessage"]) == (
        Errors.UNKNOWN_SERVER_ERROR.code,
        "Failed to compute a new target assignment for epoch 2: Assignment failed.",
    )
    assert c.records() == [] and c.group() is None


# ====================================================================== leaving
def test_leaving_member_bumps_group_epoch(mock_assignor):
    c = client(group_consumer_assignors=["mock"])
    m1 = stable_member("m1", 10, {"foo": frozenset({0, 1, 2}), "bar": frozenset({0, 1})})
    m2 = stable_member("m2", 10, {"foo": frozenset({3, 4, 5}), "bar": frozenset({2})})
    c.inject_group(10, [m1, m2])
    mark = len(c.records())
    resp = c.heartbeat("m2", -1)
    assert resp == {
        "throttleTimeMs": 0,
        "errorCode": 0,
        "errorMessage": None,
        "memberId": "m2",
        "memberEpoch": -1,
        "heartbeatIntervalMs": 0,
        "assignment": None,
    }
    assert c.records(mark) == [
        (rk("ConsumerGroupCurrentMemberAssignment", "m2"), None),
        (rk("ConsumerGroupTargetAssignmentMember", "m2"), None),
        (rk("ConsumerGroupMemberMetadata", "m2"), None),
        (
            rk("ConsumerGroupMetadata"),
            {"type": "ConsumerGroupMetadata", "epoch": 11, "metadataHash": c.group().metadata_hash},
        ),
    ]
    assert set(c.group().members) == {"m1"} and str(c.group().state) == "Assigning"
    assert not any("m2" in k for k in c.timers())


def test_last_member_leaving_moves_the_assignment_epoch(mock_assignor):
    """Kafka 4.4.0's consumerGroupFenceMembers: when the last members go, the (empty) target
    assignment is at the new group epoch (ConsumerGroupTargetAssignmentMetadata, timestamp 0)."""
    c = client(group_consumer_assignors=["mock"])
    c.inject_group(10, [stable_member("m1", 10, {"foo": frozenset({0, 1, 2})})])
    mark = len(c.records())
    assert c.heartbeat("m1", -1)["errorCode"] == 0
    assert c.records(mark)[-1] == (
        rk("ConsumerGroupTargetAssignmentMetadata"),
        {"type": "ConsumerGroupTargetAssignmentMetadata", "assignmentEpoch": 11},
    )
    described = c.describe(GROUP)[0]
    assert (described["groupState"], described["groupEpoch"], described["assignmentEpoch"]) == ("Empty", 11, 11)


def test_leaving_static_member_bumps_group_epoch(mock_assignor):
    c = client(group_consumer_assignors=["mock"])
    m1 = stable_member("m1", 10, {"foo": frozenset({0, 1, 2})})
    m2 = stable_member("m2", 10, {"foo": frozenset({3, 4, 5})}, instance_id="i2")
    c.inject_group(10, [m1, m2])
    mark = len(c.records())
    resp = c.heartbeat("m2", -1, instance_id="i2")
    assert (resp["memberId"], resp["memberEpoch"]) == ("m2", -1)
    assert [k for k, _ in c.records(mark)] == [
        rk("ConsumerGroupCurrentMemberAssignment", "m2"),
        rk("ConsumerGroupTargetAssignmentMember", "m2"),
        rk("ConsumerGroupMemberMetadata", "m2"),
        rk("ConsumerGroupMetadata"),
    ]
    assert c.group().static_members == {}


def test_no_group_epoch_bump_when_static_member_temporarily_leaves(mock_assignor):
    c = client(group_consumer_assignors=["mock"])
    m1 = stable_member("m1", 10, {"foo": frozenset({0, 1, 2})})
    m2 = stable_member("m2", 10, {"foo": frozenset({3, 4, 5})}, instance_id="i2")
    c.inject_group(10, [m1, m2])
    mark = len(c.records())
    resp = c.heartbeat("m2", -2, instance_id="i2")
    assert (resp["memberId"], resp["memberEpoch"]) == ("m2", -2)
    [(key, value)] = c.records(mark)
    assert key == rk("ConsumerGroupCurrentMemberAssignment", "m2")
    assert value["memberEpoch"] == -2 and value["assignedPartitions"] == {"foo": [3, 4, 5]}
    assert c.group().group_epoch == 10
    assert str(c.group().state) == "Reconciling"  # a member at epoch -2 is not reconciled


def test_static_member_leaves_for_good_after_its_session_timeout(mock_assignor):
    c = client(group_consumer_assignors=["mock"])
    m2 = stable_member("m2", 10, {"foo": frozenset({3, 4, 5})}, instance_id="i2")
    c.inject_group(10, [stable_member("m1", 10, {"foo": frozenset({0, 1, 2})}), m2])
    c.heartbeat("m1", 10)  # arms the session timers (loaded members got theirs when replayed)
    c.heartbeat("m2", 10, instance_id="i2")
    c.heartbeat("m2", -2, instance_id="i2")
    c.sleep(30_000)
    c.heartbeat("m1", 10)
    c.sleep(14_999)
    assert "m2" in c.group().members
    c.sleep(1)
    assert "m2" not in c.group().members and c.group().group_epoch == 11
    [fenced] = c.events("MemberFenced")
    assert fenced["memberId"] == "m2" and fenced["reason"] == "the member session expired"


def test_leave_of_unknown_group_or_member():
    c = client()
    resp = c.heartbeat("m", -1)
    assert (resp["errorCode"], resp["errorMessage"]) == (Errors.GROUP_ID_NOT_FOUND.code, f"Group {GROUP} not found.")
    c.join("m1", ["foo"])
    assert c.heartbeat("zz", -1)["errorCode"] == Errors.UNKNOWN_MEMBER_ID.code


# ====================================================================== static members
def test_unreleased_instance_id(mock_assignor):
    c = client(group_consumer_assignors=["mock"])
    c.inject_group(10, [stable_member("m1", 10, {"foo": frozenset({0})}, instance_id="i1")])
    resp = c.join("m2", ["foo"], instance_id="i1")
    assert (resp["errorCode"], resp["errorMessage"]) == (
        Errors.UNRELEASED_INSTANCE_ID.code,
        "Static member m2 with instance id i1 cannot join the group because the instance id is owned by m1 member.",
    )


def test_unknown_static_member_and_fenced_instance_id(mock_assignor):
    c = client(group_consumer_assignors=["mock"])
    c.inject_group(10, [stable_member("m1", 10, {"foo": frozenset({0})}, instance_id="i1")])
    resp = c.heartbeat("m2", 10, instance_id="unknown")
    assert (resp["errorCode"], resp["errorMessage"]) == (
        Errors.UNKNOWN_MEMBER_ID.code,
        "Instance id unknown is unknown.",
    )
    resp = c.heartbeat("m2", 10, instance_id="i1")
    assert (resp["errorCode"], resp["errorMessage"]) == (
        Errors.FENCED_INSTANCE_ID.code,
        "Static member m2 with instance id i1 was fenced by member m1.",
    )


def test_static_member_gets_back_assignment_upon_rejoin():
    c = client()
    c.join("m1", ["foo", "bar"], instance_id="i1", assignor="range")
    c.join("m2", ["foo", "bar"], instance_id="i2", assignor="range")
    # Settle: m1 revokes, m2 gets its share.
    c.heartbeat("m1", 2, owned={"foo": [0, 1, 2], "bar": [0, 1]}, instance_id="i1")
    c.heartbeat("m2", 3, instance_id="i2")
    before = assignment_of(c.member("m2"))
    assert before == {"bar": [2], "foo": [3, 4, 5]} and str(c.group().state) == "Stable"
    epoch = c.group().group_epoch
    c.heartbeat("m2", -2, instance_id="i2")
    mark = len(c.records())
    resp = c.join("m3", ["foo", "bar"], instance_id="i2", assignor="range")
    assert resp["errorCode"] == 0 and resp["memberId"] == "m3"
    assert c.assignment(resp) == before and resp["memberEpoch"] == epoch
    assert "m2" not in c.group().members and c.group().static_members["i2"] == "m3"
    assert c.group().group_epoch == epoch  # no rebalance: same subscription
    assert keys(c.records(mark))[:6] == [
        rk("ConsumerGroupCurrentMemberAssignment", "m2"),
        rk("ConsumerGroupTargetAssignmentMember", "m2"),
        rk("ConsumerGroupMemberMetadata", "m2"),
        rk("ConsumerGroupMemberMetadata", "m3"),
        rk("ConsumerGroupTargetAssignmentMember", "m3"),
        rk("ConsumerGroupCurrentMemberAssignment", "m3"),
    ]
    [replaced] = c.events("StaticMemberReplaced")
    assert (replaced["oldMemberId"], replaced["newMemberId"]) == ("m2", "m3")


# ====================================================================== reconciliation
def test_reconciliation_process(mock_assignor):
    """testReconciliationProcess: member 3 joins; members 1 and 2 must revoke first."""
    c = client(group_consumer_assignors=["mock"])
    a1 = {"foo": frozenset({0, 1, 2}), "bar": frozenset({0, 1})}
    a2 = {"foo": frozenset({3, 4, 5}), "bar": frozenset({2})}
    c.inject_group(10, [stable_member("m1", 10, a1), stable_member("m2", 10, a2)])
    mock_assignor.prepare(
        {"m1": {"foo": {0, 1}, "bar": {0}}, "m2": {"foo": {2, 3}, "bar": {2}}, "m3": {"foo": {4, 5}, "bar": {1}}}
    )

    def state(member_id):
        m = c.member(member_id)
        return (
            m.state,
            m.member_epoch,
            m.previous_member_epoch,
            assignment_of(m),
            {t: sorted(p) for t, p in m.partitions_pending_revocation.items()},
        )

    # Member 3 joins: epoch 11, nothing free yet.
    r = c.join("m3", ["foo", "bar"], assignor="mock")
    assert (r["memberEpoch"], c.assignment(r)) == (11, {})
    assert state("m3") == (UNRELEASED, 11, 0, {}, {})
    assert str(c.group().state) == "Reconciling"

    # Member 1 stays at epoch 10 and must revoke foo-2 and bar-1.
    r = c.heartbeat("m1", 10)
    assert (r["memberEpoch"], c.assignment(r)) == (10, {"bar": [0], "foo": [0, 1]})
    assert state("m1") == (UNREVOKED, 10, 10, {"bar": [0], "foo": [0, 1]}, {"bar": [1], "foo": [2]})
    assert "rebalance" in "".join(k for k in c.timers() if "m1" in k)

    # Member 2 likewise: foo-4 and foo-5.
    r = c.heartbeat("m2", 10)
    assert (r["memberEpoch"], c.assignment(r)) == (10, {"bar": [2], "foo": [3]})
    assert state("m2") == (UNREVOKED, 10, 10, {"bar": [2], "foo": [3]}, {"foo": [4, 5]})

    # Member 3: still waiting.
    r = c.heartbeat("m3", 11)
    assert (r["memberEpoch"], r["assignment"]) == (11, None)
    assert state("m3") == (UNRELEASED, 11, 11, {}, {})

    # Member 1 acknowledges: epoch 11, STABLE; its rebalance timeout is cancelled.
    r = c.heartbeat("m1", 10, owned={"foo": [0, 1], "bar": [0]})
    assert (r["memberEpoch"], r["assignment"]) == (11, None)
    assert state("m1") == (STABLE, 11, 10, {"bar": [0], "foo": [0, 1]}, {})
    assert not any("rebalance" in k and "m1" in k for k in c.timers())

    # Member 2 has not revoked yet: no change, no record.
    mark = len(c.records())
    r = c.heartbeat("m2", 10)
    assert (r["memberEpoch"], r["assignment"]) == (10, None)
    assert c.records(mark) == []

    # Member 3 gets bar-1 (released by member 1), still waits for foo-4 and foo-5.
    r = c.heartbeat("m3", 11)
    assert (r["memberEpoch"], c.assignment(r)) == (11, {"bar": [1]})
    assert state("m3") == (UNRELEASED, 11, 11, {"bar": [1]}, {})

    # Member 2 acknowledges and gets foo-2 (released by member 1) at epoch 11.
    r = c.heartbeat("m2", 10, owned={"foo": [3], "bar": [2]})
    assert (r["memberEpoch"], c.assignment(r)) == (11, {"bar": [2], "foo": [2, 3]})
    assert state("m2") == (STABLE, 11, 10, {"bar": [2], "foo": [2, 3]}, {})

    # Member 3 gets the rest: STABLE; so is the group.
    r = c.heartbeat("m3", 11)
    assert (r["memberEpoch"], c.assignment(r)) == (11, {"bar": [1], "foo": [4, 5]})
    assert state("m3") == (STABLE, 11, 11, {"bar": [1], "foo": [4, 5]}, {})
    assert str(c.group().state) == "Stable"


def unrevoked_group(c):
    """m1 STABLE at 10 must give foo-2 to m2 at epoch 11."""
    c.inject_group(
        11,
        [
            stable_member("m1", 10, {"foo": frozenset({0, 1, 2})}),
            stable_member("m2", 10, {"foo": frozenset({3, 4, 5})}),
        ],
        targets={"m1": {"foo": {0, 1}}, "m2": {"foo": {2, 3, 4, 5}}},
    )


def test_member_can_rejoin_with_epoch_zero_in_stable_state(mock_assignor):
    c = client(group_consumer_assignors=["mock"])
    c.inject_group(10, [stable_member("m", 10, {"foo": frozenset({0, 1, 2})})])
    mark = len(c.records())
    resp = c.join("m", ["foo", "bar"], assignor="mock")
    assert (resp["memberEpoch"], c.assignment(resp)) == (10, {"foo": [0, 1, 2]})
    assert c.records(mark) == []  # nothing changed
    assert c.member("m").state == STABLE


def test_member_can_rejoin_with_epoch_zero_in_unrevoked_partitions_state(mock_assignor):
    c = client(group_consumer_assignors=["mock"])
    unrevoked_group(c)
    c.heartbeat("m1", 10)
    assert c.member("m1").state == UNREVOKED
    # Rejoining, the member owns nothing (epoch 0 requires an empty owned list): the revocation is
    # done, and it moves to the target epoch with its target.
    resp = c.join("m1", ["foo", "bar"], assignor="mock")
    assert (resp["memberEpoch"], c.assignment(resp)) == (11, {"foo": [0, 1]})
    assert c.member("m1").state == STABLE


def test_member_can_rejoin_with_epoch_zero_in_unreleased_partitions_state(mock_assignor):
    c = client(group_consumer_assignors=["mock"])
    unrevoked_group(c)
    r = c.heartbeat("m2", 10)
    assert c.member("m2").state == UNRELEASED and r["memberEpoch"] == 11
    assert r["assignment"] is None  # unchanged (foo-2 is not free yet), not a full request
    resp = c.join("m2", ["foo", "bar"], assignor="mock")
    assert (resp["memberEpoch"], c.assignment(resp)) == (11, {"foo": [3, 4, 5]})
    assert c.member("m2").state == UNRELEASED


def test_fenced_member_epoch_in_unknown_state_unless_it_owns_nothing(mock_assignor):
    c = client(group_consumer_assignors=["mock"])
    m = stable_member("m", 10, {"foo": frozenset({0})}).replace(state=MemberState.UNKNOWN)
    c.inject_group(11, [m], targets={"m": {"foo": {0}}}, assignment_epoch=11)
    assert c.heartbeat("m", 10)["errorCode"] == Errors.FENCED_MEMBER_EPOCH.code
    assert c.heartbeat("m", 10, owned={})["errorCode"] == 0


def test_full_request_gets_the_assignment_and_lost_responses_are_recovered():
    c = client()
    c.join("m1", ["foo"])
    assert c.assignment(c.heartbeat("m1", 2)) is None  # nothing changed: no assignment
    full = c.heartbeat("m1", 2, topics=["foo"], rebalance_timeout=5000, owned={"foo": list(range(6))})
    assert c.assignment(full) == {"foo": [0, 1, 2, 3, 4, 5]}


# ====================================================================== timers
def test_session_timeout_lifecycle():
    c = client()
    c.join("m1", ["foo"])
    assert c.timers()[record_key("consumer-session", GROUP, "m1")][0] == c.now + 45_000
    c.sleep(30_000)
    c.heartbeat("m1", 2)
    c.sleep(44_999)
    assert "m1" in c.group().members
    c.sleep(1)
    assert "m1" not in c.group().members
    assert c.group().group_epoch == 3 and str(c.group().state) == "Empty"
    [fenced] = c.events("MemberFenced")
    assert fenced["reason"] == "the member session expired"


def test_session_timeout_is_configurable_within_kafkas_bounds():
    with pytest.raises(ValueError, match="greater than or equal to group.consumer.min.session.timeout.ms"):
        client(group_consumer_session_timeout_ms=1000)
    c = client(
        group_consumer_session_timeout_ms=6000,
        group_consumer_min_session_timeout_ms=6000,
        group_consumer_heartbeat_interval_ms=2000,
        group_consumer_min_heartbeat_interval_ms=1000,
    )
    resp = c.join("m1", ["foo"])
    assert resp["heartbeatIntervalMs"] == 2000
    c.sleep(6000)
    assert "m1" not in c.group().members


def test_rebalance_timeout_expiration(mock_assignor):
    c = client(group_consumer_assignors=["mock"])
    unrevoked_group(c)
    c.heartbeat("m2", 10)
    c.heartbeat("m1", 10)  # UNREVOKED: 5 s (its rebalance timeout) to revoke foo-2
    assert c.member("m1").state == UNREVOKED
    c.sleep(4_000)
    c.heartbeat("m1", 10)  # still owns foo-2: the timer keeps running
    c.heartbeat("m2", 11)
    c.sleep(1_000)
    assert "m1" not in c.group().members
    [fenced] = c.events("MemberFenced")
    assert fenced["reason"] == "it failed to transition from epoch 10 within 5000ms"
    assert c.group().group_epoch == 12


def test_rebalance_timeout_ignored_once_the_member_moved_on(mock_assignor):
    c = client(group_consumer_assignors=["mock"])
    unrevoked_group(c)
    c.heartbeat("m1", 10)
    c.heartbeat("m1", 10, owned={"foo": [0, 1]})
    assert c.member("m1").state == STABLE
    c.sleep(6_000)
    assert "m1" in c.group().members and not c.events("MemberFenced")


# ====================================================================== metadata
def test_a_topic_gaining_partitions_bumps_the_group_epoch_at_the_next_heartbeat():
    c = client()
    c.join("m1", ["foo"])
    c.join("m2", ["foo"])
    c.heartbeat("m1", 2, owned={"foo": [0, 1, 2]})
    c.heartbeat("m2", 3)
    c.heartbeat("m1", 3)
    assert str(c.group().state) == "Stable" and c.group().group_epoch == 3
    c.set_topics({"foo": 8, "bar": 3})
    assert c.group().group_epoch == 3  # Kafka bumps on the next heartbeat, not on the update
    r = c.heartbeat("m1", 3)
    assert c.group().group_epoch == 4 and r["memberEpoch"] == 4
    c.heartbeat("m2", 3)
    owned = {m: assignment_of(c.member(m)) for m in ("m1", "m2")}
    assert sorted(p for a in owned.values() for p in a["foo"]) == list(range(8))
    assert [e["reason"] for e in c.events("GroupEpochBumped")][-1] == "the metadata of the subscribed topics changed"


def test_metadata_of_other_topics_does_not_bump():
    c = client()
    c.join("m1", ["foo"])
    c.set_topics({"foo": 6, "bar": 5, "baz": 1})
    c.heartbeat("m1", 2)
    assert c.group().group_epoch == 2


def test_subscribing_to_a_topic_that_appears_later():
    c = client()
    r = c.join("m1", ["later"])
    assert c.assignment(r) == {} and r["memberEpoch"] == 2
    c.set_topics({"foo": 6, "bar": 3, "later": 2})
    r = c.heartbeat("m1", 2)
    assert r["memberEpoch"] == 3 and c.assignment(r) == {"later": [0, 1]}


def test_owned_partitions_of_an_unknown_topic_id_are_not_owned():
    c = client()
    c.join("m1", ["foo"])
    r = c.heartbeat("m1", 2, owned_ids=[{"topicId": "AAAAAAAAAAAAAAAAAAAAAQ", "partitions": [0]}])
    assert r["errorCode"] == 0 and r["memberEpoch"] == 2


# ====================================================================== the assignment interval (Kafka 4.3+)
def test_can_compute_next_target_assignment():
    """testCanComputeNextTargetAssignmentWithNoPreviousAssignmentTimestamp / ...WithZeroAssignmentIntervalMs
    / testCanComputeNextTargetAssignment."""
    from coordinator.group.consumer.group import ConsumerGroup

    def can(timestamp, interval, now):
        g = ConsumerGroup("g")
        g.assignment_timestamp = timestamp
        return g.can_compute_next_target_assignment(interval, now)

    assert can(0, 1000, 0)
    assert can(1000000, 0, 0) and can(1000000, 0, 999999) and can(1000000, 0, 1000000)
    assert not can(1000000, 5000, 0) and not can(1000000, 5000, 999999)
    assert not can(1000000, 5000, 1000000) and not can(1000000, 5000, 1004999)
    assert can(1000000, 5000, 1005000) and can(1000000, 5000, 1007500)


def test_consumer_group_assignment_interval():
    """testConsumerGroupAssignmentInterval: the first member is assigned at once (no previous
    assignment); a member joining within the interval bumps the group epoch but gets the last
    assignment's epoch and nothing; once the interval elapsed its next heartbeat computes it."""
    c = client(topics={"foo": 6}, group_consumer_assignment_interval_ms=5000)
    r1 = c.join("m1", ["foo"])
    assert r1["memberEpoch"] == 2 and c.assignment(r1) == {"foo": [0, 1, 2, 3, 4, 5]}
    assert c.records()[-2][1]["assignmentTimestamp"] == c.d.now  # when it was computed
    c.d.advance(4995)
    mark = len(c.records())
    r2 = c.join("m2", ["foo"])
    assert (r2["memberEpoch"], c.assignment(r2)) == (2, {})
    assert keys(c.records(mark)) == [
        rk("ConsumerGroupMemberMetadata", "m2"),
        rk("ConsumerGroupMetadata"),
        rk("ConsumerGroupCurrentMemberAssignment", "m2"),
    ]
    assert (c.group().group_epoch, c.group().target_assignment_epoch) == (3, 2)
    c.d.advance(10)
    r3 = c.heartbeat("m2", 2)
    assert r3["memberEpoch"] == 3 and c.group().target_assignment_epoch == 3
