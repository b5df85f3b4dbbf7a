"""The heartbeat loop the group members share (client/heartbeat_loop.py): the thread's timing
(acknowledge and rejoin at once, otherwise every heartbeatIntervalMs), error handling per member
kind, and StreamsGroupMember against the coordinator core in-process (join, revoke-then-assign,
lost responses, fencing, leaving)."""

from __future__ import annotations

import threading
import time

from client.consumer_group import ConsumerGroupMember
from client.request_client import ResponseTimeout
from client.streams_member import StreamsGroupMember
from coordinator.errors import Errors
from tests.client.test_consumer_group_client import InProcess
from tests.streams.helpers import StreamsTestClient, subtopology, topology

HOUR_MS = 3_600_000


def answer(epoch: int, assignment: list[dict] | None = None, code: int = 0) -> dict:
    """A ConsumerGroupHeartbeat response asking for the next heartbeat in an hour."""
    return {
        "throttleTimeMs": 0,
        "errorCode": code,
        "errorMessage": None,
        "memberId": "m",
        "memberEpoch": epoch,
        "heartbeatIntervalMs": HOUR_MS,
        "assignment": None if assignment is None else {"topicPartitions": assignment},
    }


class Scripted:
    """A client answering with the scripted responses in turn, then with a plain answer at the last
    epoch; records what was sent."""

    def __init__(self, answers: list[dict]):
        self.answers = list(answers)
        self.sent: list[dict] = []
        self._last_epoch = 0
        self._cond = threading.Condition()

    def request(self, api, version, body, *, key=None, timeout=30.0):
        with self._cond:
            self.sent.append(body)
            self._cond.notify_all()
            resp = self.answers.pop(0) if self.answers else answer(self._last_epoch)
            self._last_epoch = resp["memberEpoch"] if resp["errorCode"] == 0 else self._last_epoch
            return resp

    def wait_sent(self, n: int, timeout_s: float = 30.0) -> list[dict]:
        deadline = time.monotonic() + timeout_s
        with self._cond:
            while len(self.sent) < n:
                left = deadline - time.monotonic()
                assert left > 0, f"only {len(self.sent)} heartbeats sent: {self.sent}"
                self._cond.wait(left)
            return list(self.sent)


def test_the_thread_acknowledges_a_new_assignment_at_once():
    net = Scripted([answer(1, [{"topicId": "t", "partitions": [0, 1]}])])
    m = ConsumerGroupMember(net, "g", ["foo"], member_id="m").start()
    try:
        # The first answer asks for the next heartbeat in an hour; the acknowledgement goes at once.
        sent = net.wait_sent(2)
        assert sent[0]["memberEpoch"] == 0 and sent[0]["topicPartitions"] == []
        assert sent[1]["memberEpoch"] == 1 and sent[1]["topicPartitions"] == [{"topicId": "t", "partitions": [0, 1]}]
    finally:
        m.kill()
    assert not m._thread.is_alive()


def test_the_thread_rejoins_at_once_when_fenced():
    lost = []
    net = Scripted(
        [answer(1, [{"topicId": "t", "partitions": [0]}]), answer(0, code=Errors.FENCED_MEMBER_EPOCH.code), answer(3)]
    )
    m = ConsumerGroupMember(net, "g", ["foo"], member_id="m", on_lost=lost.append).start()
    try:
        sent = net.wait_sent(3)
        assert sent[2]["memberEpoch"] == 0 and sent[2]["subscribedTopicNames"] == ["foo"]
        assert lost == [{"t": {0}}] and m.fenced == 1
    finally:
        m.kill()


def test_retriable_and_fatal_errors_depend_on_the_member_kind():
    unreleased = answer(0, code=Errors.UNRELEASED_INSTANCE_ID.code)  # a consumer retries it
    consumer = ConsumerGroupMember(Scripted([unreleased]), "g", ["foo"], member_id="m", instance_id="i")
    consumer.heartbeat_once()
    assert (
        consumer.error["errorCode"] == Errors.UNRELEASED_INSTANCE_ID.code
        and consumer.fatal is None
        and not consumer._stop.is_set()
    )
    consumer = ConsumerGroupMember(
        Scripted([answer(0, code=Errors.COORDINATOR_LOAD_IN_PROGRESS.code)]), "g", ["foo"], member_id="m"
    )
    consumer.heartbeat_once()  # COORDINATOR_LOAD_IN_PROGRESS
    assert consumer.fatal is None
    streams = StreamsGroupMember(Scripted([{**unreleased, "status": None}]), "g", {"epoch": 0, "subtopologies": []})
    streams.heartbeat_once()
    assert streams.fatal["errorCode"] == Errors.UNRELEASED_INSTANCE_ID.code and streams._stop.is_set()


# ---------------------------------------------------------------------- streams member in-process
FOO, GROUP = "foo", "fooup"
TOPO = topology(0, subtopology("0", source=[FOO]))


def active(m: StreamsGroupMember) -> list[int]:
    return sorted(p for ps in m.owned()["active"].values() for p in ps)


def test_streams_member_joins_reconciles_and_leaves():
    c = StreamsTestClient(GROUP, topics={FOO: 4})
    net = InProcess(c)
    revoked, assigned = [], []
    m1 = StreamsGroupMember(
        net,
        GROUP,
        TOPO,
        member_id="m1",
        create_internal_topics=False,
        on_revoke=revoked.append,
        on_assign=assigned.append,
    )
    m2 = StreamsGroupMember(net, GROUP, TOPO, member_id="m2", create_internal_topics=False)
    m1.heartbeat_once()
    assert active(m1) == [0, 1, 2, 3] and m1.member_epoch == 2 and m1._ack_needed
    assert net.sent[-1]["topology"] == TOPO and net.sent[-1]["activeTasks"] == []
    m1.heartbeat_once()  # the acknowledgement: the owned tasks
    assert net.sent[-1]["activeTasks"] == [{"subtopologyId": "0", "partitions": [0, 1, 2, 3]}]
    m1.heartbeat_once()
    assert "activeTasks" not in net.sent[-1]  # unchanged: not repeated
    m2.heartbeat_once()
    m1.heartbeat_once()  # told to give up two tasks: revokes them first
    assert len(revoked) == 1 and len(active(m1)) == 2
    for _ in range(3):
        m1.heartbeat_once()
        m2.heartbeat_once()
    assert sorted(active(m1) + active(m2)) == [0, 1, 2, 3] and active(m2)
    assert m2.stop()["memberEpoch"] == -1
    assert set(c.group().members) == {"m1"}


def test_streams_member_resends_its_tasks_after_a_lost_response():
    c = StreamsTestClient(GROUP, topics={FOO: 2})
    net = InProcess(c)
    m = StreamsGroupMember(net, GROUP, TOPO, member_id="m", create_internal_topics=False)
    m.heartbeat_once()
    m.heartbeat_once()
    m.heartbeat_once()
    assert "activeTasks" not in net.sent[-1]
    net.drop = 1
    assert m.heartbeat_once() is None
    m.heartbeat_once()
    assert net.sent[-1]["activeTasks"] == [{"subtopologyId": "0", "partitions": [0, 1]}]


def test_a_fenced_streams_member_loses_its_tasks_and_rejoins_as_a_new_member():
    c = StreamsTestClient(GROUP, topics={FOO: 2})
    net = InProcess(c)
    lost = []
    m = StreamsGroupMember(net, GROUP, TOPO, member_id="m", create_internal_topics=False, on_lost=lost.append)
    m.heartbeat_once()
    m.heartbeat_once()
    c.sleep(60_000)  # the session expires
    m.heartbeat_once()
    assert (
        m.error["errorCode"] in (Errors.UNKNOWN_MEMBER_ID.code, Errors.FENCED_MEMBER_EPOCH.code)
        and m.fenced == 1
        and m.member_epoch == 0
    )
    assert lost and m.owned() == {"active": {}, "standby": {}, "warmup": {}} and m.member_id != "m"
    m.heartbeat_once()
    assert m.member_epoch > 0 and active(m) == [0, 1] and set(c.group().members) == {m.member_id}


def test_leave_without_an_answer_returns_none():
    class Silent:
        def request(self, *a, **kw):
            raise ResponseTimeout("lost")

    m = ConsumerGroupMember(Silent(), "g", ["foo"], member_id="m")
    m.member_epoch = 3  # as if joined
    assert m.stop() is None
