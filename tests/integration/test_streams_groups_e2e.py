"""KIP-1071 streams groups end to end: StreamsGroupMember clients heartbeat through the real broker
and the real Spark job. Three members join (the first one creates the missing changelog topic the
coordinator reports), one is killed and its tasks move when its session expires, and the topology
changes: as in Kafka 4.1 a member declaring a different topology is refused while the old one is
in use ("Topology updates are not supported yet."); once the old application has left and the group
is deleted, the new topology (epoch 1, two subtopologies joined by a repartition topic) takes
effect. After each step the members converge to the assignment the coordinator describes, and no
active task is ever owned by two members at once."""

from __future__ import annotations

import threading
import time

import pytest
from kafka import KafkaAdminClient
from kafka.admin import NewTopic

from client import StreamsGroupMember

pytestmark = [pytest.mark.integration, pytest.mark.shared_job("plain")]

INPUT = "st-e2e-input"
GROUP = "st-e2e-app"
CHANGELOG = f"{GROUP}-store-changelog"
REPARTITION = f"{GROUP}-by-key-repartition"
# Sessions of 20 s and responses awaited 10 s: on a loaded machine (other jobs on the same cores) a
# round trip through the job can take several seconds, and a member that gives up waiting resends
# at the same epoch while its answer (the new epoch) is lost; short sessions then expire members
# whose heartbeats were only slow, and the group churns.
SESSION_MS = 20000
RESPONSE_TIMEOUT_S = 10


def subtopology(sid, source=(), changelog=(), sink=(), rsource=()):
    info = lambda n: {"name": n, "partitions": 0, "replicationFactor": 0, "topicConfigs": []}  # noqa: E731
    return {
        "subtopologyId": sid,
        "sourceTopics": list(source),
        "sourceTopicRegex": [],
        "stateChangelogTopics": [info(t) for t in changelog],
        "repartitionSinkTopics": list(sink),
        "repartitionSourceTopics": [info(t) for t in rsource],
        "copartitionGroups": [],
    }


TOPOLOGY_0 = {"epoch": 0, "subtopologies": [subtopology("0", source=[INPUT], changelog=[CHANGELOG])]}
TOPOLOGY_1 = {
    "epoch": 1,
    "subtopologies": [
        subtopology("0", source=[INPUT], sink=[REPARTITION]),
        subtopology("1", rsource=[REPARTITION], changelog=[CHANGELOG]),
    ],
}


class Ownership:
    """Every assign / revoke / loss of active tasks in this process: a task may be assigned only while
    nobody else owns it."""

    def __init__(self):
        self.lock = threading.Lock()
        self.owner: dict[tuple[str, int], str] = {}
        self.violations: list[str] = []

    def callbacks(self, name: str) -> dict:
        return {
            "on_assign": lambda t: self._assign(name, t),
            "on_revoke": lambda t: self._release(name, t),
            "on_lost": lambda t: self._release(name, t),
        }

    def _assign(self, name, tasks):
        with self.lock:
            for s, ps in tasks["active"].items():
                for p in ps:
                    holder = self.owner.get((s, p))
                    if holder is not None and holder != name:
                        self.violations.append(f"task {s}_{p} assigned to {name} while {holder} owns it")
                    self.owner[(s, p)] = name

    def _release(self, name, tasks):
        with self.lock:
            for s, ps in tasks["active"].items():
                for p in ps:
                    if self.owner.get((s, p)) == name:
                        del self.owner[(s, p)]


def describe(cc) -> dict:
    return cc.request(
        "StreamsGroupDescribe", 0, {"groupIds": [GROUP], "includeAuthorizedOperations": False}, key=GROUP, timeout=60
    )["groups"][0]


def wait_converged(cc, members: dict[str, StreamsGroupMember], expected: dict[str, int], timeout: float = 120) -> float:
    """Until the group is Stable with exactly these members, each owning (client side) the active
    tasks the coordinator assigned it, together every task of `expected` ({subtopology: tasks})
    once, balanced within one."""
    start = time.monotonic()
    want = sorted((s, p) for s, n in expected.items() for p in range(n))
    last = None
    while time.monotonic() - start < timeout:
        owned = {n: m.owned()["active"] for n, m in members.items()}
        flat = sorted((s, p) for o in owned.values() for s, ps in o.items() for p in ps)
        sizes = [sum(len(p) for p in o.values()) for o in owned.values()]
        if flat == want and max(sizes) - min(sizes) <= 1:
            g = last = describe(cc)
            server = {
                m["memberId"]: {t["subtopologyId"]: set(t["partitions"]) for t in m["assignment"]["activeTasks"]}
                for m in g["members"]
            }
            ids = {m.member_id: n for n, m in members.items()}
            if (
                g["groupState"] == "Stable"
                and set(server) == set(ids)
                and all(server[mid] == owned[n] for mid, n in ids.items())
            ):
                return time.monotonic() - start
        time.sleep(0.2)
    raise AssertionError(
        f"no convergence in {timeout}s: owned={ {n: m.owned() for n, m in members.items()} } "
        f"group={last} errors={ {n: (m.error, m.status, m.topic_creation_error) for n, m in members.items()} }"
    )


def wait_for(condition, timeout: float = 60, what: str = "condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def test_streams_group_joins_member_loss_and_topology_change(job):
    admin = KafkaAdminClient(bootstrap_servers=job.bootstrap)
    admin.create_topics([NewTopic(INPUT, 6, 1)])
    cc = job.client("st-e2e-client")
    ownership = Ownership()
    live: dict[str, StreamsGroupMember] = {}
    timings: dict[str, float] = {}

    def join(name: str, topology: dict) -> StreamsGroupMember:
        m = StreamsGroupMember(
            cc,
            GROUP,
            topology,
            process_id=f"process-{name}",
            response_timeout_s=RESPONSE_TIMEOUT_S,
            **ownership.callbacks(name),
        )
        live[name] = m
        return m.start()

    started = time.monotonic()
    try:
        # 1. Three members join; the changelog topic is missing at first (MISSING_INTERNAL_TOPICS):
        #    a member creates it, the metadata update reaches the coordinator, the tasks spread.
        for name in ("a", "b", "c"):
            join(name, TOPOLOGY_0)
        # (generous: the job's first batches are slow on a loaded machine)
        timings["3 members join (changelog created)"] = wait_converged(cc, live, {"0": 6}, timeout=300)
        assert CHANGELOG in admin.list_topics()
        timings["(of which: until the first heartbeat was answered)"] = (
            min(m.first_answer_at for m in live.values()) - started
        )
        timings["(of which: until a member created the changelog)"] = (
            min(t for m in live.values() for _, t in m.topics_created) - started
        )
        assert sum(len(m.topics_created) for m in live.values()) >= 1
        assert all(name == CHANGELOG for m in live.values() for name, _ in m.topics_created)

        # 2. A member is lost: killed, its session expires, its tasks move to the others.
        lost = live.pop("b")
        lost.kill()
        ownership._release("b", lost.owned())
        timings["one member lost (session timeout 20 s)"] = wait_converged(cc, live, {"0": 6}, timeout=180)

        # 3. A new topology epoch. While the old application runs, a member with another topology
        #    is refused, as by Kafka 4.1.
        rejected = StreamsGroupMember(cc, GROUP, TOPOLOGY_1, response_timeout_s=RESPONSE_TIMEOUT_S * 3)
        resp = rejected.heartbeat_once()
        assert (resp["errorCode"], resp["errorMessage"]) == (42, "Topology updates are not supported yet.")
        # The old application stops, the group is deleted, the new application starts.
        for name in list(live):
            assert live.pop(name).stop()["memberEpoch"] == -1
        wait_for(lambda: describe(cc)["groupState"] == "Empty", what="the group to be Empty")
        deleted = cc.request("DeleteGroups", 2, {"groupsNames": [GROUP]}, key=GROUP, timeout=60)
        assert deleted["results"][0]["errorCode"] == 0
        for name in ("d", "e"):
            join(name, TOPOLOGY_1)
        timings["new topology epoch takes effect"] = wait_converged(cc, live, {"0": 6, "1": 6}, timeout=180)
        g = describe(cc)
        assert g["topology"]["epoch"] == 1
        assert [s["subtopologyId"] for s in g["topology"]["subtopologies"]] == ["0", "1"]
        assert REPARTITION in admin.list_topics()
        assert all(m.fatal is None for m in live.values())
        assert not ownership.violations, ownership.violations
        print("\nconvergence:", {k: round(v, 1) for k, v in timings.items()})
    finally:
        for m in live.values():
            m.stop()
        cc.close()
        admin.close()
