"""KIP-848 consumer groups end to end: ConsumerGroupMember clients heartbeat through the real broker and the
real Spark job. Members join, one leaves, one is killed, the topic gains partitions, one more joins;
after each step every member converges to the assignment the coordinator describes, and at no
moment do two members own the same partition.

The module runs on the test run's shared job (tests/integration/conftest.py); its group's session
timeout (8 s) is the group's own config, set before its members join."""

from __future__ import annotations

import threading
import time

import pytest
from kafka import KafkaAdminClient

from client import ConsumerGroupMember, TopicNames

from .harness import wait_topics_known

pytestmark = [pytest.mark.integration, pytest.mark.shared_job("plain")]

TOPIC = "cg-e2e-orders"
GROUP = "cg-e2e-group"
SESSION_MS = 8000  # the group's consumer.session.timeout.ms (the shared job's default is 30 s)
GROUP_RESOURCE = 32  # ConfigResource.Type.GROUP


def set_session_timeout(cc, group: str, session_ms: int) -> None:
    """The group's KIP-848 session timeout, as a Kafka admin sets it (IncrementalAlterConfigs, SET)."""
    resp = cc.request(
        "IncrementalAlterConfigs",
        1,
        {
            "resources": [
                {
                    "resourceType": GROUP_RESOURCE,
                    "resourceName": group,
                    "configs": [
                        {"name": "consumer.session.timeout.ms", "configOperation": 0, "value": str(session_ms)}
                    ],
                }
            ],
            "validateOnly": False,
        },
        key=group,
        timeout=60,
    )
    [result] = resp["responses"]
    assert (result["errorCode"], result["errorMessage"]) == (0, None), result


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


def test_members_converge_through_joins_leaves_kills_and_growth(job):
    wait_topics_known(job, {TOPIC: 6})
    admin = KafkaAdminClient(bootstrap_servers=job.bootstrap)
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
        set_session_timeout(cc, GROUP, SESSION_MS)  # before the first member joins
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

        join("e")
        timings["a member joins (9 partitions, 4 members)"] = wait_converged(cc, names, live, 9)

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
