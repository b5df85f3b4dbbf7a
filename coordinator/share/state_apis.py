"""The share coordinator's state APIs (KIP-932), as Kafka 4.1 defines them (version 0 only):
InitializeShareGroupState (83), ReadShareGroupState (84), WriteShareGroupState (85),
DeleteShareGroupState (86), ReadShareGroupStateSummary (87). Brokers (here: share consumers, see
client/share_consumer.py) send them to the share coordinator of each share-partition, found with
FindCoordinator keyType 2 and key `groupId:topicId:partition`.

Each request names a group and partitions of topics (by topic id); each partition is answered on
its own (`results[].partitions[]`), NOT_COORDINATOR for a partition another coordinator partition
owns, as ShareCoordinatorService answers per share-partition. The APIs (versions, request fields,
error shapes) are in the API table, coordinator/protocol/table.py.
"""

from __future__ import annotations

from ..errors import Error
from ..protocol.loader import shape

COMPONENT = "share"


def partition_error(error: Error, message: str | None, partition: int, api: str) -> dict:
    """The partition result of `api` for an error (Kafka's toErrorResponseData: other fields at
    their defaults)."""
    return shape(
        api + "Response",
        0,
        {"partition": partition, "errorCode": error.code, "errorMessage": message},
        ("results", "partitions"),
    )
