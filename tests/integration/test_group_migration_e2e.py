"""Online migration between the classic and the consumer group protocols end to end, through the
real broker and the real Spark job (Kafka 4.x: classic-protocol members inside consumer groups,
`group.consumer.migration.policy` bidirectional by default):

- a classic member (client/classic_group.py, JoinGroup / SyncGroup / Heartbeat) joins a consumer
  group a KIP-848 member (client/consumer_group.py) started: MEMBER_ID_REQUIRED first, then the
  group's server-side assignor splits the partitions between the two, and at no moment do two
  members own the same partition;
- downgrade: the KIP-848 member leaves, the group becomes a classic group and the classic member,
  now its leader, takes every partition in a new generation;
- upgrade: a KIP-848 member joins a Stable classic group, which becomes a consumer group keeping
  the classic member; the two converge to disjoint assignments; when the classic member vanishes its
  session expires and the KIP-848 member takes every partition.
"""

from __future__ import annotations

import threading
import time

import pytest

from client import ConsumerGroupMember, TopicNames
from client.classic_group import STABLE, ClassicGroupMember
from client.topic_reader import events as read_events
from coordinator import Errors
from coordinator.group.classic.consumer_protocol import encode_subscription
from tests.integration.harness import wait_topics_known

pytestmark = [pytest.mark.integration, pytest.mark.shared_job("plain")]

TOPIC = "migration-e2e-orders"
PARTITIONS = 6
WAIT = 120  # seconds; the machine is shared


@pytest.fixture(scope="module", autouse=True)
def topic(job):
    wait_topics_known(job, {TOPIC: PARTITIONS})


class Ownership:
    """Every assignment and revocation of both kinds of clients, in the order they happened here:
    a partition may be assigned only while nobody else owns it."""

    def __init__(self):
        self.lock = threading.Lock()
        self.owner: dict[int, str] = {}
        self.violations: list[str] = []

    def assign(self, name: str, partitions) -> None:
        with self.lock:
            for p in partitions:
                holder = self.owner.get(p)
                if holder is not None and holder != name:
                    self.violations.append(f"{TOPIC}-{p} assigned to {name} while {holder} owns it")
                self.owner[p] = name

    def release(self, name: str, partitions) -> None:
        with self.lock:
            for p in partitions:
                if self.owner.get(p) == name:
                    del self.owner[p]


class Clients:
    def __init__(self, job, ownership: Ownership):
        self.job, self.ownership = job, ownership
        self.cc = job.client("migration-e2e")
        self.names = TopicNames(job.bootstrap)
        # The KIP-848 member's callbacks run on its heartbeat thread: they compare topic ids,
        # never going through the admin client behind TopicNames (not thread-safe).
        self.topic_id = self.names.topic_id(TOPIC)
        assert self.topic_id is not None
        self.made: list = []

    def classic(self, group: str, name: str) -> ClassicGroupMember:
        own = self.ownership
        m = ClassicGroupMember(
            self.job.bootstrap,
            group,
            [TOPIC],
            requests_topic=self.job.topics["requests"],
            responses_topic=self.job.topics["responses"],
            session_timeout_ms=10000,
            heartbeat_interval_ms=1000,
            rebalance_timeout_ms=60000,
            on_assignment=lambda _m, a: own.assign(name, a.get(TOPIC, [])),
            on_revoked=lambda _m, a: own.release(name, a.get(TOPIC, [])),
        )
        self.made.append(m)
        return m.start()

    def consumer(self, group: str, name: str) -> ConsumerGroupMember:
        own, tid = self.ownership, self.topic_id
        m = ConsumerGroupMember(
            self.cc,
            group,
            [TOPIC],
            response_timeout_s=4,
            on_assign=lambda a: own.assign(name, a.get(tid, ())),
            on_revoke=lambda a: own.release(name, a.get(tid, ())),
            on_lost=lambda a: own.release(name, a.get(tid, ())),
        )
        self.made.append(m)
        return m.start()

    def owned(self, m) -> list[int]:
        if isinstance(m, ClassicGroupMember):
            with m._cond:
                return sorted((m.assignment or {}).get(TOPIC, [])) if m.state == STABLE else []
        return sorted(m.owned().get(self.topic_id, ()))

    def group_type(self, group: str) -> str | None:
        resp = self.cc.request("ListGroups", 5, {"statesFilter": [], "typesFilter": []}, key=group, timeout=60)
        return next((g["groupType"] for g in resp["groups"] if g["groupId"] == group), None)

    def describe(self, group: str) -> dict:
        return self.cc.request(
            "ConsumerGroupDescribe",
            1,
            {"groupIds": [group], "includeAuthorizedOperations": False},
            key=group,
            timeout=60,
        )["groups"][0]

    def close(self) -> None:
        for m in self.made:
            if isinstance(m, ClassicGroupMember):
                m.abandon()
            else:
                m.kill()
        self.names.close()
        self.cc.close()


@pytest.fixture
def clients(job):
    c = Clients(job, Ownership())
    yield c
    c.close()


def wait_split(c: Clients, group: str, members: dict, expected_type: str, timeout: float = WAIT) -> dict:
    """Until every member owns a non-empty share, together every partition once, and the group
    has the expected type; returns {name: partitions}."""
    deadline = time.monotonic() + timeout
    owned: dict = {}
    while time.monotonic() < deadline:
        owned = {n: c.owned(m) for n, m in members.items()}
        flat = sorted(p for ps in owned.values() for p in ps)
        if flat == list(range(PARTITIONS)) and all(owned.values()) and c.group_type(group) == expected_type:
            return owned
        time.sleep(0.3)
    errors = {n: (m.fatal, m.error, m.fenced) for n, m in members.items() if isinstance(m, ConsumerGroupMember)}
    history = [
        {k: v for k, v in e.items() if k not in ("coordinatorPartition", "groupId")}
        for e in read_events(c.job.bootstrap, c.job.topics["events"])
        if e.get("groupId") == group
    ]
    raise AssertionError(
        f"no convergence in {timeout}s: owned={owned} type={c.group_type(group)} errors={errors} events={history}"
    )


def test_classic_member_joins_a_consumer_group_then_the_group_downgrades(clients):
    group = "migration-e2e-mixed"
    kip848 = clients.consumer(group, "kip848")
    wait_split(clients, group, {"kip848": kip848}, "consumer")

    classic = clients.classic(group, "classic")
    owned = wait_split(clients, group, {"kip848": kip848, "classic": classic}, "consumer")
    assert set(owned["kip848"]).isdisjoint(owned["classic"])
    # The classic member got MEMBER_ID_REQUIRED first, then joined with that id.
    g = clients.describe(group)
    assert g["groupState"] == "Stable"
    types = {m["memberId"]: m["memberType"] for m in g["members"]}
    assert types == {kip848.member_id: 1, classic.member_id: 0}
    assert clients.ownership.violations == []
    # A new classic member is first asked to rejoin with the id the coordinator gives it.
    probe = clients.cc.request(
        "JoinGroup",
        9,
        {
            "groupId": group,
            "sessionTimeoutMs": 10000,
            "rebalanceTimeoutMs": 60000,
            "memberId": "",
            "groupInstanceId": None,
            "protocolType": "consumer",
            "reason": None,
            "protocols": [{"name": "range", "metadata": encode_subscription([TOPIC], version=3)}],
        },
        key=group,
        timeout=60,
    )
    assert probe["errorCode"] == Errors.MEMBER_ID_REQUIRED.code and probe["memberId"]

    # Downgrade: the last consumer-protocol member leaves.
    assert kip848.stop()["memberEpoch"] == -1
    owned = wait_split(clients, group, {"classic": classic}, "classic")
    assert owned == {"classic": list(range(PARTITIONS))} and classic.is_leader
    assert clients.ownership.violations == []


def test_consumer_member_joins_a_classic_group_which_upgrades(clients):
    group = "migration-e2e-upgrade"
    classic = clients.classic(group, "classic")
    wait_split(clients, group, {"classic": classic}, "classic")
    classic.wait_stable(1, timeout=WAIT)

    kip848 = clients.consumer(group, "kip848")
    owned = wait_split(clients, group, {"classic": classic, "kip848": kip848}, "consumer")
    assert set(owned["kip848"]).isdisjoint(owned["classic"])
    g = clients.describe(group)
    assert {m["memberId"]: m["memberType"] for m in g["members"]} == {kip848.member_id: 1, classic.member_id: 0}
    assert clients.ownership.violations == []

    # The classic member vanishes: its session (10 s) expires and the KIP-848 member takes everything.
    classic.abandon()
    clients.ownership.release("classic", owned["classic"])
    owned = wait_split(clients, group, {"kip848": kip848}, "consumer")
    assert owned == {"kip848": list(range(PARTITIONS))}
    assert [m["memberId"] for m in clients.describe(group)["members"]] == [kip848.member_id]
    assert clients.ownership.violations == []
