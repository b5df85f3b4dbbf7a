"""StreamsGroupHeartbeat (88) and StreamsGroupDescribe (89), KIP-1071, version 0 (Kafka 4.1):
request schemas (the message JSON files) and response bodies shaped as Kafka's generated JSON
converters print them. Tasks are {subtopologyId, partitions}; topics are names (as in Kafka's
StreamsGroup* messages, which carry no topic ids except in the describe's assignment).
"""
from __future__ import annotations

from ...api import ApiSpec, register
from ...errors import Error
from ...schema import Array, F, Struct
from ..classic.apis import INT32_MIN

COMPONENT = "groups"
NULLABLE = (0, None)

_KEY_VALUE = Struct(F("key", "string"), F("value", "string"))
_TOPIC_INFO = Struct(F("name", "string"), F("partitions", "int32"), F("replicationFactor", "int16"),
                     F("topicConfigs", Array(_KEY_VALUE)))
_TASK_IDS = Array(Struct(F("subtopologyId", "string"), F("partitions", Array("int32"))))
_TASK_OFFSETS = Array(Struct(F("subtopologyId", "string"), F("partition", "int32"), F("offset", "int64")))
_ENDPOINT = Struct(F("host", "string"), F("port", "uint16"))
_TOPOLOGY = Struct(
    F("epoch", "int32"),
    F("subtopologies", Array(Struct(
        F("subtopologyId", "string"),
        F("sourceTopics", Array("string")),
        F("sourceTopicRegex", Array("string")),
        F("stateChangelogTopics", Array(_TOPIC_INFO)),
        F("repartitionSinkTopics", Array("string")),
        F("repartitionSourceTopics", Array(_TOPIC_INFO)),
        F("copartitionGroups", Array(Struct(F("sourceTopics", Array("int16")),
                                            F("sourceTopicRegex", Array("int16")),
                                            F("repartitionSourceTopics", Array("int16"))))),
    ))),
)


def heartbeat_response(*, error: Error | None = None, message: str | None = None, member_id: str = "",
                       member_epoch: int = 0, heartbeat_interval_ms: int = 0, acceptable_recovery_lag: int = 0,
                       task_offset_interval_ms: int = 0, status: list[dict] | None = None,
                       endpoint_information_epoch: int = 0) -> dict:
    """StreamsGroupHeartbeatResponse v0; the task lists and partitionsByUserEndpoint are null
    (unchanged) unless the caller sets them."""
    return {"throttleTimeMs": 0, "errorCode": 0 if error is None else error.code, "errorMessage": message,
            "memberId": member_id, "memberEpoch": member_epoch, "heartbeatIntervalMs": heartbeat_interval_ms,
            "acceptableRecoveryLag": acceptable_recovery_lag, "taskOffsetIntervalMs": task_offset_interval_ms,
            "status": status, "activeTasks": None, "standbyTasks": None, "warmupTasks": None,
            "endpointInformationEpoch": endpoint_information_epoch, "partitionsByUserEndpoint": None}


def _heartbeat_error(version, body, error, message):
    return heartbeat_response(error=error, message=message)


def described_group(group_id: str, error: Error | None = None, *, message: str | None = None, state: str = "",
                    group_epoch: int = 0, assignment_epoch: int = 0, topology: dict | None = None,
                    members: list[dict] | None = None, authorized_operations: int = INT32_MIN) -> dict:
    return {"errorCode": 0 if error is None else error.code, "errorMessage": message, "groupId": group_id,
            "groupState": state, "groupEpoch": group_epoch, "assignmentEpoch": assignment_epoch,
            "topology": topology, "members": members or [], "authorizedOperations": authorized_operations}


def describe_response(groups: list[dict]) -> dict:
    return {"throttleTimeMs": 0, "groups": groups}


def _describe_error(version, body, error, message):
    return describe_response([described_group(g, error, message=message) for g in (body or {}).get("groupIds", [])])


STREAMS_GROUP_HEARTBEAT = register(ApiSpec(
    name="StreamsGroupHeartbeat", api_key=88, min_version=0, max_version=0,
    request=Struct(
        F("groupId", "string"),
        F("memberId", "string"),
        F("memberEpoch", "int32"),
        F("endpointInformationEpoch", "int32"),
        F("instanceId", "string", nullable=NULLABLE, default=None),
        F("rackId", "string", nullable=NULLABLE, default=None),
        F("rebalanceTimeoutMs", "int32", default=-1),
        F("topology", _TOPOLOGY, nullable=NULLABLE, default=None),
        F("activeTasks", _TASK_IDS, nullable=NULLABLE, default=None),
        F("standbyTasks", _TASK_IDS, nullable=NULLABLE, default=None),
        F("warmupTasks", _TASK_IDS, nullable=NULLABLE, default=None),
        F("processId", "string", nullable=NULLABLE, default=None),
        F("userEndpoint", _ENDPOINT, nullable=NULLABLE, default=None),
        F("clientTags", Array(_KEY_VALUE), nullable=NULLABLE, default=None),
        F("taskOffsets", _TASK_OFFSETS, nullable=NULLABLE, default=None),
        F("taskEndOffsets", _TASK_OFFSETS, nullable=NULLABLE, default=None),
        F("shutdownApplication", "bool", default=False),
    ),
    component=COMPONENT, routing_field="groupId", error_response=_heartbeat_error))

STREAMS_GROUP_DESCRIBE = register(ApiSpec(
    name="StreamsGroupDescribe", api_key=89, min_version=0, max_version=0,
    request=Struct(
        F("groupIds", Array("string")),
        F("includeAuthorizedOperations", "bool"),
    ),
    component=COMPONENT, routing_field=None, error_response=_describe_error))
