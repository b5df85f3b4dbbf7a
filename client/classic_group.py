"""A classic consumer-group member (protocol type "consumer", eager "range" assignment) that speaks
to the coordinator service through its request and response topics.

    member = ClassicGroupMember("127.0.0.1:9092", "orders-app", ["orders"]).start()
    member.wait_stable(timeout=60)
    member.assignment        # {"orders": [0, 1, 2]}
    member.generation        # Generation(generation_id=1, member_id="consumer-...", protocol="range")
    member.commit({("orders", 0): 42})
    member.close()           # LeaveGroup (dynamic members only, as Kafka's consumer since 2.3)

It behaves as Kafka's classic consumer (`AbstractCoordinator` / `ConsumerCoordinator`, and
kafka-python's `BaseCoordinator`):
- JoinGroup v9: a new dynamic member first gets MEMBER_ID_REQUIRED with its id and joins again
  with it (KIP-394); a static member (`group_instance_id`, KIP-345) joins with its instance id and
  is never asked for that round trip. Before each join the member gives up its partitions (eager).
- The leader (`leader == memberId`) decodes every member's ConsumerProtocolSubscription, asks the
  broker for the topics' partition counts and computes the range assignment
  (`client/range_assignor.py`); with `skipAssignment` (a restarted static leader, KIP-814) it sends
  no assignment. Every member then sends SyncGroup v5 and decodes its ConsumerProtocolAssignment.
- A heartbeat thread sends Heartbeat v4 every `heartbeat_interval_ms` while the member is in a
  generation (after JoinGroup, and while Stable). REBALANCE_IN_PROGRESS → rejoin;
  ILLEGAL_GENERATION → rejoin with the same member id; UNKNOWN_MEMBER_ID → forget the member id and
  rejoin; FENCED_INSTANCE_ID → fatal (another process took the instance id).
- JoinGroup / SyncGroup errors are handled as kafka-python does: INCONSISTENT_GROUP_PROTOCOL,
  INVALID_SESSION_TIMEOUT, INVALID_GROUP_ID, GROUP_MAX_SIZE_REACHED, GROUP_AUTHORIZATION_FAILED and
  FENCED_INSTANCE_ID are fatal (`fatal_error`); the others lead to another join.
- Heartbeats do not wait for each other: each is a record in the request topic, so heartbeats sent
  while the service is down are applied, in order, when it catches up.

Observable state: `generation`, `assignment` (None while not Stable), `state`, `is_leader`,
`fatal_error`, `join_sync_ms` (from the first JoinGroup of a rebalance to its SyncGroup answer),
`first_join_sent` / `synced_at` (perf_counter times), `joins_sent`, callbacks `on_assignment(member, assignment)` / `on_revoked(member, assignment)`.

The bytes in protocol metadata and assignments are Kafka's ConsumerProtocol encodings
(`coordinator.group.classic.consumer_protocol`), base64 in the JSON requests.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kafka import KafkaConsumer

from coordinator.errors import Errors
from coordinator.group.classic.consumer_protocol import (
    CONSUMER_PROTOCOL_TYPE,
    SchemaError,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)

from . import range_assignor
from .request_client import CoordinatorClient, ResponseTimeout

log = logging.getLogger(__name__)

JOIN_VERSION, SYNC_VERSION, HEARTBEAT_VERSION, LEAVE_VERSION = 9, 5, 4, 5
COMMIT_VERSION, FETCH_VERSION = 9, 9
UNKNOWN_MEMBER_ID = ""

# JoinGroup errors after which the member gives up (kafka-python / Java treat them as fatal).
FATAL_JOIN_ERRORS = {
    Errors.INCONSISTENT_GROUP_PROTOCOL.code,
    Errors.INVALID_SESSION_TIMEOUT.code,
    Errors.INVALID_GROUP_ID.code,
    Errors.GROUP_AUTHORIZATION_FAILED.code,
    Errors.GROUP_MAX_SIZE_REACHED.code,
    Errors.FENCED_INSTANCE_ID.code,
}
# Errors that call for a pause before the next attempt (the coordinator is not there).
BACKOFF_ERRORS = {
    Errors.COORDINATOR_NOT_AVAILABLE.code,
    Errors.NOT_COORDINATOR.code,
    Errors.COORDINATOR_LOAD_IN_PROGRESS.code,
    Errors.UNKNOWN_SERVER_ERROR.code,
}

UNJOINED, REBALANCING, COMPLETING, STABLE = "UNJOINED", "REBALANCING", "COMPLETING_REBALANCE", "STABLE"


@dataclass(frozen=True)
class Generation:
    generation_id: int
    member_id: str
    protocol: str | None


NO_GENERATION = Generation(-1, UNKNOWN_MEMBER_ID, None)


class FatalGroupError(RuntimeError):
    def __init__(self, error_code: int, where: str):
        self.error = Errors.for_code(error_code)
        super().__init__(f"{where}: {self.error.name}")


class _Closed(Exception):
    pass


class _Retry(Exception):
    def __init__(self, reason: str, backoff: bool = False):
        super().__init__(reason)
        self.backoff = backoff


class ClassicGroupMember:
    def __init__(
        self,
        bootstrap_servers: str | None,
        group_id: str,
        topics: list[str],
        *,
        group_instance_id: str | None = None,
        client_id: str | None = None,
        session_timeout_ms: int = 10000,
        rebalance_timeout_ms: int = 300000,
        heartbeat_interval_ms: int = 3000,
        retry_backoff_ms: int = 100,
        requests_topic: str = "coordinator-requests",
        responses_topic: str = "coordinator-responses",
        client: Any = None,
        partitions_for: Callable[[str], int | None] | None = None,
        on_assignment: Callable[[ClassicGroupMember, dict], None] | None = None,
        on_revoked: Callable[[ClassicGroupMember, dict], None] | None = None,
    ):
        self.bootstrap_servers = bootstrap_servers
        self.group_id = group_id
        self.topics = list(topics)
        self.group_instance_id = group_instance_id
        self.client_id = client_id or (
            client.client_id if client is not None else f"consumer-{group_id}-{uuid.uuid4().hex[:8]}"
        )
        self.session_timeout_ms = session_timeout_ms
        self.rebalance_timeout_ms = rebalance_timeout_ms
        self.heartbeat_interval_ms = heartbeat_interval_ms
        self.retry_backoff_ms = retry_backoff_ms
        self.requests_topic, self.responses_topic = requests_topic, responses_topic
        self.on_assignment, self.on_revoked = on_assignment, on_revoked
        self._client = client
        self._client_closed = False
        self._partitions_for = partitions_for
        self._metadata_consumer: KafkaConsumer | None = None

        self._cond = threading.Condition()
        self.state = UNJOINED
        self.generation = NO_GENERATION
        self.assignment: dict[str, list[int]] | None = None
        self.is_leader = False
        self.fatal_error: FatalGroupError | None = None
        self.join_sync_ms: list[float] = []
        self.first_join_sent: float | None = None  # time.perf_counter() of the very first JoinGroup
        self.synced_at: dict[int, float] = {}  # generation -> time.perf_counter() of its SyncGroup answer
        self.joins_sent = 0
        self.last_join_response: dict | None = None
        self._rejoin_needed = True
        self._rejoin_reason: str | None = None  # JoinGroup v8+ `reason`, as Java's rejoinReason
        self._stalled = False
        self._join_started: float | None = None
        self._closing = threading.Event()
        self._threads: list[threading.Thread] = []

    # ================================================================ lifecycle
    def start(self) -> ClassicGroupMember:
        if self._client is None:
            if self.bootstrap_servers is None:
                raise ValueError("a member without a client needs bootstrap_servers")
            self._client = CoordinatorClient(
                self.bootstrap_servers,
                self.client_id,
                requests_topic=self.requests_topic,
                responses_topic=self.responses_topic,
            )
        for name, target in (("membership", self._membership_loop), ("heartbeat", self._heartbeat_loop)):
            t = threading.Thread(target=target, name=f"{name}-{self.client_id}", daemon=True)
            t.start()
            self._threads.append(t)
        return self

    def close(self, leave: bool = True, timeout: float = 30.0) -> None:
        """Stop; a dynamic member in a group sends LeaveGroup first (static members never do, as
        Kafka's consumer since 2.3: their session timeout removes them)."""
        self._stop_threads()
        with self._cond:
            generation, state = self.generation, self.state
        if (
            leave
            and self.group_instance_id is None
            and generation.member_id
            and state != UNJOINED
            and self.fatal_error is None
        ):
            try:
                self._request(
                    "LeaveGroup",
                    LEAVE_VERSION,
                    {
                        "groupId": self.group_id,
                        "members": [
                            {
                                "memberId": generation.member_id,
                                "groupInstanceId": None,
                                "reason": "the consumer is being closed",
                            }
                        ],
                    },
                    timeout=timeout,
                    interruptible=False,
                )
            except ResponseTimeout:
                log.warning("%s: LeaveGroup got no answer", self.client_id)
        self._close_clients()

    def abandon(self) -> None:
        """Vanish as a killed process does: no LeaveGroup, no further request."""
        self._stop_threads()
        self._close_clients()

    def stall(self) -> None:
        """Simulate a consumer whose poll loop is busy: heartbeats go on, but it does not take part
        in a rebalance (does not rejoin) until `resume()`."""
        with self._cond:
            self._stalled = True

    def resume(self) -> None:
        with self._cond:
            self._stalled = False
            self._cond.notify_all()

    def _stop_threads(self) -> None:
        self._closing.set()
        with self._cond:
            self._cond.notify_all()
        for t in self._threads:
            if t is not threading.current_thread():
                t.join(timeout=30)

    def _close_clients(self) -> None:
        if self._client is not None and not self._client_closed:
            self._client_closed = True
            self._client.close()
        if self._metadata_consumer is not None:
            self._metadata_consumer.close()
            self._metadata_consumer = None

    def __enter__(self) -> ClassicGroupMember:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.close()

    # ================================================================ observing
    def wait_for(self, predicate: Callable[[ClassicGroupMember], bool], timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        with self._cond:
            while not predicate(self):
                if self.fatal_error is not None:
                    raise self.fatal_error
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(
                        f"{self.client_id}: condition not met in {timeout}s (state {self.state}, {self.generation})"
                    )
                self._cond.wait(min(left, 0.5))

    def wait_stable(self, min_generation: int = 1, timeout: float = 60.0) -> ClassicGroupMember:
        """Wait until the member is Stable in a generation >= `min_generation`."""
        self.wait_for(
            lambda m: m.state == STABLE and not m._rejoin_needed and m.generation.generation_id >= min_generation,
            timeout,
        )
        return self

    @property
    def member_id(self) -> str:
        return self.generation.member_id

    # ================================================================ requests
    def _request(self, api: str, version: int, body: dict, timeout: float, interruptible: bool = True) -> dict:
        """Send and await the answer; a close() interrupts the wait (the request stays sent)."""
        cid = self._client.send(api, version, body, key=self.group_id)
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            try:
                return self._client.wait(cid, max(0.0, min(left, 0.25)))["response"]
            except ResponseTimeout:
                if interruptible and self._closing.is_set():
                    raise _Closed() from None
                if left <= 0:
                    raise ResponseTimeout(f"no answer to {api} (correlation id {cid}) in {timeout}s") from None

    def _join_timeout_s(self) -> float:
        # Java's joinGroupTimeoutMs: the broker may hold JoinGroup for the rebalance timeout.
        return max(30.0, self.rebalance_timeout_ms / 1000 + 5.0)

    # ================================================================ membership
    def _membership_loop(self) -> None:
        try:
            self._prefetch_metadata()
            while True:
                with self._cond:
                    while not self._closing.is_set() and not (self._rejoin_needed and not self._stalled):
                        self._cond.wait(0.5)
                    if self._closing.is_set():
                        return
                try:
                    self._join_and_sync()
                except _Retry as r:
                    log.info("%s: %s; joining again", self.client_id, r)
                    if r.backoff:
                        self._closing.wait(self.retry_backoff_ms / 1000)
                except ResponseTimeout as e:
                    log.warning("%s: %s; joining again", self.client_id, e)
                    self._request_rejoin(f"no answer from the coordinator: {e}")
        except _Closed:
            return
        except FatalGroupError as e:
            log.error("%s: fatal: %s", self.client_id, e)
            self._fail(e)
        except Exception as e:  # noqa: BLE001 - surfaced to whoever waits on the member
            if not self._closing.is_set():
                log.exception("%s: membership loop failed", self.client_id)
                self._fail(FatalGroupError(Errors.UNKNOWN_SERVER_ERROR.code, f"client error {e!r}"))

    def _fail(self, error: FatalGroupError) -> None:
        with self._cond:
            self.fatal_error = error
            self.state = UNJOINED
            self._cond.notify_all()
        self._closing.set()

    def _prefetch_metadata(self) -> None:
        # A consumer knows its subscribed topics' metadata before it joins.
        for topic in self.topics:
            self.partitions_for(topic)

    def partitions_for(self, topic: str) -> int | None:
        """The topic's partition count from the broker (what a consumer's metadata says)."""
        if self._partitions_for is not None:
            return self._partitions_for(topic)
        if self._metadata_consumer is None:
            self._metadata_consumer = KafkaConsumer(
                bootstrap_servers=self.bootstrap_servers, group_id=None, client_id=f"{self.client_id}-metadata"
            )
        parts = self._metadata_consumer.partitions_for_topic(topic)
        return len(parts) if parts else None

    def _subscription_metadata(self) -> str:
        # What Kafka's consumer sends: version 3, owned partitions empty under the eager protocol
        # (they were revoked before the join), its generation, no rack.
        return encode_subscription(
            self.topics, None, 3, owned_partitions=[], generation_id=self.generation.generation_id
        )

    def _join_and_sync(self) -> None:
        with self._cond:
            self._rejoin_needed = False
            reason, self._rejoin_reason = self._rejoin_reason, None
            if self._join_started is None:
                self._join_started = time.perf_counter()
            previous, self.assignment = self.assignment, None
            self.state = REBALANCING
            generation = self.generation
        if previous is not None and self.on_revoked is not None:
            self.on_revoked(self, previous)

        self.joins_sent += 1
        if self.first_join_sent is None:
            self.first_join_sent = time.perf_counter()
        resp = self._request(
            "JoinGroup",
            JOIN_VERSION,
            {
                "groupId": self.group_id,
                "sessionTimeoutMs": self.session_timeout_ms,
                "rebalanceTimeoutMs": self.rebalance_timeout_ms,
                "memberId": generation.member_id,
                "groupInstanceId": self.group_instance_id,
                "protocolType": CONSUMER_PROTOCOL_TYPE,
                "protocols": [{"name": range_assignor.NAME, "metadata": self._subscription_metadata()}],
                "reason": reason,
            },
            timeout=self._join_timeout_s(),
        )
        self.last_join_response = resp
        self._handle_join_error(resp)
        if resp["protocolType"] is not None and resp["protocolType"] != CONSUMER_PROTOCOL_TYPE:
            raise FatalGroupError(Errors.INCONSISTENT_GROUP_PROTOCOL.code, "JoinGroup protocolType")
        generation = Generation(resp["generationId"], resp["memberId"], resp["protocolName"])
        leader = resp["leader"] == resp["memberId"]
        with self._cond:
            self.generation, self.is_leader, self.state = generation, leader, COMPLETING
            self._cond.notify_all()

        assignments = []
        if leader and not resp["skipAssignment"]:
            assignments = [
                {"memberId": m, "assignment": encode_assignment(a)} for m, a in self._assign(resp["members"]).items()
            ]
        sync = self._request(
            "SyncGroup",
            SYNC_VERSION,
            {
                "groupId": self.group_id,
                "generationId": generation.generation_id,
                "memberId": generation.member_id,
                "groupInstanceId": self.group_instance_id,
                "protocolType": CONSUMER_PROTOCOL_TYPE,
                "protocolName": generation.protocol,
                "assignments": assignments,
            },
            timeout=self._join_timeout_s(),
        )
        self._handle_sync_error(sync, generation)
        if (sync["protocolType"] is not None and sync["protocolType"] != CONSUMER_PROTOCOL_TYPE) or (
            sync["protocolName"] is not None and sync["protocolName"] != generation.protocol
        ):
            raise FatalGroupError(Errors.INCONSISTENT_GROUP_PROTOCOL.code, "SyncGroup protocol")
        assignment = decode_assignment(sync["assignment"]).as_dict()
        with self._cond:
            if self.generation != generation:
                raise _Retry("the generation changed during SyncGroup")
            now = time.perf_counter()
            self.join_sync_ms.append((now - self._join_started) * 1000)
            self.synced_at[generation.generation_id] = now
            self._join_started = None
            self.assignment = assignment
            self.state = STABLE
            self._cond.notify_all()
        log.info(
            "%s: generation %d (%s), leader=%s, assignment %s",
            self.client_id,
            generation.generation_id,
            generation.member_id,
            leader,
            assignment,
        )
        if self.on_assignment is not None:
            self.on_assignment(self, assignment)

    def _assign(self, members: list[dict]) -> dict[str, dict[str, list[int]]]:
        subscriptions = []
        for m in members:
            try:
                topics = decode_subscription(m["metadata"]).topics
            except SchemaError as e:
                raise FatalGroupError(
                    Errors.INCONSISTENT_GROUP_PROTOCOL.code,
                    f"member {m['memberId']} sent an unreadable subscription: {e}",
                ) from e
            subscriptions.append(
                range_assignor.MemberSubscription(m["memberId"], m.get("groupInstanceId"), tuple(topics))
            )
        return range_assignor.assign(subscriptions, self.partitions_for)

    def _reset_generation(self, reason: str, member_id: str = UNKNOWN_MEMBER_ID) -> None:
        with self._cond:
            self.generation = Generation(-1, member_id, None)
            self.state = UNJOINED
            self.is_leader = False
            self._rejoin_needed = True
            self._rejoin_reason = reason
            self._cond.notify_all()

    def _request_rejoin(self, reason: str) -> None:
        with self._cond:
            self._rejoin_needed = True
            self._rejoin_reason = reason
            self._cond.notify_all()

    def _handle_join_error(self, resp: dict) -> None:
        code = resp["errorCode"]
        if code == Errors.NONE.code:
            return
        name = Errors.for_code(code).name
        if code == Errors.MEMBER_ID_REQUIRED.code:
            self._reset_generation(f"need to re-join with the given member-id: {resp['memberId']}", resp["memberId"])
            raise _Retry(f"got member id {resp['memberId']} (MEMBER_ID_REQUIRED)")
        if code == Errors.UNKNOWN_MEMBER_ID.code:
            self._reset_generation(f"encountered {name} from JOIN_GROUP response")
            raise _Retry(f"JoinGroup: {name}")
        if code in FATAL_JOIN_ERRORS:
            raise FatalGroupError(code, "JoinGroup")
        self._request_rejoin(f"encountered {name} from JOIN_GROUP response")
        raise _Retry(f"JoinGroup: {name}", backoff=code in BACKOFF_ERRORS)

    def _handle_sync_error(self, resp: dict, generation: Generation) -> None:
        code = resp["errorCode"]
        if code == Errors.NONE.code:
            return
        name = Errors.for_code(code).name
        reason = f"encountered {name} from SYNC_GROUP response"
        if code in (Errors.FENCED_INSTANCE_ID.code, Errors.GROUP_AUTHORIZATION_FAILED.code):
            raise FatalGroupError(code, "SyncGroup")
        if code == Errors.UNKNOWN_MEMBER_ID.code:
            self._reset_generation(reason)
        elif code == Errors.ILLEGAL_GENERATION.code:
            self._reset_generation(reason, generation.member_id)
        else:
            self._request_rejoin(reason)
        raise _Retry(f"SyncGroup: {name}", backoff=code in BACKOFF_ERRORS)

    # ================================================================ heartbeats
    def _heartbeat_loop(self) -> None:
        interval = self.heartbeat_interval_ms / 1000
        pending: dict[int, tuple[Generation, float]] = {}
        next_at = time.monotonic()
        try:
            while not self._closing.is_set():
                for cid in list(pending):
                    sent_with, sent_at = pending[cid]
                    try:
                        resp = self._client.wait(cid, 0)["response"]
                    except ResponseTimeout:
                        if time.monotonic() - sent_at > 300:
                            del pending[cid]  # no answer will come; forget it
                        continue
                    del pending[cid]
                    self._handle_heartbeat(resp, sent_with)
                now = time.monotonic()
                if now >= next_at:
                    next_at = now + interval
                    with self._cond:
                        generation = self.generation if self.state in (COMPLETING, STABLE) else None
                    if generation is not None:
                        cid = self._client.send(
                            "Heartbeat",
                            HEARTBEAT_VERSION,
                            {
                                "groupId": self.group_id,
                                "generationId": generation.generation_id,
                                "memberId": generation.member_id,
                                "groupInstanceId": self.group_instance_id,
                            },
                            key=self.group_id,
                        )
                        pending[cid] = (generation, now)
                self._closing.wait(min(0.05, max(0.0, next_at - time.monotonic())))
        except Exception:  # noqa: BLE001 - the client was closed underneath
            if not self._closing.is_set():
                log.exception("%s: heartbeat loop failed", self.client_id)

    def _handle_heartbeat(self, resp: dict, sent_with: Generation) -> None:
        code = resp["errorCode"]
        if code == Errors.NONE.code:
            return
        name = Errors.for_code(code).name
        with self._cond:  # check and act at once: the membership thread may be starting a join
            # An answer for an older generation, or one arriving while the member is already
            # rejoining, says nothing about the current one.
            if self.generation != sent_with or self.state not in (COMPLETING, STABLE):
                return
            if code == Errors.REBALANCE_IN_PROGRESS.code:
                log.info("%s: group %s is rebalancing; rejoining", self.client_id, self.group_id)
                self._request_rejoin("group is already rebalancing")
            elif code == Errors.ILLEGAL_GENERATION.code:
                log.warning("%s: heartbeat: %s", self.client_id, name)
                self._reset_generation(f"encountered {name} from HEARTBEAT response", sent_with.member_id)
            elif code == Errors.UNKNOWN_MEMBER_ID.code:
                log.warning("%s: heartbeat: %s", self.client_id, name)
                self._reset_generation(f"encountered {name} from HEARTBEAT response")
            elif code == Errors.FENCED_INSTANCE_ID.code:
                self._fail(FatalGroupError(code, "Heartbeat"))
            else:
                log.warning("%s: heartbeat failed: %s", self.client_id, name)

    # ================================================================ offsets
    def commit(
        self, offsets: dict[tuple[str, int], int], metadata: str = "", timeout: float = 30.0
    ) -> dict[tuple[str, int], str]:
        """OffsetCommit v9 in the current generation; the error name per partition ("NONE" = ok)."""
        with self._cond:
            generation = self.generation
        topics: dict[str, list] = {}
        for (topic, partition), offset in sorted(offsets.items()):
            topics.setdefault(topic, []).append(
                {
                    "partitionIndex": partition,
                    "committedOffset": offset,
                    "committedLeaderEpoch": -1,
                    "committedMetadata": metadata,
                }
            )
        resp = self._request(
            "OffsetCommit",
            COMMIT_VERSION,
            {
                "groupId": self.group_id,
                "generationIdOrMemberEpoch": generation.generation_id,
                "memberId": generation.member_id,
                "groupInstanceId": self.group_instance_id,
                "topics": [{"name": t, "partitions": ps} for t, ps in topics.items()],
            },
            timeout=timeout,
        )
        return {
            (t["name"], p["partitionIndex"]): Errors.for_code(p["errorCode"]).name
            for t in resp["topics"]
            for p in t["partitions"]
        }

    def committed(
        self, partitions: list[tuple[str, int]] | None = None, timeout: float = 30.0
    ) -> dict[tuple[str, int], int]:
        """OffsetFetch v9 (requireStable, as Kafka's consumer): the committed offset of each
        partition (default: the member's assignment), -1 where none."""
        if partitions is None:
            partitions = [(t, p) for t, ps in (self.assignment or {}).items() for p in ps]
        topics: dict[str, list[int]] = {}
        for topic, partition in partitions:
            topics.setdefault(topic, []).append(partition)
        resp = self._request(
            "OffsetFetch",
            FETCH_VERSION,
            {
                "groups": [
                    {
                        "groupId": self.group_id,
                        "memberId": None,
                        "memberEpoch": -1,
                        "topics": [{"name": t, "partitionIndexes": ps} for t, ps in topics.items()],
                    }
                ],
                "requireStable": True,
            },
            timeout=timeout,
        )
        group = resp["groups"][0]
        if group["errorCode"] != Errors.NONE.code:
            raise FatalGroupError(group["errorCode"], "OffsetFetch")
        out = {}
        for t in group["topics"]:
            for p in t["partitions"]:
                if p["errorCode"] != Errors.NONE.code:
                    raise FatalGroupError(p["errorCode"], f"OffsetFetch {t['name']}-{p['partitionIndex']}")
                out[(t["name"], p["partitionIndex"])] = p["committedOffset"]
        return out
