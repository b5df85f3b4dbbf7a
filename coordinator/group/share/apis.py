"""ShareGroupHeartbeat (76) and ShareGroupDescribe (77), KIP-932 (Kafka 4.1, version 1 only):
response bodies as Kafka's generated JSON converters print them (thin calls into the message-file
shaper, coordinator/protocol). Topics on the wire are topic ids, as for consumer groups.
"""

from __future__ import annotations

from typing import Any

from ...errors import Error
from ...protocol.loader import shape
from ..modern.apis import described_modern_group, heartbeat_fields

COMPONENT = "groups"
VERSION = 1


def heartbeat_response(
    *,
    error: Error | None = None,
    message: str | None = None,
    member_id: str | None = None,
    member_epoch: int = 0,
    heartbeat_interval_ms: int = 0,
    assignment: list[dict] | None = None,
) -> dict:
    """ShareGroupHeartbeatResponse; `assignment` is [{topicId, partitions}] or None (not sent)."""
    return shape(
        "ShareGroupHeartbeatResponse",
        VERSION,
        {
            **heartbeat_fields(error, message, member_id, member_epoch, heartbeat_interval_ms),
            "assignment": None if assignment is None else {"topicPartitions": assignment},
        },
    )


def described_group(
    group_id: str,
    error: Error | None = None,
    *,
    assignor_name: str = "",
    **fields: Any,
) -> dict:
    return described_modern_group(
        "ShareGroupDescribeResponse", VERSION, group_id, error, assignorName=assignor_name, **fields
    )
