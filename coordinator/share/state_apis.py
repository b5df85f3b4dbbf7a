"""The share coordinator's state APIs (KIP-932), as Kafka 4.1 defines them (version 0 only):
InitializeShareGroupState (83), ReadShareGroupState (84), WriteShareGroupState (85),
DeleteShareGroupState (86), ReadShareGroupStateSummary (87). Brokers (here: share consumers, see
client/share_consumer.py) send them to the share coordinator of each share-partition, found with
FindCoordinator keyType 2 and key `groupId:topicId:partition`.

Each request names a group and partitions of topics (by topic id); each partition is answered on
its own (`results[].partitions[]`), NOT_COORDINATOR for a partition another coordinator partition
owns, as ShareCoordinatorService answers per share-partition.
"""
from __future__ import annotations

from ..api import ApiSpec, register
from ..errors import Error
from ..schema import Array, F, Struct

COMPONENT = "share"

_STATE_BATCH = Struct(F("firstOffset", "int64"), F("lastOffset", "int64"), F("deliveryState", "int8"),
                      F("deliveryCount", "int16"))


def _request(*partition_fields: F) -> Struct:
    return Struct(
        F("groupId", "string"),
        F("topics", Array(Struct(
            F("topicId", "uuid"),
            F("partitions", Array(Struct(F("partition", "int32"), *partition_fields))),
        ))),
    )


def partition_error(error: Error, message: str | None, partition: int, api: str) -> dict:
    """The partition result of `api` for an error (Kafka's toErrorResponseData: other fields at
    their defaults)."""
    out = {"partition": partition, "errorCode": error.code, "errorMessage": message}
    if api == "ReadShareGroupState":
        out.update(stateEpoch=0, startOffset=0, stateBatches=[])
    elif api == "ReadShareGroupStateSummary":
        out.update(stateEpoch=0, leaderEpoch=0, startOffset=0)
    return out


def _error_response(api: str):
    def build(version, body, error, message):
        results = []
        for t in (body or {}).get("topics") or []:
            results.append({"topicId": t.get("topicId"), "partitions": [
                partition_error(error, message, p.get("partition", -1), api) for p in t.get("partitions") or []]})
        return {"results": results}
    return build


def _spec(name: str, key: int, request: Struct) -> ApiSpec:
    # Several share-partitions per request: ownership is checked per partition.
    return register(ApiSpec(name=name, api_key=key, min_version=0, max_version=0, request=request,
                            component=COMPONENT, routing_field=None, error_response=_error_response(name)))


INITIALIZE = _spec("InitializeShareGroupState", 83, _request(F("stateEpoch", "int32"), F("startOffset", "int64")))
READ = _spec("ReadShareGroupState", 84, _request(F("leaderEpoch", "int32")))
WRITE = _spec("WriteShareGroupState", 85, _request(
    F("stateEpoch", "int32"), F("leaderEpoch", "int32"), F("startOffset", "int64"),
    F("stateBatches", Array(_STATE_BATCH))))
DELETE = _spec("DeleteShareGroupState", 86, _request())
READ_SUMMARY = _spec("ReadShareGroupStateSummary", 87, _request(F("leaderEpoch", "int32")))
