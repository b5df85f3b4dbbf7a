"""The response fields every modern group type's heartbeat and describe share (each type's
`apis.py` adds its own and names its message)."""

from __future__ import annotations

from typing import Any

from ...errors import Error
from ...protocol.loader import shape
from ..classic.apis import INT32_MIN


def heartbeat_fields(error: Error | None, message: str | None, member_id, member_epoch: int, interval_ms: int) -> dict:
    """The top of a {Consumer,Share,Streams}GroupHeartbeatResponse."""
    return {
        "throttleTimeMs": 0,
        "errorCode": 0 if error is None else error.code,
        "errorMessage": message,
        "memberId": member_id,
        "memberEpoch": member_epoch,
        "heartbeatIntervalMs": interval_ms,
    }


def partitions_heartbeat_response(
    message_name: str,
    version: int,
    *,
    error: Error | None = None,
    message: str | None = None,
    member_id: str | None = None,
    member_epoch: int = 0,
    heartbeat_interval_ms: int = 0,
    assignment: list[dict] | None = None,
) -> dict:
    """A {Consumer,Share}GroupHeartbeatResponse: the shared fields and `assignment`, the list of
    {topicId, partitions} or None (not sent)."""
    return shape(
        message_name,
        version,
        {
            **heartbeat_fields(error, message, member_id, member_epoch, heartbeat_interval_ms),
            "assignment": None if assignment is None else {"topicPartitions": assignment},
        },
    )


def described_modern_group(
    message_name: str,
    version: int,
    group_id: str,
    error: Error | None = None,
    *,
    message: str | None = None,
    state: str = "",
    group_epoch: int = 0,
    assignment_epoch: int = 0,
    members: list[dict] | None = None,
    authorized_operations: int = INT32_MIN,
    **own: Any,
) -> dict:
    """One group of a {Consumer,Share,Streams}GroupDescribeResponse; `own`: the type's own fields
    (assignorName, topology), in the message file's order."""
    return shape(
        message_name,
        version,
        {
            "errorCode": 0 if error is None else error.code,
            "errorMessage": message,
            "groupId": group_id,
            "groupState": state,
            "groupEpoch": group_epoch,
            "assignmentEpoch": assignment_epoch,
            **own,
            "members": members or [],
            "authorizedOperations": authorized_operations,
        },
        ("groups",),
    )


def describe_response(groups: list[dict]) -> dict:
    return {"throttleTimeMs": 0, "groups": groups}
