"""The group coordinator's response bodies, shaped for the request's version exactly as Kafka's
generated JSON converters print them (fields absent from a version are left out, bytes are base64,
names are camelCase): each builder is a thin call into the shaper of the message JSON files
(coordinator/protocol). The APIs themselves (versions, request fields, error shapes) are in the
API table, coordinator/protocol/table.py.

OffsetCommit v10 / OffsetFetch v10 (KIP-848) name topics by id instead of by name: the handlers
translate ids to names with the topic metadata (the offset store keys partitions by name, as
Kafka's does) and back.
"""

from __future__ import annotations

from ...errors import Error, Errors
from ...protocol.hooks import respond
from ...protocol.loader import shape

COMPONENT = "groups"
INT32_MIN = -(2**31)
INVALID_OFFSET = -1

# ====================================================================== shaping helpers


def join_response(
    version: int,
    error: Error = Errors.NONE,
    *,
    generation_id: int = -1,
    protocol_type: str | None = None,
    protocol_name: str | None = None,
    leader: str | None = "",
    skip_assignment: bool = False,
    member_id: str = "",
    members: list[dict] | None = None,
) -> dict:
    # JoinGroupResponse(data, version): protocolName "" vs null by version (hooks.join_group_protocol_name).
    return respond(
        "JoinGroupResponse",
        version,
        {
            "throttleTimeMs": 0,
            "errorCode": error.code,
            "generationId": generation_id,
            "protocolType": protocol_type,
            "protocolName": protocol_name,
            "leader": leader,
            "skipAssignment": skip_assignment,
            "memberId": member_id,
            "members": members or [],
        },
    )


def sync_response(
    version: int,
    error: Error = Errors.NONE,
    *,
    protocol_type: str | None = None,
    protocol_name: str | None = None,
    assignment: str = "",
) -> dict:
    return shape(
        "SyncGroupResponse",
        version,
        {
            "throttleTimeMs": 0,
            "errorCode": error.code,
            "protocolType": protocol_type,
            "protocolName": protocol_name,
            "assignment": assignment,
        },
    )


def heartbeat_response(version: int, error: Error = Errors.NONE) -> dict:
    return shape("HeartbeatResponse", version, {"throttleTimeMs": 0, "errorCode": error.code})


def leave_response(version: int, error: Error = Errors.NONE, members: list[dict] | None = None) -> dict:
    """LeaveGroupResponse(data, version): before v3 the top-level error wins, else the single
    member's error is folded into the top level (hooks.leave_group_member_error)."""
    return respond(
        "LeaveGroupResponse", version, {"throttleTimeMs": 0, "errorCode": error.code, "members": members or []}
    )


def offset_commit_response(version: int, topics: list[dict]) -> dict:
    return shape("OffsetCommitResponse", version, {"throttleTimeMs": 0, "topics": topics})


def topic_field(version: int) -> str:
    """How OffsetCommit / OffsetFetch name a topic: by `topicId` from v10 (KIP-848), else `name`."""
    return "topicId" if version >= 10 else "name"


def fetch_partition(
    version: int,
    partition: int,
    offset: int = INVALID_OFFSET,
    leader_epoch: int = -1,
    metadata: str | None = "",
    error: Error = Errors.NONE,
) -> dict:
    return {
        "partitionIndex": partition,
        "committedOffset": offset,
        "committedLeaderEpoch": leader_epoch,
        "metadata": metadata,
        "errorCode": error.code,
    }


def fetch_group_error(version: int, group: dict, error: Error) -> dict:
    """OffsetFetchResponse.groupError: a group-level error; before v2 it can only be reported on
    every requested partition."""
    if version >= 2:
        return {"groupId": group["groupId"], "topics": [], "errorCode": error.code}
    return {
        "groupId": group["groupId"],
        "errorCode": Errors.NONE.code,
        "topics": [
            {"name": t["name"], "partitions": [fetch_partition(version, p, error=error) for p in t["partitionIndexes"]]}
            for t in group["topics"] or []
        ],
    }  # (v1 only: named topics)


def offset_fetch_response(version: int, groups: list[dict]) -> dict:
    """OffsetFetchResponse.Builder: v8+ lists groups; older versions carry the single group's
    topics and (v2+) its error at the top level."""
    if version >= 8:
        return shape("OffsetFetchResponse", version, {"throttleTimeMs": 0, "groups": groups})
    group = groups[0]
    return shape(
        "OffsetFetchResponse",
        version,
        {"throttleTimeMs": 0, "topics": group["topics"], "errorCode": group["errorCode"]},
    )


def request_fetch_groups(version: int, body: dict | None) -> list[dict]:
    """The request's groups in the v8+ shape (OffsetFetchRequest.groups())."""
    body = body or {}
    if version >= 8:
        return [
            {
                "groupId": g["groupId"],
                "memberId": g.get("memberId"),
                "memberEpoch": g.get("memberEpoch", -1),
                "topics": g["topics"],
            }
            for g in body.get("groups", [])
        ]
    return [{"groupId": body.get("groupId", ""), "memberId": None, "memberEpoch": -1, "topics": body.get("topics", [])}]


def described_group(
    version: int,
    group_id: str,
    error: Error = Errors.NONE,
    *,
    message: str | None = None,
    state: str = "",
    protocol_type: str = "",
    protocol_data: str = "",
    members: list[dict] | None = None,
    authorized_operations: int = INT32_MIN,
) -> dict:
    return shape(
        "DescribeGroupsResponse",
        version,
        {
            "errorCode": error.code,
            "errorMessage": message,
            "groupId": group_id,
            "groupState": state,
            "protocolType": protocol_type,
            "protocolData": protocol_data,
            "members": members or [],
            "authorizedOperations": authorized_operations,
        },
        ("groups",),
    )


def describe_response(version: int, groups: list[dict]) -> dict:
    return {"throttleTimeMs": 0, "groups": groups} if version >= 1 else {"groups": groups}


def list_groups_response(version: int, error: Error = Errors.NONE, groups: list[dict] | None = None) -> dict:
    return shape("ListGroupsResponse", version, {"throttleTimeMs": 0, "errorCode": error.code, "groups": groups or []})


def delete_groups_response(version: int, results: list[dict]) -> dict:
    return shape("DeleteGroupsResponse", version, {"throttleTimeMs": 0, "results": results})


def offset_delete_response(error: Error = Errors.NONE, topics: list[dict] | None = None) -> dict:
    return shape("OffsetDeleteResponse", 0, {"errorCode": error.code, "throttleTimeMs": 0, "topics": topics or []})
