"""Publishes the real broker's topic metadata on the internal channel, for the coordinators.

Every `[stream] metadata_refresh_ms` it lists the broker's topics and partition counts; when they
differ from what it last published (and once at start), it appends one UpdateMetadata request with
the broadcast key, signed with the internal key (streaming/trust.py), which the query delivers to
every coordinator partition. Going through a topic keeps the core deterministic: a replayed batch
sees the same metadata. Each broadcast is stamped (`metadata-publisher`, the driver's epoch, a
sequence): a coordinator partition refuses one older than the newest it applied, so a copy of an
old broadcast written again cannot move the metadata back (coordinator/channel.py).

`BroadcastPublisher` is that path (read, compare, sign, stamp, send, reconnect) for any snapshot of
the broker; the ACL publisher (streaming/acl_publisher.py) is the other one.
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


class BroadcastPublisher(threading.Thread):
    """A driver thread that reads a snapshot from the broker with an admin client and, at start
    (`publish_if_changed` before the query starts) and whenever the snapshot differs from the last
    one published, appends it as one internal request with the broadcast key: signed with the
    internal key and stamped (`publisher`, this driver's epoch, a sequence from 0), which the query
    delivers to every coordinator partition. A failed read or send is retried every interval with
    new clients. Subclasses say what they read (`read`), how it is sent (`request`) and logged."""

    publisher = "broadcast-publisher"
    what = "refresh"  # in the log lines: "<what> failed", "<what> works again"

    def __init__(
        self,
        bootstrap: str,
        internal_topic: str,
        interval_ms: int,
        internal_key: bytes,
        epoch: int = 0,
        admin_config: dict | None = None,
    ):
        """`bootstrap`: the service's listener, where the internal topic is written; `admin_config`:
        kafka-python settings of the admin client that reads the broker (its own bootstrap servers,
        security protocol, SASL and TLS settings; default: the service's listener)."""
        super().__init__(name=self.publisher, daemon=True)
        self.bootstrap, self.internal_topic, self.interval = bootstrap, internal_topic, interval_ms / 1000
        self._admin_config = {"bootstrap_servers": bootstrap, **(admin_config or {})}
        self._key = internal_key
        self._halt = threading.Event()
        self._last = None
        self._admin, self._producer = self._connect()
        self._sent = 0
        self._stamps = Stamper(self.publisher, epoch)

    # ------------------------------------------------------------- what a subclass says
    def read(self, admin):
        """The snapshot to publish (compared with ==), read with `admin` (None for a publisher that
        reads no broker)."""
        raise NotImplementedError

    def request(self, snapshot, correlation_id: int) -> bytes:
        """The internal request carrying `snapshot`."""
        raise NotImplementedError

    def describe(self, snapshot) -> str:
        return "published"

    # ------------------------------------------------------------------- the common path
    def _connect(self) -> tuple[KafkaAdminClient | None, KafkaProducer]:
        return (
            KafkaAdminClient(client_id=f"coordinator-{self.publisher}", **self._admin_config),
            KafkaProducer(bootstrap_servers=self.bootstrap, acks="all", client_id=f"coordinator-{self.publisher}"),
        )

    def _reconnect(self) -> None:
        """New clients: kafka-python's admin client does not always recover from a broker that
        went away ("NodeNotReadyError: No node_id provided" forever after)."""
        for client in (self._admin, self._producer):
            if client is None:
                continue
            try:
                client.close(timeout=1) if isinstance(client, KafkaProducer) else client.close()
            except Exception as e:  # noqa: BLE001 - closing a broken client
                log.debug("closing %s: %s", client, e)
        self._admin, self._producer = self._connect()

    def publish_if_changed(self) -> bool:
        snapshot = self.read(self._admin)
        if snapshot == self._last:
            return False
        self._sent += 1
        key, value = BROADCAST_KEY.encode(), self.request(snapshot, self._sent)
        headers = signed_headers(self._key, key, value, self._stamps.next())
        self._producer.send(self.internal_topic, key=key, value=value, headers=headers)
        self._producer.flush()
        self._last = snapshot
        log.info("%s", self.describe(snapshot))
        return True

    def run(self) -> None:
        failed = False
        while not self._halt.wait(self.interval):
            try:
                if failed:
                    self._reconnect()
                self.publish_if_changed()
                if failed:
                    log.info("%s works again", self.what)
                failed = False
            except Exception as e:  # noqa: BLE001 - the broker may be unavailable for a while
                log.warning("%s failed (retried every %.1f s with new clients): %s", self.what, self.interval, e)
                failed = True

    def stop(self) -> None:
        self._halt.set()
        if self.ident is not None:  # started
            self.join(timeout=10)
        if self._admin is not None:
            self._admin.close()
        self._producer.close()


class MetadataPublisher(BroadcastPublisher):
    """The broker's topics (`read_topic_metadata`) as UpdateMetadata."""

    publisher = PUBLISHER
    what = "metadata refresh"

    def __init__(self, *args, reply_topic_prefix: str | None = None, **kwargs):
        self.reply_topic_prefix = reply_topic_prefix
        super().__init__(*args, **kwargs)

    def read(self, admin: KafkaAdminClient) -> list[dict]:
        return read_topic_metadata(admin, self.reply_topic_prefix)

    def request(self, snapshot: list[dict], correlation_id: int) -> bytes:
        return update_metadata_request(snapshot, correlation_id)

    def describe(self, snapshot: list[dict]) -> str:
        return f"published topic metadata: {len(snapshot)} topics"
