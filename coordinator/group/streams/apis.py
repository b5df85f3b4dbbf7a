"""StreamsGroupHeartbeat (88) and StreamsGroupDescribe (89), KIP-1071, versions 0-1 (Kafka 4.4.0):
response bodies shaped as Kafka's generated JSON converters print them (thin calls into the
message-file shaper, coordinator/protocol). Tasks are {subtopologyId, partitions}; topics are
names (as in Kafka's StreamsGroup* messages, which carry no topic ids except in the describe's
assignment).
"""

from __future__ import annotations

from typing import Any

from ...errors import Error
from ...protocol.loader import shape
from ..modern.apis import described_modern_group, heartbeat_fields

COMPONENT = "groups"


def heartbeat_response(
    version: int = 0,
    *,
    error: Error | None = None,
    message: str | None = None,
    member_id: str = "",
    member_epoch: int = 0,
    heartbeat_interval_ms: int = 0,
    acceptable_recovery_lag: int = -1,
    task_offset_interval_ms: int = 0,
    status: list[dict] | None = None,
    endpoint_information_epoch: int = 0,
) -> dict:
    """StreamsGroupHeartbeatResponse in `version`; the task lists and partitionsByUserEndpoint are
    null (unchanged) unless the caller sets them. `acceptable_recovery_lag` is v1's int64 field
    (-1, its default, in a leave's answer); Kafka 4.4.0 leaves v0's AcceptableRecoveryLagLegacy 0.
    `topologyDescriptionRequired` stays false: without a topology-description plugin Kafka never
    sets it (GroupCoordinatorService.streamsGroupHeartbeat)."""
    return shape(
        "StreamsGroupHeartbeatResponse",
        version,
        {
            **heartbeat_fields(error, message, member_id, member_epoch, heartbeat_interval_ms),
            "acceptableRecoveryLagLegacy": 0,
            "taskOffsetIntervalMs": task_offset_interval_ms,
            "acceptableRecoveryLag": acceptable_recovery_lag,
            # Kafka 4.4.0's Status has no null default: an answer that sets none carries [].
            "status": [] if status is None else status,
            "activeTasks": None,
            "standbyTasks": None,
            "warmupTasks": None,
            "endpointInformationEpoch": endpoint_information_epoch,
            "partitionsByUserEndpoint": None,
        },
    )


def described_group(
    version: int,
    group_id: str,
    error: Error | None = None,
    *,
    topology: dict | None = None,
    **fields: Any,
) -> dict:
    return described_modern_group("StreamsGroupDescribeResponse", version, group_id, error, topology=topology, **fields)
