"""The client's ConsumerGroupMember against the coordinator core in-process (the same requests it sends
through Kafka in the end-to-end test): join, incremental heartbeats, revoke-then-assign with an
immediate acknowledgement, fencing and rejoin, lost responses, leaving."""

from __future__ import annotations

from client.consumer_group import ConsumerGroupMember, new_member_id
from client.request_client import ResponseTimeout
from coordinator.errors import Errors
from tests.consumer.consumer_group_helpers import ConsumerGroupTestClient, topic_id


class InProcess:
    """CoordinatorClient.request over a ConsumerGroupTestClient; `drop` loses the next responses."""

    def __init__(self, c: ConsumerGroupTestClient):
        self.c = c
        self.sent: list[dict] = []
        self.drop = 0

    def request(self, api, version, body, *, key=None, timeout=30.0):
        self.sent.append(body)
        resp = self.c.send(api, version, body)
        if self.drop:
            self.drop -= 1
            raise ResponseTimeout("lost")
        return resp


def names(c, assignment):
    return {c.names[t]: sorted(p) for t, p in assignment.items()}


def test_join_heartbeat_reconcile_and_leave():
    c = ConsumerGroupTestClient(topics={"foo": 4})
    net = InProcess(c)
    revoked, assigned = [], []
    m1 = ConsumerGroupMember(
        net, c.group_id, ["foo"], member_id="m1", on_revoke=revoked.append, on_assign=assigned.append
    )
    m2 = ConsumerGroupMember(net, c.group_id, ["foo"], member_id="m2")
    m1.heartbeat_once()
    assert names(c, m1.owned()) == {"foo": [0, 1, 2, 3]} and m1.member_epoch == 2
    assert net.sent[0]["topicPartitions"] == [] and net.sent[0]["rebalanceTimeoutMs"] == 60000
    m1.heartbeat_once()  # acknowledges: reports what it owns; nothing else is resent
    assert net.sent[-1]["subscribedTopicNames"] is None and net.sent[-1]["rebalanceTimeoutMs"] == -1
    assert net.sent[-1]["topicPartitions"] == [{"topicId": topic_id("foo"), "partitions": [0, 1, 2, 3]}]
    m1.heartbeat_once()
    assert net.sent[-1]["topicPartitions"] is None  # unchanged: not repeated
    m2.heartbeat_once()
    assert m2.owned() == {} and m2.member_epoch == 3
    m1.heartbeat_once()  # told to revoke two partitions: revokes them first
    assert len(revoked) == 1 and sum(len(p) for p in m1.owned().values()) == 2
    m1.heartbeat_once()  # the acknowledgement
    m2.heartbeat_once()
    both = sorted(p for m in (m1, m2) for ps in m.owned().values() for p in ps)
    assert both == [0, 1, 2, 3] and str(c.group().state) == "Stable"
    assert m2.stop()["memberEpoch"] == -1
    assert set(c.group().members) == {"m1"}


def test_fenced_member_loses_its_partitions_and_rejoins_with_the_same_id():
    c = ConsumerGroupTestClient(topics={"foo": 2})
    net = InProcess(c)
    lost = []
    m = ConsumerGroupMember(net, c.group_id, ["foo"], member_id=new_member_id(), on_lost=lost.append)
    m.heartbeat_once()
    c.sleep(45_000)  # the session expires
    m.heartbeat_once()
    assert m.error["errorCode"] == Errors.UNKNOWN_MEMBER_ID.code and m.owned() == {} and lost and m.member_epoch == 0
    m.heartbeat_once()
    assert m.member_epoch > 0 and sum(len(p) for p in m.owned().values()) == 2


def test_a_lost_response_is_followed_by_a_full_heartbeat():
    c = ConsumerGroupTestClient(topics={"foo": 2})
    net = InProcess(c)
    m = ConsumerGroupMember(net, c.group_id, ["foo"], member_id="m")
    m.heartbeat_once()
    m.heartbeat_once()
    net.drop = 1
    assert m.heartbeat_once() is None
    m.heartbeat_once()
    full = net.sent[-1]
    assert full["subscribedTopicNames"] == ["foo"] and full["rebalanceTimeoutMs"] == 60000
    assert full["topicPartitions"] is not None


def test_fatal_errors_stop_the_member():
    c = ConsumerGroupTestClient(topics={"foo": 2})
    m = ConsumerGroupMember(InProcess(c), c.group_id, ["foo"], member_id="m", server_assignor="nope")
    m.heartbeat_once()
    assert m.fatal["errorCode"] == Errors.UNSUPPORTED_ASSIGNOR.code and m._stop.is_set()
