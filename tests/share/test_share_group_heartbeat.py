"""ShareGroupHeartbeat / ShareGroupDescribe and share groups beside the other group types, through
the real coordinator (envelope, schema, run_batch, state encoded between requests), ported from
Kafka's GroupMetadataManagerTest (testShareGroup*, ...OnShareGroup, share session timeouts) and
ShareGroupTest. A partition is assigned once its share-partition is initialized (Kafka's
InitializeShareGroupState round trip, tests/share/test_share_group_initialize.py): `share_join` joins,
delivers the initialization queries and heartbeats again."""

from __future__ import annotations

from coordinator.errors import Errors
from coordinator.group.share.group import ShareGroup, ShareGroupMember
from coordinator.records import record_key
from tests.consumer.consumer_group_helpers import GROUP, topic_id
from tests.share.share_group_helpers import ShareGroupTestClient, share_member

M1, M2, M3 = "m1-uuid-aaaaaaaaaaaaaa", "m2-uuid-bbbbbbbbbbbbbb", "m3-uuid-cccccccccccccc"


def client(**kw) -> ShareGroupTestClient:
    kw.setdefault("topics", {"foo": 6, "bar": 3})
    return ShareGroupTestClient(**kw)


def rk(kind, *ids):
    return record_key(kind, GROUP, *ids)


def keys(records):
    return [k for k, _ in records]


def assigned(c, resp):
    return c.assignment(resp)


# ====================================================================== validation
def test_share_group_heartbeat_request_validation():
    """GroupCoordinatorServiceTest.testShareGroupHeartbeatRequestValidation (an empty group id is
    routed by its hash first, as for every group API here)."""
    c = client()
    for body, message in [
        ({"memberId": ""}, "MemberId can't be empty."),
        ({"rackId": ""}, "RackId can't be empty."),
        ({"subscribedTopicNames": None}, "SubscribedTopicNames must be set in first request."),
        ({"subscribedTopicNames": []}, "SubscribedTopicNames must be set in first request."),
        ({"memberEpoch": -2}, "MemberEpoch is invalid."),
    ]:
        req = {"groupId": GROUP, "memberId": M1, "memberEpoch": 0, "rackId": None, "subscribedTopicNames": ["foo"]}
        req.update(body)
        resp = c.send("ShareGroupHeartbeat", 1, req)
        assert (resp["errorCode"], resp["errorMessage"]) == (Errors.INVALID_REQUEST.code, message)
    assert c.group() is None


def test_share_group_heartbeat_disabled_answers_unsupported_version():
    """KafkaApis.handleShareGroupHeartbeat: share groups off (group.share.enable / share.version)."""
    c = client(**{"group_share_enable": False})
    assert c.share_heartbeat(M1, 0, topics=["foo"])["errorCode"] == Errors.UNSUPPORTED_VERSION.code
    assert c.share_describe(GROUP)[0]["errorCode"] == Errors.UNSUPPORTED_VERSION.code


# ====================================================================== heartbeat
def test_share_group_member_id_generation():
    """testShareGroupMemberIdGeneration: the client's member id is kept, epoch 2 (Kafka 4.3+: a new group starts at epoch 1)."""
    c = client(topics={"foo": 1, "bar": 1})
    resp = c.share_heartbeat(M1, 0, topics=["foo", "bar"])
    assert resp["errorCode"] == 0
    assert resp["memberId"] == M1 and resp["memberEpoch"] == 2 and resp["heartbeatIntervalMs"] == 5000
    assert assigned(c, resp) == {}  # empty until initialized


def test_share_group_unknown_group_id():
    """testShareGroupUnknownGroupId."""
    c = client()
    resp = c.share_heartbeat(M1, 100, topics=["foo", "bar"])
    assert resp["errorCode"] == Errors.GROUP_ID_NOT_FOUND.code
    assert resp["errorMessage"] == f"Share group {GROUP} not found."


def test_share_group_unknown_member_id_joins():
    """testShareGroupUnknownMemberIdJoins."""
    c = client()
    assert c.share_heartbeat(M1, 0, topics=["foo", "bar"])["errorCode"] == 0
    resp = c.share_heartbeat(M2, 1, topics=["foo", "bar"])
    assert resp["errorCode"] == Errors.UNKNOWN_MEMBER_ID.code


def test_share_group_member_joins_empty_group_with_assignments():
    """testShareGroupMemberJoinsEmptyGroupWithAssignments: the records and their order."""
    c = client()
    c.inject(
        [
            (rk("ShareGroupMetadata"), {"type": "ShareGroupMetadata", "epoch": 1, "metadataHash": 0}),
            (
                rk("ShareGroupStatePartitionMetadata"),
                {
                    "type": "ShareGroupStatePartitionMetadata",
                    "initializingTopics": [],
                    "deletingTopics": [],
                    "initializedTopics": [
                        {"topicId": topic_id("foo"), "topicName": "foo", "partitions": list(range(6))},
                        {"topicId": topic_id("bar"), "topicName": "bar", "partitions": [0, 1, 2]},
                    ],
                },
            ),
        ]
    )
    start = len(c.d.records)
    resp = c.share_heartbeat(M1, 0, topics=["foo", "bar"], client_id="client")
    assert resp["memberEpoch"] == 2
    assert assigned(c, resp) == {"foo": [0, 1, 2, 3, 4, 5], "bar": [0, 1, 2]}
    records = c.records(start)
    assert keys(records) == [
        rk("ShareGroupMemberMetadata", M1),
        rk("ShareGroupMetadata"),
        rk("ShareGroupTargetAssignmentMember", M1),
        rk("ShareGroupTargetAssignmentMetadata"),
        rk("ShareGroupCurrentMemberAssignment", M1),
    ]
    assert c.d.internal_requests == []  # every partition initialized already
    values = dict(records)
    assert values[rk("ShareGroupMemberMetadata", M1)] == {
        "type": "ShareGroupMemberMetadata",
        "rackId": None,
        "clientId": "client",
        "clientHost": "",
        "subscribedTopicNames": ["bar", "foo"],
    }
    assert values[rk("ShareGroupMetadata")]["epoch"] == 2
    assert values[rk("ShareGroupMetadata")]["metadataHash"] == c.consumer_manager().compute_metadata_hash(
        {"foo", "bar"}
    )
    assert values[rk("ShareGroupCurrentMemberAssignment", M1)] == {
        "type": "ShareGroupCurrentMemberAssignment",
        "memberEpoch": 2,
        "previousMemberEpoch": 0,
        "state": "STABLE",
        "assignedPartitions": {"bar": [0, 1, 2], "foo": [0, 1, 2, 3, 4, 5]},
    }


def test_share_group_partitions_are_shared_and_rebalanced_on_joins():
    """Several members on fewer partitions: each gets one, partitions go to several members; a
    member's epoch moves to the target epoch on its next heartbeat (no revocation)."""
    c = client(topics={"foo": 2})
    r1 = c.share_join(M1, topics=["foo"])
    assert assigned(c, r1) == {"foo": [0, 1]} and r1["memberEpoch"] == 3
    r2 = c.share_heartbeat(M2, 0, topics=["foo"])
    r3 = c.share_heartbeat(M3, 0, topics=["foo"])
    assert r2["memberEpoch"] == 4 and r3["memberEpoch"] == 5
    r1 = c.share_heartbeat(M1, 3)
    assert r1["memberEpoch"] == 5  # Kafka 4.3's assignor may leave M1 both partitions (2, 1, 1)
    r2 = c.share_heartbeat(M2, 4)
    c.share_heartbeat(M3, 5)
    group = c.group()
    every = [p for m in group.members.values() for p in m.assigned_partitions.get("foo", ())]
    assert sorted(set(every)) == [0, 1]
    assert all(m.assigned_partitions for m in group.members.values())
    assert len(every) >= 3  # three members, two partitions: at least one partition is shared
    assert group.state_as_string() == "Stable"
    # An unchanged heartbeat gets no assignment.
    assert c.share_heartbeat(M2, 5)["assignment"] is None


def test_share_group_fenced_member_epoch():
    """throwIfShareGroupMemberEpochIsInvalid: ahead, or behind and not the previous epoch."""
    c = client()
    c.share_heartbeat(M1, 0, topics=["foo"])
    assert c.share_heartbeat(M1, 6)["errorCode"] == Errors.FENCED_MEMBER_EPOCH.code
    c.share_heartbeat(M2, 0, topics=["foo"])
    c.share_heartbeat(M1, 2)  # to epoch 2, previous 1
    assert c.share_heartbeat(M1, 2)["errorCode"] == 0  # the previous epoch is accepted
    c.share_heartbeat(M3, 0, topics=["foo"])
    c.share_heartbeat(M1, 3)  # to epoch 3, previous 2
    assert c.share_heartbeat(M1, 2)["errorCode"] == Errors.FENCED_MEMBER_EPOCH.code


def test_share_group_leaving_member_bumps_group_epoch():
    """testShareGroupLeavingMemberBumpsGroupEpoch: tombstones, then the epoch with the new hash."""
    c = client(topics={"foo": 6, "bar": 3, "zar": 1})
    c.inject_share_group(
        10,
        [
            share_member(M1, 10, {"foo": [0, 1, 2], "bar": [0, 1]}),
            share_member(M2, 10, {"foo": [3, 4, 5], "bar": [2]}, topics=("foo", "bar", "zar")),
        ],
    )
    start = len(c.d.records)
    resp = c.share_heartbeat(M2, -1, topics=["foo", "bar"])
    assert (resp["errorCode"], resp["memberId"], resp["memberEpoch"]) == (0, M2, -1)
    records = c.records(start)
    assert keys(records) == [
        rk("ShareGroupCurrentMemberAssignment", M2),
        rk("ShareGroupTargetAssignmentMember", M2),
        rk("ShareGroupMemberMetadata", M2),
        rk("ShareGroupMetadata"),
    ]
    assert [v for _, v in records[:3]] == [None, None, None]
    assert records[3][1]["epoch"] == 11
    assert records[3][1]["metadataHash"] == c.consumer_manager().compute_metadata_hash({"foo", "bar"})
    assert set(c.group().members) == {M1}


def test_share_group_new_member_is_rejected_with_maximum_members_is_reached():
    """testShareGroupNewMemberIsRejectedWithMaximumMembersIsReached."""
    c = client(topics={"foo": 1, "bar": 1}, group_share_max_size=1)
    c.inject([(rk("ShareGroupMetadata"), {"type": "ShareGroupMetadata", "epoch": 100, "metadataHash": 0})])
    assert c.share_heartbeat(M1, 0, topics=["foo", "bar"])["memberEpoch"] == 101
    resp = c.share_heartbeat(M2, 0, topics=["foo", "bar"])
    assert resp["errorCode"] == Errors.GROUP_MAX_SIZE_REACHED.code
    assert resp["errorMessage"] == "The share group has reached its maximum capacity of 1 members."


def test_share_group_delete_tombstones():
    """testShareGroupDeleteTombstones."""
    group = ShareGroup("share-group-id")
    assert group.tombstone_record_keys() == [
        record_key("ShareGroupTargetAssignmentMetadata", "share-group-id"),
        record_key("ShareGroupStatePartitionMetadata", "share-group-id"),
        record_key("ShareGroupMetadata", "share-group-id"),
    ]


def test_share_group_last_member_leaving_moves_the_assignment_epoch():
    """Kafka 4.4.0's shareGroupFenceMember: when the last member leaves, the (empty) target
    assignment is at the new group epoch (a ShareGroupTargetAssignmentMetadata record, timestamp 0),
    so the empty group describes assignmentEpoch = groupEpoch (4.1.1 kept the last one)."""
    c = client(topics={"foo": 6})
    c.inject_share_group(10, [share_member(M1, 10, {"foo": [0, 1, 2, 3, 4, 5]})])
    start = len(c.d.records)
    assert c.share_heartbeat(M1, -1, topics=["foo"])["errorCode"] == 0
    records = c.records(start)
    assert keys(records)[-2:] == [rk("ShareGroupMetadata"), rk("ShareGroupTargetAssignmentMetadata")]
    assert records[-1][1]["assignmentEpoch"] == 11 == records[-2][1]["epoch"]
    described = c.share_describe(GROUP)[0]
    assert (described["groupState"], described["groupEpoch"], described["assignmentEpoch"]) == ("Empty", 11, 11)


def test_share_group_states():
    """testShareGroupStates: Empty without members, Stable with."""
    c = client()
    c.inject([(rk("ShareGroupMetadata"), {"type": "ShareGroupMetadata", "epoch": 10, "metadataHash": 0})])
    assert c.group().state_as_string() == "Empty"
    c.inject(
        [
            (
                rk("ShareGroupMemberMetadata", M1),
                {
                    "type": "ShareGroupMemberMetadata",
                    "rackId": None,
                    "clientId": "",
                    "clientHost": "",
                    "subscribedTopicNames": ["foo"],
                },
            ),
            (rk("ShareGroupMetadata"), {"type": "ShareGroupMetadata", "epoch": 11, "metadataHash": 0}),
        ]
    )
    assert c.group().state_as_string() == "Stable"
    c.inject(
        [
            (
                rk("ShareGroupTargetAssignmentMember", M1),
                {"type": "ShareGroupTargetAssignmentMember", "topicPartitions": {"foo": [1, 2, 3]}},
            ),
            (
                rk("ShareGroupTargetAssignmentMetadata"),
                {"type": "ShareGroupTargetAssignmentMetadata", "assignmentEpoch": 11},
            ),
        ]
    )
    assert c.group().state_as_string() == "Stable"


# ====================================================================== session timeouts
def test_session_timeout_expiration_for_share_member():
    """testSessionTimeoutExpirationForShareMember."""
    c = client()
    assert c.share_heartbeat(M1, 0, topics=["foo"])["memberEpoch"] == 2
    c.initialize_share_partitions()
    timer = record_key("share-session", GROUP, M1)
    assert c.timers()[timer][0] == c.now + 45000
    start = len(c.d.records)
    c.sleep(45000 + 1)
    records = c.records(start)
    assert keys(records) == [
        rk("ShareGroupCurrentMemberAssignment", M1),
        rk("ShareGroupTargetAssignmentMember", M1),
        rk("ShareGroupMemberMetadata", M1),
        rk("ShareGroupMetadata"),
        rk("ShareGroupTargetAssignmentMetadata"),  # Kafka 4.4: the last member gone
    ]
    assert records[3][1] == {"type": "ShareGroupMetadata", "epoch": 3, "metadataHash": 0}
    assert timer not in c.timers()
    assert [e["memberId"] for e in c.events("MemberFenced")] == [M1]


def test_on_loaded_session_timeout_expiration_for_share_member():
    """testOnLoadedSessionTimeoutExpirationForShareMember / testOnLoadedWithShareGroup: a partition
    rebuilt from its log has the group and a session for each member, from load time."""
    c = client()
    c.share_heartbeat(M1, 0, topics=["foo"])
    c.share_heartbeat(M2, 0, topics=["foo"])
    rebuilt = c.rebuilt()
    group = rebuilt.component("groups").groups[GROUP]
    live = c.group()
    assert group.to_json() | {"metadataRefreshDeadline": None} == live.to_json() | {"metadataRefreshDeadline": None}
    sessions = {k for k in rebuilt.timers.schedule_view() if k.startswith('["share-session"')}
    assert sessions == {record_key("share-session", GROUP, M1), record_key("share-session", GROUP, M2)}


def test_share_group_dynamic_configs():
    """testShareGroupDynamicConfigs: share.session.timeout.ms / share.heartbeat.interval.ms of the group."""
    c = client()
    c.inject(
        [
            (
                record_key("GroupConfig", GROUP),
                {
                    "type": "GroupConfig",
                    "configs": {"share.session.timeout.ms": "50000", "share.heartbeat.interval.ms": "6000"},
                },
            )
        ]
    )
    resp = c.share_heartbeat(M1, 0, topics=["foo"])
    assert resp["heartbeatIntervalMs"] == 6000
    assert c.timers()[record_key("share-session", GROUP, M1)][0] == c.now + 50000


# ====================================================================== describe
def test_share_group_describe_request():
    """testShareGroupDescribeRequest."""
    c = client()
    assert c.share_describe() == []
    unknown = next(f"unknown-group-{i}" for i in range(1000) if c.d.partition.owns(f"unknown-group-{i}"))
    [g] = c.share_describe(unknown)
    assert g["errorCode"] == Errors.GROUP_ID_NOT_FOUND.code


def test_share_group_describe_no_errors():
    """testShareGroupDescribeNoErrors (member assignment: see the deviation above)."""
    c = ShareGroupTestClient(group_id="group-id-2", topics={"foo": 1})
    c.inject(
        [
            (
                record_key("ShareGroupMetadata", "group-id-2"),
                {"type": "ShareGroupMetadata", "epoch": 15, "metadataHash": 0},
            )
        ]
    )
    resp = c.share_join(M1, topics=["foo"], client_id="client")
    assert resp["memberEpoch"] == 17
    [g] = c.share_describe("group-id-2", include_operations=False)
    assert g == {
        "errorCode": 0,
        "errorMessage": None,
        "groupId": "group-id-2",
        "groupState": "Stable",
        "groupEpoch": 17,
        "assignmentEpoch": 17,
        "assignorName": "simple",
        "members": [
            {
                "memberId": M1,
                "rackId": None,
                "memberEpoch": 17,
                "clientId": "client",
                "clientHost": "",
                "subscribedTopicNames": ["foo"],
                "assignment": {
                    "topicPartitions": [{"topicId": topic_id("foo"), "topicName": "foo", "partitions": [0]}]
                },
            }
        ],
        "authorizedOperations": -2147483648,
    }


def test_share_group_describe_invalid_and_not_coordinator():
    c = client()
    c.share_heartbeat(M1, 0, topics=["foo"])
    other = next(f"g{i}" for i in range(1000) if not c.d.partition.owns(f"g{i}"))
    errors = [g["errorCode"] for g in c.share_describe("", other, GROUP)]
    assert errors == [Errors.INVALID_GROUP_ID.code, Errors.NOT_COORDINATOR.code, 0]


# ====================================================================== group type conflicts
def _consumer_group(c):
    c.heartbeat("c1", 0, topics=["foo"], rebalance_timeout=5000, owned={})


def test_consumer_group_heartbeat_on_share_group():
    """testConsumerGroupHeartbeatOnShareGroup."""
    c = client()
    c.share_heartbeat(M1, 0, topics=["foo"])
    resp = c.heartbeat("c1", 0, topics=["foo"], rebalance_timeout=5000, owned={})
    assert resp["errorCode"] == Errors.GROUP_ID_NOT_FOUND.code


def test_classic_group_join_sync_leave_on_share_group():
    """testClassicGroupJoinOnShareGroup / testClassicGroupSyncOnShareGroup / testClassicGroupLeaveOnShareGroup."""
    c = client()
    c.share_heartbeat(M1, 0, topics=["foo"])
    join = c.send(
        "JoinGroup",
        9,
        {
            "groupId": GROUP,
            "sessionTimeoutMs": 45000,
            "rebalanceTimeoutMs": 5000,
            "memberId": "",
            "groupInstanceId": None,
            "protocolType": "consumer",
            "protocols": [{"name": "range", "metadata": ""}],
            "reason": None,
        },
    )
    assert join["errorCode"] == Errors.INCONSISTENT_GROUP_PROTOCOL.code
    sync = c.send(
        "SyncGroup",
        5,
        {
            "groupId": GROUP,
            "generationId": 1,
            "memberId": M1,
            "groupInstanceId": None,
            "protocolType": None,
            "protocolName": None,
            "assignments": [],
        },
    )
    assert sync["errorCode"] == Errors.UNKNOWN_MEMBER_ID.code
    leave = c.send(
        "LeaveGroup", 5, {"groupId": GROUP, "members": [{"memberId": M1, "groupInstanceId": None, "reason": None}]}
    )
    # Kafka's UnknownMemberIdException("Group ... not found."), answered by the service per member.
    assert leave["errorCode"] == 0 and [m["errorCode"] for m in leave["members"]] == [Errors.UNKNOWN_MEMBER_ID.code]
    assert set(c.group().members) == {M1}


def test_consumer_group_describe_on_share_group():
    """testConsumerGroupDescribeOnShareGroup."""
    c = client()
    c.share_heartbeat(M1, 0, topics=["foo"])
    [g] = c.describe(GROUP)
    assert (g["errorCode"], g["errorMessage"]) == (
        Errors.GROUP_ID_NOT_FOUND.code,
        f"Group {GROUP} is not a consumer group.",
    )


def test_share_group_heartbeat_on_consumer_group():
    """testShareGroupHeartbeatOnConsumerGroup."""
    c = client()
    _consumer_group(c)
    resp = c.share_heartbeat(M1, 0, topics=["foo"])
    assert (resp["errorCode"], resp["errorMessage"]) == (
        Errors.GROUP_ID_NOT_FOUND.code,
        f"Group {GROUP} is not a share group.",
    )


def test_share_group_describe_on_consumer_group():
    """testShareGroupDescribeOnConsumerGroup."""
    c = client()
    _consumer_group(c)
    [g] = c.share_describe(GROUP)
    assert (g["errorCode"], g["errorMessage"]) == (
        Errors.GROUP_ID_NOT_FOUND.code,
        f"Group {GROUP} is not a share group.",
    )


def test_offset_apis_on_share_group():
    """ShareGroupTest.testValidateOffsetCommit / testValidateOffsetFetch: a share group has no
    committed offsets; OffsetFetch treats it as an unknown group."""
    c = client()
    c.share_heartbeat(M1, 0, topics=["foo"])
    commit = c.send(
        "OffsetCommit",
        9,
        {
            "groupId": GROUP,
            "generationIdOrMemberEpoch": -1,
            "memberId": "",
            "groupInstanceId": None,
            "retentionTimeMs": -1,
            "topics": [
                {
                    "name": "foo",
                    "partitions": [
                        {"partitionIndex": 0, "committedOffset": 5, "committedLeaderEpoch": -1, "committedMetadata": ""}
                    ],
                }
            ],
        },
    )
    assert commit["topics"][0]["partitions"][0]["errorCode"] == Errors.GROUP_ID_NOT_FOUND.code


# ====================================================================== admin
def test_list_groups_with_share_type_filter():
    """ShareGroupTest.testAsListedGroup and ListGroups' typesFilter."""
    c = client()
    c.share_heartbeat(M1, 0, topics=["foo"])
    resp = c.send("ListGroups", 5, {"statesFilter": [], "typesFilter": ["Share"]})
    assert resp["groups"] == [{"groupId": GROUP, "protocolType": "share", "groupState": "Stable", "groupType": "share"}]
    assert c.send("ListGroups", 5, {"statesFilter": [], "typesFilter": ["consumer"]})["groups"] == []
    assert c.send("ListGroups", 5, {"statesFilter": ["stable"], "typesFilter": []})["groups"][0]["groupId"] == GROUP


def test_describe_groups_on_share_group():
    """DescribeGroups (classic) of a share group: GROUP_ID_NOT_FOUND, Dead, from v6."""
    c = client()
    c.share_heartbeat(M1, 0, topics=["foo"])
    [g] = c.send("DescribeGroups", 6, {"groups": [GROUP], "includeAuthorizedOperations": False})["groups"]
    assert (g["errorCode"], g["errorMessage"], g["groupState"]) == (
        Errors.GROUP_ID_NOT_FOUND.code,
        f"Group {GROUP} is not a classic group.",
        "Dead",
    )


def test_delete_groups_share_group():
    """ShareGroupTest.testValidateDeleteGroup: NON_EMPTY_GROUP while it has members; deleted when
    empty (GroupCoordinatorService.deleteGroups): its share-partitions move to deleting and their
    state is deleted by their owners first, then its tombstones (testShareGroupDeleteTombstones'
    order). The request waits for the owners."""
    c = client()
    c.share_join(M1, topics=["foo"])
    [r] = c.send("DeleteGroups", 2, {"groupsNames": [GROUP]})["results"]
    assert r["errorCode"] == Errors.NON_EMPTY_GROUP.code
    c.share_heartbeat(M1, -1)
    owned = [k for k, o in c.owners.items() if k in o.component("share").states]
    assert owned  # the initialized share-partitions have state on their owners
    start = len(c.d.records)
    assert c.send("DeleteGroups", 2, {"groupsNames": [GROUP]}) is None  # waits for the owners
    cid = c.d.last_cid
    assert c.group().state_partition_metadata["deleting"] == {topic_id("foo"): "foo"}
    c.initialize_share_partitions()  # delivers the delete queries and the answers
    [r] = c.d.response(cid)["results"]
    assert r == {"groupId": GROUP, "errorCode": 0}
    assert keys(c.records(start)) == [
        rk("ShareGroupStatePartitionMetadata"),
        rk("ShareGroupTargetAssignmentMetadata"),
        rk("ShareGroupStatePartitionMetadata"),
        rk("ShareGroupMetadata"),
    ]
    assert all(k not in c.owners[k].component("share").states for k in owned)
    assert c.group() is None
    assert c.rebuilt().component("groups").groups.get(GROUP) is None


def test_delete_groups_share_group_without_share_partitions():
    """A share group that never initialized a share-partition is deleted at once."""
    c = client()
    c.inject([(rk("ShareGroupMetadata"), {"type": "ShareGroupMetadata", "epoch": 1, "metadataHash": 0})])
    [r] = c.send("DeleteGroups", 2, {"groupsNames": [GROUP]})["results"]
    assert r["errorCode"] == 0 and c.group() is None


def test_delete_groups_share_group_persister_error_keeps_the_group():
    """testDeleteShareGroupPersisterError: an owner that does not answer fails the group's deletion
    (REQUEST_TIMED_OUT) and the group stays, its share-partitions deleting; a second DeleteGroups
    deletes the deleting topics' partitions again (shareGroupBuildPartitionDeleteRequest with
    already deleting topics, testShareGroupDeleteRequestWithAlreadyDeletingTopics) and succeeds."""
    c = client(topics={"foo": 6, "bar": 3})
    c.share_join(M1, topics=["foo"])
    c.share_heartbeat(M1, -1)
    unknown = next(f"g{i}" for i in range(1000) if c.d.partition.owns(f"g{i}"))
    assert c.send("DeleteGroups", 2, {"groupsNames": [GROUP, unknown]}) is None
    cid = c.d.last_cid
    c.initialize_share_partitions(fail=True)
    c.sleep(c.d.config["share.admin.timeout.ms"] + 1)
    results = c.d.response(cid)["results"]
    assert {r["groupId"]: r["errorCode"] for r in results} == {
        GROUP: Errors.REQUEST_TIMED_OUT.code,
        unknown: Errors.GROUP_ID_NOT_FOUND.code,
    }
    group = c.group()
    assert group is not None and group.state_partition_metadata["deleting"] == {topic_id("foo"): "foo"}
    assert group.state_partition_metadata["initialized"] == {}
    assert c.send("DeleteGroups", 2, {"groupsNames": [GROUP]}) is None
    cid = c.d.last_cid
    deleted = [
        (e["request"]["groupId"], sorted(p for t in e["request"]["topics"] for p in t["partitions"]))
        for _, e in c.d.internal_requests
    ]
    assert sorted(p for _, ps in deleted for p in ps) == [
        p for p in range(6) if not c.d.partition.owns(f"{GROUP}:{topic_id('foo')}:{p}")
    ]
    c.initialize_share_partitions()
    assert c.d.response(cid)["results"] == [{"groupId": GROUP, "errorCode": 0}]
    assert c.group() is None


def test_share_group_replay_round_trip():
    """The state rebuilt from the log equals the live state after joins, leaves and a fence."""
    c = client()
    c.share_heartbeat(M1, 0, topics=["foo", "bar"])
    c.share_heartbeat(M2, 0, topics=["foo"])
    c.share_heartbeat(M1, 1)
    c.share_heartbeat(M3, 0, topics=["bar"])
    c.share_heartbeat(M2, -1)
    live = c.group().to_json()
    rebuilt = c.rebuilt().component("groups").groups[GROUP].to_json()
    live.pop("metadataRefreshDeadline"), rebuilt.pop("metadataRefreshDeadline")
    assert live == rebuilt


def test_share_group_member_json_round_trip():
    m = share_member(M1, 3, {"foo": [1, 2]})
    assert ShareGroupMember.from_json(m.to_json()) == m


def test_share_group_metrics_are_labelled_share():
    """The metrics component counts share groups under protocol "share" (events carry groupType)."""
    c = client()
    c.share_heartbeat(M1, 0, topics=["foo"])
    c.share_heartbeat(M2, 0, topics=["foo"])
    c.share_heartbeat(M1, -1)
    data = c.d.component("metrics").to_json()["data"]
    counters, gauges = data["counters"], data["gauges"]
    assert counters['group_created_total{protocol="share"}'] == 1
    assert counters['group_member_joined_total{protocol="share"}'] == 2
    assert counters['group_member_left_total{protocol="share",reason="left"}'] == 1
    assert counters['group_rebalance_started_total{protocol="share"}'] == 3
    assert not [k for k in counters if 'protocol="consumer"' in k]
    assert gauges['group_count{protocol="share"}'] == 1 and gauges['share_group_count{state="Stable"}'] == 1


def test_importing_the_core_registers_the_share_apis():
    """What the stream's workers import (`coordinator`) registers every share API (a fresh
    interpreter: the tests above import the share modules themselves)."""
    import subprocess
    import sys

    names = [
        "ShareGroupHeartbeat",
        "ShareGroupDescribe",
        "InitializeShareGroupState",
        "ReadShareGroupState",
        "WriteShareGroupState",
        "DeleteShareGroupState",
        "ReadShareGroupStateSummary",
        "DescribeShareGroupOffsets",
        "AlterShareGroupOffsets",
        "DeleteShareGroupOffsets",
    ]
    code = f"import coordinator; from coordinator.api import lookup; print([n for n in {names!r} if lookup(n) is None])"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_share_group_assignment_interval():
    """testShareGroupAssignmentInterval (Kafka 4.3+): within group.share.assignment.interval.ms of
    the last target assignment a joining member bumps the group epoch but is not assigned; after
    it, the next heartbeat computes the new assignment."""
    c = client(topics={"foo": 2}, group_share_assignment_interval_ms=5000)
    c.inject_share_group(10, [share_member(M1, 10, {"foo": [0, 1]})])
    c.share_heartbeat(M1, 10)  # no change: nothing computed
    r = c.share_heartbeat(M2, 0, topics=["foo"])
    assert r["memberEpoch"] == 11 and c.group().target_assignment_epoch == 11  # no timestamp yet: at once
    c.d.advance(4995)
    r3 = c.share_heartbeat(M3, 0, topics=["foo"])
    assert r3["memberEpoch"] == 11 and assigned(c, r3) == {}
    assert (c.group().group_epoch, c.group().target_assignment_epoch) == (12, 11)
    c.d.advance(10)
    r3 = c.share_heartbeat(M3, 11)
    assert r3["memberEpoch"] == 12 and c.group().target_assignment_epoch == 12
