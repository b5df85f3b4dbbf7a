"""A KIP-848 consumer group member over the request topic: ConsumerGroupHeartbeat from the client
side (membership and reconciliation only; fetching records is the application's business).

    with CoordinatorClient(bootstrap, "orders-app") as cc:
        m = ConsumerGroupMember(cc, "orders", topics=["orders"], on_assign=..., on_revoke=...)
        m.start()              # joins, then heartbeats every heartbeatIntervalMs in a thread
        ...m.owned()           # {topicId: {partitions}} this member may consume right now
        m.stop()               # leaves the group (member epoch -1; -2 for a static member with
                               # leave_temporarily=True)

What it does, as Kafka's Java consumer (ConsumerMembershipManager / ConsumerHeartbeatRequestManager;
the heartbeat loop itself, shared with the streams member and the share consumer, is heartbeat_loop.py):
- joins with member epoch 0, its own member id (a random Uuid, KIP-1082), the full subscription;
- later heartbeats carry only what changed since the last one the coordinator answered (member
  epoch always; owned partitions when they changed); after an error or a lost response the next
  one is full again;
- on an assignment: revokes first (the `on_revoke` callback, then the partitions are no longer
  owned), then takes the new partitions (`on_assign`), and heartbeats at once to acknowledge;
- FENCED_MEMBER_EPOCH / UNKNOWN_MEMBER_ID: the partitions are lost (`on_lost`), the member rejoins
  with epoch 0 under the same member id;
- no response within `response_timeout_s` (the coordinator job may be restarting): the heartbeat
  is sent again, in full;
- UNRELEASED_INSTANCE_ID and retriable coordinator errors: retried after a back-off; other errors
  stop the member (`error` says which).

Topics are Kafka topic ids in the protocol; `TopicNames` maps them to names with the broker's
metadata (kafka-python's admin client).
"""

from __future__ import annotations

import base64
import threading
import uuid
from collections.abc import Callable

from kafka import KafkaAdminClient

from .heartbeat_loop import COORDINATOR_RETRIABLE, LEAVE, HeartbeatMember, new_member_id
from .request_client import CoordinatorClient

__all__ = ["ConsumerGroupMember", "TopicNames", "new_member_id", "uuid_to_kafka"]

STATIC_LEAVE = -2

Assignment = dict  # {topicId: set(partitions)}


def uuid_to_kafka(topic_id) -> str:
    return base64.urlsafe_b64encode(uuid.UUID(str(topic_id)).bytes).decode("ascii").rstrip("=")


class TopicNames:
    """Topic id <-> name, from the broker's metadata (refreshed when an id is unknown)."""

    def __init__(self, bootstrap_servers: str):
        self._admin = KafkaAdminClient(bootstrap_servers=bootstrap_servers, client_id="topic-names")
        self._by_id: dict[str, str] = {}
        self._lock = threading.Lock()

    def refresh(self) -> None:
        described = self._admin.describe_topics()
        with self._lock:
            for t in described:
                if t.get("topic_id"):
                    self._by_id[uuid_to_kafka(t["topic_id"])] = t["name"]

    def name(self, topic_id: str) -> str | None:
        with self._lock:
            name = self._by_id.get(topic_id)
        if name is None:
            self.refresh()
            with self._lock:
                name = self._by_id.get(topic_id)
        return name

    def topic_id(self, name: str) -> str | None:
        """The id of topic `name` (None if the broker does not know it)."""
        for attempt in range(2):
            with self._lock:
                found = next((tid for tid, n in self._by_id.items() if n == name), None)
            if found is not None or attempt:
                return found
            self.refresh()
        return None

    def by_name(self, assignment: Assignment) -> dict[str, list[int]]:
        return {(self.name(t) or t): sorted(p) for t, p in assignment.items() if p}

    def close(self) -> None:
        self._admin.close()


class ConsumerGroupMember(HeartbeatMember):
    API = "ConsumerGroupHeartbeat"
    API_VERSION = 1
    RETRIABLE = COORDINATOR_RETRIABLE | {111}  # and UNRELEASED_INSTANCE_ID: retried after a back-off
    THREAD_NAME = "member"

    def __init__(
        self,
        client: CoordinatorClient,
        group_id: str,
        topics: list[str] | None = None,
        *,
        regex: str | None = None,
        member_id: str | None = None,
        instance_id: str | None = None,
        rack_id: str | None = None,
        rebalance_timeout_ms: int = 60000,
        server_assignor: str | None = None,
        response_timeout_s: float = 5.0,
        retry_backoff_s: float = 0.5,
        on_assign: Callable[[Assignment], None] | None = None,
        on_revoke: Callable[[Assignment], None] | None = None,
        on_lost: Callable[[Assignment], None] | None = None,
        on_response: Callable[[dict, float], None] | None = None,
    ):
        if topics is None and regex is None:
            raise ValueError("subscribe to topics or to a regex")
        super().__init__(
            client,
            group_id,
            member_id=member_id,
            response_timeout_s=response_timeout_s,
            retry_backoff_s=retry_backoff_s,
            on_response=on_response,
        )
        self.topics = None if topics is None else list(topics)
        self.regex = regex
        self.instance_id = instance_id
        self.rack_id = rack_id
        self.rebalance_timeout_ms = rebalance_timeout_ms
        self.server_assignor = server_assignor
        self.on_assign, self.on_revoke, self.on_lost = on_assign, on_revoke, on_lost

        self._owned: Assignment = {}
        self._sent_owned: Assignment | None = None  # what the coordinator last heard (None: say it)
        self._full = True  # the next heartbeat carries everything

    # ---------------------------------------------------------------- state
    def owned(self) -> Assignment:
        with self._lock:
            return {t: set(p) for t, p in self._owned.items() if p}

    # ---------------------------------------------------------------- one heartbeat
    def _request(self) -> dict:
        owned = {t: p for t, p in self._owned.items() if p}
        full = self._full or self.member_epoch == 0
        body: dict = {
            "groupId": self.group_id,
            "memberId": self.member_id,
            "memberEpoch": self.member_epoch,
            "instanceId": self.instance_id,
            "rackId": self.rack_id if full else None,
            "rebalanceTimeoutMs": self.rebalance_timeout_ms if full else -1,
            "subscribedTopicNames": self.topics if full else None,
            "subscribedTopicRegex": self.regex if full else None,
            "serverAssignor": self.server_assignor if full else None,
            "topicPartitions": None,
        }
        if self.member_epoch == 0:
            body["topicPartitions"] = []
        elif full or owned != self._sent_owned:
            body["topicPartitions"] = [{"topicId": t, "partitions": sorted(p)} for t, p in sorted(owned.items())]
        return body

    def _resend_in_full(self) -> None:
        self._full = True

    def _fenced(self) -> None:
        lost = self.owned()
        self._owned, self._sent_owned = {}, None
        if lost and self.on_lost is not None:
            self.on_lost(lost)

    def _on_answer(self, body: dict, resp: dict) -> None:
        self._full = False
        if body["topicPartitions"] is not None:
            self._sent_owned = {t["topicId"]: set(t["partitions"]) for t in body["topicPartitions"]}
        if resp["assignment"] is not None:
            self._reconcile({tp["topicId"]: set(tp["partitions"]) for tp in resp["assignment"]["topicPartitions"]})

    def _reconcile(self, target: Assignment) -> None:
        """Revoke what is no longer assigned, then take what is new; acknowledge at once."""
        revoked = {t: p - target.get(t, set()) for t, p in self._owned.items()}
        revoked = {t: p for t, p in revoked.items() if p}
        if revoked:
            if self.on_revoke is not None:
                self.on_revoke(revoked)
            for t, p in revoked.items():
                self._owned[t] -= p
        added = {t: p - self._owned.get(t, set()) for t, p in target.items()}
        added = {t: p for t, p in added.items() if p}
        if added:
            for t, p in added.items():
                self._owned.setdefault(t, set()).update(p)
            if self.on_assign is not None:
                self.on_assign(added)
        if revoked or added:
            self._ack_needed = True

    # ---------------------------------------------------------------- subscription and leaving
    def subscribe(self, topics: list[str] | None = None, regex: str | None = None) -> None:
        with self._lock:
            self.topics, self.regex, self._full = topics, regex, True
        self.wake()

    def stop(self, leave: bool = True, leave_temporarily: bool = False) -> dict | None:
        """Stop; unless told otherwise, give up the partitions and leave the group."""
        self.kill()
        if not leave or self.member_epoch == 0:
            return None
        with self._lock:
            if self._owned and self.on_revoke is not None:
                self.on_revoke(self.owned())
            self._owned = {}
        epoch = STATIC_LEAVE if (leave_temporarily and self.instance_id is not None) else LEAVE
        return self._send_leave(
            {"groupId": self.group_id, "memberId": self.member_id, "memberEpoch": epoch, "instanceId": self.instance_id}
        )
