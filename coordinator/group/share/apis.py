"""ShareGroupHeartbeat (76) and ShareGroupDescribe (77), KIP-932 (Kafka 4.1, version 1 only):
response bodies as Kafka's generated JSON converters print them (thin calls into the message-file
shaper, coordinator/protocol). Topics on the wire are topic ids, as for consumer groups.
"""

from __future__ import annotations

from ...errors import Error
from ...protocol.loader import shape
from ..classic.apis import INT32_MIN

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
            "throttleTimeMs": 0,
            "errorCode": 0 if error is None else error.code,
            "errorMessage": message,
            "memberId": member_id,
            "memberEpoch": member_epoch,
            "heartbeatIntervalMs": heartbeat_interval_ms,
            "assignment": None if assignment is None else {"topicPartitions": assignment},
        },
    )


def described_group(
    group_id: str,
    error: Error | None = None,
    *,
    message: str | None = None,
    state: str = "",
    group_epoch: int = 0,
    assignment_epoch: int = 0,
    assignor_name: str = "",
    members: list[dict] | None = None,
    authorized_operations: int = INT32_MIN,
) -> dict:
    return shape(
        "ShareGroupDescribeResponse",
        VERSION,
        {
            "errorCode": 0 if error is None else error.code,
            "errorMessage": message,
            "groupId": group_id,
            "groupState": state,
            "groupEpoch": group_epoch,
            "assignmentEpoch": assignment_epoch,
            "assignorName": assignor_name,
            "members": members or [],
            "authorizedOperations": authorized_operations,
        },
        ("groups",),
    )


def describe_response(groups: list[dict]) -> dict:
    return {"throttleTimeMs": 0, "groups": groups}
