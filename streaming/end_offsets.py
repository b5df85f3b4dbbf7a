"""The driver's end-offsets responder: partitions' latest offsets for DescribeShareGroupOffsets v1.

Kafka's group coordinator computes a share-partition's lag (KIP-1226) with the partition's end
offset, from a ListOffsets to its leader (`PartitionMetadataClient.listLatestOffsets`). The core is
sans-IO and must answer the same on replay, so it asks here instead
(coordinator/group/share/offsets_admin.py): a parked describe's coordinator partition G writes an
internal request `ShareEndOffsetsQuery` on the internal channel, signed and stamped as all its
internal requests, keyed `__share_end_offsets__-G`. The query drops such records before the state
function (streaming/query.py): no coordinator partition runs for them. This thread, in the driver,
follows the internal channel, verifies each query's MAC (a forged one is ignored), sends ListOffsets
(latest, read_uncommitted: as Kafka's) to the partitions' leaders and writes the answer as an
internal request `ShareEndOffsetsAnswer` keyed to G, signed with the internal key and stamped
(`end-offsets-responder`, this driver's epoch, a sequence), as the metadata publisher writes its
broadcasts. G reads the answer in a later micro-batch; a replayed batch reads the same record, so
the lag it computes is the same. A query the sink writes twice (a replayed batch) is answered
twice; G uses the first answer.

Each partition's answer is what Kafka's NetworkPartitionMetadataClient completes its future with:
the offset, or the partition's error in the ListOffsets answer, LEADER_NOT_AVAILABLE for a partition
without a leader, UNKNOWN_TOPIC_OR_PARTITION for one the answer leaves out, and after
`MAX_ATTEMPTS` tries REQUEST_TIMED_OUT (the request timed out) or NETWORK_EXCEPTION (the broker
went away); anything else UNKNOWN_SERVER_ERROR. Queries written while the responder was not running
(before the driver started it, or while it reconnects) are not answered: their describe completes
at `share.admin.timeout.ms` with REQUEST_TIMED_OUT on those partitions, as a Kafka broker whose
ListOffsets timed out.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable
from typing import Any

from coordinator.group.share.offsets_admin import END_OFFSETS_KEY_PREFIX, END_OFFSETS_QUERY
from coordinator.routing import key_for_partition

from .topic_follower import FETCH_MAX_WAIT_MS, run_reconnecting
from .trust import MAC_HEADER, STAMP_HEADER, Stamper, signed_headers, verify

log = logging.getLogger(__name__)

PUBLISHER = "end-offsets-responder"
ANSWER = "ShareEndOffsetsAnswer"
CLIENT_ID = "coordinator-end-offsets-responder"
# Kafka's error codes, as NetworkPartitionMetadataClient reports them.
UNKNOWN_SERVER_ERROR, UNKNOWN_TOPIC_OR_PARTITION, LEADER_NOT_AVAILABLE = -1, 3, 5
REQUEST_TIMED_OUT, NETWORK_EXCEPTION = 7, 13
# NetworkPartitionMetadataClient's retries of a ListOffsets that timed out or was disconnected.
MAX_ATTEMPTS = 5

TopicPartition = tuple[str, int]
# (offset, error code)
OffsetResult = tuple[int, int]


def is_query_key(key: str | bytes | None) -> bool:
    if key is None:
        return False
    text = key.decode("utf-8", "replace") if isinstance(key, bytes | bytearray) else key
    return text.startswith(END_OFFSETS_KEY_PREFIX)


def query_of(
    internal_key: bytes, key: bytes | None, value: bytes | None, headers: Iterable[tuple[str, bytes]]
) -> dict | None:
    """The body of an end-offsets query on the internal channel, or None: not one, or its MAC does
    not verify (a forged record: anyone may write to the topic), or not the query's shape."""
    if not is_query_key(key):
        return None
    found = dict(headers or ())
    if not verify(internal_key, key, value, found.get(MAC_HEADER), found.get(STAMP_HEADER)):
        log.warning("an end-offsets query without a valid %s header: ignored", MAC_HEADER)
        return None
    try:
        envelope = json.loads(value or b"")
        body = envelope["request"]
        if envelope["apiKey"] != END_OFFSETS_QUERY:
            return None
        query = {
            "queryId": int(body["queryId"]),
            "fromPartition": int(body["fromPartition"]),
            "topics": [
                {"topicName": str(t["topicName"]), "partitions": [int(p) for p in t["partitions"]]}
                for t in body["topics"]
            ],
        }
    except (ValueError, KeyError, TypeError):
        return None
    return query


def wanted(queries: Iterable[dict]) -> set[TopicPartition]:
    return {(t["topicName"], p) for q in queries for t in q["topics"] for p in t["partitions"]}


def answer_record(
    query: dict, offsets: dict[TopicPartition, OffsetResult], partitions: int, internal_key: bytes, stamp: bytes
) -> tuple[bytes, bytes, list[tuple[str, bytes]]]:
    """(key, value, headers) of the ShareEndOffsetsAnswer to `query`: keyed to the asking coordinator
    partition, signed and stamped. Every partition asked is answered (UNKNOWN_TOPIC_OR_PARTITION if
    `offsets` has nothing for it)."""
    topics = [
        {
            "topicName": t["topicName"],
            "partitions": [
                dict(
                    zip(
                        ("partitionIndex", "offset", "errorCode"),
                        (p, *offsets.get((t["topicName"], p), (-1, UNKNOWN_TOPIC_OR_PARTITION))),
                        strict=True,
                    )
                )
                for p in t["partitions"]
            ],
        }
        for t in query["topics"]
    ]
    envelope = {
        "apiKey": ANSWER,
        "apiVersion": 0,
        "correlationId": query["queryId"] % 2**31,
        "clientId": CLIENT_ID,
        "request": {"queryId": query["queryId"], "topics": topics},
    }
    key = key_for_partition(query["fromPartition"], partitions).encode()
    value = json.dumps(envelope, separators=(",", ":")).encode()
    return key, value, signed_headers(internal_key, key, value, stamp)


class ListOffsetsFailed(Exception):
    """A ListOffsets to one leader that got no answer: `error` is the Kafka error it counts as."""

    def __init__(self, error: int, why: str):
        super().__init__(why)
        self.error = error


def latest_offsets(
    tps: set[TopicPartition],
    leaders: dict[TopicPartition, int | None],
    send: Callable[[int, list[TopicPartition]], Any],
    backoff_s: Callable[[int], float] = lambda attempt: min(0.1 * 2**attempt, 1.0),
) -> dict[TopicPartition, OffsetResult]:
    """NetworkPartitionMetadataClient.listLatestOffsets: one ListOffsets per leader (`send(node,
    partitions)` returns kafka-python's ListOffsetsResponse or raises `ListOffsetsFailed`), a
    failure that is a timeout or a disconnection retried up to MAX_ATTEMPTS times."""
    out: dict[TopicPartition, OffsetResult] = {}
    by_leader: dict[int, list[TopicPartition]] = {}
    for tp in sorted(tps):
        leader = leaders.get(tp)
        if leader is None or leader < 0:
            out[tp] = (-1, LEADER_NOT_AVAILABLE)
        else:
            by_leader.setdefault(leader, []).append(tp)
    for node, asked in sorted(by_leader.items()):
        for attempt in range(MAX_ATTEMPTS):
            try:
                response = send(node, asked)
            except ListOffsetsFailed as e:
                retriable = e.error in (REQUEST_TIMED_OUT, NETWORK_EXCEPTION)
                if retriable and attempt + 1 < MAX_ATTEMPTS:
                    time.sleep(backoff_s(attempt))
                    continue
                log.warning(
                    "ListOffsets to node %s failed (%s): error %s for %d partitions", node, e, e.error, len(asked)
                )
                out.update({tp: (-1, e.error) for tp in asked})
                break
            answered = {
                (t.name, p.partition_index): (int(p.offset), int(p.error_code))
                for t in response.topics
                for p in t.partitions
            }
            out.update({tp: answered.get(tp, (-1, UNKNOWN_TOPIC_OR_PARTITION)) for tp in asked})
            break
    return out


class EndOffsetsResponder(threading.Thread):
    """The driver's thread: follows the internal channel from its end, answers the end-offsets
    queries (all those one poll returns with one ListOffsets per leader)."""

    POLL_MS = 1000
    # Queries answered lately (the same query written again by a replayed batch is not asked again).
    REMEMBERED = 1024

    def __init__(
        self,
        bootstrap: str,
        internal_topic: str,
        partitions: int,
        internal_key: bytes,
        epoch: int = 0,
        request_timeout_ms: int = 5000,
    ):
        super().__init__(name=PUBLISHER, daemon=True)
        self.bootstrap, self.internal_topic, self.partitions = bootstrap, internal_topic, partitions
        self._key = internal_key
        self._stamps = Stamper(PUBLISHER, epoch)
        self.request_timeout_ms = request_timeout_ms
        self._halt = threading.Event()
        self._consumer: Any = None
        self._producer: Any = None
        self._admin: Any = None
        self._answered: OrderedDict[tuple[int, int], None] = OrderedDict()
        self.answers_sent = 0
        self.ready = threading.Event()  # set once it follows the channel

    # ------------------------------------------------------------------ connections
    def _connect(self) -> None:
        from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition

        consumer = KafkaConsumer(
            bootstrap_servers=self.bootstrap,
            client_id=CLIENT_ID,
            enable_auto_commit=False,
            group_id=None,
            # A fetch returns as soon as a record arrives: a long wait only spaces the idle fetches
            # (the followers' wait, streaming/topic_follower.py).
            fetch_max_wait_ms=FETCH_MAX_WAIT_MS,
        )
        parts = consumer.partitions_for_topic(self.internal_topic) or {0}
        tps = [TopicPartition(self.internal_topic, p) for p in sorted(parts)]
        consumer.assign(tps)
        consumer.seek_to_end(*tps)
        for tp in tps:
            consumer.position(tp)  # resolve the end now: what is written from here on is read
        self._consumer = consumer
        self._producer = KafkaProducer(bootstrap_servers=self.bootstrap, acks="all", client_id=CLIENT_ID)
        self._admin = KafkaAdminClient(
            bootstrap_servers=self.bootstrap, client_id=CLIENT_ID, request_timeout_ms=self.request_timeout_ms
        )
        self.ready.set()

    def _close(self) -> None:
        for client in (self._consumer, self._producer, self._admin):
            if client is None:
                continue
            try:
                client.close()
            except Exception as e:  # noqa: BLE001 - closing a broken client
                log.debug("closing %s: %s", client, e)
        self._consumer = self._producer = self._admin = None
        self.ready.clear()

    # ------------------------------------------------------------------ the broker
    def _leaders(self, tps: set[TopicPartition]) -> dict[TopicPartition, int | None]:
        # kafka-python's admin client has no public "leaders of these partitions"; its network
        # manager is what its own list_partition_offsets uses (as streaming/txn_markers.py).
        admin = self._admin
        metadata = admin._manager.run(admin._get_cluster_metadata, sorted({t for t, _ in tps}))
        found: dict[TopicPartition, int | None] = {}
        for topic in metadata.get("topics", ()):
            for p in topic.get("partitions", ()):
                tp = (topic["name"], p["partition_index"])
                if tp in tps:
                    found[tp] = p["leader_id"] if p["leader_id"] >= 0 else None
        return found

    def _send(self, node: int, tps: list[TopicPartition]):
        from kafka import TopicPartition as KafkaTopicPartition
        from kafka import errors
        from kafka.admin import KafkaAdminClient
        from kafka.protocol.consumer.offsets import OffsetSpec

        # read_uncommitted, timestamp LATEST, as NetworkPartitionMetadataClient.createListOffsetsRequest
        request = KafkaAdminClient._list_partition_offsets_request(
            {KafkaTopicPartition(t, p): OffsetSpec.LATEST for t, p in tps}, 0
        )
        admin = self._admin

        async def send():
            return await admin._manager.send(request, node_id=node, request_timeout_ms=self.request_timeout_ms)

        try:
            return admin._manager.run(send)
        except errors.KafkaTimeoutError as e:
            raise ListOffsetsFailed(REQUEST_TIMED_OUT, str(e)) from e
        except (errors.KafkaConnectionError, errors.NodeNotReadyError, ConnectionError) as e:
            raise ListOffsetsFailed(NETWORK_EXCEPTION, str(e)) from e
        except errors.KafkaError as e:
            raise ListOffsetsFailed(UNKNOWN_SERVER_ERROR, str(e)) from e

    # ------------------------------------------------------------------ one round
    def answer(self, queries: list[dict]) -> int:
        """Look the queries' partitions up and write one answer each; returns how many were sent."""
        queries = [q for q in queries if (q["fromPartition"], q["queryId"]) not in self._answered]
        if not queries:
            return 0
        tps = wanted(queries)
        broken: Exception | None = None
        try:
            offsets = latest_offsets(tps, self._leaders(tps), self._send)
        except Exception as e:  # noqa: BLE001 - the broker cannot be reached: answered, then new clients
            broken = e
            offsets = {tp: (-1, NETWORK_EXCEPTION) for tp in tps}
        for q in queries:
            key, value, headers = answer_record(q, offsets, self.partitions, self._key, self._stamps.next())
            self._producer.send(self.internal_topic, key=key, value=value, headers=headers)
            self._answered[(q["fromPartition"], q["queryId"])] = None
            while len(self._answered) > self.REMEMBERED:
                self._answered.popitem(last=False)
        self._producer.flush()
        self.answers_sent += len(queries)
        if broken is not None:
            raise broken  # run() reconnects (kafka-python's admin client may not recover on its own)
        return len(queries)

    def run_once(self) -> int:
        queries = []
        for records in self._consumer.poll(timeout_ms=self.POLL_MS).values():
            for r in records:
                if not is_query_key(r.key):
                    continue
                q = query_of(self._key, r.key, r.value, r.headers)
                if q is not None:
                    queries.append(q)
        return self.answer(queries) if queries else 0

    def run(self) -> None:
        run_reconnecting(self, "end-offsets answers")

    def stop(self) -> None:
        self._halt.set()
        if self.ident is not None:
            self.join(timeout=10)
