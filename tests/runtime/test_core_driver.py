"""The test driver itself: state seeded with `inject` goes through the runtime's replay (so a
partition rebuilt from the log equals the live one), `failover` continues from the log, and
`call` keeps what a direct call emits."""

from __future__ import annotations

from coordinator.errors import Errors
from coordinator.group.consumer.member import ConsumerGroupMember, MemberState
from coordinator.records import record_key
from coordinator.txn.metadata import TransactionState
from tests.consumer.consumer_group_helpers import ConsumerGroupTestClient
from tests.txn.txn_helpers import Producer, driver, records_of, seed, txn

S = TransactionState


def stable(member_id: str, partitions: set[int]) -> ConsumerGroupMember:
    return ConsumerGroupMember(
        member_id,
        member_epoch=5,
        previous_member_epoch=4,
        state=MemberState.STABLE,
        client_id="client",
        rebalance_timeout_ms=5000,
        subscribed_topic_names=frozenset({"foo"}),
        server_assignor_name="uniform",
        assigned_partitions={"foo": frozenset(partitions)},
    )


def test_injected_records_are_replayed_and_kept_in_the_log():
    c = ConsumerGroupTestClient("g", {"foo": 4})
    mark = len(c.records())
    c.inject_group(5, [stable("m1", {0, 1}), stable("m2", {2, 3})])
    injected = c.records(mark)
    assert set(range(mark, mark + len(injected))) <= c.d.injected
    assert record_key("ConsumerGroupMetadata", "g") in [k for k, _ in injected]
    # Replayed: the group serves heartbeats at its epoch...
    r = c.heartbeat("m1", 5)
    assert (r["errorCode"], r["memberEpoch"]) == (Errors.NONE.code, 5)
    # ...and the log rebuilds the same group.
    live, rebuilt = c.group().to_json(), c.rebuilt().component("groups").groups["g"].to_json()
    for g in (live, rebuilt):
        g.pop("metadataRefreshDeadline", None)  # soft state, as in Kafka
    assert rebuilt == live


def test_failover_continues_from_the_state_log():
    d = driver()
    p = Producer(d)
    p.init()
    p.add(("orders", 0))
    assert len(d.failover()) == 0  # loading emits nothing
    assert txn(d).state == S.ONGOING
    assert p.end(True)["errorCode"] == Errors.NONE.code
    assert [v["transactionStatus"] for v in records_of(d)][-1] == S.PREPARE_COMMIT.id


def test_seeded_transaction_is_a_replayed_record_not_a_written_one():
    d = driver()
    seed(d, state=S.ONGOING, partitions=[("t", 0)], last_epoch=0)
    assert records_of(d) == []  # the coordinator wrote nothing
    assert [k for k, _ in d.records] == [record_key("TransactionLog", "known")]
    md = txn(d)
    assert (md.state, md.topic_partitions, md.last_producer_epoch) == (S.ONGOING, {("t", 0)}, 0)
    assert d.rebuilt().component("transactions").txns["known"].state == S.ONGOING
