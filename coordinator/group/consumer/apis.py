"""ConsumerGroupHeartbeat (68) and ConsumerGroupDescribe (69): request schemas (Kafka 4.x message
JSON files) and response bodies shaped as Kafka's generated JSON converters print them.

    ConsumerGroupHeartbeat v0-1   v1 (Kafka 4.0): `subscribedTopicRegex`, and the client generates
                                  its member id (KIP-1082); v0 lets the coordinator generate it
    ConsumerGroupDescribe  v0-1   v1 (Kafka 4.0, KIP-1099): `memberType` per member

Topics on the wire are Kafka's topic ids (`Uuid`, 22 characters of url-safe base64), exactly as in
Kafka: owned partitions in the request and the assignment in the response. ConsumerGroupDescribe
gives both id and name. The coordinator learns the ids from the broker (UpdateMetadata).
"""
from __future__ import annotations

from ...api import ApiSpec, register
from ...errors import Error
from ...schema import Array, F, Struct
from ..classic.apis import INT32_MIN

COMPONENT = "groups"
NULLABLE = (0, None)

_TOPIC_PARTITIONS = Array(Struct(F("topicId", "uuid"), F("partitions", Array("int32"))))


def heartbeat_response(*, error: Error | None = None, message: str | None = None, member_id: str | None = None,
                       member_epoch: int = 0, heartbeat_interval_ms: int = 0,
                       assignment: list[dict] | None = None) -> dict:
    """ConsumerGroupHeartbeatResponse (v0 and v1 have the same fields). `assignment` is the list of
    {topicId, partitions} or None (not sent)."""
    return {"throttleTimeMs": 0, "errorCode": 0 if error is None else error.code, "errorMessage": message,
            "memberId": member_id, "memberEpoch": member_epoch, "heartbeatIntervalMs": heartbeat_interval_ms,
            "assignment": None if assignment is None else {"topicPartitions": assignment}}


def _heartbeat_error(version, body, error, message):
    return heartbeat_response(error=error, message=message)


def described_group(version: int, group_id: str, error: Error | None = None, *, message: str | None = None,
                    state: str = "", group_epoch: int = 0, assignment_epoch: int = 0, assignor_name: str = "",
                    members: list[dict] | None = None, authorized_operations: int = INT32_MIN) -> dict:
    out_members = []
    for m in members or []:
        entry = {k: m[k] for k in ("memberId", "instanceId", "rackId", "memberEpoch", "clientId", "clientHost",
                                   "subscribedTopicNames", "subscribedTopicRegex", "assignment",
                                   "targetAssignment")}
        if version >= 1:
            entry["memberType"] = m.get("memberType", -1)
        out_members.append(entry)
    return {"errorCode": 0 if error is None else error.code, "errorMessage": message, "groupId": group_id,
            "groupState": state, "groupEpoch": group_epoch, "assignmentEpoch": assignment_epoch,
            "assignorName": assignor_name, "members": out_members, "authorizedOperations": authorized_operations}


def describe_response(groups: list[dict]) -> dict:
    return {"throttleTimeMs": 0, "groups": groups}


def _describe_error(version, body, error, message):
    return describe_response([described_group(version, g, error, message=message)
                              for g in (body or {}).get("groupIds", [])])


CONSUMER_GROUP_HEARTBEAT = register(ApiSpec(
    name="ConsumerGroupHeartbeat", api_key=68, min_version=0, max_version=1,
    request=Struct(
        F("groupId", "string"),
        F("memberId", "string"),
        F("memberEpoch", "int32"),
        F("instanceId", "string", nullable=NULLABLE, default=None),
        F("rackId", "string", nullable=NULLABLE, default=None),
        F("rebalanceTimeoutMs", "int32", default=-1),
        F("subscribedTopicNames", Array("string"), nullable=NULLABLE, default=None),
        F("subscribedTopicRegex", "string", versions=(1, None), nullable=(1, None), default=None),
        F("serverAssignor", "string", nullable=NULLABLE, default=None),
        F("topicPartitions", _TOPIC_PARTITIONS, nullable=NULLABLE, default=None),
    ),
    component=COMPONENT, routing_field="groupId", error_response=_heartbeat_error))

CONSUMER_GROUP_DESCRIBE = register(ApiSpec(
    name="ConsumerGroupDescribe", api_key=69, min_version=0, max_version=1,
    request=Struct(
        F("groupIds", Array("string")),
        F("includeAuthorizedOperations", "bool"),
    ),
    # Several groups: ownership is checked per group (NOT_COORDINATOR per group).
    component=COMPONENT, routing_field=None, error_response=_describe_error))
