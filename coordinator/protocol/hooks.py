"""Kafka's per-message rules that the message files do not say, as small named hooks.

Response hooks run on a response dict before it is shaped (`respond`): they are the logic of
Kafka's generated/handwritten response constructors. Error hooks belong to the error shapes of the
API table (`ErrorShape.map_error/prepare/extra`): the logic of a request's `getErrorResponse`.
"""

from __future__ import annotations

from collections.abc import Callable

from ..errors import Error, Errors
from .loader import shape

# ====================================================================== response hooks


def join_group_protocol_name(version: int, data: dict) -> dict:
    """JoinGroupResponse(data, version): before v7 a null protocol name is sent as "", from v7 an
    empty one as null; a null leader is sent as ""."""
    name = data.get("protocolName")
    if version < 7 and name is None:
        data["protocolName"] = ""
    elif version >= 7 and name == "":
        data["protocolName"] = None
    if data.get("leader", "") is None:
        data["leader"] = ""
    return data


def leave_group_member_error(version: int, data: dict) -> dict:
    """LeaveGroupResponse(data, version): before v3 there is no member list; the top-level error
    wins, else the single member's error is folded into the top level."""
    if version < 3 and data.get("errorCode", 0) == 0 and data.get("members"):
        data["errorCode"] = data["members"][0].get("errorCode", 0)
    return data


RESPONSE_HOOKS: dict[str, Callable[[int, dict], dict]] = {
    "JoinGroupResponse": join_group_protocol_name,
    "LeaveGroupResponse": leave_group_member_error,
}


def respond(message: str, version: int, data: dict) -> dict:
    """A response body: `data` through the message's hook, then shaped for the version."""
    hook = RESPONSE_HOOKS.get(message)
    if hook is not None:
        data = hook(version, data)
    return shape(message, version, data)


# ====================================================================== error hooks


def producer_fenced_for(version: int, first_version_with_producer_fenced: int, error: Error) -> Error:
    """Kafka answers INVALID_PRODUCER_EPOCH to request versions older than PRODUCER_FENCED (KIP-588):
    InitProducerId < 4, AddPartitionsToTxn / AddOffsetsToTxn / EndTxn < 2, TxnOffsetCommit < 3."""
    if error == Errors.PRODUCER_FENCED and version < first_version_with_producer_fenced:
        return Errors.INVALID_PRODUCER_EPOCH
    return error


def producer_fenced_before(first_version: int) -> Callable[[int, Error], Error]:
    """The `map_error` hook of `producer_fenced_for`."""

    def map_error(version: int, error: Error) -> Error:
        return producer_fenced_for(version, first_version, error)

    map_error.__name__ = f"producer_fenced_before_v{first_version}"
    return map_error


# The group coordinator service's own checks (coordinator inactive, empty group id, session
# timeout) echo the member id; errors raised inside the coordinator runtime do not.
_JOIN_ECHOES_MEMBER_ID = {
    Errors.INVALID_GROUP_ID.code,
    Errors.INVALID_SESSION_TIMEOUT.code,
    Errors.COORDINATOR_NOT_AVAILABLE.code,
}


def join_group_member_id(version: int, body: dict | None, error: Error, message: str | None) -> dict:
    member_id = (body or {}).get("memberId", "") if error.code in _JOIN_ECHOES_MEMBER_ID else ""
    return join_group_protocol_name(version, {"memberId": member_id, "protocolName": None})


def find_coordinator_message(version: int, body: dict | None, error: Error, message: str | None) -> dict:
    """KafkaApis answers the single-key form (v1-3) with the error's own message when none is given."""
    return {"errorMessage": message or error.message} if version < 4 else {}


def flatten_topics(topics: list) -> list:
    """(topic, partition) pairs in request order, without duplicates (Kafka uses a set)."""
    seen: dict = {}
    for t in topics or []:
        for p in t.get("partitions") or []:
            seen.setdefault((t["name"], p), None)
    return list(seen)


def add_partitions_topics(version: int, body: dict) -> dict:
    """AddPartitionsToTxn v0-3 answers each (topic, partition) once, topics merged in request order."""
    if version >= 4:
        return body
    merged: dict = {}
    for topic, p in flatten_topics(body.get("v3AndBelowTopics") or []):
        merged.setdefault(topic, []).append(p)
    return {**body, "v3AndBelowTopics": [{"name": t, "partitions": ps} for t, ps in merged.items()]}
