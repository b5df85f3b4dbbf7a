"""OffsetCommit, OffsetFetch, OffsetDelete, offset expiry and the transactional-offset store:
Kafka's OffsetMetadataManagerTest scenarios, through the real runtime."""

from __future__ import annotations

import pytest

from coordinator.errors import Errors
from coordinator.group.classic.group import COMPLETING_REBALANCE, DEAD, EMPTY, STABLE, ClassicGroup, ClassicGroupMember
from coordinator.result import CoordinatorResult
from tests.group.group_helpers import (
    GroupTestClient,
    group_on_partition,
    join_and_complete,
    join_and_rebalance,
    protocols,
    seed_transactional_offset,
)

MINUTE = 60_000


def client(**overrides) -> GroupTestClient:
    overrides.setdefault("group_min_session_timeout_ms", 1)
    return GroupTestClient(**overrides)


def partition_errors(resp: dict) -> list[int]:
    return [p["errorCode"] for t in resp["topics"] for p in t["partitions"]]


def with_member_group(c: GroupTestClient, instance_id: str | None = None, state: str = EMPTY):
    """An Empty classic group holding one member "member" (as Kafka's tests build with group.add)."""

    def setup(comp):
        g = ClassicGroup(c.group_id, now_ms=c.now)
        comp.groups[c.group_id] = g
        g.add(ClassicGroupMember("member", instance_id, "client", "host", 5000, 5000, "consumer", [("range", "")]))
        if state == DEAD:
            g.transition_to(DEAD, c.now)

    c.mutate(setup)


# ====================================================================== OffsetCommit
@pytest.mark.parametrize("version", range(2, 10))
def test_offset_commit_with_unknown_group(version):
    c = client()
    resp = c.commit({("bar", 0): 100}, member_id="member", generation=10, version=version)
    expected = Errors.GROUP_ID_NOT_FOUND.code if version >= 9 else Errors.ILLEGAL_GENERATION.code
    assert partition_errors(resp) == [expected]
    assert ("throttleTimeMs" in resp) is (version >= 3)
    assert c.group() is None and c.records() == []


def test_offset_commit_creates_a_simple_group():
    c = client()
    resp = c.commit({("bar", 0): 100, ("bar", 1): 200}, version=9)
    assert partition_errors(resp) == [Errors.NONE.code, Errors.NONE.code]
    g = c.group()
    assert g.state == EMPTY and g.protocol_type is None and g.generation_id == 0
    assert [k for k, _ in c.records()] == ['["OffsetCommit","group-id","bar",0]', '["OffsetCommit","group-id","bar",1]']
    assert c.records()[0][1] == {
        "type": "OffsetCommit",
        "offset": 100,
        "leaderEpoch": -1,
        "metadata": "",
        "commitTimestamp": c.now,
        "expireTimestamp": -1,
    }
    assert c.committed("bar", 1) == 200
    assert c.events("GroupCreated")[0]["reason"] == "simple group created by OffsetCommit"


def test_offset_commit_of_no_partitions_does_not_reach_the_coordinator():
    c = client()
    _, resp = c.send(
        "OffsetCommit", 9, {"groupId": c.group_id, "generationIdOrMemberEpoch": -1, "memberId": "", "topics": []}
    )
    assert resp == {"throttleTimeMs": 0, "topics": []} and c.group() is None


def test_offset_commit_accepts_the_empty_group_id():
    # The coordinator service supports offset commits for "" for backwards compatibility.
    c = GroupTestClient(group_id="")
    assert partition_errors(c.commit({("bar", 0): 1}, group_id="")) == [Errors.NONE.code]
    assert c.committed("bar", 0, group_id="") == 1


def test_generic_group_offset_commit_with_dead_group():
    c = client()
    with_member_group(c, state=DEAD)
    resp = c.commit({("bar", 0): 100}, member_id="member", generation=10)
    assert partition_errors(resp) == [Errors.COORDINATOR_NOT_AVAILABLE.code]


def test_generic_group_offset_commit_with_unknown_member_id():
    c = client()
    with_member_group(c)
    assert partition_errors(c.commit({("bar", 0): 100}, member_id="member2", generation=10)) == [
        Errors.UNKNOWN_MEMBER_ID.code
    ]


def test_generic_group_offset_commit_with_illegal_generation():
    c = client()
    with_member_group(c)
    assert partition_errors(c.commit({("bar", 0): 100}, member_id="member", generation=10)) == [
        Errors.ILLEGAL_GENERATION.code
    ]


def test_generic_group_offset_commit_with_unknown_instance_id():
    c = client()
    with_member_group(c)
    resp = c.commit({("bar", 0): 100}, member_id="member", instance_id="instanceid", generation=10)
    assert partition_errors(resp) == [Errors.UNKNOWN_MEMBER_ID.code]


def test_generic_group_offset_commit_with_fenced_instance_id():
    c = client()
    with_member_group(c, instance_id="new-instance-id")
    # "old-instance-id" is mapped to no member: unknown, not fenced.
    resp = c.commit({("bar", 0): 100}, member_id="member", instance_id="old-instance-id", generation=10)
    assert partition_errors(resp) == [Errors.UNKNOWN_MEMBER_ID.code]
    resp = c.commit({("bar", 0): 100}, member_id="other", instance_id="new-instance-id", generation=10)
    assert partition_errors(resp) == [82]


def test_generic_group_offset_commit_while_in_completing_rebalance_state():
    c = client()
    leader = join_and_complete(c)
    resp = c.commit({("bar", 0): 100}, member_id=leader["memberId"], generation=1)
    assert c.group().state == COMPLETING_REBALANCE and partition_errors(resp) == [Errors.REBALANCE_IN_PROGRESS.code]


def test_generic_group_offset_commit_without_member_id_and_generation():
    c = client()
    join_and_rebalance(c)
    assert partition_errors(c.commit({("bar", 0): 100})) == [Errors.UNKNOWN_MEMBER_ID.code]


def test_generic_group_offset_commit_with_retention_time():
    c = client()
    leader = join_and_rebalance(c)
    resp = c.commit({("bar", 0): 100}, member_id=leader["memberId"], generation=1, version=4, retention=1234)
    assert partition_errors(resp) == [Errors.NONE.code]
    assert c.records()[-1][1]["expireTimestamp"] == c.now + 1234


def test_generic_group_offset_commit_in_stable_state_maintains_the_session():
    c = client()
    leader = join_and_rebalance(c, session_timeout=5000)
    for _ in range(3):
        c.sleep(4000)
        assert partition_errors(c.commit({("bar", 0): 1}, member_id=leader["memberId"], generation=1)) == [
            Errors.NONE.code
        ]
    assert c.group().num_members() == 1 and c.group().state == STABLE


def test_offset_commit_with_too_large_metadata():
    c = client(offset_metadata_max_bytes=5)
    body = {
        "groupId": c.group_id,
        "generationIdOrMemberEpoch": -1,
        "memberId": "",
        "topics": [
            {
                "name": "bar",
                "partitions": [
                    {"partitionIndex": 0, "committedOffset": 1, "committedMetadata": "toolong"},
                    {"partitionIndex": 1, "committedOffset": 2, "committedMetadata": "small"},
                    # Kafka counts UTF-16 units: five emoji are ten.
                    {"partitionIndex": 2, "committedOffset": 3, "committedMetadata": "😀😀😀"},
                ],
            }
        ],
    }
    _, resp = c.send("OffsetCommit", 8, body)
    assert partition_errors(resp) == [
        Errors.OFFSET_METADATA_TOO_LARGE.code,
        Errors.NONE.code,
        Errors.OFFSET_METADATA_TOO_LARGE.code,
    ]
    assert c.committed("bar", 1) == 2 and c.committed("bar", 0) == -1


# ====================================================================== OffsetFetch
def test_fetch_offsets_of_unknown_partitions_and_groups():
    c = client()
    c.commit({("bar", 0): 100})
    resp = c.fetch({"bar": [0, 1], "baz": [0]})
    parts = {(t["name"], p["partitionIndex"]): p for t in resp["groups"][0]["topics"] for p in t["partitions"]}
    assert parts[("bar", 0)] == {
        "partitionIndex": 0,
        "committedOffset": 100,
        "committedLeaderEpoch": -1,
        "metadata": "",
        "errorCode": 0,
    }
    assert parts[("bar", 1)]["committedOffset"] == -1 and parts[("baz", 0)]["committedOffset"] == -1
    unknown = c.fetch({"bar": [0]}, group_id=group_on_partition(c.d.partition_id))
    assert unknown["groups"][0]["errorCode"] == Errors.NONE.code
    assert unknown["groups"][0]["topics"][0]["partitions"][0]["committedOffset"] == -1


def test_fetch_offsets_response_versions():
    c = client()
    c.commit({("bar", 0): 100}, metadata="m")
    v1 = c.fetch({"bar": [0]}, version=1)
    assert v1 == {
        "topics": [
            {
                "name": "bar",
                "partitions": [{"partitionIndex": 0, "committedOffset": 100, "metadata": "m", "errorCode": 0}],
            }
        ]
    }
    v5 = c.fetch({"bar": [0]}, version=5)
    assert v5 == {
        "throttleTimeMs": 0,
        "topics": [
            {
                "name": "bar",
                "partitions": [
                    {
                        "partitionIndex": 0,
                        "committedOffset": 100,
                        "committedLeaderEpoch": -1,
                        "metadata": "m",
                        "errorCode": 0,
                    }
                ],
            }
        ],
        "errorCode": 0,
    }


def test_fetch_all_offsets():
    c = client()
    c.commit({("bar", 0): 100, ("bar", 1): 101, ("baz", 3): 7})
    resp = c.fetch(None)
    got = {
        (t["name"], p["partitionIndex"]): p["committedOffset"]
        for t in resp["groups"][0]["topics"]
        for p in t["partitions"]
    }
    assert got == {("bar", 0): 100, ("bar", 1): 101, ("baz", 3): 7}
    v2 = c.fetch(None, version=2)
    assert [(t["name"], [p["committedOffset"] for p in t["partitions"]]) for t in v2["topics"]] == [
        ("bar", [100, 101]),
        ("baz", [7]),
    ]
    empty = c.fetch(None, group_id=group_on_partition(c.d.partition_id))
    assert empty["groups"][0] == {"groupId": empty["groups"][0]["groupId"], "topics": [], "errorCode": Errors.NONE.code}


def test_fetch_offsets_for_groups_of_other_partitions():
    c = client()
    other = group_on_partition(c.d.partition_id, other=True)
    _, resp = c.send(
        "OffsetFetch",
        8,
        {
            "groups": [
                {"groupId": other, "topics": [{"name": "t", "partitionIndexes": [0]}]},
                {"groupId": c.group_id, "topics": [{"name": "t", "partitionIndexes": [0]}]},
            ],
            "requireStable": False,
        },
    )
    assert resp["groups"][0] == {"groupId": other, "topics": [], "errorCode": Errors.NOT_COORDINATOR.code}
    assert resp["groups"][1]["errorCode"] == Errors.NONE.code
    # Single-group versions: the top-level error (v2+) or every partition's (v1).
    _, v3 = c.send("OffsetFetch", 3, {"groupId": other, "topics": [{"name": "t", "partitionIndexes": [0]}]})
    assert v3 == {"throttleTimeMs": 0, "topics": [], "errorCode": Errors.NOT_COORDINATOR.code}
    _, v1 = c.send("OffsetFetch", 1, {"groupId": other, "topics": [{"name": "t", "partitionIndexes": [0, 1]}]})
    assert v1 == {
        "topics": [
            {
                "name": "t",
                "partitions": [
                    {
                        "partitionIndex": i,
                        "committedOffset": -1,
                        "metadata": "",
                        "errorCode": Errors.NOT_COORDINATOR.code,
                    }
                    for i in (0, 1)
                ],
            }
        ]
    }


def test_fetch_offsets_of_dead_group_are_unknown():
    c = client()
    c.commit({("bar", 0): 100})
    c.mutate(lambda comp: comp.groups[c.group_id].transition_to(DEAD, c.now))
    assert c.committed("bar", 0) == -1
    assert c.fetch(None)["groups"][0]["topics"] == []


# ====================================================================== transactional offsets
def add_pending(c: GroupTestClient, producer_id: int, topic: str, partition: int, offset: int) -> None:
    def add(comp):
        created = CoordinatorResult()
        comp.validate_transactional_offset_commit(c.group_id, "", None, -1, 4, created)
        comp.p.apply(created)
        seed_transactional_offset(comp, producer_id, c.group_id, topic, partition, offset)

    c.mutate(add)


def complete(c: GroupTestClient, producer_id: int, committed: bool) -> None:
    c.mutate(lambda comp: comp.complete_transaction(producer_id, committed))


def test_fetch_with_require_stable_reports_pending_transactional_offsets():
    c = client()
    c.commit({("bar", 0): 100, ("bar", 1): 200})
    add_pending(c, 7, "bar", 0, 150)
    resp = c.fetch({"bar": [0, 1]}, require_stable=True)
    parts = resp["groups"][0]["topics"][0]["partitions"]
    assert parts[0] == {
        "partitionIndex": 0,
        "committedOffset": -1,
        "committedLeaderEpoch": -1,
        "metadata": "",
        "errorCode": Errors.UNSTABLE_OFFSET_COMMIT.code,
    }
    assert parts[1]["committedOffset"] == 200 and parts[1]["errorCode"] == Errors.NONE.code
    # Without requireStable the last committed offset is returned.
    assert c.committed("bar", 0) == 100
    all_parts = c.fetch(None, require_stable=True)["groups"][0]["topics"][0]["partitions"]
    assert [p["errorCode"] for p in all_parts] == [Errors.UNSTABLE_OFFSET_COMMIT.code, Errors.NONE.code]
    complete(c, 7, committed=True)
    assert (
        c.fetch({"bar": [0]}, require_stable=True)["groups"][0]["topics"][0]["partitions"][0]["committedOffset"] == 150
    )


def test_aborted_transaction_drops_its_offsets():
    c = client()
    c.commit({("bar", 0): 100})
    add_pending(c, 7, "bar", 0, 150)
    complete(c, 7, committed=False)
    assert c.committed("bar", 0) == 100 and not c.groups().has_pending_transactional_offsets(c.group_id)


def test_replay_transaction_end_marker_with_commit_keeps_the_newest_record():
    # testReplayTransactionEndMarkerWithCommit: a transactional offset is materialized only if its
    # record is newer than the committed one.
    c = client()
    add_pending(c, 7, "bar", 0, 150)  # record 1
    c.commit({("bar", 0): 100})  # record 2: newer than the transactional offset
    add_pending(c, 7, "bar", 1, 300)  # record 3
    complete(c, 7, committed=True)
    assert c.committed("bar", 0) == 100 and c.committed("bar", 1) == 300


def test_transactional_offset_commit_validation():
    c = client()
    leader = join_and_rebalance(c)

    def check(comp):
        with pytest.raises(Exception) as e:
            comp.validate_transactional_offset_commit(c.group_id, leader["memberId"], None, 5, 4, CoordinatorResult())
        assert e.value.error.code == Errors.ILLEGAL_GENERATION.code
        with pytest.raises(Exception) as e:
            comp.validate_transactional_offset_commit("missing-group", "", None, 3, 4, CoordinatorResult())
        assert e.value.error.code == Errors.ILLEGAL_GENERATION.code
        # Transactional commits skip the state checks (no REBALANCE_IN_PROGRESS, no identity needed).
        comp.validate_transactional_offset_commit(c.group_id, "", None, -1, 4, CoordinatorResult())
        comp.validate_transactional_offset_commit(c.group_id, leader["memberId"], None, 1, 4, CoordinatorResult())
        assert comp.is_offset_metadata_invalid("x" * 4097) and not comp.is_offset_metadata_invalid(None)

    c.mutate(check)


# ====================================================================== OffsetDelete
def delete_offsets(c: GroupTestClient, topics: dict[str, list[int]], group_id: str | None = None) -> dict:
    return c.send(
        "OffsetDelete",
        0,
        {
            "groupId": c.group_id if group_id is None else group_id,
            "topics": [{"name": t, "partitions": [{"partitionIndex": p} for p in ps]} for t, ps in topics.items()],
        },
    )[1]


def test_offset_delete_unknown_group():
    c = client()
    assert delete_offsets(c, {"foo": [0]}) == {
        "errorCode": Errors.GROUP_ID_NOT_FOUND.code,
        "throttleTimeMs": 0,
        "topics": [],
    }


def test_offset_delete_with_empty_group_id():
    c = GroupTestClient(group_id="")
    assert delete_offsets(c, {"foo": [0]}, group_id="")["errorCode"] == Errors.INVALID_GROUP_ID.code


def test_generic_group_offset_delete_with_errors():
    c = client()
    leader = join_and_rebalance(c, protos=protocols("range", topics=["foo"]))
    c.commit({("foo", 0): 1, ("bar", 0): 2}, member_id=leader["memberId"], generation=1)
    mark = len(c.records())
    resp = delete_offsets(c, {"foo": [0], "bar": [0, 1]})
    assert resp == {
        "errorCode": Errors.NONE.code,
        "throttleTimeMs": 0,
        "topics": [
            {"name": "foo", "partitions": [{"partitionIndex": 0, "errorCode": Errors.GROUP_SUBSCRIBED_TO_TOPIC.code}]},
            {
                "name": "bar",
                "partitions": [
                    {"partitionIndex": 0, "errorCode": Errors.NONE.code},
                    {"partitionIndex": 1, "errorCode": Errors.NONE.code},
                ],
            },
        ],
    }
    # Only the partition that had an offset gets a tombstone.
    assert c.records(mark) == [('["OffsetCommit","group-id","bar",0]', None)]
    assert c.committed("bar", 0) == -1 and c.committed("foo", 0) == 1


def test_generic_group_offset_delete_non_consumer_group():
    c = client()
    join_and_rebalance(c, protocol_type="connect")
    assert delete_offsets(c, {"bar": [0]})["errorCode"] == Errors.NON_EMPTY_GROUP.code


def test_offset_delete_from_empty_group_and_pending_offsets():
    c = client()
    c.commit({("bar", 0): 1})
    add_pending(c, 9, "bar", 1, 5)
    resp = delete_offsets(c, {"bar": [0, 1, 2]})
    assert resp["errorCode"] == Errors.NONE.code
    assert [k for k, v in c.records()[-2:]] == [
        '["OffsetCommit","group-id","bar",0]',
        '["OffsetCommit","group-id","bar",1]',
    ]
    assert not c.groups().has_pending_transactional_offsets(c.group_id)


# ====================================================================== expiry
def test_cleanup_expired_offsets_of_a_simple_group():
    c = client(offsets_retention_minutes=1, offsets_retention_check_interval_ms=500)
    c.commit({("secondTopic", 0): 1})
    c.sleep(500)
    c.commit({("secondTopic", 1): 2})
    c.sleep(MINUTE - 500)  # retention of partition 0 reached
    assert c.committed("secondTopic", 0) == -1 and c.committed("secondTopic", 1) == 2
    assert c.group() is not None
    c.sleep(500)  # partition 1 too: no offsets left, the group goes
    assert c.committed("secondTopic", 1) == -1 and c.group() is None
    expired = c.events("OffsetsExpired")
    assert [e["partitions"] for e in expired] == [[["secondTopic", 0]], [["secondTopic", 1]]]
    assert c.records()[-1] == ('["GroupMetadata","group-id"]', None)
    assert c.events("GroupDeleted")[0]["reason"] == "expired: no offsets left"


def test_cleanup_expired_offsets_keeps_subscribed_topics_of_a_stable_consumer_group():
    c = client(offsets_retention_minutes=1, offsets_retention_check_interval_ms=1000)
    leader = join_and_rebalance(c, protos=protocols("range", topics=["firstTopic"]), session_timeout=30000)
    member = leader["memberId"]
    c.commit({("firstTopic", 0): 1, ("secondTopic", 0): 2}, member_id=member, generation=1)
    for _ in range(7):
        c.sleep(10000)
        c.heartbeat(member, 1)
    # Stable with known subscriptions: unsubscribed topics expire from their commit time.
    assert c.committed("firstTopic", 0) == 1 and c.committed("secondTopic", 0) == -1
    assert c.group().state == STABLE


def test_offsets_of_an_empty_consumer_group_expire_from_when_it_became_empty():
    c = client(offsets_retention_minutes=1, offsets_retention_check_interval_ms=1000)
    leader = join_and_rebalance(c, protos=protocols("range", topics=["firstTopic"]), session_timeout=60000)
    c.commit({("firstTopic", 0): 1}, member_id=leader["memberId"], generation=1)
    c.sleep(30000)
    c.leave({"memberId": leader["memberId"]})
    assert c.group().state == EMPTY
    c.sleep(MINUTE - 1000)  # 90s after the commit but under a minute since the group emptied
    assert c.committed("firstTopic", 0) == 1
    c.sleep(1000)
    assert c.committed("firstTopic", 0) == -1 and c.group() is None


def test_offsets_of_a_non_consumer_group_do_not_expire_while_members_exist():
    c = client(offsets_retention_minutes=1, offsets_retention_check_interval_ms=1000)
    leader = join_and_rebalance(c, protocol_type="connect", session_timeout=30000)
    c.commit({("t", 0): 1}, member_id=leader["memberId"], generation=1)
    for _ in range(10):
        c.sleep(20000)
        c.heartbeat(leader["memberId"], 1)
    assert c.committed("t", 0) == 1


def test_explicit_expire_timestamp_is_honoured():
    c = client(offsets_retention_minutes=100, offsets_retention_check_interval_ms=1000)
    c.commit({("t", 0): 1}, version=2, retention=5000)
    c.sleep(4000)
    assert c.committed("t", 0) == 1
    c.sleep(1000)
    assert c.committed("t", 0) == -1


def test_cleanup_expired_offsets_with_pending_transactional_offsets():
    c = client(offsets_retention_minutes=1, offsets_retention_check_interval_ms=1000)
    c.commit({("foo", 0): 1, ("foo", 1): 2})
    add_pending(c, 5, "foo", 1, 3)
    c.sleep(2 * MINUTE)
    # foo-1 has a pending offset: it does not expire, and the group is not deleted.
    assert c.committed("foo", 0) == -1 and c.committed("foo", 1) == 2 and c.group() is not None
    complete(c, 5, committed=False)
    c.sleep(MINUTE)
    assert c.group() is None


def test_cleanup_expired_offsets_with_only_pending_transactional_offsets():
    c = client(offsets_retention_minutes=1, offsets_retention_check_interval_ms=1000)
    add_pending(c, 5, "foo", 0, 3)
    c.sleep(2 * MINUTE)
    assert c.group() is not None  # an open transaction keeps the group
    complete(c, 5, committed=True)
    assert c.committed("foo", 0) == 3
    c.sleep(MINUTE)  # committed two minutes ago: it expires at the next run, and the group goes
    assert c.group() is None


def test_expiration_timer_runs_every_check_interval_while_groups_exist():
    c = client(offsets_retention_check_interval_ms=1000)
    assert c.timers() == {}
    c.commit({("t", 0): 1})
    deadline = c.timers()['["groups-expiration"]'][0]
    assert deadline == c.now + 1000
    c.sleep(1000)
    assert c.timers()['["groups-expiration"]'][0] == c.now + 1000


# ====================================================================== topics the metadata does not know
# KafkaApis answers them before the coordinator sees the request (KafkaApisTest).


def with_topics(c: GroupTestClient, **partitions: int) -> None:
    from coordinator.envelope import BROADCAST_KEY

    c.d.send(
        "UpdateMetadata",
        0,
        {"topicStates": [{"topicName": t, "numPartitions": n} for t, n in partitions.items()]},
        key=BROADCAST_KEY,
    )


def test_handle_offset_commit_request_topics_and_partitions_validation():
    c = client()
    with_topics(c, foo=2, bar=2)
    resp = c.commit(
        {
            ("foo", 0): 10,
            ("foo", 1): 20,
            ("foo", 2): 30,
            ("bar", 0): 40,
            ("bar", 1): 50,
            ("zar", 0): 60,
            ("zar", 1): 70,
        },
        member_id="member",
    )
    # Partitions failing the validation come first (foo-2), then topics failing it (zar before bar).
    assert resp["topics"] == [
        {
            "name": "foo",
            "partitions": [
                {"partitionIndex": 2, "errorCode": Errors.UNKNOWN_TOPIC_OR_PARTITION.code},
                {"partitionIndex": 0, "errorCode": Errors.NONE.code},
                {"partitionIndex": 1, "errorCode": Errors.NONE.code},
            ],
        },
        {
            "name": "zar",
            "partitions": [
                {"partitionIndex": 0, "errorCode": Errors.UNKNOWN_TOPIC_OR_PARTITION.code},
                {"partitionIndex": 1, "errorCode": Errors.UNKNOWN_TOPIC_OR_PARTITION.code},
            ],
        },
        {
            "name": "bar",
            "partitions": [
                {"partitionIndex": 0, "errorCode": Errors.NONE.code},
                {"partitionIndex": 1, "errorCode": Errors.NONE.code},
            ],
        },
    ]
    assert sorted(k for k, _ in c.records()) == sorted(
        f'["OffsetCommit","group-id","{t}",{p}]' for t, p in [("foo", 0), ("foo", 1), ("bar", 0), ("bar", 1)]
    )
    fetched = c.fetch({"zar": [0, 1], "foo": [2], "bar": [1]})["groups"][0]["topics"]
    assert [[p["committedOffset"] for p in t["partitions"]] for t in fetched] == [[-1, -1], [-1], [50]]


@pytest.mark.parametrize("partition", [-1, 1])
def test_offset_commit_with_invalid_partition(partition):
    c = client()
    with_topics(c, topic=1)
    resp = c.commit({("topic", partition): 15})
    assert partition_errors(resp) == [Errors.UNKNOWN_TOPIC_OR_PARTITION.code]
    # Nothing reached the coordinator: no simple group, no record.
    assert c.group() is None and c.records() == [] and c.events("GroupCreated") == []


def test_offset_commit_coordinator_error_goes_to_the_known_topics_only():
    # The coordinator's error (here: unknown group with a generation) is reported on the partitions
    # it was asked about; the unknown topic keeps UNKNOWN_TOPIC_OR_PARTITION (Builder.merge).
    c = client()
    with_topics(c, foo=1)
    resp = c.commit({("zar", 0): 1, ("foo", 0): 1}, member_id="member", generation=10, version=9)
    assert resp["topics"] == [
        {"name": "zar", "partitions": [{"partitionIndex": 0, "errorCode": Errors.UNKNOWN_TOPIC_OR_PARTITION.code}]},
        {"name": "foo", "partitions": [{"partitionIndex": 0, "errorCode": Errors.GROUP_ID_NOT_FOUND.code}]},
    ]
    assert c.group() is None and c.records() == []


def test_offset_commit_before_any_metadata_accepts_every_topic():
    # Until the first UpdateMetadata arrives nothing is rejected for naming an unknown topic (the
    # documented choice: a Kafka broker serves only once it has metadata).
    c = client()
    assert partition_errors(c.commit({("never-created", 0): 5})) == [Errors.NONE.code]
    assert c.committed("never-created", 0) == 5


def test_offset_delete_topics_and_partitions_validation():
    c = client()
    with_topics(c, foo=2, bar=2)
    c.commit({("foo", 0): 1, ("foo", 1): 1, ("bar", 0): 1, ("bar", 1): 1})
    since = len(c.records())
    _, resp = c.send(
        "OffsetDelete",
        0,
        {
            "groupId": c.group_id,
            "topics": [
                {"name": "foo", "partitions": [{"partitionIndex": 0}, {"partitionIndex": 1}, {"partitionIndex": 2}]},
                {"name": "bar", "partitions": [{"partitionIndex": 0}, {"partitionIndex": 1}]},
                {"name": "zar", "partitions": [{"partitionIndex": 0}, {"partitionIndex": 1}]},
            ],
        },
    )
    assert resp == {
        "errorCode": Errors.NONE.code,
        "throttleTimeMs": 0,
        "topics": [
            {
                "name": "foo",
                "partitions": [
                    {"partitionIndex": 2, "errorCode": Errors.UNKNOWN_TOPIC_OR_PARTITION.code},
                    {"partitionIndex": 0, "errorCode": Errors.NONE.code},
                    {"partitionIndex": 1, "errorCode": Errors.NONE.code},
                ],
            },
            {
                "name": "zar",
                "partitions": [
                    {"partitionIndex": 0, "errorCode": Errors.UNKNOWN_TOPIC_OR_PARTITION.code},
                    {"partitionIndex": 1, "errorCode": Errors.UNKNOWN_TOPIC_OR_PARTITION.code},
                ],
            },
            {
                "name": "bar",
                "partitions": [
                    {"partitionIndex": 0, "errorCode": Errors.NONE.code},
                    {"partitionIndex": 1, "errorCode": Errors.NONE.code},
                ],
            },
        ],
    }
    assert len(c.records(since)) == 4 and all(v is None for _, v in c.records(since))


@pytest.mark.parametrize("partition", [-1, 1])
def test_offset_delete_with_invalid_partition(partition):
    c = client()
    with_topics(c, topic=1)
    c.commit({("topic", 0): 1})
    since = len(c.records())
    _, resp = c.send(
        "OffsetDelete",
        0,
        {"groupId": c.group_id, "topics": [{"name": "topic", "partitions": [{"partitionIndex": partition}]}]},
    )
    assert resp["errorCode"] == Errors.NONE.code and partition_errors(resp) == [Errors.UNKNOWN_TOPIC_OR_PARTITION.code]
    assert c.records(since) == []


def test_offset_delete_with_invalid_group_with_top_level_error():
    # The group is checked even when no topic is left; its error replaces the whole answer.
    c = client()
    with_topics(c, topic=1)
    _, resp = c.send(
        "OffsetDelete",
        0,
        {"groupId": c.group_id, "topics": [{"name": "topic-unknown", "partitions": [{"partitionIndex": 0}]}]},
    )
    assert resp == {"errorCode": Errors.GROUP_ID_NOT_FOUND.code, "throttleTimeMs": 0, "topics": []}


# ====================================================================== v10: topics by id (KIP-848)


def with_topic_ids(c: GroupTestClient, **partitions: int) -> dict[str, str]:
    from coordinator.envelope import BROADCAST_KEY
    from tests.consumer.consumer_group_helpers import topic_id

    ids = {t: topic_id(t) for t in partitions}
    c.d.send(
        "UpdateMetadata",
        0,
        {"topicStates": [{"topicName": t, "topicId": ids[t], "numPartitions": n} for t, n in partitions.items()]},
        key=BROADCAST_KEY,
    )
    return ids


def commit_v10(c: GroupTestClient, topics: list[tuple[str, list[tuple[int, int]]]], **body) -> dict:
    req = {
        "groupId": c.group_id,
        "generationIdOrMemberEpoch": -1,
        "memberId": "",
        "groupInstanceId": None,
        "topics": [
            {
                "topicId": tid,
                "partitions": [
                    {"partitionIndex": p, "committedOffset": o, "committedMetadata": None} for p, o in parts
                ],
            }
            for tid, parts in topics
        ],
    }
    req.update(body)
    return c.send("OffsetCommit", 10, req)[1]


def test_handle_offset_commit_request_topics_and_partitions_validation_with_topic_ids():
    # KafkaApisTest's validation with topic ids: an unknown id → UNKNOWN_TOPIC_ID on its
    # partitions, a partition the topic lacks → UNKNOWN_TOPIC_OR_PARTITION, answers named by id.
    c = client()
    ids = with_topic_ids(c, foo=2, bar=2)
    zar = "ZarZarZarZarZarZarZarQ"
    resp = commit_v10(
        c, [(ids["foo"], [(0, 10), (1, 20), (2, 30)]), (ids["bar"], [(0, 40), (1, 50)]), (zar, [(0, 60), (1, 70)])]
    )
    assert resp == {
        "throttleTimeMs": 0,
        "topics": [
            {
                "topicId": ids["foo"],
                "partitions": [
                    {"partitionIndex": 2, "errorCode": Errors.UNKNOWN_TOPIC_OR_PARTITION.code},
                    {"partitionIndex": 0, "errorCode": Errors.NONE.code},
                    {"partitionIndex": 1, "errorCode": Errors.NONE.code},
                ],
            },
            {
                "topicId": zar,
                "partitions": [
                    {"partitionIndex": 0, "errorCode": Errors.UNKNOWN_TOPIC_ID.code},
                    {"partitionIndex": 1, "errorCode": Errors.UNKNOWN_TOPIC_ID.code},
                ],
            },
            {
                "topicId": ids["bar"],
                "partitions": [
                    {"partitionIndex": 0, "errorCode": Errors.NONE.code},
                    {"partitionIndex": 1, "errorCode": Errors.NONE.code},
                ],
            },
        ],
    }
    # Stored under the names: a by-name fetch (v9) sees them.
    assert c.committed("foo", 1) == 20 and c.committed("bar", 0) == 40
    # Only unknown ids: nothing reaches the coordinator.
    fresh = c.sibling(group_on_partition(c.d.partition_id, prefix="fresh"))
    resp = commit_v10(fresh, [(zar, [(0, 1)])])
    assert partition_errors(resp) == [Errors.UNKNOWN_TOPIC_ID.code] and fresh.group() is None


def test_offset_commit_v10_coordinator_error_is_answered_by_id():
    c = client()
    ids = with_topic_ids(c, foo=1)
    resp = commit_v10(c, [(ids["foo"], [(0, 1)])], generationIdOrMemberEpoch=3, memberId="m")
    assert resp["topics"] == [
        {"topicId": ids["foo"], "partitions": [{"partitionIndex": 0, "errorCode": Errors.GROUP_ID_NOT_FOUND.code}]}
    ]


def test_offset_commit_v10_before_any_metadata_knows_no_topic_id():
    c = client()
    resp = commit_v10(c, [("AAAAAAAAAAAAAAAAAAAAAQ", [(0, 1)])])
    assert partition_errors(resp) == [Errors.UNKNOWN_TOPIC_ID.code] and c.records() == []


def test_fetch_offsets_v10_with_topic_ids():
    c = client()
    ids = with_topic_ids(c, foo=2, bar=1)
    c.commit({("foo", 0): 5, ("bar", 0): 7})
    zar = "ZarZarZarZarZarZarZarQ"
    _, resp = c.send(
        "OffsetFetch",
        10,
        {
            "groups": [
                {
                    "groupId": c.group_id,
                    "memberId": None,
                    "memberEpoch": -1,
                    "topics": [
                        {"topicId": zar, "partitionIndexes": [0]},
                        {"topicId": ids["foo"], "partitionIndexes": [0, 1]},
                    ],
                }
            ],
            "requireStable": False,
        },
    )
    [g] = resp["groups"]
    assert g == {
        "groupId": c.group_id,
        "errorCode": Errors.NONE.code,
        "topics": [
            {
                "topicId": zar,
                "partitions": [
                    {
                        "partitionIndex": 0,
                        "committedOffset": -1,
                        "committedLeaderEpoch": -1,
                        "metadata": "",
                        "errorCode": Errors.UNKNOWN_TOPIC_ID.code,
                    }
                ],
            },
            {
                "topicId": ids["foo"],
                "partitions": [
                    {
                        "partitionIndex": 0,
                        "committedOffset": 5,
                        "committedLeaderEpoch": -1,
                        "metadata": "",
                        "errorCode": Errors.NONE.code,
                    },
                    {
                        "partitionIndex": 1,
                        "committedOffset": -1,
                        "committedLeaderEpoch": -1,
                        "metadata": "",
                        "errorCode": Errors.NONE.code,
                    },
                ],
            },
        ],
    }
    # All offsets: named by id; a topic the metadata no longer has is left out.
    _, resp = c.send(
        "OffsetFetch",
        10,
        {
            "groups": [{"groupId": c.group_id, "memberId": None, "memberEpoch": -1, "topics": None}],
            "requireStable": False,
        },
    )
    assert [(t["topicId"], [p["committedOffset"] for p in t["partitions"]]) for t in resp["groups"][0]["topics"]] == [
        (ids["foo"], [5]),
        (ids["bar"], [7]),
    ]
    with_topic_ids(c, foo=2)  # bar deleted
    _, resp = c.send(
        "OffsetFetch",
        10,
        {
            "groups": [{"groupId": c.group_id, "memberId": None, "memberEpoch": -1, "topics": None}],
            "requireStable": False,
        },
    )
    assert [t["topicId"] for t in resp["groups"][0]["topics"]] == [ids["foo"]]
