"""DescribeGroups, ListGroups and DeleteGroups.

DescribeGroups and DeleteGroups name several groups: the groups of other coordinator partitions
get NOT_COORDINATOR each, as a Kafka broker answers for groups it does not coordinate. ListGroups
lists this partition's groups, as each Kafka broker lists its own.
"""

from __future__ import annotations

from collections.abc import Iterator

from ..errors import ApiError, Errors
from ..messages import Request
from ..result import CoordinatorResult
from .classic.apis import INT32_MIN, delete_groups_response, describe_response, described_group, list_groups_response
from .classic.group import DEAD, STABLE, ClassicGroup
from .group import SHARE, parse_group_type

# Without an authorizer Kafka reports every operation a GROUP resource supports:
# READ(3), DELETE(6), DESCRIBE(8), DESCRIBE_CONFIGS(10), ALTER_CONFIGS(11) as a bit field.
GROUP_AUTHORIZED_OPERATIONS = sum(1 << code for code in (3, 6, 8, 10, 11))


def describe_groups(coordinator, request: Request) -> dict:
    body, version = request.body, request.api_version
    operations = GROUP_AUTHORIZED_OPERATIONS if body.get("includeAuthorizedOperations") else INT32_MIN
    out = []
    for group_id in body["groups"]:
        if not coordinator.p.owns(group_id):
            out.append(described_group(version, group_id, Errors.NOT_COORDINATOR, authorized_operations=operations))
            continue
        group = coordinator.groups.get(group_id)
        if group is None or not isinstance(group, ClassicGroup):
            message = f"Group {group_id} not found." if group is None else f"Group {group_id} is not a classic group."
            if version >= 6:
                out.append(
                    described_group(
                        version,
                        group_id,
                        Errors.GROUP_ID_NOT_FOUND,
                        message=message,
                        state=DEAD,
                        authorized_operations=operations,
                    )
                )
            else:
                out.append(described_group(version, group_id, state=DEAD, authorized_operations=operations))
            continue
        if group.state == STABLE:
            members = [_describe_member(m, m.metadata(group.protocol_name)) for m in group.members.values()]
            out.append(
                described_group(
                    version,
                    group_id,
                    state=group.state,
                    protocol_type=group.protocol_type or "",
                    protocol_data=group.protocol_name or "",  # set in Stable
                    members=members,
                    authorized_operations=operations,
                )
            )
        else:
            members = [_describe_member(m, "") for m in group.members.values()]
            out.append(
                described_group(
                    version,
                    group_id,
                    state=group.state,
                    protocol_type=group.protocol_type or "",
                    members=members,
                    authorized_operations=operations,
                )
            )
    return describe_response(version, out)


def _describe_member(member, metadata: str) -> dict:
    return {
        "memberId": member.member_id,
        "groupInstanceId": member.group_instance_id,
        "clientId": member.client_id,
        "clientHost": member.client_host,
        "memberMetadata": metadata,
        "memberAssignment": member.assignment,
    }


def list_groups(coordinator, request: Request) -> dict:
    body, version = request.body, request.api_version
    states = body.get("statesFilter") or []
    types = body.get("typesFilter") or []
    states_lower = {s.lower().strip() for s in states}
    types_parsed = {parse_group_type(t) for t in types}
    listed = []
    for group in coordinator.groups.values():
        if states and not group.is_in_states(states_lower):
            continue
        if types and group.type not in types_parsed:
            continue
        listed.append(group.as_listed_group())
    return list_groups_response(version, Errors.NONE, listed)


def delete_groups(coordinator, request: Request) -> CoordinatorResult:
    body, version = request.body, request.api_version
    result = CoordinatorResult()
    results = []
    share_states: dict[str, dict] = {}  # share group -> {topic id: [partitions]} whose state to delete
    # The service de-duplicates the group ids of a request (Kafka orders them by hash; here they
    # keep the request's order).
    for group_id in dict.fromkeys(body["groupsNames"]):
        if not coordinator.p.owns(group_id):
            results.append({"groupId": group_id, "errorCode": Errors.NOT_COORDINATOR.code})
            continue
        try:
            group = coordinator.groups.get(group_id)
            if group is None:
                raise ApiError(Errors.GROUP_ID_NOT_FOUND, f"Group {group_id} not found.")
            group.validate_delete_group()
        except ApiError as e:
            results.append({"groupId": group_id, "errorCode": e.error.code})
            continue
        results.append({"groupId": group_id, "errorCode": Errors.NONE.code})
        if group.type == SHARE:
            # GroupCoordinatorService.deleteShareGroups: the share-partitions' state first.
            topics = coordinator.share.partitions.share_group_build_partition_delete_request(group, result)
            if topics:
                share_states[group_id] = topics
                continue
        result.merge(coordinator.delete_group(group, reason="DeleteGroups", with_offsets=True))
    if share_states:
        # Kafka's two write operations: the records moving the share-partitions to deleting are
        # replayed (the groups still there) before the share coordinator deletes their state and,
        # when it can at once, the groups' tombstones are written; it answers now or later.
        result.steps = _delete_share_groups(coordinator, request, results, share_states)
        return result
    result.response = delete_groups_response(version, results)
    return result


def _delete_share_groups(
    coordinator, request: Request, results: list, share_states: dict
) -> Iterator[CoordinatorResult]:
    result = CoordinatorResult()
    result.response = coordinator.share_offsets.delete_share_groups(result, request, results, share_states)
    yield result
