"""ShareGroupHeartbeat (76) and ShareGroupDescribe (77), KIP-932: request schemas (Kafka 4.1's
message JSON files, both at version 1 only) and response bodies as Kafka's generated JSON
converters print them. Topics on the wire are topic ids, as for consumer groups.
"""
from __future__ import annotations

from ...api import ApiSpec, register
from ...errors import Error
from ...schema import Array, F, Struct
from ..classic.apis import INT32_MIN

COMPONENT = "groups"
NULLABLE = (0, None)


def heartbeat_response(*, error: Error | None = None, message: str | None = None, member_id: str | None = None,
                       member_epoch: int = 0, heartbeat_interval_ms: int = 0,
                       assignment: list[dict] | None = None) -> dict:
    """ShareGroupHeartbeatResponse; `assignment` is [{topicId, partitions}] or None (not sent)."""
    return {"throttleTimeMs": 0, "errorCode": 0 if error is None else error.code, "errorMessage": message,
            "memberId": member_id, "memberEpoch": member_epoch, "heartbeatIntervalMs": heartbeat_interval_ms,
            "assignment": None if assignment is None else {"topicPartitions": assignment}}


def _heartbeat_error(version, body, error, message):
    return heartbeat_response(error=error, message=message)


def described_group(group_id: str, error: Error | None = None, *, message: str | None = None, state: str = "",
                    group_epoch: int = 0, assignment_epoch: int = 0, assignor_name: str = "",
                    members: list[dict] | None = None, authorized_operations: int = INT32_MIN) -> dict:
    return {"errorCode": 0 if error is None else error.code, "errorMessage": message, "groupId": group_id,
            "groupState": state, "groupEpoch": group_epoch, "assignmentEpoch": assignment_epoch,
            "assignorName": assignor_name, "members": members or [], "authorizedOperations": authorized_operations}


def describe_response(groups: list[dict]) -> dict:
    return {"throttleTimeMs": 0, "groups": groups}


def _describe_error(version, body, error, message):
    return describe_response([described_group(g, error, message=message) for g in (body or {}).get("groupIds", [])])


SHARE_GROUP_HEARTBEAT = register(ApiSpec(
    name="ShareGroupHeartbeat", api_key=76, min_version=1, max_version=1,
    request=Struct(
        F("groupId", "string"),
        F("memberId", "string"),
        F("memberEpoch", "int32"),
        F("rackId", "string", nullable=NULLABLE, default=None),
        F("subscribedTopicNames", Array("string"), nullable=NULLABLE, default=None),
    ),
    component=COMPONENT, routing_field="groupId", error_response=_heartbeat_error))

SHARE_GROUP_DESCRIBE = register(ApiSpec(
    name="ShareGroupDescribe", api_key=77, min_version=1, max_version=1,
    request=Struct(
        F("groupIds", Array("string")),
        F("includeAuthorizedOperations", "bool"),
    ),
    component=COMPONENT, routing_field=None, error_response=_describe_error))
