"""The read-model fold (streaming/projection.py) of share groups (KIP-932) and streams groups
(KIP-1071): state-log records of real coordinator partitions (CoreDriver) folded without Redis; the
group hash must say what the coordinator's Describe answers say, with the state a coordinator that
loaded the same log derives (CoordinatorPartition.from_records)."""

from __future__ import annotations

import json

from client.read_model import GROUP_FIELDS, GROUP_INTS, GROUP_JSON, decode_hash
from coordinator.metadata import BROADCAST_KEY
from coordinator.share.keys import share_partition_key
from streaming.projection import Projection, StateRecord
from tests.share.share_group_helpers import ShareGroupTestClient
from tests.streams.helpers import StreamsTestClient, subtopology, topology


def fold(drivers, projection: Projection | None = None) -> Projection:
    """Every record the drivers wrote, folded in log order (each driver is its own partition)."""
    p = projection or Projection()
    for d in drivers:
        for offset, (key, value) in enumerate(d.records):
            r = StateRecord.of(d.partition_id, offset, key, None if value is None else json.dumps(value))
            if r is not None:
                p.apply(r)
    return p


def group_of(p: Projection, group_id: str) -> dict | None:
    """The group hash as the read model's reader decodes it."""
    h = p.group_hash(group_id)
    if h is None:
        return None
    return decode_hash({k: str(v) for k, v in h.items()}, GROUP_INTS, GROUP_JSON, GROUP_FIELDS)


def share_client() -> ShareGroupTestClient:
    c = ShareGroupTestClient("rm-share", topics={"foo": 3, "bar": 1})
    assert c.share_join("m1", topics=["foo"], client_id="app-1")["errorCode"] == 0
    assert c.share_join("m2", topics=["foo", "bar"], client_id="app-2")["errorCode"] == 0
    c.share_heartbeat(
        "m1", c.share_manager().c.groups[c.group_id].members["m1"].member_epoch, topics=["foo"], client_id="app-1"
    )
    return c


def assert_share_matches(c: ShareGroupTestClient, model: dict) -> None:
    [d] = c.share_describe(c.group_id)
    assert (model["type"], model["protocolType"], model["protocol"]) == ("share", "share", d["assignorName"])
    assert (model["state"], model["generation"], model["assignmentEpoch"]) == (
        d["groupState"],
        d["groupEpoch"],
        d["assignmentEpoch"],
    )
    want = {
        m["memberId"]: (
            m["clientId"],
            m["clientHost"],
            m["memberEpoch"],
            m["subscribedTopicNames"],
            sorted((t["topicName"], sorted(t["partitions"])) for t in m["assignment"]["topicPartitions"]),
        )
        for m in d["members"]
    }
    got = {
        m["memberId"]: (
            m["clientId"],
            m["clientHost"],
            m["memberEpoch"],
            m["subscribedTopicNames"],
            sorted((a["topic"], a["partitions"]) for a in m["assignment"]),
        )
        for m in model["members"]
    }
    assert got == want


def test_share_group_matches_share_group_describe_through_joins_and_leaves():
    c = share_client()
    model = group_of(fold([c.d]), c.group_id)
    assert model["state"] == "Stable" and len(model["members"]) == 2
    assert_share_matches(c, model)
    assert {m["memberId"]: m["clientId"] for m in model["members"]} == {"m1": "app-1", "m2": "app-2"}
    # The share-partitions the group initialized: topic ids named.
    assert sorted(model["shareTopics"].values()) == ["bar", "foo"]
    # A member leaves; then the last one: Empty, as the coordinator says.
    c.share_heartbeat("m2", -1)
    assert_share_matches(c, group_of(fold([c.d]), c.group_id))
    c.share_heartbeat("m1", -1)
    model = group_of(fold([c.d]), c.group_id)
    assert model["state"] == "Empty" and model["members"] == []
    assert_share_matches(c, model)


def test_share_group_state_is_the_loaded_coordinators():
    c = share_client()
    loaded = c.d.rebuilt().component("groups").groups[c.group_id]
    model = group_of(fold([c.d]), c.group_id)
    assert model["state"] == loaded.state_as_string() and model["generation"] == loaded.group_epoch


def test_share_partition_start_offsets_follow_the_share_coordinators_records():
    """ShareSnapshot sets the start offset, a ShareUpdate moves it (-1: unchanged), the snapshot's
    tombstone removes the share-partition; DescribeShareGroupOffsets says the same."""
    c = share_client()
    owners = list(c.owners.values())
    [d] = c.share_describe(c.group_id)
    tid = next(
        t["topicId"] for m in d["members"] for t in m["assignment"]["topicPartitions"] if t["topicName"] == "foo"
    )
    key = share_partition_key(c.group_id, tid, 0)
    owner = c.owners[key]

    def write(start: int) -> None:
        epoch = owner.component("share").states[key]["offset"]["stateEpoch"]
        r = owner.send(
            "WriteShareGroupState",
            0,
            {
                "groupId": c.group_id,
                "topics": [
                    {
                        "topicId": tid,
                        "partitions": [
                            {
                                "partition": 0,
                                "stateEpoch": epoch,
                                "leaderEpoch": 1,
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

    p = Projection()
    fold([c.d, *owners], p)
    assert json.loads(p.share_offsets[c.group_id][f"{tid}:0"])["startOffset"] == -1  # initialized, nothing read
    write(12)
    write(-1)  # an update that leaves the start offset
    p2 = fold([c.d, *owners])
    assert json.loads(p2.share_offsets[c.group_id][f"{tid}:0"])["startOffset"] == 12
    summary = owner.send(
        "ReadShareGroupStateSummary",
        0,
        {"groupId": c.group_id, "topics": [{"topicId": tid, "partitions": [{"partition": 0, "leaderEpoch": 1}]}]},
        key=key,
    )
    assert summary["results"][0]["partitions"][0]["startOffset"] == 12
    owner.send(
        "DeleteShareGroupState",
        0,
        {"groupId": c.group_id, "topics": [{"topicId": tid, "partitions": [{"partition": 0}]}]},
        key=key,
    )
    p3 = fold([c.d, *owners])
    assert p3.share_offsets[c.group_id][f"{tid}:0"] is None  # HDEL'd from p:shareoffsets:<g>
    assert ("HDEL", f"coord:shareoffsets:{c.group_id}", f"{tid}:0") in p3.writes(0)


def test_deleted_share_group_leaves_the_model():
    c = share_client()
    c.share_heartbeat("m2", -1)
    c.share_heartbeat("m1", -1)
    c.d.send("DeleteGroups", 2, {"groupsNames": [c.group_id]}, key=c.group_id)
    c.initialize_share_partitions()
    p = fold([c.d])
    assert p.group_hash(c.group_id) is None
    assert ("SREM", "coord:groups", c.group_id) in p.writes(0)


def streams_client() -> StreamsTestClient:
    c = StreamsTestClient("rm-streams", topics={"foo": 4})
    topo = topology(3, subtopology("0", source=["foo"]))
    first = c.join("m1", topo, client_id="streams-1")
    c.ack("m1", first)
    c.join("m2", topo, client_id="streams-2")
    return c


def test_streams_group_matches_streams_group_describe_and_the_loaded_state():
    c = streams_client()
    d = c.described()
    model = group_of(fold([c.d]), c.group_id)
    assert (model["type"], model["protocolType"], model["generation"], model["assignmentEpoch"]) == (
        "streams",
        "streams",
        d["groupEpoch"],
        d["assignmentEpoch"],
    )
    assert model["topologyEpoch"] == d["topology"]["epoch"] == 3 and model["subtopologies"] == [
        {"subtopologyId": "0", "sourceTopics": ["foo"]}
    ]
    want = {
        m["memberId"]: (
            m["clientId"],
            m["clientHost"],
            m["memberEpoch"],
            m["processId"],
            m["topologyEpoch"],
            m["assignment"],
            m["targetAssignment"],
        )
        for m in d["members"]
    }
    got = {
        m["memberId"]: (
            m["clientId"],
            m["clientHost"],
            m["memberEpoch"],
            m["processId"],
            m["topologyEpoch"],
            m["tasks"],
            m["targetTasks"],
        )
        for m in model["members"]
    }
    assert got == want
    # The state: what a coordinator that loaded this log derives, the live one since Kafka 4.2
    # (the validated topology epoch is in the group's record; 4.1's state asked the configured
    # topology, soft state, and said NotReady until the next heartbeat).
    live = c.d.component("groups").groups[c.group_id].state_as_string()
    loaded = c.rebuilt().component("groups").groups[c.group_id].state_as_string()
    assert (live, loaded, model["state"]) == ("Reconciling", "Reconciling", "Reconciling")


def test_streams_group_empty_offsets_and_deletion():
    c = streams_client()
    r = c.d.send(
        "OffsetCommit",
        9,
        {
            "groupId": c.group_id,
            "generationIdOrMemberEpoch": c.d.component("groups").groups[c.group_id].members["m1"].member_epoch,
            "memberId": "m1",
            "groupInstanceId": None,
            "topics": [
                {
                    "name": "foo",
                    "partitions": [
                        {
                            "partitionIndex": 0,
                            "committedOffset": 42,
                            "committedLeaderEpoch": -1,
                            "committedMetadata": "",
                        }
                    ],
                }
            ],
        },
        key=c.group_id,
    )
    assert r["topics"][0]["partitions"][0]["errorCode"] == 0
    c.heartbeat("m1", -1)
    c.heartbeat("m2", -1)
    p = fold([c.d])
    model = group_of(p, c.group_id)
    assert (model["state"], model["members"]) == ("Empty", [])
    assert json.loads(p.group_offsets[c.group_id]["foo:0"])["committedOffset"] == 42
    c.d.send("DeleteGroups", 2, {"groupsNames": [c.group_id]}, key=c.group_id)
    p = fold([c.d])
    assert p.group_hash(c.group_id) is None and p.group_offsets[c.group_id]["foo:0"] is None


def test_share_and_streams_records_of_other_groups_do_not_mix():
    """A group's type follows its own records; the metadata broadcast is no group."""
    s, t = share_client(), streams_client()
    p = fold([s.d, t.d])
    assert group_of(p, s.group_id)["type"] == "share" and group_of(p, t.group_id)["type"] == "streams"
    assert BROADCAST_KEY not in p.groups
