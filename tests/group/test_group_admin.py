"""DescribeGroups, ListGroups, DeleteGroups, and classic APIs meeting groups of other types."""

from __future__ import annotations

import inspect

import pytest

from coordinator.errors import ApiError, Errors
from coordinator.group import group as group_module
from coordinator.group.classic.group import DEAD, EMPTY, STABLE
from coordinator.group.group import Group, register_group_type
from coordinator.messages import ReplyTo, Request
from coordinator.records import record_key
from tests.group.group_helpers import (
    GroupTestClient,
    b64,
    group_on_partition,
    join_and_complete,
    join_and_rebalance,
    protocols,
    seed_transactional_offset,
)


def client(**overrides) -> GroupTestClient:
    overrides.setdefault("group_min_session_timeout_ms", 1)
    return GroupTestClient(**overrides)


def describe(c: GroupTestClient, groups: list[str], version: int = 6, include_ops: bool = False) -> list[dict]:
    body = {"groups": groups}
    if version >= 3:
        body["includeAuthorizedOperations"] = include_ops
    return c.send("DescribeGroups", version, body)[1]["groups"]


def list_groups(c: GroupTestClient, version: int = 5, states=(), types=()) -> dict:
    body = {}
    if version >= 4:
        body["statesFilter"] = list(states)
    if version >= 5:
        body["typesFilter"] = list(types)
    return c.send("ListGroups", version, body)[1]


def delete_groups(c: GroupTestClient, groups: list[str], version: int = 2) -> dict:
    return c.send("DeleteGroups", version, {"groupsNames": groups})[1]


# ====================================================================== DescribeGroups
def test_describe_stable_group_includes_member_metadata():
    c = client()
    leader = join_and_complete(c, instance_id="instance")
    c.sync(leader["memberId"], 1, {leader["memberId"]: b64(4)})
    [g] = describe(c, [c.group_id])
    assert g == {
        "errorCode": 0,
        "errorMessage": None,
        "groupId": c.group_id,
        "groupState": STABLE,
        "protocolType": "consumer",
        "protocolData": "range",
        "members": [
            {
                "memberId": leader["memberId"],
                "groupInstanceId": "instance",
                "clientId": "client",
                "clientHost": "",
                "memberMetadata": protocols("range")[0]["metadata"],
                "memberAssignment": b64(4),
            }
        ],
        "authorizedOperations": -2147483648,
    }


def test_describe_rebalancing_group_has_no_member_metadata():
    c = client()
    join_and_complete(c)
    [g] = describe(c, [c.group_id])
    assert g["groupState"] == "CompletingRebalance" and g["protocolData"] == ""
    assert g["members"][0]["memberMetadata"] == "" and g["members"][0]["memberAssignment"] == ""


def test_describe_unknown_and_foreign_groups():
    c = client()
    mine, theirs = group_on_partition(c.d.partition_id), group_on_partition(c.d.partition_id, other=True)
    v6 = describe(c, [mine, theirs])
    assert v6[0] == {
        "errorCode": Errors.GROUP_ID_NOT_FOUND.code,
        "errorMessage": f"Group {mine} not found.",
        "groupId": mine,
        "groupState": DEAD,
        "protocolType": "",
        "protocolData": "",
        "members": [],
        "authorizedOperations": -2147483648,
    }
    assert v6[1]["errorCode"] == Errors.NOT_COORDINATOR.code and v6[1]["groupId"] == theirs
    # Before v6 an unknown group is described as Dead without error.
    [v5] = describe(c, [mine], version=5)
    assert v5["errorCode"] == 0 and v5["groupState"] == DEAD and "errorMessage" not in v5
    [v0] = describe(c, [mine], version=0)
    assert list(v0) == ["errorCode", "groupId", "groupState", "protocolType", "protocolData", "members"]


def test_describe_with_authorized_operations():
    c = client()
    join_and_complete(c)
    [g] = describe(c, [c.group_id], include_ops=True)
    # READ, DELETE, DESCRIBE, DESCRIBE_CONFIGS, ALTER_CONFIGS: what Kafka reports without an authorizer.
    assert g["authorizedOperations"] == (1 << 3) | (1 << 6) | (1 << 8) | (1 << 10) | (1 << 11)


# ====================================================================== ListGroups
def test_list_groups_with_filters():
    c = client()
    empty = group_on_partition(c.d.partition_id, "simple-")  # a group on the same partition
    join_and_rebalance(c)
    c.commit({("t", 0): 1}, group_id=empty)
    resp = list_groups(c)
    assert resp["errorCode"] == Errors.NONE.code
    assert resp["groups"] == [
        {"groupId": c.group_id, "protocolType": "consumer", "groupState": STABLE, "groupType": "classic"},
        {"groupId": empty, "protocolType": "", "groupState": EMPTY, "groupType": "classic"},
    ]
    assert [g["groupId"] for g in list_groups(c, states=[" stable "])["groups"]] == [c.group_id]
    assert [g["groupId"] for g in list_groups(c, states=["EMPTY"])["groups"]] == [empty]
    assert list_groups(c, states=["Dead"])["groups"] == []
    assert len(list_groups(c, types=["Classic"])["groups"]) == 2
    assert list_groups(c, types=["consumer"])["groups"] == []
    assert list_groups(c, types=["nonsense"])["groups"] == []
    assert list_groups(c, version=3)["groups"][0] == {"groupId": c.group_id, "protocolType": "consumer"}
    assert "groupType" not in list_groups(c, version=4)["groups"][0]


def test_list_groups_filters_are_mandatory_in_their_versions():
    c = client()
    _, resp = c.send("ListGroups", 4, {})
    assert resp["errorCode"] == Errors.INVALID_REQUEST.code


# ====================================================================== DeleteGroups
def test_delete_groups():
    c = client()
    simple = group_on_partition(c.d.partition_id, "simple-")
    theirs = group_on_partition(c.d.partition_id, other=True)
    unknown = group_on_partition(c.d.partition_id, "unknown-")
    join_and_rebalance(c)
    c.commit({("t", 0): 1, ("t", 1): 2}, group_id=simple)
    mark = len(c.records())
    resp = delete_groups(c, [c.group_id, simple, theirs, unknown, simple])
    assert resp == {
        "throttleTimeMs": 0,
        "results": [
            {"groupId": c.group_id, "errorCode": Errors.NON_EMPTY_GROUP.code},
            {"groupId": simple, "errorCode": Errors.NONE.code},
            {"groupId": theirs, "errorCode": Errors.NOT_COORDINATOR.code},
            {"groupId": unknown, "errorCode": Errors.GROUP_ID_NOT_FOUND.code},
        ],
    }
    assert c.records(mark) == [
        (record_key("OffsetCommit", simple, "t", 0), None),
        (record_key("OffsetCommit", simple, "t", 1), None),
        (record_key("GroupMetadata", simple), None),
    ]
    assert c.group(simple) is None and c.committed("t", 0, group_id=simple) == -1
    assert c.events("GroupDeleted")[0]["offsetsDeleted"] == 2


def test_delete_empty_classic_group_after_members_left():
    c = client()
    leader = join_and_complete(c)
    c.leave({"memberId": leader["memberId"]})
    assert delete_groups(c, [c.group_id])["results"] == [{"groupId": c.group_id, "errorCode": Errors.NONE.code}]
    assert c.group() is None
    # Its timers went with it.
    assert all("group-id" not in k for k in c.timers())


def test_delete_groups_deletes_pending_transactional_offsets_too():
    c = client()
    c.commit({("t", 0): 1})

    def add(comp):
        seed_transactional_offset(comp, 3, c.group_id, "t", 1, 10)

    c.mutate(add)
    mark = len(c.records())
    assert delete_groups(c, [c.group_id])["results"][0]["errorCode"] == Errors.NONE.code
    assert [k for k, _ in c.records(mark)] == [
        record_key("OffsetCommit", c.group_id, "t", 0),
        record_key("OffsetCommit", c.group_id, "t", 1),
        record_key("GroupMetadata", c.group_id),
    ]
    assert not c.groups().has_pending_transactional_offsets(c.group_id)


# ====================================================================== other group types
class FakeGroup(Group):
    """Stands in for a KIP-848 consumer group (or another type) in these tests."""

    type = "consumer"

    def __init__(self, group_id: str, members: int = 0):
        self.group_id = group_id
        self.members = members

    def state_as_string(self):
        return "Stable" if self.members else "Empty"

    def is_empty(self):
        return self.members == 0

    def validate_offset_commit(self, member_id, instance_id, generation_id, is_transactional, api_version):
        raise ApiError(Errors.STALE_MEMBER_EPOCH)

    def validate_delete_group(self):
        if self.members:
            raise ApiError(Errors.NON_EMPTY_GROUP)

    def validate_offset_delete(self):
        pass

    def tombstone_record_keys(self):
        return [record_key("ConsumerGroupMetadata", self.group_id)]

    def to_json(self):
        return {"type": self.type, "groupId": self.group_id, "members": self.members}

    @classmethod
    def from_json(cls, d):
        return cls(d["groupId"], d["members"])


class FakeShareGroup(FakeGroup):
    type = "share"


class FakeStreamsGroup(FakeGroup):
    type = "streams"


@pytest.fixture
def fake_types():
    saved = dict(group_module._GROUP_TYPES)
    register_group_type(FakeGroup)
    register_group_type(FakeShareGroup)
    register_group_type(FakeStreamsGroup)
    yield
    group_module._GROUP_TYPES.clear()
    group_module._GROUP_TYPES.update(saved)


def put(c: GroupTestClient, group: Group) -> None:
    c.mutate(lambda comp: comp.groups.__setitem__(group.group_id, group))


def test_classic_apis_against_a_non_empty_consumer_group(fake_types):
    c = client()
    put(c, FakeGroup(c.group_id, members=2))
    # Without a migration path, as a group type that does not accept classic members.
    assert c.join("")[1]["errorCode"] == Errors.INCONSISTENT_GROUP_PROTOCOL.code
    assert c.sync("m", 1)[1]["errorCode"] == Errors.UNKNOWN_MEMBER_ID.code
    assert c.heartbeat("m", 1)["errorCode"] == Errors.UNKNOWN_MEMBER_ID.code
    assert c.leave({"memberId": "m"})["members"][0]["errorCode"] == Errors.UNKNOWN_MEMBER_ID.code
    [g] = describe(c, [c.group_id])
    assert (
        g["errorCode"] == Errors.GROUP_ID_NOT_FOUND.code
        and g["errorMessage"] == f"Group {c.group_id} is not a classic group."
    )
    # Generic APIs go through the Group interface.
    assert (
        c.commit({("t", 0): 1}, member_id="m", generation=3)["topics"][0]["partitions"][0]["errorCode"]
        == Errors.STALE_MEMBER_EPOCH.code
    )
    assert list_groups(c)["groups"] == [
        {"groupId": c.group_id, "protocolType": "", "groupState": "Stable", "groupType": "consumer"}
    ]
    assert delete_groups(c, [c.group_id])["results"][0]["errorCode"] == Errors.NON_EMPTY_GROUP.code


def test_join_group_converts_an_empty_consumer_group(fake_types):
    c = client()
    put(c, FakeGroup(c.group_id, members=0))
    _, resp = c.join("member-id")  # a known member id cannot join a group being converted
    assert resp["errorCode"] == Errors.UNKNOWN_MEMBER_ID.code and c.group().type == "consumer"
    _, resp = c.join("")
    assert resp["errorCode"] == Errors.MEMBER_ID_REQUIRED.code
    assert c.group().type == "classic"
    assert c.records()[:2] == [
        (record_key("ConsumerGroupMetadata", c.group_id), None),
        (
            record_key("GroupMetadata", c.group_id),
            {
                "type": "GroupMetadata",
                "protocolType": "",
                "generation": 0,
                "protocol": None,
                "leader": None,
                "currentStateTimestamp": c.now,
                "members": [],
            },
        ),
    ]


@pytest.mark.parametrize("members", [1, 0])
def test_classic_group_join_on_streams_group(fake_types, members):
    """GroupMetadataManagerTest.testClassicGroupJoinOnStreamsGroup: Kafka 4.1's classicGroupJoin
    converts only consumer groups; a streams group, even empty, is INCONSISTENT_GROUP_PROTOCOL."""
    c = client()
    put(c, FakeStreamsGroup(c.group_id, members=members))
    mark = len(c.records())
    _, resp = c.join("")
    assert (resp["errorCode"], resp["memberId"]) == (Errors.INCONSISTENT_GROUP_PROTOCOL.code, "")
    assert c.group().type == "streams" and c.records(mark) == []


def test_join_group_to_a_share_group_is_inconsistent(fake_types):
    c = client()
    put(c, FakeShareGroup(c.group_id, members=0))
    _, resp = c.join("")
    assert resp["errorCode"] == Errors.INCONSISTENT_GROUP_PROTOCOL.code and resp["memberId"] == ""
    assert c.sync("m", 1)[1]["errorCode"] == Errors.UNKNOWN_MEMBER_ID.code  # empty: UNKNOWN_MEMBER_ID


# ====================================================================== rejected requests
@pytest.mark.parametrize(
    "api,version,body",
    [
        ("OffsetCommit", 9, {"groupId": "group-id", "topics": []}),  # memberId is mandatory
        ("JoinGroup", 9, {"groupId": "group-id"}),
        ("DeleteGroups", 2, {}),
        ("OffsetFetch", 1, {"groupId": "group-id"}),
    ],
)
def test_rejected_requests_carry_the_reason(api, version, body):
    c = client()
    _, resp = c.send(api, version, body)
    assert resp["errorCode"] == Errors.INVALID_REQUEST.code and "mandatory" in resp["errorMessage"]


def test_unsupported_versions_are_rejected():
    c = client()
    for api, version in [
        ("JoinGroup", 10),
        ("OffsetCommit", 1),
        ("OffsetFetch", 0),
        ("OffsetDelete", 1),
        ("DescribeGroups", 7),
        ("ListGroups", 6),
        ("DeleteGroups", 4),
        ("LeaveGroup", 6),
        ("SyncGroup", 6),
        ("Heartbeat", 5),
    ]:
        _, resp = c.send(api, version, {"groupId": "group-id"})
        assert resp["errorCode"] == Errors.UNSUPPORTED_VERSION.code, (api, version, resp)


# ====================================================================== explicit construction
def test_the_coordinator_is_built_explicitly_with_literal_tables():
    """GroupCoordinatorShard: every API, timer kind and record kind is routed by one literal table
    in the class body to a method of one of the managers built in __init__ (or an admin function
    given the coordinator); importing patches nothing onto the class."""
    from coordinator import CoordinatorPartition
    from coordinator.api import lookup
    from coordinator.group.shard import GroupCoordinator
    from tests.core_driver import REPLAYER_ARGS, call_handler, dispatch_targets

    comp = CoordinatorPartition(0).component("groups")
    managers = {
        id(m)
        for m in (
            comp,
            comp.classic,
            comp.offset_manager,
            comp.consumer,
            comp.consumer.classic_members,
            comp.share,
            comp.streams,
            comp.configs,
            comp.txn_offsets,
            comp.share_offsets,
        )
    }
    tables = (
        (GroupCoordinator.HANDLERS, (None,)),
        (GroupCoordinator.TIMER_HANDLERS, (None,)),
        (GroupCoordinator.REPLAYERS, REPLAYER_ARGS),
    )
    for table, args in tables:
        assert table and any(v is table for v in vars(GroupCoordinator).values())  # the class body's
        routed = {k: v for k, v in table.items() if k not in ("DescribeGroups", "ListGroups", "DeleteGroups")}
        for key, target in dispatch_targets(routed, comp, args).items():  # the rest: admin.py's functions
            assert inspect.ismethod(target) and id(target.__self__) in managers, (key, target)
    assert all(lookup(api).component == "groups" for api in GroupCoordinator.HANDLERS)
    assert not any(name.startswith("_ext_") for name in vars(GroupCoordinator))
    assert not hasattr(GroupCoordinator, "extend")
    # Each partition has its own managers (nothing cached on the class or shared), and a table's
    # entry reaches the managers of the partition it is given.
    other_part = CoordinatorPartition(1)
    other = other_part.component("groups")
    assert other.consumer is not comp.consumer and other.classic is not comp.classic
    listed = call_handler(other_part, "ListGroups", Request(ReplyTo("ListGroups", 4, 1, "c", None), {}, 0))
    assert listed["errorCode"] == 0 and listed["groups"] == []


def test_delete_groups_v3_error_message():
    """DeleteGroups v3 (Kafka 4.4.0) adds a per-group errorMessage. GroupCoordinatorShard.deleteGroups
    sets only the error code and DeleteGroupsRequest.getErrorResultCollection likewise, so every
    result carries errorMessage null (Kafka's GroupCoordinatorServiceTest.testDeleteGroups shape);
    v2 has no such field."""
    c = client()
    simple = group_on_partition(c.d.partition_id, "simple-")
    theirs = group_on_partition(c.d.partition_id, other=True)
    unknown = group_on_partition(c.d.partition_id, "unknown-")
    join_and_rebalance(c)
    c.commit({("t", 0): 1}, group_id=simple)
    resp = delete_groups(c, [c.group_id, simple, theirs, unknown], version=3)
    assert resp == {
        "throttleTimeMs": 0,
        "results": [
            {"groupId": c.group_id, "errorCode": Errors.NON_EMPTY_GROUP.code, "errorMessage": None},
            {"groupId": simple, "errorCode": Errors.NONE.code, "errorMessage": None},
            {"groupId": theirs, "errorCode": Errors.NOT_COORDINATOR.code, "errorMessage": None},
            {"groupId": unknown, "errorCode": Errors.GROUP_ID_NOT_FOUND.code, "errorMessage": None},
        ],
    }
