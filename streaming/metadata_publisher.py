"""Publishes the real broker's topic metadata on the internal channel, for the coordinators.

Every `[stream] metadata_refresh_ms` it lists the broker's topics and partition counts; when they
differ from what it last published (and once at start), it appends one UpdateMetadata request with
the broadcast key, signed with the internal key (streaming/trust.py), which the query delivers to
every coordinator partition. Going through a topic keeps the core deterministic: a replayed batch
sees the same metadata. Each broadcast is stamped (`metadata-publisher`, the driver's epoch, a
sequence): a coordinator partition refuses one older than the newest it applied, so a copy of an
old broadcast written again cannot move the metadata back (coordinator/channel.py).
"""

from __future__ import annotations

import json
import logging
import threading

from kafka import KafkaAdminClient, KafkaProducer

from coordinator.metadata import BROADCAST_KEY

from .trust import Stamper, signed_headers

log = logging.getLogger(__name__)
PUBLISHER = "metadata-publisher"


def read_topic_metadata(admin: KafkaAdminClient, reply_topic_prefix: str | None = None) -> list[dict]:
    """Every topic with its id and partition count, and when brokers have racks the racks of each
    partition's replicas (the KIP-848 metadata hash covers them); topics whose name starts with
    `reply_topic_prefix` (clients' reply topics) also with their max.message.bytes."""
    broker_racks = _broker_racks(admin)
    topics = []
    for t in admin.describe_topics():
        if t.get("error_code") or t.get("is_internal"):
            continue
        topic_id = t.get("topic_id")
        topic = {"topicName": t["name"], "topicId": _uuid_base64(topic_id), "numPartitions": len(t["partitions"])}
        if broker_racks:
            by_index = {p["partition_index"]: p.get("replica_nodes") or [] for p in t["partitions"]}
            topic["partitionRacks"] = [
                sorted(broker_racks[r] for r in by_index.get(i, []) if r in broker_racks)
                for i in range(len(t["partitions"]))
            ]
        topics.append(topic)
    reply_topics = [t for t in topics if reply_topic_prefix and t["topicName"].startswith(reply_topic_prefix)]
    if reply_topics:
        limits = _max_message_bytes(admin, [t["topicName"] for t in reply_topics])
        for t in reply_topics:
            t["maxMessageBytes"] = limits.get(t["topicName"], -1)
    return sorted(topics, key=lambda t: t["topicName"])


def _broker_racks(admin: KafkaAdminClient) -> dict[int, str]:
    """broker id -> broker.rack, for the brokers that have one."""
    return {b["broker_id"]: b["rack"] for b in admin.describe_cluster().get("brokers", []) if b.get("rack")}


def _max_message_bytes(admin: KafkaAdminClient, names: list[str]) -> dict[str, int]:
    from kafka.admin import ConfigResource, ConfigResourceType

    result = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, n) for n in names])
    out = {}
    for name, configs in result.get("topic", {}).items():
        value = configs.get("max.message.bytes", {}).get("value")
        if value is not None:
            out[name] = min(int(value), 2**31 - 1)
    return out


def _uuid_base64(topic_id) -> str:
    """Kafka prints a Uuid as 22 characters of url-safe base64."""
    import base64
    import uuid

    if not topic_id:
        return "AAAAAAAAAAAAAAAAAAAAAA"
    raw = uuid.UUID(str(topic_id)).bytes
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def update_metadata_request(topics: list[dict], correlation_id: int) -> bytes:
    return json.dumps(
        {
            "apiKey": "UpdateMetadata",
            "apiVersion": 0,
            "correlationId": correlation_id,
            "clientId": "coordinator-metadata-publisher",
            "request": {"topicStates": topics},
        }
    ).encode()


class MetadataPublisher(threading.Thread):
    def __init__(
        self,
        bootstrap: str,
        internal_topic: str,
        interval_ms: int,
        internal_key: bytes,
        reply_topic_prefix: str | None = None,
        epoch: int = 0,
    ):
        super().__init__(name="metadata-publisher", daemon=True)
        self.reply_topic_prefix = reply_topic_prefix
        self.bootstrap, self.internal_topic, self.interval = bootstrap, internal_topic, interval_ms / 1000
        self._key = internal_key
        self._halt = threading.Event()
        self._last: list[dict] | None = None
        self._admin, self._producer = self._connect()
        self._sent = 0
        self._stamps = Stamper(PUBLISHER, epoch)

    def _connect(self) -> tuple[KafkaAdminClient, KafkaProducer]:
        return (
            KafkaAdminClient(bootstrap_servers=self.bootstrap, client_id="coordinator-metadata"),
            KafkaProducer(bootstrap_servers=self.bootstrap, acks="all", client_id="coordinator-metadata"),
        )

    def _reconnect(self) -> None:
        """New clients: kafka-python's admin client does not always recover from a broker that
        went away ("NodeNotReadyError: No node_id provided" forever after)."""
        for client in (self._admin, self._producer):
            try:
                client.close(timeout=1) if isinstance(client, KafkaProducer) else client.close()
            except Exception as e:  # noqa: BLE001 - closing a broken client
                log.debug("closing %s: %s", client, e)
        self._admin, self._producer = self._connect()

    def publish_if_changed(self) -> bool:
        topics = read_topic_metadata(self._admin, self.reply_topic_prefix)
        if topics == self._last:
            return False
        self._sent += 1
        key, value = BROADCAST_KEY.encode(), update_metadata_request(topics, self._sent)
        headers = signed_headers(self._key, key, value, self._stamps.next())
        self._producer.send(self.internal_topic, key=key, value=value, headers=headers)
        self._producer.flush()
        self._last = topics
        log.info("published topic metadata: %d topics", len(topics))
        return True

    def run(self) -> None:
        failed = False
        while not self._halt.wait(self.interval):
            try:
                if failed:
                    self._reconnect()
                self.publish_if_changed()
                if failed:
                    log.info("metadata refresh works again")
                failed = False
            except Exception as e:  # noqa: BLE001 - the broker may be unavailable for a while
                log.warning("metadata refresh failed (retried every %.1f s with new clients): %s", self.interval, e)
                failed = True

    def stop(self) -> None:
        self._halt.set()
        self.join(timeout=10)
        self._admin.close()
        self._producer.close()
