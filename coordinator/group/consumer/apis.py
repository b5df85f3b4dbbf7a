"""ConsumerGroupHeartbeat (68) and ConsumerGroupDescribe (69): response bodies shaped as Kafka's
generated JSON converters print them (thin calls into the message-file shaper, coordinator/protocol;
the APIs themselves are in coordinator/protocol/table.py).

    ConsumerGroupHeartbeat v0-1   v1 (Kafka 4.0): `subscribedTopicRegex`, and the client generates
                                  its member id (KIP-1082); v0 lets the coordinator generate it
    ConsumerGroupDescribe  v0-1   v1 (Kafka 4.0, KIP-1099): `memberType` per member

Topics on the wire are Kafka's topic ids (`Uuid`, 22 characters of url-safe base64), exactly as in
Kafka: owned partitions in the request and the assignment in the response. ConsumerGroupDescribe
gives both id and name. The coordinator learns the ids from the broker (UpdateMetadata).
"""

from __future__ import annotations

from functools import partial
from typing import Any

from ...errors import Error
from ..modern.apis import described_modern_group, partitions_heartbeat_response

COMPONENT = "groups"


# ConsumerGroupHeartbeatResponse (v0 and v1 have the same fields).
heartbeat_response = partial(partitions_heartbeat_response, "ConsumerGroupHeartbeatResponse", 1)


def described_group(
    version: int,
    group_id: str,
    error: Error | None = None,
    *,
    assignor_name: str = "",
    **fields: Any,
) -> dict:
    return described_modern_group(
        "ConsumerGroupDescribeResponse", version, group_id, error, assignorName=assignor_name, **fields
    )
