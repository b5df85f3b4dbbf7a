"""The read-model fold (streaming/projection.py) and its Redis writer (streaming/projector.py),
against a real redis-server: state-log records from real coordinator partitions (CoreDriver) are
folded into Redis and the read model must say what the coordinator's own Describe answers say,
whatever the batching, after a replayed batch, and after a flush and a rebuild."""

from __future__ import annotations

import json

import pytest

from client.read_model import ReadModel
from coordinator.group.classic.consumer_protocol import encode_assignment
from deploy.redis_local import LocalRedis, free_port
from streaming.projection import Projection, StateRecord
from streaming.projector import RedisProjector
from tests.client.read_model_compare import (
    classic_differences,
    consumer_differences,
    offsets_differences,
    txn_differences,
)
from tests.consumer.consumer_group_helpers import ConsumerGroupTestClient
from tests.group.group_helpers import GroupTestClient, join_and_complete, protocols
from tests.txn.txn_helpers import Producer, driver


@pytest.fixture(scope="module")
def redis_server(tmp_path_factory):
    server = LocalRedis(tmp_path_factory.mktemp("redis"), free_port()).start()
    yield server
    server.stop()


class StateLog:
    """The state-log topic: records per partition with their offsets, and its compacted form."""

    def __init__(self):
        self.records: list[StateRecord] = []
        self.next: dict[int, int] = {}
        self.taken: dict[int, int] = {}  # driver id -> records of it already in the log

    def take(self, d) -> list[StateRecord]:
        """The records `d` (a CoreDriver) wrote since the last take, appended to its partition."""
        new = d.records[self.taken.get(id(d), 0) :]
        self.taken[id(d)] = len(d.records)
        out = []
        for key, value in new:
            offset = self.next.get(d.partition_id, 0)
            self.next[d.partition_id] = offset + 1
            out.append(StateRecord.of(d.partition_id, offset, key, None if value is None else json.dumps(value)))
        self.records += out
        return out

    def compacted(self) -> list[StateRecord]:
        last = {}
        for r in self.records:
            last[(r.partition, r.key)] = r
        return sorted(last.values(), key=lambda r: (r.partition, r.offset))


@pytest.fixture
def setup(redis_server):
    prefix = f"t{free_port()}"
    log = StateLog()
    projector = RedisProjector(redis_server.url, prefix, "uniform", read_state_log=log.compacted)
    yield log, projector, ReadModel(redis_server.url, prefix)
    for key in projector.redis.scan_iter(match=prefix + ":*"):
        projector.redis.unlink(key)


def dump(rm: ReadModel) -> dict:
    """Every key of the model (the projector hash without its clock fields)."""
    out = {}
    for key in rm.redis.scan_iter(match=rm.prefix + ":*"):
        kind = rm.redis.type(key)
        value = {"hash": rm.redis.hgetall, "set": rm.redis.smembers}[kind](key)
        if key.endswith(":projector"):
            value = {k: v for k, v in value.items() if k.startswith("offset:")}
        out[key] = value
    return out


def classic_scenario(log: StateLog, projector: RedisProjector) -> GroupTestClient:
    """Two members join a classic group and sync (assignments in the consumer protocol), offsets
    are committed, one is committed again; every step is its own batch."""
    c = GroupTestClient("rm-classic")
    protos = protocols("range", topics=["orders"])
    first = join_and_complete(c, protos=protos)
    projector.on_batch(log.take(c.d))
    leader = first["memberId"]
    _, s = c.sync(leader, first["generationId"], {leader: encode_assignment({"orders": [0, 1]})})
    assert s["errorCode"] == 0
    projector.on_batch(log.take(c.d))
    c.commit({("orders", 0): 5, ("orders", 1): 7}, member_id=leader, generation=first["generationId"], metadata="m")
    c.commit({("orders", 0): 9}, member_id=leader, generation=first["generationId"])
    projector.on_batch(log.take(c.d))
    return c


def assert_classic_matches(c: GroupTestClient, rm: ReadModel):
    [described] = c.send("DescribeGroups", 5, {"groups": [c.group_id], "includeAuthorizedOperations": False})[1][
        "groups"
    ]
    assert described["groupState"] == "Stable"
    assert classic_differences(rm.group(c.group_id), described) == []
    fetched = c.fetch(None)["groups"][0]["topics"]
    assert offsets_differences(rm.offsets(c.group_id), fetched) == []


def test_classic_group_and_offsets_match_describe_and_fetch(setup):
    log, projector, rm = setup
    c = classic_scenario(log, projector)
    assert_classic_matches(c, rm)
    g = rm.group(c.group_id)
    assert g["type"] == "classic" and g["generation"] == 1 and g["protocol"] == "range"
    assert g["members"][0]["assignment"] == [{"topic": "orders", "partitions": [0, 1]}]
    assert g["members"][0]["subscribedTopicNames"] == ["orders"]
    assert g["stateLogPartition"] == c.d.partition_id == g["coordinatorPartition"]
    assert rm.offsets(c.group_id)[("orders", 0)]["committedOffset"] == 9
    assert rm.offsets(c.group_id)[("orders", 1)]["metadata"] == "m"
    assert [x["groupId"] for x in rm.groups()] == [c.group_id]
    # The newest record of the group's partition is what the group and the positions reflect.
    assert g["stateLogOffset"] == log.next[c.d.partition_id] - 1
    assert rm.freshness()["offsets"] == {c.d.partition_id: log.next[c.d.partition_id]}


def test_deleted_group_and_offsets_leave_the_model(setup):
    log, projector, rm = setup
    c = classic_scenario(log, projector)
    c.leave({"memberId": rm.group(c.group_id)["members"][0]["memberId"], "groupInstanceId": None})
    projector.on_batch(log.take(c.d))
    assert rm.group(c.group_id)["state"] == "Empty"
    resp = c.send("DeleteGroups", 2, {"groupsNames": [c.group_id]})[1]
    assert resp["results"][0]["errorCode"] == 0
    projector.on_batch(log.take(c.d))
    assert rm.group(c.group_id) is None and rm.groups() == [] and rm.offsets(c.group_id) == {}
    assert {k for k in dump(rm) if not k.endswith(":projector")} == set()


def test_simple_group_exists_through_its_offsets(setup):
    log, projector, rm = setup
    c = GroupTestClient("rm-simple")
    c.commit({("orders", 0): 3})
    projector.on_batch(log.take(c.d))
    g = rm.group("rm-simple")
    assert (g["type"], g["state"], g["protocolType"], g["members"]) == ("classic", "Empty", "", [])
    c.send(
        "OffsetDelete",
        0,
        {"groupId": "rm-simple", "topics": [{"name": "orders", "partitions": [{"partitionIndex": 0}]}]},
    )
    projector.on_batch(log.take(c.d))
    assert rm.offsets("rm-simple") == {} and rm.group("rm-simple") is None


def consumer_scenario(log: StateLog, projector: RedisProjector) -> ConsumerGroupTestClient:
    c = ConsumerGroupTestClient("rm-consumer", topics={"foo": 6})
    c.join("m1", ["foo"], assignor="range")
    projector.on_batch(log.take(c.d))
    c.join("m2", ["foo"], assignor="range")
    c.heartbeat("m1", 2, owned={"foo": [0, 1, 2]})
    projector.on_batch(log.take(c.d))
    return c


def test_consumer_group_matches_describe_while_reconciling_and_stable(setup):
    log, projector, rm = setup
    c = consumer_scenario(log, projector)
    [d] = c.describe()
    assert d["groupState"] == "Reconciling"
    assert consumer_differences(rm.group(c.group_id), d) == []
    c.heartbeat("m2", 3)
    c.heartbeat("m1", 3)
    projector.on_batch(log.take(c.d))
    [d] = c.describe()
    assert d["groupState"] == "Stable"
    assert consumer_differences(rm.group(c.group_id), d) == []
    g = rm.group(c.group_id)
    assert (g["generation"], g["assignmentEpoch"], g["protocol"], g["protocolType"]) == (3, 3, "range", "consumer")
    assert [m["targetAssignment"] for m in g["members"]] == [
        [{"topic": "foo", "partitions": [0, 1, 2]}],
        [{"topic": "foo", "partitions": [3, 4, 5]}],
    ]
    # A member leaves: its records are tombstoned and it leaves the model.
    c.heartbeat("m2", -1)
    projector.on_batch(log.take(c.d))
    [d] = c.describe()
    assert consumer_differences(rm.group(c.group_id), d) == []
    assert [m["memberId"] for m in rm.group(c.group_id)["members"]] == ["m1"]


def test_transactions_match_describe_transactions(setup):
    log, projector, rm = setup
    d = driver("rm-tx")
    p = Producer(d, "rm-tx")
    assert p.init()["errorCode"] == 0
    projector.on_batch(log.take(d))
    assert rm.transaction("rm-tx")["state"] == "Empty"
    p.add(("orders", 0), ("orders", 3), ("payments", 1))
    projector.on_batch(log.take(d))

    def described():
        return d.send("DescribeTransactions", 0, {"transactionalIds": ["rm-tx"]})["transactionStates"][0]

    assert described()["transactionState"] == "Ongoing"
    assert txn_differences(rm.transaction("rm-tx"), described()) == []
    assert rm.transaction("rm-tx")["partitions"] == [
        {"topic": "orders", "partitions": [0, 3]},
        {"topic": "payments", "partitions": [1]},
    ]
    assert rm.transaction("rm-tx")["startTimestamp"] > 0
    assert p.end(True)["errorCode"] == 0
    d.advance(1000)  # the markers are out: the transaction completes
    projector.on_batch(log.take(d))
    assert described()["transactionState"] == "CompleteCommit"
    assert txn_differences(rm.transaction("rm-tx"), described()) == []
    assert [t["transactionalId"] for t in rm.transactions()] == ["rm-tx"]


def test_batching_and_replays_do_not_change_the_result(setup, redis_server):
    """The same records folded per step, all at once, or with every batch applied twice: one model."""
    log, projector, rm = setup
    c = classic_scenario(log, projector)
    k = consumer_scenario(log, projector)
    stepwise = dump(rm)
    for key in rm.redis.scan_iter(match=rm.prefix + ":*"):
        rm.redis.unlink(key)
    projector.on_batch([])  # an empty model: rebuilt from the compacted log
    assert dump(rm) == stepwise
    at_once = RedisProjector(redis_server.url, rm.prefix + "x", "uniform", read_state_log=list)
    at_once.on_batch([])  # (an empty log: creates the projector hash)
    half = len(log.records) // 2
    for batch in (log.records[:half], log.records[:half], log.records, log.records[half:]):
        at_once.on_batch(batch)  # overlapping and repeated batches, as a replay delivers them
    assert {
        k2.replace(rm.prefix + "x:", rm.prefix + ":", 1): v
        for k2, v in dump(ReadModel(redis_server.url, rm.prefix + "x")).items()
    } == stepwise
    assert c.group_id in {g["groupId"] for g in rm.groups()} and rm.group(k.group_id)["type"] == "consumer"
    for key in rm.redis.scan_iter(match=rm.prefix + "x:*"):
        rm.redis.unlink(key)


def test_flush_is_repaired_from_the_compacted_log(setup):
    log, projector, rm = setup
    c = classic_scenario(log, projector)
    k = consumer_scenario(log, projector)
    d = driver("rm-tx2")
    p = Producer(d, "rm-tx2")
    p.init()
    p.add(("orders", 1))
    projector.on_batch(log.take(d))
    before = {key: v for key, v in dump(rm).items() if ":aux:" not in key}
    for key in rm.redis.scan_iter(match=rm.prefix + ":*"):
        rm.redis.unlink(key)
    assert rm.freshness()["rebuiltAt"] is None
    projector.check_idle()
    assert rm.freshness()["rebuiltAt"] is not None
    # From the compacted log: the same groups, offsets and transactions; records that compaction
    # removed are older than what each key reflects, so only stateLogOffset may be the same or not.
    after = {key: v for key, v in dump(rm).items() if ":aux:" not in key}
    assert after == before
    assert_classic_matches(c, rm)
    [desc] = k.describe()
    assert consumer_differences(rm.group(k.group_id), desc) == []
    desc = d.send("DescribeTransactions", 0, {"transactionalIds": ["rm-tx2"]})["transactionStates"][0]
    assert txn_differences(rm.transaction("rm-tx2"), desc) == []


def test_records_it_cannot_read_are_skipped_but_counted():
    assert StateRecord.of(0, 1, "not json", "{}") is None
    assert StateRecord.of(0, 1, '["GroupMetadata","g"]', "[1]") is None
    proj = Projection("p")
    proj.apply(StateRecord.of(3, 10, '["ProducerIdBlock",3]', '{"type":"ProducerIdBlock"}'))
    assert proj.positions == {3: 11}
    assert proj.writes(5) == [("HSET", "p:projector", "offset:3", 11, "updatedAt", 5)]


def test_a_record_of_an_unexpected_shape_is_left_out_not_fatal():
    proj = Projection("p")
    proj.apply(StateRecord.of(1, 0, '["OffsetCommit","g","t","not-a-partition"]', '{"offset": 1}'))
    proj.apply(StateRecord.of(1, 1, '["OffsetCommit","g","t",0]', '{"offset": 4, "commitTimestamp": 9}'))
    assert proj.positions == {1: 2}
    assert (
        "HSET",
        "p:offsets:g",
        "t:0",
        json.dumps(
            {
                "committedOffset": 4,
                "committedLeaderEpoch": -1,
                "metadata": "",
                "commitTimestamp": 9,
                "stateLogOffset": 1,
            },
            separators=(",", ":"),
        ),
    ) in proj.writes(0)


def test_groups_migrated_online_between_the_protocols_match_describe(setup):
    """Online upgrade (a KIP-848 member joins a Stable classic group: the GroupMetadata tombstone,
    then the consumer records) and downgrade (the last KIP-848 member leaves: the consumer
    tombstones, then a GroupMetadata record): the model changes the group's type with the log."""
    from tests.consumer.test_consumer_group_migration import classic_view, client, mixed_group, stable_classic_group

    log, projector, rm = setup
    c = client()
    stable_classic_group(c)
    projector.on_batch(log.take(c.d))
    [described] = classic_view(c).send(
        "DescribeGroups", 5, {"groups": [c.group_id], "includeAuthorizedOperations": False}
    )[1]["groups"]
    assert classic_differences(rm.group(c.group_id), described) == []
    c.join("m2", ["foo"], assignor="range")  # the upgrade
    projector.on_batch(log.take(c.d))
    [d] = c.describe()
    assert rm.group(c.group_id)["type"] == "consumer" and consumer_differences(rm.group(c.group_id), d) == []

    c2 = client(group_id="rm-downgrade")
    mid = mixed_group(c2)
    projector.on_batch(log.take(c2.d))
    [d] = c2.describe()
    assert consumer_differences(rm.group(c2.group_id), d) == []
    c2.heartbeat("m1", -1)  # the downgrade: the classic member is left, in a rebalance
    view = classic_view(c2)
    cid, joined = view.join(
        mid,
        protos=[{"name": "range", "metadata": c2.group().members[mid].metadata("range")}],
        session_timeout=c2.group().members[mid].session_timeout_ms,
        rebalance_timeout=c2.group().members[mid].rebalance_timeout_ms,
    )
    joined = joined or c2.d.response(cid)
    _, s = view.sync(mid, joined["generationId"], {mid: encode_assignment({"foo": list(range(6))})})
    assert s["errorCode"] == 0
    projector.on_batch(log.take(c2.d))
    [described] = view.send("DescribeGroups", 5, {"groups": [c2.group_id], "includeAuthorizedOperations": False})[1][
        "groups"
    ]
    assert described["groupState"] == "Stable"
    model = rm.group(c2.group_id)
    assert model["type"] == "classic" and classic_differences(model, described) == []
    assert rm.redis.exists(f"{rm.prefix}:aux:group:{c2.group_id}") and "member:m1" not in rm.redis.hkeys(
        f"{rm.prefix}:aux:group:{c2.group_id}"
    )
