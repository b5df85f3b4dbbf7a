"""Topic metadata, as the coordinators see it: which topics exist and how many partitions they have.

Kafka's coordinators read the broker's metadata cache: AddPartitionsToTxn rejects partitions that
do not exist (UNKNOWN_TOPIC_OR_PARTITION), markers are not written to deleted partitions, and
KIP-848 groups assign the partitions of their subscribed topics and rebalance when a topic grows.

Here the metadata must reach the core deterministically (a replayed batch must see what the
original saw), so it arrives as a request: the stream's metadata publisher reads the real broker's
metadata every `[stream] metadata_refresh_ms` and, when it changed, appends one UpdateMetadata
request (Kafka's name for the controller→broker metadata push, API key 6, in a reduced form) to
the request topic with the broadcast key; the stream delivers it to every coordinator partition.

Until the first UpdateMetadata arrives, `available` is False and callers should not reject
anything for being unknown.
"""

from __future__ import annotations

from .chunks import UNCHANGED
from .component import Component
from .envelope import BROADCAST_KEY  # noqa: F401 - the record key exploded to every partition
from .messages import Request
from .result import CoordinatorResult

ZERO_UUID = "AAAAAAAAAAAAAAAAAAAAAA"

# The UpdateMetadata request's fields: messages/service/UpdateMetadataRequest.json (the service's own
# reduced form; its row is in coordinator/protocol/table.py).


class TopicMetadata(Component):
    name = "metadata"
    HANDLERS = {"UpdateMetadata": lambda c, request: c.update_metadata(request)}

    def __init__(self, partition):
        super().__init__(partition)
        # What runs when the topics change (Kafka's GroupMetadataManager.onMetadataUpdate): wired
        # by the partition when it builds its components.
        self.listeners: list = []
        # The stored metadata, read when first needed: a cluster's topic list can be long, and a
        # batch that does not look at it should not pay for decoding and re-encoding it.
        self._fetch = None
        self._available = False
        self._topics: dict[str, int] = {}  # topic -> number of partitions
        self._topic_ids: dict[str, str] = {}
        self._topic_racks: dict[str, list[list[str]]] = {}  # topic -> racks of each partition, where known
        self._max_message_bytes: dict[str, int] = {}  # topic -> max.message.bytes, where known
        # Whether the stored chunk must be rewritten: reading the metadata (every OffsetCommit,
        # OffsetDelete, TxnOffsetCommit and AddPartitionsToTxn does) does not change it.
        self._changed = True
        self._names_by_id: tuple[dict, dict] | None = None  # (the topic_ids it was built from, id -> name)
        # During the change hooks of an UpdateMetadata: the topic ids before it (not stored).
        self.previous_topic_ids: dict[str, str] = {}

    def _loaded(self) -> TopicMetadata:
        if self._fetch is not None:
            fetch, self._fetch = self._fetch, None
            stored = fetch()
            if stored is not None:
                self.load_json(stored)
            self._changed = False
        return self

    @property
    def available(self) -> bool:
        return self._loaded()._available

    @property
    def topics(self) -> dict[str, int]:
        return self._loaded()._topics

    @property
    def topic_ids(self) -> dict[str, str]:
        return self._loaded()._topic_ids

    @property
    def topic_racks(self) -> dict[str, list[list[str]]]:
        return self._loaded()._topic_racks

    @property
    def max_message_bytes(self) -> dict[str, int]:
        return self._loaded()._max_message_bytes

    # ------------------------------------------------------------------ queries
    def partitions(self, topic: str) -> int | None:
        return self.topics.get(topic)

    def topic_id(self, topic: str) -> str | None:
        return self.topic_ids.get(topic)

    def topic_name(self, topic_id: str) -> str | None:
        """The topic with this id (Kafka's Uuid as 22 characters of url-safe base64), if known
        (`metadataCache.getTopicName`; the zero Uuid names no topic)."""
        ids = self.topic_ids
        if self._names_by_id is None or self._names_by_id[0] is not ids:
            self._names_by_id = (ids, {tid: name for name, tid in ids.items() if tid != ZERO_UUID})
        return self._names_by_id[1].get(topic_id)

    def known_partitions(self) -> dict[str, int] | None:
        """Topic -> number of partitions; None while no metadata has arrived (anything exists)."""
        return self.topics if self.available else None

    def exists(self, topic: str, partition: int | None = None) -> bool:
        """Whether a topic (partition) exists; True for anything while no metadata has arrived."""
        known = self.known_partitions()
        if known is None:
            return True
        n = known.get(topic)
        return n is not None and (partition is None or 0 <= partition < n)

    # ------------------------------------------------------------------ API
    def update_metadata(self, request: Request) -> CoordinatorResult:
        new = {t["topicName"]: t["numPartitions"] for t in request.body["topicStates"]}
        ids = {t["topicName"]: t["topicId"] for t in request.body["topicStates"]}
        old = self.topics  # (loads the stored metadata first)
        self.previous_topic_ids = self.topic_ids if self.available else {}
        self._max_message_bytes = {
            t["topicName"]: t["maxMessageBytes"] for t in request.body["topicStates"] if t["maxMessageBytes"] >= 0
        }
        racks = {
            t["topicName"]: t["partitionRacks"] for t in request.body["topicStates"] if t["partitionRacks"] is not None
        }
        # A topic re-created under the same name has a new id: that is a change too (and racks
        # are in the KIP-848 metadata hash).
        changed = not self.available or new != old or ids != self.topic_ids or racks != self.topic_racks
        self._topics, self._topic_ids, self._topic_racks, self._available = new, ids, racks, True
        self._changed = True
        # No response: a broadcast from the stream's own publisher, nobody awaits an answer.
        result = CoordinatorResult()
        if changed:
            for listener in self.listeners:
                result.merge(listener(old, new))
        return result

    # ------------------------------------------------------------------ snapshot
    def to_json(self) -> dict:
        out = {
            "available": self.available,
            "topics": self.topics,
            "topicIds": self.topic_ids,
            "maxMessageBytes": self.max_message_bytes,
        }
        if self.topic_racks:
            out["topicRacks"] = self.topic_racks
        return out

    def load_json(self, d: dict) -> None:
        self._fetch = None
        self._available = d["available"]
        self._topics = d["topics"]
        self._topic_ids = d.get("topicIds", {})
        self._max_message_bytes = d.get("maxMessageBytes", {})
        self._topic_racks = d.get("topicRacks", {})  # absent before racks were published
        self._changed = True

    # Chunked storage: decoded on first use, rewritten only by a batch that changed it.
    def bind_rest(self, fetch) -> None:
        self._fetch = fetch
        self._changed = False

    def rest_json(self):
        return UNCHANGED if self._fetch is not None or not self._changed else self.to_json()

    # replay: metadata is not coordinator state; the publisher sends it again (no state-log records).
