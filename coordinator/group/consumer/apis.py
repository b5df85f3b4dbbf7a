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

from ...errors import Error
from ...protocol.loader import shape
from ..classic.apis import INT32_MIN

COMPONENT = "groups"


def heartbeat_response(
    *,
    error: Error | None = None,
    message: str | None = None,
    member_id: str | None = None,
    member_epoch: int = 0,
    heartbeat_interval_ms: int = 0,
    assignment: list[dict] | None = None,
) -> dict:
    """ConsumerGroupHeartbeatResponse (v0 and v1 have the same fields). `assignment` is the list of
    {topicId, partitions} or None (not sent)."""
    return shape(
        "ConsumerGroupHeartbeatResponse",
        1,
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
    version: int,
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
        "ConsumerGroupDescribeResponse",
        version,
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
