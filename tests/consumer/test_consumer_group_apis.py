"""ConsumerGroupDescribe, the generic group APIs on consumer groups (ListGroups, DescribeGroups,
DeleteGroups, OffsetCommit/Fetch/Delete with member epochs), classic APIs sent to a consumer group,
conversions between empty classic and consumer groups, regex subscriptions, and replay."""

from __future__ import annotations

import pytest

from coordinator.errors import Errors
from coordinator.group.admin import GROUP_AUTHORIZED_OPERATIONS
from coordinator.records import record_key
from coordinator.result import CoordinatorResult
from tests.consumer.consumer_group_helpers import GROUP, ConsumerGroupTestClient, topic_id
from tests.group.group_helpers import GroupTestClient, group_on_partition


def client(**kw) -> ConsumerGroupTestClient:
    kw.setdefault("topics", {"foo": 6, "bar": 3})
    return ConsumerGroupTestClient(**kw)


def classic_view(c: ConsumerGroupTestClient) -> GroupTestClient:
    """A classic-protocol client on the same driver (same coordinator partition)."""
    g = GroupTestClient.__new__(GroupTestClient)
    g.group_id, g.d = c.group_id, c.d
    return g


def stable_two_members(c):
    c.join("m1", ["foo"], assignor="range")
    c.join("m2", ["foo"], assignor="range")
    c.heartbeat("m1", 2, owned={"foo": [0, 1, 2]})
    c.heartbeat("m2", 3)
    c.heartbeat("m1", 3)
    assert str(c.group().state) == "Stable"


# ====================================================================== ConsumerGroupDescribe
def test_consumer_group_describe_no_errors():
    # GroupMetadataManagerTest.testConsumerGroupDescribeNoErrors: ConsumerGroupMember.
    # asConsumerGroupDescribeMember; a member without a regex has subscribedTopicRegex "" (the
    # member's default), not null.
    c = client()
    stable_two_members(c)
    [g] = c.describe()
    foo = {"topicId": topic_id("foo"), "topicName": "foo"}
    assert g == {
        "errorCode": 0,
        "errorMessage": None,
        "groupId": GROUP,
        "groupState": "Stable",
        "groupEpoch": 3,
        "assignmentEpoch": 3,
        "assignorName": "range",
        "authorizedOperations": -(2**31),
        "members": [
            {
                "memberId": "m1",
                "instanceId": None,
                "rackId": None,
                "memberEpoch": 3,
                "clientId": "client",
                "clientHost": "",
                "subscribedTopicNames": ["foo"],
                "subscribedTopicRegex": "",
                "assignment": {"topicPartitions": [{**foo, "partitions": [0, 1, 2]}]},
                "targetAssignment": {"topicPartitions": [{**foo, "partitions": [0, 1, 2]}]},
                "memberType": 1,
            },
            {
                "memberId": "m2",
                "instanceId": None,
                "rackId": None,
                "memberEpoch": 3,
                "clientId": "client",
                "clientHost": "",
                "subscribedTopicNames": ["foo"],
                "subscribedTopicRegex": "",
                "assignment": {"topicPartitions": [{**foo, "partitions": [3, 4, 5]}]},
                "targetAssignment": {"topicPartitions": [{**foo, "partitions": [3, 4, 5]}]},
                "memberType": 1,
            },
        ],
    }
    [v0] = c.describe(version=0)
    assert all("memberType" not in m for m in v0["members"])
    [ops] = c.describe(include_operations=True)
    assert ops["authorizedOperations"] == GROUP_AUTHORIZED_OPERATIONS


def test_consumer_group_describe_errors():
    c = client()
    classic = classic_view(c)
    other_classic = group_on_partition(c.d.partition_id, prefix="classic")
    classic.join("", group_id=other_classic)  # creates an (empty) classic group
    elsewhere = group_on_partition(c.d.partition_id, other=True)
    unknown = group_on_partition(c.d.partition_id, prefix="unknown")
    groups = c.describe(unknown, other_classic, elsewhere, "")
    assert [(g["groupId"], g["errorCode"], g["errorMessage"]) for g in groups] == [
        (unknown, Errors.GROUP_ID_NOT_FOUND.code, f"Group {unknown} not found."),
        (other_classic, Errors.GROUP_ID_NOT_FOUND.code, f"Group {other_classic} is not a consumer group."),
        (elsewhere, Errors.NOT_COORDINATOR.code, None),
        ("", Errors.INVALID_GROUP_ID.code, None),
    ]
    assert groups[0] == {
        "errorCode": Errors.GROUP_ID_NOT_FOUND.code,
        "errorMessage": f"Group {unknown} not found.",
        "groupId": unknown,
        "groupState": "",
        "groupEpoch": 0,
        "assignmentEpoch": 0,
        "assignorName": "",
        "members": [],
        "authorizedOperations": -(2**31),
    }


def test_describe_shows_static_members_and_regex_and_target_of_each_member():
    c = client()
    c.join("m1", None, regex="fo.*", instance_id="i1", rack_id="r1")
    [g] = c.describe()
    [m] = g["members"]
    assert (m["instanceId"], m["rackId"], m["subscribedTopicNames"], m["subscribedTopicRegex"]) == (
        "i1",
        "r1",
        [],
        "fo.*",
    )
    # Leaving the regex for names (regex "") describes it as "", as Kafka's member does.
    c.heartbeat("m1", c.describe()[0]["members"][0]["memberEpoch"], topics=["foo"], regex="", instance_id="i1")
    [m] = c.describe()[0]["members"]
    assert (m["subscribedTopicNames"], m["subscribedTopicRegex"]) == (["foo"], "")


# ====================================================================== ListGroups, DescribeGroups, DeleteGroups
def test_list_groups_shows_both_types():
    c = client()
    stable_two_members(c)
    classic = classic_view(c)
    cg = group_on_partition(c.d.partition_id, prefix="classic")
    classic.join("", group_id=cg)
    body = c.send("ListGroups", 5, {"statesFilter": [], "typesFilter": []})
    assert sorted((g["groupId"], g["protocolType"], g["groupState"], g["groupType"]) for g in body["groups"]) == sorted(
        [(GROUP, "consumer", "Stable", "consumer"), (cg, "", "Empty", "classic")]
    )
    only = c.send("ListGroups", 5, {"statesFilter": ["stable"], "typesFilter": ["Consumer"]})
    assert [g["groupId"] for g in only["groups"]] == [GROUP]
    assert c.send("ListGroups", 5, {"statesFilter": ["reconciling"], "typesFilter": []})["groups"] == []


def test_describe_groups_answers_for_classic_groups_only():
    c = client()
    stable_two_members(c)
    [g] = c.send("DescribeGroups", 6, {"groups": [GROUP], "includeAuthorizedOperations": False})["groups"]
    assert (g["errorCode"], g["errorMessage"], g["groupState"]) == (
        Errors.GROUP_ID_NOT_FOUND.code,
        f"Group {GROUP} is not a classic group.",
        "Dead",
    )


def test_delete_groups_needs_an_empty_consumer_group():
    c = client()
    c.join("m1", ["foo"])
    c.send(
        "OffsetCommit",
        9,
        {
            "groupId": GROUP,
            "generationIdOrMemberEpoch": 2,
            "memberId": "m1",
            "groupInstanceId": None,
            "topics": [
                {"name": "foo", "partitions": [{"partitionIndex": 0, "committedOffset": 5, "committedMetadata": ""}]}
            ],
        },
    )
    [r] = c.send("DeleteGroups", 2, {"groupsNames": [GROUP]})["results"]
    assert r["errorCode"] == Errors.NON_EMPTY_GROUP.code
    c.heartbeat("m1", -1)
    assert str(c.group().state) == "Empty"
    mark = len(c.records())
    [r] = c.send("DeleteGroups", 2, {"groupsNames": [GROUP]})["results"]
    assert r["errorCode"] == 0 and c.group() is None
    assert c.records(mark) == [
        (record_key("OffsetCommit", GROUP, "foo", 0), None),
        (record_key("ConsumerGroupTargetAssignmentMetadata", GROUP), None),
        (record_key("ConsumerGroupPartitionMetadata", GROUP), None),
        (record_key("ConsumerGroupMetadata", GROUP), None),
    ]


# ====================================================================== offsets with member epochs
def commit(c, member_id, epoch, version=9, offset=10):
    body = {
        "groupId": GROUP,
        "generationIdOrMemberEpoch": epoch,
        "memberId": member_id,
        "topics": [
            {"name": "foo", "partitions": [{"partitionIndex": 0, "committedOffset": offset, "committedMetadata": ""}]}
        ],
    }
    if version >= 7:
        body["groupInstanceId"] = None
    return c.send("OffsetCommit", version, body)["topics"][0]["partitions"][0]["errorCode"]


def fetch(c, member_id, epoch):
    body = {
        "groups": [
            {
                "groupId": GROUP,
                "memberId": member_id,
                "memberEpoch": epoch,
                "topics": [{"name": "foo", "partitionIndexes": [0]}],
            }
        ],
        "requireStable": False,
    }
    return c.send("OffsetFetch", 9, body)["groups"][0]


def test_offset_commit_and_fetch_with_member_epochs():
    c = client()
    c.join("m1", ["foo"])
    assert commit(c, "m1", 0) == Errors.STALE_MEMBER_EPOCH.code
    assert commit(c, "m1", 3) == Errors.STALE_MEMBER_EPOCH.code
    assert commit(c, "zz", 1) == Errors.UNKNOWN_MEMBER_ID.code
    assert commit(c, "", -1) == Errors.UNKNOWN_MEMBER_ID.code  # the group has members
    assert commit(c, "m1", 2, version=8) == Errors.UNSUPPORTED_VERSION.code
    assert commit(c, "m1", 2) == 0
    assert fetch(c, "m1", 0)["errorCode"] == Errors.STALE_MEMBER_EPOCH.code
    assert fetch(c, "zz", 1)["errorCode"] == Errors.UNKNOWN_MEMBER_ID.code
    ok = fetch(c, "m1", 2)
    assert ok["errorCode"] == 0 and ok["topics"][0]["partitions"][0]["committedOffset"] == 10
    assert fetch(c, None, -1)["topics"][0]["partitions"][0]["committedOffset"] == 10  # admin
    # Once empty, the admin client may commit with epoch -1.
    c.heartbeat("m1", -1)
    assert commit(c, "", -1, offset=20) == 0


def test_offset_commit_to_an_unknown_group_v9_and_txn_offset_commit_epochs():
    c = client()
    assert commit(c, "m", 3) == Errors.GROUP_ID_NOT_FOUND.code
    c.join("m1", ["foo"])
    # TxnOffsetCommit maps STALE_MEMBER_EPOCH to ILLEGAL_GENERATION (validated by the groups component).
    groups = c.groups()
    from coordinator.errors import ApiError

    with pytest.raises(ApiError) as e:
        groups.validate_transactional_offset_commit(GROUP, "m1", None, 7, 4, CoordinatorResult())
    assert e.value.error.name == "ILLEGAL_GENERATION"
    assert groups.validate_transactional_offset_commit(GROUP, "m1", None, 2, 4, CoordinatorResult()) is not None


def test_offset_delete_refuses_subscribed_topics():
    c = client()
    c.join("m1", ["foo"])
    commit(c, "m1", 1)
    body = {
        "groupId": GROUP,
        "topics": [
            {"name": "foo", "partitions": [{"partitionIndex": 0}]},
            {"name": "bar", "partitions": [{"partitionIndex": 0}]},
        ],
    }
    resp = c.send("OffsetDelete", 0, body)
    assert [(t["name"], t["partitions"][0]["errorCode"]) for t in resp["topics"]] == [
        ("foo", Errors.GROUP_SUBSCRIBED_TO_TOPIC.code),
        ("bar", 0),
    ]


def test_offsets_of_consumer_groups_expire_from_their_commit_time_except_subscribed_topics():
    c = client(offsets_retention_minutes=1, offsets_retention_check_interval_ms=1000)
    c.join("m1", ["foo"])
    c.send(
        "OffsetCommit",
        9,
        {
            "groupId": GROUP,
            "generationIdOrMemberEpoch": 2,
            "memberId": "m1",
            "groupInstanceId": None,
            "topics": [
                {"name": "foo", "partitions": [{"partitionIndex": 0, "committedOffset": 1, "committedMetadata": ""}]},
                {"name": "bar", "partitions": [{"partitionIndex": 0, "committedOffset": 1, "committedMetadata": ""}]},
            ],
        },
    )
    c.heartbeat("m1", 2)
    c.sleep(40_000)
    c.heartbeat("m1", 2)
    c.sleep(21_000)
    left = c.groups().offsets.group_offsets(GROUP)
    assert set(left) == {"foo"}


# ====================================================================== classic APIs to a consumer group
def test_classic_apis_against_a_consumer_group():
    c = client()
    c.join("m1", ["foo"], instance_id="i1")
    c.join("m2", ["foo"])
    classic = classic_view(c)
    _, join = classic.join("")
    assert join["errorCode"] == Errors.MEMBER_ID_REQUIRED.code  # classic members are admitted (online migration)
    assert classic.heartbeat("m1", 1)["errorCode"] == Errors.UNKNOWN_MEMBER_ID.code  # not a classic-protocol member
    assert classic.heartbeat("zz", 1)["errorCode"] == Errors.UNKNOWN_MEMBER_ID.code
    assert classic.heartbeat("zz", 1, instance_id="i1")["errorCode"] == Errors.FENCED_INSTANCE_ID.code
    assert classic.sync("m2", 2)[1]["errorCode"] == Errors.UNKNOWN_MEMBER_ID.code
    assert classic.sync("zz", 2, instance_id="i1")[1]["errorCode"] == Errors.FENCED_INSTANCE_ID.code
    # LeaveGroup removes consumer-protocol members (the admin client's removeMembersFromConsumerGroup).
    epoch = c.group().group_epoch
    resp = classic.leave(
        {"memberId": "", "groupInstanceId": "i1"},
        {"memberId": "m2"},
        {"memberId": "zz"},
        {"memberId": "other", "groupInstanceId": "i1"},
    )
    assert [m["errorCode"] for m in resp["members"]] == [
        0,
        0,
        Errors.UNKNOWN_MEMBER_ID.code,
        Errors.FENCED_INSTANCE_ID.code,
    ]
    assert c.group().members == {} and c.group().group_epoch == epoch + 1  # one bump for both


def test_classic_leave_of_unknown_static_member():
    c = client()
    c.join("m1", ["foo"])
    resp = classic_view(c).leave({"memberId": "", "groupInstanceId": "nope"})
    assert resp["members"][0]["errorCode"] == Errors.UNKNOWN_MEMBER_ID.code and "m1" in c.group().members


# ====================================================================== conversions
def test_an_empty_classic_group_becomes_a_consumer_group():
    c = client()
    classic = classic_view(c)
    _, first = classic.join("")
    assert first["errorCode"] == Errors.MEMBER_ID_REQUIRED.code
    assert c.group().type == "classic" and c.group().is_empty()
    commit(c, "", -1)  # offsets survive the conversion
    mark = len(c.records())
    resp = c.join("m1", ["foo"])
    assert resp["errorCode"] == 0 and c.group().type == "consumer"
    assert c.records(mark)[0] == (record_key("GroupMetadata", GROUP), None)
    assert [e["groupType"] for e in c.events("GroupDeleted")] == ["classic"]
    assert c.groups().offsets.get(GROUP, "foo", 0).committed_offset == 10


def test_a_simple_group_made_by_offset_commits_becomes_a_consumer_group():
    c = client()
    assert commit(c, "", -1) == 0
    assert c.group().type == "classic"
    assert c.join("m1", ["foo"])["errorCode"] == 0
    assert c.group().type == "consumer"


def test_an_empty_consumer_group_becomes_a_classic_group():
    c = client()
    c.join("m1", ["foo"])
    c.heartbeat("m1", -1)
    classic = classic_view(c)
    _, resp = classic.join("member-id")
    assert resp["errorCode"] == Errors.UNKNOWN_MEMBER_ID.code and c.group().type == "consumer"
    mark = len(c.records())
    _, resp = classic.join("")
    assert resp["errorCode"] == Errors.MEMBER_ID_REQUIRED.code and c.group().type == "classic"
    assert [k for k, _ in c.records(mark)] == [
        record_key("ConsumerGroupTargetAssignmentMetadata", GROUP),
        record_key("ConsumerGroupPartitionMetadata", GROUP),
        record_key("ConsumerGroupMetadata", GROUP),
        record_key("GroupMetadata", GROUP),
    ]


def test_upgrade_messages_follow_the_migration_policy():
    c = client(group_consumer_migration_policy="downgrade")
    from tests.group.group_helpers import join_and_rebalance

    join_and_rebalance(classic_view(c))
    assert c.join("m1", ["foo"])["errorMessage"] == (
        f"Cannot upgrade classic group {GROUP} to consumer group because online upgrade is disabled."
    )
    c2 = client()
    join_and_rebalance(classic_view(c2), protos=[{"name": "p", "metadata": "AAE="}], protocol_type="other")
    assert c2.join("m1", ["foo"])["errorMessage"] == (
        f"Cannot upgrade classic group {GROUP} to consumer group because the group does not use the consumer "
        "embedded protocol."
    )


# ====================================================================== regular expressions
def test_regex_subscription_is_resolved_after_the_heartbeat():
    c = client(topics={"foo": 6, "food": 2, "bar": 3})
    resp = c.join("m1", None, regex="foo.*")
    assert resp["memberEpoch"] == 2 and c.assignment(resp) == {}
    assert c.group().resolved_regular_expressions == {}
    c.sleep(0)  # the next micro-batch resolves it
    resolved = c.group().resolved_regular_expressions["foo.*"]
    assert resolved.topics == frozenset({"foo", "food"})
    assert c.group().group_epoch == 3
    assert (
        record_key("ConsumerGroupRegularExpression", GROUP, "foo.*"),
        {
            "type": "ConsumerGroupRegularExpression",
            "topics": ["foo", "food"],
            "version": resolved.version,
            "timestamp": resolved.timestamp,
        },
    ) in c.records()
    resp = c.heartbeat("m1", 2)
    assert resp["memberEpoch"] == 3 and c.assignment(resp) == {"foo": [0, 1, 2, 3, 4, 5], "food": [0, 1]}
    assert c.group().is_subscribed_to_topic("food") and not c.group().is_subscribed_to_topic("bar")


def test_regex_picks_up_new_topics_on_its_next_refresh():
    c = client(topics={"foo": 2})
    c.join("m1", None, regex="foo.*")
    c.sleep(0)
    c.heartbeat("m1", 2)
    c.set_topics({"foo": 2, "foo2": 1})
    c.heartbeat("m1", 3)  # within 10 s of the last resolution: no refresh yet
    assert c.group().resolved_regular_expressions["foo.*"].topics == {"foo"}
    c.sleep(10_001)
    c.heartbeat("m1", 3)
    c.sleep(0)
    assert c.group().resolved_regular_expressions["foo.*"].topics == {"foo", "foo2"}
    resp = c.heartbeat("m1", 3)
    assert c.assignment(resp) == {"foo": [0, 1], "foo2": [0]}


def test_invalid_regex():
    c = client()
    resp = c.join("m1", None, regex="[")
    assert resp["errorCode"] == Errors.INVALID_REGULAR_EXPRESSION.code
    assert (
        resp["errorMessage"]
        == "SubscribedTopicRegex `[` is not a valid regular expression: unterminated character set."
    )


def test_regex_cannot_stall_the_coordinator():
    long_topic = "a" * 240
    c = client(topics={long_topic: 1})
    c.join("m1", None, regex="(a+)+b")
    c.sleep(0)
    assert c.group().resolved_regular_expressions["(a+)+b"].topics == frozenset()


def test_leaving_the_last_regex_subscriber_deletes_the_resolved_regex():
    c = client()
    c.join("m1", None, regex="fo.*")
    c.join("m2", ["bar"])
    c.sleep(0)
    assert "fo.*" in c.group().resolved_regular_expressions
    mark = len(c.records())
    c.heartbeat("m1", -1)
    assert (record_key("ConsumerGroupRegularExpression", GROUP, "fo.*"), None) in c.records(mark)
    assert c.group().resolved_regular_expressions == {}


# ====================================================================== replay
def comparable(groups_component) -> dict:
    out = {}
    for gid, g in groups_component.groups.items():
        data = g.to_json()
        data.pop("metadataRefreshDeadline", None)  # soft state, as in Kafka
        out[gid] = data
    return out


def busy_history(c: ConsumerGroupTestClient) -> None:
    c.join("m1", ["foo", "bar"], instance_id="i1")
    c.join("m2", ["foo", "bar"])
    c.join("m3", None, regex="ba.*")
    c.sleep(0)
    c.heartbeat("m1", 1, owned={"foo": [0, 1, 2, 3, 4, 5], "bar": [0, 1, 2]}, instance_id="i1")
    c.heartbeat("m2", 2)
    c.heartbeat("m3", 3)
    c.heartbeat("m1", -2, instance_id="i1")
    c.join("m4", ["foo", "bar"], instance_id="i1")
    c.set_topics({"foo": 8, "bar": 3})
    c.heartbeat("m2", 2)
    c.heartbeat("m3", 3, topics=["foo"])
    c.sleep(45_000)  # everybody's session expires
    c.join("m5", ["foo"])
    c.heartbeat("m5", 1)


def test_live_state_equals_the_state_rebuilt_from_the_log():
    c = client()
    busy_history(c)
    live = comparable(c.groups())
    rebuilt = c.rebuilt()
    assert comparable(rebuilt.component("groups")) == live
    # onLoaded: a session timer for every member.
    timers = rebuilt.timers.schedule_view()
    assert {k for k in timers if "consumer-session" in k} == {
        record_key("consumer-session", GROUP, m) for m in c.group().members
    }


@pytest.mark.parametrize("keep_tombstones", [True, False])
def test_compacted_log_rebuilds_the_same_state(keep_tombstones):
    from coordinator import CoordinatorPartition
    from coordinator.messages import StateRecord

    c = client()
    busy_history(c)
    last: dict[str, int] = {}
    for i, (k, _) in enumerate(c.records()):
        last[k] = i
    compacted = [
        StateRecord(k, v) for i, (k, v) in enumerate(c.records()) if last[k] == i and (keep_tombstones or v is not None)
    ]
    rebuilt = CoordinatorPartition.from_records(c.d.partition_id, compacted, c.d.config, now_ms=c.now)
    assert comparable(rebuilt.component("groups")) == comparable(c.groups())


def test_replay_of_an_inconsistent_log_is_refused():
    from coordinator import CoordinatorPartition
    from coordinator.group.consumer.group_state import IllegalStateError
    from coordinator.messages import StateRecord

    c = client()
    c.join("m1", ["foo"])
    records = [StateRecord(k, v) for k, v in c.records()]
    # A member tombstone without the current-assignment tombstone first.
    bad = records + [StateRecord(record_key("ConsumerGroupMemberMetadata", GROUP, "m1"), None)]
    with pytest.raises(IllegalStateError):
        CoordinatorPartition.from_records(c.d.partition_id, bad, c.d.config)
    # A group tombstone while members remain.
    bad = records + [StateRecord(record_key("ConsumerGroupMetadata", GROUP), None)]
    with pytest.raises(IllegalStateError):
        CoordinatorPartition.from_records(c.d.partition_id, bad, c.d.config)


def test_rebuilt_members_resume_their_rebalance_timeouts():
    c = client()
    c.join("m1", ["foo"])
    c.join("m2", ["foo"])
    c.heartbeat("m1", 2)  # UNREVOKED
    assert c.member("m1").state.name == "UNREVOKED_PARTITIONS"
    rebuilt = c.rebuilt()
    assert record_key("consumer-rebalance", GROUP, "m1") in rebuilt.timers.schedule_view()


def test_offset_expiry_deletes_an_empty_consumer_group_without_offsets():
    c = client(offsets_retention_check_interval_ms=1000)
    c.join("m1", ["foo"])
    c.heartbeat("m1", -1)
    c.sleep(1000)
    assert c.group() is None
    [deleted] = c.events("GroupDeleted")
    assert deleted["groupType"] == "consumer"


def test_replay_replaces_a_simple_group_made_by_offsets_replayed_first():
    from coordinator import CoordinatorPartition
    from coordinator.messages import StateRecord

    c = client()
    c.join("m1", ["foo"])
    assert commit(c, "m1", 2) == 0
    records = [StateRecord(k, v) for k, v in c.records()]
    offsets = [r for r in records if r.key.startswith('["OffsetCommit"')]
    rest = [r for r in records if not r.key.startswith('["OffsetCommit"')]
    rebuilt = CoordinatorPartition.from_records(c.d.partition_id, offsets + rest, c.d.config)
    groups = rebuilt.component("groups")
    assert groups.groups[GROUP].type == "consumer" and set(groups.groups[GROUP].members) == {"m1"}
    assert groups.offsets.get(GROUP, "foo", 0).committed_offset == 10
