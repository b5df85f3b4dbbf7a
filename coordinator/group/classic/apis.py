"""The group coordinator's APIs: request schemas (Kafka 4.0 message JSON files), and response
bodies shaped for the request's version exactly as Kafka's generated JSON converters print them
(fields absent from a version are left out, bytes are base64, names are camelCase).

Versions are those a Kafka 4.2 broker accepts (KIP-896 removed JoinGroup v0-1, OffsetCommit
v0-1 and OffsetFetch v0). OffsetCommit v10 / OffsetFetch v10 (KIP-848, stable in Kafka 4.2) name
topics by id instead of by name: the handlers translate ids to names with the topic metadata (the
offset store keys partitions by name, as Kafka's does) and back.
"""
from __future__ import annotations

from ...api import ApiSpec, register
from ...errors import Error, Errors
from ...schema import Array, F, Struct

COMPONENT = "groups"
INT32_MIN = -(2**31)
INVALID_OFFSET = -1

# ====================================================================== shaping helpers


def join_response(version: int, error: Error = Errors.NONE, *, generation_id: int = -1,
                  protocol_type: str | None = None, protocol_name: str | None = None,
                  leader: str | None = "", skip_assignment: bool = False, member_id: str = "",
                  members: list[dict] | None = None) -> dict:
    # JoinGroupResponse(data, version): before v7 a null protocol name is sent as "", from v7 an
    # empty one as null.
    if version < 7 and protocol_name is None:
        protocol_name = ""
    if version >= 7 and protocol_name == "":
        protocol_name = None
    body: dict = {"throttleTimeMs": 0} if version >= 2 else {}
    body.update(errorCode=error.code, generationId=generation_id)
    if version >= 7:
        body["protocolType"] = protocol_type
    body["protocolName"] = protocol_name
    body["leader"] = leader if leader is not None else ""
    if version >= 9:
        body["skipAssignment"] = skip_assignment
    body["memberId"] = member_id
    out_members = []
    for m in members or []:
        entry = {"memberId": m["memberId"]}
        if version >= 5:
            entry["groupInstanceId"] = m.get("groupInstanceId")
        entry["metadata"] = m["metadata"]
        out_members.append(entry)
    body["members"] = out_members
    return body


def sync_response(version: int, error: Error = Errors.NONE, *, protocol_type: str | None = None,
                  protocol_name: str | None = None, assignment: str = "") -> dict:
    body: dict = {}
    if version >= 1:
        body["throttleTimeMs"] = 0
    body["errorCode"] = error.code
    if version >= 5:
        body["protocolType"] = protocol_type
        body["protocolName"] = protocol_name
    body["assignment"] = assignment
    return body


def heartbeat_response(version: int, error: Error = Errors.NONE) -> dict:
    body: dict = {"throttleTimeMs": 0} if version >= 1 else {}
    body["errorCode"] = error.code
    return body


def leave_response(version: int, error: Error = Errors.NONE, members: list[dict] | None = None) -> dict:
    """LeaveGroupResponse(data, version): before v3 the top-level error wins, else the single
    member's error is folded into the top level."""
    body: dict = {"throttleTimeMs": 0} if version >= 1 else {}
    members = members or []
    if version >= 3:
        body["errorCode"] = error.code
        body["members"] = [{"memberId": m["memberId"], "groupInstanceId": m.get("groupInstanceId"),
                            "errorCode": m.get("errorCode", 0)} for m in members]
        return body
    if error is not Errors.NONE or not members:
        body["errorCode"] = error.code
    else:
        body["errorCode"] = members[0].get("errorCode", 0)
    return body


def offset_commit_response(version: int, topics: list[dict]) -> dict:
    body: dict = {"throttleTimeMs": 0} if version >= 3 else {}
    body["topics"] = topics
    return body


def topic_field(version: int) -> str:
    """How OffsetCommit / OffsetFetch name a topic: by `topicId` from v10 (KIP-848), else `name`."""
    return "topicId" if version >= 10 else "name"


def offset_commit_error(version: int, body: dict | None, error: Error, message: str | None) -> dict:
    field = topic_field(version)
    topics = [{field: t[field], "partitions": [{"partitionIndex": p["partitionIndex"], "errorCode": error.code}
                                               for p in t["partitions"]]}
              for t in (body or {}).get("topics", [])]
    return offset_commit_response(version, topics)


def fetch_partition(version: int, partition: int, offset: int = INVALID_OFFSET, leader_epoch: int = -1,
                    metadata: str | None = "", error: Error = Errors.NONE) -> dict:
    entry = {"partitionIndex": partition, "committedOffset": offset}
    if version >= 5:
        entry["committedLeaderEpoch"] = leader_epoch
    entry["metadata"] = metadata
    entry["errorCode"] = error.code
    return entry


def fetch_group_error(version: int, group: dict, error: Error) -> dict:
    """OffsetFetchResponse.groupError: a group-level error; before v2 it can only be reported on
    every requested partition."""
    if version >= 2:
        return {"groupId": group["groupId"], "topics": [], "errorCode": error.code}
    return {"groupId": group["groupId"], "errorCode": Errors.NONE.code, "topics": [
        {"name": t["name"], "partitions": [fetch_partition(version, p, error=error) for p in t["partitionIndexes"]]}
        for t in group["topics"] or []]}  # (v1 only: named topics)


def offset_fetch_response(version: int, groups: list[dict]) -> dict:
    """OffsetFetchResponse.Builder: v8+ lists groups; older versions carry the single group's
    topics and (v2+) its error at the top level."""
    body: dict = {"throttleTimeMs": 0} if version >= 3 else {}
    if version >= 8:
        body["groups"] = [{"groupId": g["groupId"], "topics": g["topics"], "errorCode": g["errorCode"]}
                          for g in groups]
        return body
    group = groups[0]
    body["topics"] = group["topics"]
    if version >= 2:
        body["errorCode"] = group["errorCode"]
    return body


def request_fetch_groups(version: int, body: dict | None) -> list[dict]:
    """The request's groups in the v8+ shape (OffsetFetchRequest.groups())."""
    body = body or {}
    if version >= 8:
        return [{"groupId": g["groupId"], "memberId": g.get("memberId"), "memberEpoch": g.get("memberEpoch", -1),
                 "topics": g["topics"]} for g in body.get("groups", [])]
    return [{"groupId": body.get("groupId", ""), "memberId": None, "memberEpoch": -1,
             "topics": body.get("topics", [])}]


def offset_fetch_error(version: int, body: dict | None, error: Error, message: str | None) -> dict:
    groups = request_fetch_groups(version, body) if body is not None else (
        [] if version >= 8 else [{"groupId": "", "topics": []}])
    return offset_fetch_response(version, [fetch_group_error(version, g, error) for g in groups])


def described_group(version: int, group_id: str, error: Error = Errors.NONE, *, message: str | None = None,
                    state: str = "", protocol_type: str = "", protocol_data: str = "",
                    members: list[dict] | None = None, authorized_operations: int = INT32_MIN) -> dict:
    entry: dict = {"errorCode": error.code}
    if version >= 6:
        entry["errorMessage"] = message
    entry.update({"groupId": group_id, "groupState": state, "protocolType": protocol_type,
                  "protocolData": protocol_data})
    out_members = []
    for m in members or []:
        e = {"memberId": m["memberId"]}
        if version >= 4:
            e["groupInstanceId"] = m["groupInstanceId"]
        e.update({"clientId": m["clientId"], "clientHost": m["clientHost"],
                  "memberMetadata": m["memberMetadata"], "memberAssignment": m["memberAssignment"]})
        out_members.append(e)
    entry["members"] = out_members
    if version >= 3:
        entry["authorizedOperations"] = authorized_operations
    return entry


def describe_response(version: int, groups: list[dict]) -> dict:
    body: dict = {"throttleTimeMs": 0} if version >= 1 else {}
    body["groups"] = groups
    return body


def list_groups_response(version: int, error: Error = Errors.NONE, groups: list[dict] | None = None) -> dict:
    body: dict = {"throttleTimeMs": 0} if version >= 1 else {}
    body["errorCode"] = error.code
    out = []
    for g in groups or []:
        e = {"groupId": g["groupId"], "protocolType": g["protocolType"]}
        if version >= 4:
            e["groupState"] = g["groupState"]
        if version >= 5:
            e["groupType"] = g["groupType"]
        out.append(e)
    body["groups"] = out
    return body


def delete_groups_response(version: int, results: list[dict]) -> dict:
    return {"throttleTimeMs": 0, "results": results}


def offset_delete_response(error: Error = Errors.NONE, topics: list[dict] | None = None) -> dict:
    return {"errorCode": error.code, "throttleTimeMs": 0, "topics": topics or []}


# ====================================================================== error builders
# Shaped like each request's getErrorResponse / the coordinator service's exception handlers.

# The service-level checks (coordinator inactive, empty group id, session timeout) echo the
# member id; errors raised inside the coordinator runtime do not.
_JOIN_ECHOES_MEMBER_ID = {Errors.INVALID_GROUP_ID.code, Errors.INVALID_SESSION_TIMEOUT.code,
                          Errors.COORDINATOR_NOT_AVAILABLE.code}


def _join_error(version, body, error, message):
    member_id = (body or {}).get("memberId", "") if error.code in _JOIN_ECHOES_MEMBER_ID else ""
    return join_response(version, error, member_id=member_id)


def _sync_error(version, body, error, message):
    return sync_response(version, error)


def _heartbeat_error(version, body, error, message):
    return heartbeat_response(version, error)


def _leave_error(version, body, error, message):
    return leave_response(version, error)


def _offset_delete_error(version, body, error, message):
    return offset_delete_response(error)


def _describe_error(version, body, error, message):
    return describe_response(version, [described_group(version, g, error) for g in (body or {}).get("groups", [])])


def _list_error(version, body, error, message):
    return list_groups_response(version, error)


def _delete_error(version, body, error, message):
    return delete_groups_response(version, [{"groupId": g, "errorCode": error.code}
                                            for g in (body or {}).get("groupsNames", [])])


# ====================================================================== request schemas

NULLABLE = (0, None)

JOIN_GROUP = register(ApiSpec(
    name="JoinGroup", api_key=11, min_version=0, max_version=9,
    request=Struct(
        F("groupId", "string"),
        F("sessionTimeoutMs", "int32"),
        F("rebalanceTimeoutMs", "int32", versions=(1, None), default=-1),
        F("memberId", "string"),
        F("groupInstanceId", "string", versions=(5, None), nullable=(5, None), default=None),
        F("protocolType", "string"),
        F("protocols", Array(Struct(F("name", "string"), F("metadata", "bytes")))),
        F("reason", "string", versions=(8, None), nullable=(8, None), default=None),
    ),
    component=COMPONENT, routing_field="groupId", error_response=_join_error))

SYNC_GROUP = register(ApiSpec(
    name="SyncGroup", api_key=14, min_version=0, max_version=5,
    request=Struct(
        F("groupId", "string"),
        F("generationId", "int32"),
        F("memberId", "string"),
        F("groupInstanceId", "string", versions=(3, None), nullable=(3, None), default=None),
        F("protocolType", "string", versions=(5, None), nullable=(5, None), default=None),
        F("protocolName", "string", versions=(5, None), nullable=(5, None), default=None),
        F("assignments", Array(Struct(F("memberId", "string"), F("assignment", "bytes")))),
    ),
    component=COMPONENT, routing_field="groupId", error_response=_sync_error))

HEARTBEAT = register(ApiSpec(
    name="Heartbeat", api_key=12, min_version=0, max_version=4,
    request=Struct(
        F("groupId", "string"),
        F("generationId", "int32"),
        F("memberId", "string"),
        F("groupInstanceId", "string", versions=(3, None), nullable=(3, None), default=None),
    ),
    component=COMPONENT, routing_field="groupId", error_response=_heartbeat_error))

LEAVE_GROUP = register(ApiSpec(
    name="LeaveGroup", api_key=13, min_version=0, max_version=5,
    request=Struct(
        F("groupId", "string"),
        F("memberId", "string", versions=(0, 2)),
        F("members", Array(Struct(
            F("memberId", "string"),
            F("groupInstanceId", "string", versions=(3, None), nullable=(3, None), default=None),
            F("reason", "string", versions=(5, None), nullable=(5, None), default=None),
        )), versions=(3, None)),
    ),
    component=COMPONENT, routing_field="groupId", error_response=_leave_error))

OFFSET_COMMIT = register(ApiSpec(
    name="OffsetCommit", api_key=8, min_version=2, max_version=10,
    request=Struct(
        F("groupId", "string"),
        F("generationIdOrMemberEpoch", "int32", versions=(1, None), default=-1),
        F("memberId", "string", versions=(1, None)),
        F("groupInstanceId", "string", versions=(7, None), nullable=(7, None), default=None),
        F("retentionTimeMs", "int64", versions=(2, 4), default=-1),
        F("topics", Array(Struct(
            F("name", "string", versions=(0, 9)),
            F("topicId", "uuid", versions=(10, None)),
            F("partitions", Array(Struct(
                F("partitionIndex", "int32"),
                F("committedOffset", "int64"),
                F("committedLeaderEpoch", "int32", versions=(6, None), default=-1),
                F("committedMetadata", "string", nullable=NULLABLE),
            ))),
        ))),
    ),
    component=COMPONENT, routing_field="groupId", error_response=offset_commit_error))

_FETCH_TOPICS = Array(Struct(F("name", "string"), F("partitionIndexes", Array("int32"))))
_FETCH_GROUP_TOPICS = Array(Struct(F("name", "string", versions=(0, 9)), F("topicId", "uuid", versions=(10, None)),
                                   F("partitionIndexes", Array("int32"))))
OFFSET_FETCH = register(ApiSpec(
    name="OffsetFetch", api_key=9, min_version=1, max_version=10,
    request=Struct(
        F("groupId", "string", versions=(0, 7)),
        F("topics", _FETCH_TOPICS, versions=(0, 7), nullable=(2, 7)),
        F("groups", Array(Struct(
            F("groupId", "string"),
            F("memberId", "string", versions=(9, None), nullable=(9, None), default=None),
            F("memberEpoch", "int32", versions=(9, None), default=-1),
            F("topics", _FETCH_GROUP_TOPICS, nullable=(8, None)),
        )), versions=(8, None)),
        F("requireStable", "bool", versions=(7, None), default=False),
    ),
    # v8+ names several groups: ownership is checked per group (NOT_COORDINATOR per group).
    component=COMPONENT, routing_field=None, error_response=offset_fetch_error))

OFFSET_DELETE = register(ApiSpec(
    name="OffsetDelete", api_key=47, min_version=0, max_version=0,
    request=Struct(
        F("groupId", "string"),
        F("topics", Array(Struct(F("name", "string"), F("partitions", Array(Struct(F("partitionIndex", "int32"))))))),
    ),
    component=COMPONENT, routing_field="groupId", error_response=_offset_delete_error))

DESCRIBE_GROUPS = register(ApiSpec(
    name="DescribeGroups", api_key=15, min_version=0, max_version=6,
    request=Struct(
        F("groups", Array("string")),
        F("includeAuthorizedOperations", "bool", versions=(3, None), default=False),
    ),
    component=COMPONENT, routing_field=None, error_response=_describe_error))

LIST_GROUPS = register(ApiSpec(
    name="ListGroups", api_key=16, min_version=0, max_version=5,
    request=Struct(
        F("statesFilter", Array("string"), versions=(4, None)),
        F("typesFilter", Array("string"), versions=(5, None)),
    ),
    component=COMPONENT, routing_field=None, error_response=_list_error))

DELETE_GROUPS = register(ApiSpec(
    name="DeleteGroups", api_key=42, min_version=0, max_version=2,
    request=Struct(F("groupsNames", Array("string"))),
    component=COMPONENT, routing_field=None, error_response=_delete_error))
