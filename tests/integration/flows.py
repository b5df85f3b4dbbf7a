"""What the end-to-end modules check of a group's or a transaction's flow, shared by the module that
runs the flow on the shared job and the recovery module that runs it across a kill: classic members
converging on Kafka's range assignment, a group's events, KIP-848 members converging with no
partition owned twice, committed offsets and transaction markers."""

from __future__ import annotations

import json
import threading
import time

from client import ConsumerGroupMember, TopicNames
from client.classic_group import STABLE, ClassicGroupMember
from client.topic_reader import read_records
from coordinator.txn.markers import parse_marker

WAIT = 120  # seconds: a bound for conditions on a shared, loaded machine


# ---------------------------------------------------------------------------------- classic groups
def start_together(ms: list[ClassicGroupMember]) -> None:
    threads = [threading.Thread(target=m.start) for m in ms]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def expected_range(ms: list[ClassicGroupMember], topics: dict[str, int]) -> dict[str, dict[str, list[int]]]:
    """Kafka's RangeAssignor for these members over `topics` (name -> partitions): static first by
    instance id, then by member id."""
    order = sorted(ms, key=lambda m: (m.group_instance_id is None, m.group_instance_id or m.member_id))
    out: dict[str, dict[str, list[int]]] = {m.member_id: {} for m in ms}
    for topic, n in topics.items():
        q, extra = divmod(n, len(order))
        start = 0
        for i, m in enumerate(order):
            k = q + (i < extra)
            if k:
                out[m.member_id][topic] = list(range(start, start + k))
            start += k
    return out


def converge(ms: list[ClassicGroupMember], min_generation: int, topics: dict[str, int], timeout: float = WAIT) -> int:
    """Every member Stable in one generation >= min_generation, holding the range assignment of
    exactly these members over `topics`, one leader; returns the generation."""
    deadline = time.monotonic() + timeout
    while True:
        for m in ms:
            m.wait_stable(min_generation, timeout=max(1.0, deadline - time.monotonic()))
        generations = {m.generation.generation_id for m in ms}
        if len(generations) == 1 and all(m.state == STABLE for m in ms):
            break
        assert time.monotonic() < deadline, f"members did not converge: {[str(m.generation) for m in ms]}"
        time.sleep(0.2)
    assert {m.member_id: m.assignment for m in ms} == expected_range(ms, topics)
    assert sum(m.is_leader for m in ms) == 1
    return generations.pop()


def group_events(job, group_id: str, start: dict[int, int], until=None, timeout: float = 30) -> list[dict]:
    """The group's events since `start` (until `until(events)` holds, or timeout), without the
    copies a replayed micro-batch writes again."""

    def parse(recs) -> list[dict]:
        out = {}
        for r in recs:
            if r.key == group_id.encode("utf-8") and r.value:
                out.setdefault(r.value, json.loads(r.value))
        return list(out.values())

    recs = read_records(
        job.bootstrap,
        job.topics["events"],
        timeout_s=timeout,
        start=start,
        until=None if until is None else (lambda recs: until(parse(recs))),
    )
    return parse(recs)


def named(evs: list[dict], name: str) -> list[dict]:
    return [e for e in evs if e["event"] == name]


# ---------------------------------------------------------------------------------- KIP-848 groups
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


def describe_consumer_group(client, group: str) -> dict:
    return client.request(
        "ConsumerGroupDescribe", 1, {"groupIds": [group], "includeAuthorizedOperations": False}, key=group, timeout=60
    )["groups"][0]


def wait_converged(
    client,
    names: TopicNames,
    group: str,
    topic: str,
    members: dict[str, ConsumerGroupMember],
    partitions: int,
    timeout: float = WAIT,
) -> float:
    """Until the group is Stable with exactly these members, each owning (client side) what the
    coordinator assigned it, together every partition of `topic` once, balanced within one; returns
    how long that took."""
    start = time.monotonic()
    last = None
    while time.monotonic() - start < timeout:
        owned = {n: names.by_name(m.owned()) for n, m in members.items()}
        flat = sorted(p for o in owned.values() for p in o.get(topic, []))
        sizes = [len(o.get(topic, [])) for o in owned.values()]
        if flat == list(range(partitions)) and max(sizes) - min(sizes) <= 1:
            g = describe_consumer_group(client, group)
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


# ---------------------------------------------------------------------------------- transactions
def committed_offsets(client, group: str, topic: str, partitions: list[int], timeout: float = 60) -> dict:
    """OffsetFetch with requireStable, retried while a transaction's offsets are pending
    (UNSTABLE_OFFSET_COMMIT), as Kafka's consumer does."""
    deadline = time.monotonic() + timeout
    while True:
        r = client.request(
            "OffsetFetch",
            9,
            {
                "groups": [{"groupId": group, "topics": [{"name": topic, "partitionIndexes": partitions}]}],
                "requireStable": True,
            },
            key=group,
            timeout=max(timeout, 60),
        )
        parts = r["groups"][0]["topics"][0]["partitions"]
        if all(p["errorCode"] == 0 for p in parts):
            return {p["partitionIndex"]: p["committedOffset"] for p in parts}
        assert {p["errorCode"] for p in parts} <= {0, 88}, r  # UNSTABLE_OFFSET_COMMIT
        if time.monotonic() > deadline:
            raise TimeoutError(f"offsets of {group} still unstable: {r}")
        time.sleep(0.1)


def markers_in(bootstrap: str, topic: str) -> dict[int, list[dict]]:
    """partition -> the transaction markers (JSON or control records) in it, in log order."""
    out: dict[int, list[dict]] = {}
    for r in read_records(bootstrap, topic, timeout_s=20):
        m = parse_marker(r.headers, r.value)
        if m is not None:
            out.setdefault(r.partition, []).append(m)
    return out
