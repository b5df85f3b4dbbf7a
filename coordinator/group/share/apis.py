"""ShareGroupHeartbeat (76) and ShareGroupDescribe (77), KIP-932 (Kafka 4.1, version 1 only):
response bodies as Kafka's generated JSON converters print them (thin calls into the message-file
shaper, coordinator/protocol). Topics on the wire are topic ids, as for consumer groups.
"""

from __future__ import annotations

from functools import partial
from typing import Any

from ...errors import Error
from ..modern.apis import described_modern_group, partitions_heartbeat_response

COMPONENT = "groups"
VERSION = 1


heartbeat_response = partial(partitions_heartbeat_response, "ShareGroupHeartbeatResponse", VERSION)


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
