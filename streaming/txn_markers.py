"""Real transaction markers ([txn] markers = "broker"): WriteTxnMarkers to the data partitions' leaders.

The core decides the markers (coordinator/txn/markers.py `marker_record`: one DataRecord per data
partition, in the batch that writes the Prepare* record). In "json" mode the sink writes them as
JSON records with a `__txn_marker` header, for the project's own JSON clients. In "broker" mode the
state function hands them to `BrokerMarkerWriter.write` instead, which sends Kafka's
WriteTxnMarkers v1 (as TransactionMarkerChannelManager does) to each partition's leader and waits
for every partition's answer before the batch's outputs are returned. The broker then appends a
real control batch (COMMIT/ABORT) that every read_committed consumer honours.

Why synchronously, in the state function: the core writes Complete* at the start of the NEXT
micro-batch (coordinator/txn/marker_channel.py), i.e. once this batch committed, which now is after
the broker acknowledged the markers: the same guarantee as in "json" mode (a transaction's next
one cannot start, nor write data, before its markers are in the log). A replayed batch re-sends
the same markers; the broker appends a second control batch, which no reader counts (a marker ends
the producer's open transaction on the partition; with none open it changes nothing).

The answers, as in TransactionMarkerRequestCompletionHandler:
- NONE: done;
- UNKNOWN_TOPIC_OR_PARTITION, NOT_LEADER_OR_FOLLOWER, NOT_ENOUGH_REPLICAS(_AFTER_APPEND),
  REQUEST_TIMED_OUT, KAFKA_STORAGE_ERROR, or no answer: retried (leaders looked up again) until
  `timeout_s`, then the batch fails and the query restarts (its replay sends the markers again);
  a partition the metadata no longer lists is dropped (Kafka drops markers of deleted partitions);
- INVALID_PRODUCER_EPOCH, TRANSACTION_COORDINATOR_FENCED, PRODUCER_FENCED: a newer producer or
  coordinator already owns the partition's producer state: the marker is abandoned;
- anything else (CORRUPT_MESSAGE, MESSAGE_TOO_LARGE, UNSUPPORTED_VERSION, ...): an error.

The broker needs transaction.partition.verification.enable=false and transaction.version=1
(deploy/kafka_local.py says why). coordinatorEpoch is always 0: the service's coordinator
partitions have no epoch the broker would know, and the broker only fences a marker whose
coordinatorEpoch is below the last one it saw for the producer.
"""

from __future__ import annotations

import logging
import time
from collections import defaultdict

from coordinator.txn.markers import parse_marker

log = logging.getLogger(__name__)

RETRIABLE = {3, 6, 19, 20, 7, 56}  # UNKNOWN_TOPIC_OR_PARTITION, NOT_LEADER_OR_FOLLOWER,
# NOT_ENOUGH_REPLICAS, NOT_ENOUGH_REPLICAS_AFTER_APPEND, REQUEST_TIMED_OUT, KAFKA_STORAGE_ERROR
ABANDON = {47, 52, 90}  # INVALID_PRODUCER_EPOCH, TRANSACTION_COORDINATOR_FENCED, PRODUCER_FENCED
COORDINATOR_EPOCH = 0


class MarkerWriteError(RuntimeError):
    pass


def markers_of(data_records) -> list[dict]:
    """The marker decisions among a batch's DataRecords:
    [{"topic", "partition", "producerId", "producerEpoch", "commit"}]."""
    out = []
    for d in data_records:
        m = parse_marker(d.headers, d.value)
        if m is not None:
            out.append(
                {
                    "topic": d.topic,
                    "partition": int(d.partition),
                    "producerId": int(m["producerId"]),
                    "producerEpoch": int(m["producerEpoch"]),
                    "commit": m["type"] == "COMMIT",
                    "transactionalId": m.get("transactionalId"),
                }
            )
    return out


def _group(markers: list[dict]) -> dict:
    """(producerId, producerEpoch, commit) -> {topic: sorted partitions}: one WritableTxnMarker each."""
    grouped: dict = defaultdict(lambda: defaultdict(set))
    for m in markers:
        grouped[(m["producerId"], m["producerEpoch"], m["commit"])][m["topic"]].add(m["partition"])
    return {k: {t: sorted(ps) for t, ps in v.items()} for k, v in grouped.items()}


class BrokerMarkerWriter:
    """Sends WriteTxnMarkers with kafka-python's admin client (one per Python worker, reused)."""

    def __init__(self, bootstrap: str, timeout_s: float = 120.0, request_timeout_ms: int = 30000):
        self.bootstrap = bootstrap
        self.timeout_s = timeout_s
        self.request_timeout_ms = request_timeout_ms
        self._admin = None

    def _client(self):
        if self._admin is None:
            from kafka import KafkaAdminClient

            self._admin = KafkaAdminClient(
                bootstrap_servers=self.bootstrap,
                client_id="txn-marker-writer",
                request_timeout_ms=self.request_timeout_ms,
            )
        return self._admin

    def close(self) -> None:
        if self._admin is not None:
            try:
                self._admin.close()
            finally:
                self._admin = None

    # kafka-python 3.0's admin client has no public "send this request to that broker"; its network
    # manager (`_manager`) is what its own abort_transaction (a WriteTxnMarkers) uses.
    def _leaders(self, partitions: set[tuple[str, int]]) -> dict[tuple[str, int], int | None]:
        admin = self._client()
        topics = sorted({t for t, _ in partitions})
        metadata = admin._manager.run(admin._get_cluster_metadata, topics)
        found = {}
        for topic in metadata.get("topics", ()):
            for p in topic.get("partitions", ()):
                tp = (topic["name"], p["partition_index"])
                if tp in partitions:
                    found[tp] = p["leader_id"] if p["leader_id"] >= 0 else None
        return found

    def _send(self, node_id: int, grouped: dict):
        from kafka.protocol.producer.transaction import WriteTxnMarkersRequest

        Marker = WriteTxnMarkersRequest.WritableTxnMarker
        Topic = Marker.WritableTxnMarkerTopic
        request = WriteTxnMarkersRequest(
            version=1,
            markers=[
                Marker(
                    producer_id=pid,
                    producer_epoch=epoch,
                    transaction_result=commit,
                    topics=[Topic(name=t, partition_indexes=ps) for t, ps in sorted(topics.items())],
                    coordinator_epoch=COORDINATOR_EPOCH,
                )
                for (pid, epoch, commit), topics in sorted(grouped.items())
            ],
        )
        admin = self._client()

        async def send():
            return await admin._manager.send(request, node_id=node_id, request_timeout_ms=self.request_timeout_ms)

        return admin._manager.run(send)

    def write(self, markers: list[dict]) -> list[dict]:
        """Write every marker; returns one result per marker: {**marker, "errorCode", "outcome"}
        with outcome "written" | "dropped" (partition gone) | "abandoned" (fenced)."""
        pending = {(m["topic"], m["partition"], m["producerId"], m["producerEpoch"], m["commit"]): m for m in markers}
        results: list[dict] = []
        deadline = time.monotonic() + self.timeout_s
        backoff = 0.1
        last_error = None
        while pending:
            try:
                leaders = self._leaders({(k[0], k[1]) for k in pending})
                by_leader: dict = defaultdict(list)
                for k, m in list(pending.items()):
                    tp = (k[0], k[1])
                    if tp not in leaders:
                        results.append({**m, "errorCode": 3, "outcome": "dropped"})
                        del pending[k]
                    elif leaders[tp] is not None:
                        by_leader[leaders[tp]].append(m)
                for node_id, ms in by_leader.items():
                    response = self._send(node_id, _group(ms))
                    for marker in response.markers:
                        for topic in marker.topics:
                            for part in topic.partitions:
                                code = part.error_code
                                for k in [
                                    k
                                    for k in pending
                                    if k[0] == topic.name
                                    and k[1] == part.partition_index
                                    and k[2] == marker.producer_id
                                ]:
                                    m = pending[k]
                                    if code == 0:
                                        results.append({**m, "errorCode": 0, "outcome": "written"})
                                    elif code in ABANDON:
                                        results.append({**m, "errorCode": code, "outcome": "abandoned"})
                                    elif code in RETRIABLE:
                                        last_error = f"error code {code} for {topic.name}-{part.partition_index}"
                                        continue
                                    else:
                                        raise MarkerWriteError(
                                            f"WriteTxnMarkers for {topic.name}-{part.partition_index} "
                                            f"(producerId {marker.producer_id}) failed with error code {code}"
                                        )
                                    del pending[k]
            except MarkerWriteError:
                raise
            except Exception as e:  # noqa: BLE001 - the broker is away or moving: retry until the deadline
                last_error = f"{type(e).__name__}: {e}"
                self.close()
            if pending:
                if time.monotonic() > deadline:
                    raise MarkerWriteError(
                        f"{len(pending)} transaction markers not acknowledged within "
                        f"{self.timeout_s}s (last: {last_error})"
                    )
                time.sleep(backoff)
                backoff = min(backoff * 2, 2.0)
        return results


_writers: dict[str, BrokerMarkerWriter] = {}


def writer_for(bootstrap: str) -> BrokerMarkerWriter:
    """The Python worker's writer for `bootstrap` (workers are reused across batches)."""
    w = _writers.get(bootstrap)
    if w is None:
        w = _writers[bootstrap] = BrokerMarkerWriter(bootstrap)
    return w
