"""KIP-848 consumer groups end to end: ConsumerGroupMember clients heartbeat through the real broker and the
real Spark job. Members join, one leaves, one is killed, the topic gains partitions, and the job
itself is SIGKILLed while a rebalance is in flight; after each step every member converges to the
assignment the coordinator describes, and at no moment do two members own the same partition."""

from __future__ import annotations

import threading
import time

import pytest
from kafka import KafkaAdminClient
from kafka.admin import NewTopic

from client import ConsumerGroupMember, TopicNames

pytestmark = pytest.mark.integration

TOPIC = "cg-e2e-orders"
GROUP = "cg-e2e-group"
SESSION_MS = 8000


@pytest.fixture(scope="module")
def job(job_factory):
    return job_factory(
        coordinator={
            "group.consumer.session.timeout.ms": SESSION_MS,
            "group.consumer.min.session.timeout.ms": SESSION_MS,
            "group.consumer.heartbeat.interval.ms": 1000,
            "group.consumer.min.heartbeat.interval.ms": 500,
        },
        stream={"metadata_refresh_ms": 1000},
    )


class Ownership:
    """Every assign / revoke / loss, in the order they happened in this process: a partition may be
    assigned only while nobody else owns it."""

    def __init__(self):
        self.lock = threading.Lock()
        self.owner: dict[tuple[str, int], str] = {}
        self.violations: list[str] = []
        self.events = 0

    def callbacks(self, name: str) -> dict:
        return {
            "on_assign": lambda a: self._assign(name, a),
            "on_revoke": lambda a: self._release(name, a),
            "on_lost": lambda a: self._release(name, a),
        }

    def _assign(self, name, assignment):
        with self.lock:
            self.events += 1
            for t, ps in assignment.items():
                for p in ps:
                    holder = self.owner.get((t, p))
                    if holder is not None and holder != name:
                        self.violations.append(f"{t}-{p} assigned to {name} while {holder} owns it")
                    self.owner[(t, p)] = name

    def _release(self, name, assignment):
        with self.lock:
            self.events += 1
            for t, ps in assignment.items():
                for p in ps:
                    if self.owner.get((t, p)) == name:
                        del self.owner[(t, p)]

    def crashed(self, name: str, member: ConsumerGroupMember) -> None:
        self._release(name, member.owned())


def describe(cc, group: str) -> dict:
    return cc.request(
        "ConsumerGroupDescribe", 1, {"groupIds": [group], "includeAuthorizedOperations": False}, key=group, timeout=60
    )["groups"][0]


def wait_converged(
    cc, names: TopicNames, members: dict[str, ConsumerGroupMember], partitions: int, timeout: float = 120
) -> float:
    """Until the group is Stable with exactly these members, each owning (client side) what the
    coordinator assigned it, together every partition once, balanced within one."""
    start = time.monotonic()
    last = None
    while time.monotonic() - start < timeout:
        owned = {n: names.by_name(m.owned()) for n, m in members.items()}
        flat = sorted(p for o in owned.values() for p in o.get(TOPIC, []))
        sizes = [len(o.get(TOPIC, [])) for o in owned.values()]
        if flat == list(range(partitions)) and max(sizes) - min(sizes) <= 1:
            g = describe(cc, GROUP)
            last = g
            server = {
                m["memberId"]: {tp["topicName"]: sorted(tp["partitions"]) for tp in m["assignment"]["topicPartitions"]}
                for m in g["members"]
            }
            ids = {m.member_id: n for n, m in members.items()}
            if (
                g["groupState"] == "Stable"
                and set(server) == set(ids)
                and all(server[mid] == {t: p for t, p in owned[n].items() if p} for mid, n in ids.items())
            ):
                return time.monotonic() - start
        time.sleep(0.2)
    raise AssertionError(
        f"no convergence in {timeout}s: owned={ {n: names.by_name(m.owned()) for n, m in members.items()} } "
        f"group={last} errors={ {n: m.error for n, m in members.items()} }"
    )


def test_members_converge_through_joins_leaves_kills_growth_and_a_job_kill(job):
    admin = KafkaAdminClient(bootstrap_servers=job.bootstrap)
    admin.create_topics([NewTopic(TOPIC, 6, 1)])
    names = TopicNames(job.bootstrap)
    cc = job.client("cg-e2e-client")
    ownership = Ownership()
    live: dict[str, ConsumerGroupMember] = {}
    timings: dict[str, float] = {}

    def join(name: str) -> ConsumerGroupMember:
        m = ConsumerGroupMember(cc, GROUP, [TOPIC], response_timeout_s=4, **ownership.callbacks(name))
        live[name] = m
        return m.start()

    try:
        for name in ("a", "b", "c"):
            join(name)
        timings["3 members join"] = wait_converged(cc, names, live, 6)

        left = live.pop("b")
        assert left.stop()["memberEpoch"] == -1
        timings["one leaves"] = wait_converged(cc, names, live, 6)

        join("d")
        crashed = live.pop("c")
        crashed.kill()
        ownership.crashed("c", crashed)
        timings["one joins, one is killed (session timeout 8 s)"] = wait_converged(cc, names, live, 6)

        admin.create_partitions({TOPIC: 9})
        timings["the topic grows to 9 partitions"] = wait_converged(cc, names, live, 9)

        # SIGKILL the job while a rebalance is in flight, restart it on the same checkpoint.
        join("e")
        deadline = time.monotonic() + 60
        while describe(cc, GROUP)["groupState"] == "Stable" and time.monotonic() < deadline:
            time.sleep(0.1)
        job.kill()
        time.sleep(2)
        job.start()
        timings["a member joins, the job is killed and restarted"] = wait_converged(cc, names, live, 9, timeout=180)

        g = describe(cc, GROUP)
        assert g["groupState"] == "Stable" and g["assignorName"] == "uniform"
        assert all(m.fatal is None for m in live.values())
        assert ownership.events > 0 and not ownership.violations, ownership.violations
        print("\nconvergence:", {k: round(v, 1) for k, v in timings.items()})
    finally:
        for m in live.values():
            m.stop()
        names.close()
        cc.close()
        admin.close()
