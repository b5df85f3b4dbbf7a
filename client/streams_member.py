"""A minimal KIP-1071 streams group member over the request topic: StreamsGroupHeartbeat from the
client side (membership, topology and task reconciliation; processing records is the application's
business).

    with CoordinatorClient(bootstrap, "word-count") as cc:
        m = StreamsGroupMember(cc, "word-count", topology, process_id="host-1",
                               on_assign=..., on_revoke=...)
        m.start()              # joins with its topology, then heartbeats every heartbeatIntervalMs
        ...m.owned()           # {"active": {subtopology: {partitions}}, "standby": ..., "warmup": ...}
        m.stop()               # leaves the group (member epoch -1)

What it does, as Kafka Streams' StreamsMembershipManager (4.1):
- joins with member epoch 0, its topology, process id and owned tasks (none);
- later heartbeats carry the member epoch and, when they changed, the tasks it owns;
- on an assignment: revokes first (`on_revoke`; the tasks are no longer owned), then takes the
  new tasks (`on_assign`), and heartbeats at once to acknowledge;
- FENCED_MEMBER_EPOCH / UNKNOWN_MEMBER_ID: the tasks are lost (`on_lost`), it rejoins with epoch 0
  under a new member id (4.1's coordinator validates the epoch of a known member even at epoch 0, so
  the old id would be fenced again until its session expired);
- statuses: MISSING_INTERNAL_TOPICS makes it create the internal topics the coordinator describes,
  on a thread of its own so that heartbeats go on (the service's core cannot create topics; a Kafka
  4.1 broker creates them itself), and every
  status is kept in `status`; STALE_TOPOLOGY and SHUTDOWN_APPLICATION are reported, not acted on;
- other errors stop the member (`fatal`).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from kafka import KafkaAdminClient
from kafka.admin import NewTopic
from kafka.errors import TopicAlreadyExistsError

from .heartbeat_loop import LEAVE, HeartbeatMember, new_member_id
from .request_client import CoordinatorClient

ROLES = ("active", "standby", "warmup")
MISSING_INTERNAL_TOPICS = 3

Tasks = dict  # {"active": {subtopology: set(partitions)}, "standby": ..., "warmup": ...}


def _empty() -> Tasks:
    return {r: {} for r in ROLES}


def _wire(tasks: dict) -> list[dict]:
    return [{"subtopologyId": s, "partitions": sorted(p)} for s, p in sorted(tasks.items()) if p]


class StreamsGroupMember(HeartbeatMember):
    API = "StreamsGroupHeartbeat"
    API_VERSION = 0
    THREAD_NAME = "streams-member"

    def __init__(
        self,
        client: CoordinatorClient,
        group_id: str,
        topology: dict,
        *,
        process_id: str | None = None,
        member_id: str | None = None,
        rebalance_timeout_ms: int = 60000,
        response_timeout_s: float = 5.0,
        retry_backoff_s: float = 0.5,
        create_internal_topics: bool = True,
        on_assign: Callable[[Tasks], None] | None = None,
        on_revoke: Callable[[Tasks], None] | None = None,
        on_lost: Callable[[Tasks], None] | None = None,
    ):
        super().__init__(
            client,
            group_id,
            member_id=member_id,
            response_timeout_s=response_timeout_s,
            retry_backoff_s=retry_backoff_s,
        )
        self.topology = topology
        self.process_id = process_id or new_member_id()
        self.rebalance_timeout_ms = rebalance_timeout_ms
        self.create_internal_topics = create_internal_topics
        self.on_assign, self.on_revoke, self.on_lost = on_assign, on_revoke, on_lost

        self.endpoint_information_epoch = -1  # as Kafka Streams starts (StreamsMembershipManager)
        self._owned: Tasks = _empty()
        self._sent_owned: Tasks | None = None
        self.status: list[dict] = []  # the statuses of the last response
        self.topics_created: list[tuple[str, float]] = []  # (topic, time.monotonic() when created)
        self.topic_creation_error: str | None = None
        self._creator: threading.Thread | None = None

    def owned(self) -> Tasks:
        with self._lock:
            return {r: {s: set(p) for s, p in self._owned[r].items() if p} for r in ROLES}

    # ---------------------------------------------------------------- one heartbeat
    def _request(self) -> dict:
        owned = self.owned()
        body: dict = {
            "groupId": self.group_id,
            "memberId": self.member_id,
            "memberEpoch": self.member_epoch,
            "endpointInformationEpoch": self.endpoint_information_epoch,
        }
        if self.member_epoch == 0:
            body.update(
                rebalanceTimeoutMs=self.rebalance_timeout_ms,
                topology=self.topology,
                processId=self.process_id,
                activeTasks=[],
                standbyTasks=[],
                warmupTasks=[],
            )
        elif owned != self._sent_owned:
            body.update(
                activeTasks=_wire(owned["active"]),
                standbyTasks=_wire(owned["standby"]),
                warmupTasks=_wire(owned["warmup"]),
            )
        return body

    def _resend_in_full(self) -> None:
        self._sent_owned = None  # say the owned tasks again

    def _fenced(self) -> None:
        lost = self.owned()
        self._owned = _empty()
        # Kafka 4.1 checks the epoch of a known member even at epoch 0, so a fenced
        # member still in the group would be fenced again: rejoin as a new member.
        self.member_id = new_member_id()
        if any(lost.values()) and self.on_lost is not None:
            self.on_lost(lost)

    def _on_answer(self, body: dict, resp: dict) -> None:
        if "activeTasks" in body:
            self._sent_owned = {r: {t["subtopologyId"]: set(t["partitions"]) for t in body[f"{r}Tasks"]} for r in ROLES}
        self.endpoint_information_epoch = resp["endpointInformationEpoch"]
        self.status = list(resp["status"] or [])
        if resp["activeTasks"] is not None:
            self._reconcile(
                {r: {t["subtopologyId"]: set(t["partitions"]) for t in resp[f"{r}Tasks"] or []} for r in ROLES}
            )

    def _after_answer(self, resp: dict) -> None:
        if self.create_internal_topics and any(s["statusCode"] == MISSING_INTERNAL_TOPICS for s in self.status):
            self._start_topic_creation()

    def _reconcile(self, target: Tasks) -> None:
        revoked = {r: {s: p - target[r].get(s, set()) for s, p in self._owned[r].items()} for r in ROLES}
        revoked = {r: {s: p for s, p in t.items() if p} for r, t in revoked.items()}
        if any(revoked.values()):
            if self.on_revoke is not None:
                self.on_revoke(revoked)
            for r in ROLES:
                for s, p in revoked[r].items():
                    self._owned[r][s] -= p
        added = {r: {s: p - self._owned[r].get(s, set()) for s, p in target[r].items()} for r in ROLES}
        added = {r: {s: p for s, p in t.items() if p} for r, t in added.items()}
        if any(added.values()):
            for r in ROLES:
                for s, p in added[r].items():
                    self._owned[r].setdefault(s, set()).update(p)
            if self.on_assign is not None:
                self.on_assign(added)
        if any(revoked.values()) or any(added.values()):
            self._ack_needed = True

    def _start_topic_creation(self) -> None:
        """Create the topics on a thread of their own: the heartbeats must go on meanwhile (a
        heartbeat thread blocked on the admin client would let the member's session expire)."""
        with self._lock:
            if self._creator is not None and self._creator.is_alive():
                return
            self._creator = threading.Thread(
                target=self._create_internal_topics_safely, daemon=True, name=f"streams-member-topics-{self.member_id}"
            )
            self._creator.start()

    def _create_internal_topics_safely(self) -> None:
        try:
            self._create_internal_topics()
        except Exception as e:  # the next heartbeat's status asks again
            self.topic_creation_error = repr(e)

    def _create_internal_topics(self) -> None:
        """Create the repartition and changelog topics the coordinator's configured topology names
        and the broker lacks (what a 4.1 broker does on its own)."""
        described = self.client.request(
            "StreamsGroupDescribe",
            0,
            {"groupIds": [self.group_id], "includeAuthorizedOperations": False},
            key=self.group_id,
            timeout=self.response_timeout_s * 4,
        )["groups"][0]
        subtopologies = (described.get("topology") or {}).get("subtopologies", [])
        admin = KafkaAdminClient(bootstrap_servers=self.client.bootstrap_servers, client_id="streams-member-admin")
        try:
            existing = set(admin.list_topics())
            wanted = _internal_topic_partitions(subtopologies, _partition_counts(admin, subtopologies, existing))
            missing = [n for n in sorted(wanted) if n not in existing and wanted[n] > 0]
            for name in missing:
                try:
                    admin.create_topics([NewTopic(name, wanted[name], 1)])
                    self.topics_created.append((name, time.monotonic()))
                except TopicAlreadyExistsError:
                    pass  # another member was first
        finally:
            admin.close()

    # ---------------------------------------------------------------- leaving
    def stop(self, leave: bool = True) -> dict | None:
        self.kill()
        if not leave or self.member_epoch == 0:
            return None
        with self._lock:
            if any(self.owned().values()) and self.on_revoke is not None:
                self.on_revoke(self.owned())
            self._owned = _empty()
        return self._send_leave(
            {
                "groupId": self.group_id,
                "memberId": self.member_id,
                "memberEpoch": LEAVE,
                "endpointInformationEpoch": self.endpoint_information_epoch,
            }
        )


def _partition_counts(admin: KafkaAdminClient, subtopologies: list[dict], existing: set[str]) -> dict[str, int]:
    """The partition counts of the topology's source topics that exist on the broker."""
    sources = sorted({t for sub in subtopologies for t in sub["sourceTopics"] if t in existing})
    if not sources:
        return {}
    return {d["name"]: len(d["partitions"]) for d in admin.describe_topics(sources) if d.get("error_code") == 0}


def _internal_topic_partitions(subtopologies: list[dict], source_partitions: dict[str, int]) -> dict[str, int]:
    """Each changelog and repartition topic's partition count. A configured topology (a Ready
    group's describe) gives them; a group not yet configured describes its topology as the member
    sent it (Kafka 4.2+), partitions 0 where the member left them to the broker: then, as Kafka's
    InternalTopicManager does for a subtopology's changelogs, the subtopology's task count (its
    largest source topic), and for a repartition topic the largest source topic of the topology."""
    largest = max(source_partitions.values(), default=0)
    wanted: dict[str, int] = {}
    for sub in subtopologies:
        tasks = max((source_partitions.get(t, 0) for t in sub["sourceTopics"]), default=0)
        for t in sub["repartitionSourceTopics"]:
            wanted[t["name"]] = t["partitions"] or largest
            tasks = max(tasks, wanted[t["name"]])
        for t in sub["stateChangelogTopics"]:
            wanted[t["name"]] = t["partitions"] or tasks
    return wanted
