"""KIP-932 share groups in the groups component: Kafka's GroupMetadataManager share-group path
(shareGroupHeartbeat, shareGroupLeave, the session timeout, shareGroupDescribe, the record replay
and onLoaded), with the simple assignor (`coordinator/share/simple_assignor.py`).

As for consumer groups (consumer/manager.py, whose metadata hash and topic-id mapping this reuses),
a request validates and computes on the group as it is, accumulating state-log records; they are
appended and replayed only once nothing can fail, so an error answer changes nothing.

Initialization before assignment, as Kafka 4.1: a heartbeat finds the subscribed share-partitions
neither initialized nor initializing (subscribedTopicsChangeMap), records them as initializing in
ShareGroupStatePartitionMetadata and has them initialized (InitializeShareGroupState, start offset
-1, state epoch = group epoch) by their share coordinator partitions (`offsets_admin.py`,
the persister's part); the answer records them initialized (initializeShareGroupState) or takes
them out of initializing (uninitializeShareGroupState). The assignor sees only initialized
partitions, and the next heartbeat bumps the group epoch while the target assignment does not cover
every initialized partition (initializedAssignmentPending). That bookkeeping is
`partition_states.py`; this module is the heartbeat, leave, timeout, describe and replay.

Built by the group coordinator (`coordinator.group.shard`), which routes its APIs, timers and records here.
"""

from __future__ import annotations

from typing import Any

from ...errors import ApiError, Error, Errors
from ...messages import Request, StateRecord
from ...records import record_key
from ...result import CoordinatorResult
from ...share.simple_assignor import SIMPLE_ASSIGNOR_NAME, SimpleAssignor
from ...timers import Timer
from ..consumer._java import order_key
from ..consumer.assignors.api import PartitionAssignorException
from ..group import SHARE
from ..group_configs import SHARE_HEARTBEAT_INTERVAL_MS, SHARE_SESSION_TIMEOUT_MS
from ..modern.apis import describe_response
from ..modern.manager import ModernGroupManager
from ..modern.member import LEAVE_GROUP_MEMBER_EPOCH
from ..modern.records import event_assignment, persisted_group, replay_group_metadata, replay_member_metadata
from .apis import described_group, heartbeat_response
from .group import (
    EMPTY,
    METADATA_REFRESH_INTERVAL_MS,
    R_CURRENT,
    R_GROUP,
    R_MEMBER,
    R_STATE_PARTITION_METADATA,
    R_TARGET,
    R_TARGET_EPOCH,
    STABLE,
    ShareGroup,
    ShareGroupMember,
    current_value,
    group_epoch_value,
    member_value,
    session_timer_key,
    target_epoch_value,
    target_value,
)
from .partition_states import SharePartitionStates, initialized_by_name, state_partition_metadata_info

T_SESSION = "share-session"
ASSIGNOR = SimpleAssignor()


def throw_if_request_is_invalid(body: dict) -> None:
    """GroupCoordinatorService.throwIfShareGroupHeartbeatRequestIsInvalid."""

    def empty(value, message):
        if value is not None and value.strip() == "":
            raise ApiError(Errors.INVALID_REQUEST, message)

    empty(body["memberId"], "MemberId can't be empty.")
    empty(body["groupId"], "GroupId can't be empty.")
    empty(body["rackId"], "RackId can't be empty.")
    if body["memberEpoch"] == 0:
        if not body["subscribedTopicNames"]:
            raise ApiError(Errors.INVALID_REQUEST, "SubscribedTopicNames must be set in first request.")
    elif body["memberEpoch"] < LEAVE_GROUP_MEMBER_EPOCH:
        raise ApiError(Errors.INVALID_REQUEST, "MemberEpoch is invalid.")


def throw_if_member_epoch_is_invalid(member: ShareGroupMember, received: int) -> None:
    """throwIfShareGroupMemberEpochIsInvalid."""
    if received > member.member_epoch:
        raise ApiError(
            Errors.FENCED_MEMBER_EPOCH,
            f"The share group member has a greater member epoch ({received}) than the one known by the "
            f"group coordinator ({member.member_epoch}). The member must abandon all its partitions and "
            "rejoin.",
        )
    if received < member.member_epoch and received != member.previous_member_epoch:
        raise ApiError(
            Errors.FENCED_MEMBER_EPOCH,
            f"The share group member has a smaller member epoch ({received}) than the one known by the "
            f"group coordinator ({member.member_epoch}), and it does not match the previous member epoch "
            f"({member.previous_member_epoch}). The member must abandon all its partitions and rejoin.",
        )


class ShareGroupManager(ModernGroupManager):
    group_class = ShareGroup
    type_name = "share"

    def __init__(self, coordinator):
        super().__init__(coordinator)
        self.partitions = SharePartitionStates(self)  # the share-partitions' initialization and deletion

    # ================================================================ helpers
    @property
    def consumers(self):
        """The consumer-group manager: assignments go on the wire the same way."""
        return self.c.consumer

    def enabled(self) -> bool:
        """KafkaApis.isShareGroupProtocolEnabled: group.share.enable or the share.version feature
        (a setting here, on by default as in a 4.1 cluster with share.version=1)."""
        return bool(self.config.get("group.share.enable", True))

    def share_group(self, group_id: str) -> ShareGroup:
        """GroupMetadataManager.shareGroup(groupId)."""
        return self.typed_group(group_id)

    def heartbeat_interval_ms(self, group_id: str) -> int:
        return self.c.configs.effective(group_id, SHARE_HEARTBEAT_INTERVAL_MS)

    def session_timeout_ms(self, group_id: str) -> int:
        return self.c.configs.effective(group_id, SHARE_SESSION_TIMEOUT_MS)

    # ================================================================ ShareGroupHeartbeat
    def share_group_heartbeat(self, request: Request) -> CoordinatorResult:
        body = request.body
        if not self.enabled():
            raise ApiError(Errors.UNSUPPORTED_VERSION)
        throw_if_request_is_invalid(body)
        if body["memberEpoch"] == LEAVE_GROUP_MEMBER_EPOCH:
            return self.share_group_leave(body)
        return self._heartbeat(request)

    def _get_or_maybe_create_group(self, group_id: str, create: bool) -> ShareGroup:
        """getOrMaybeCreateShareGroup: no conversion between group types."""
        group = self.c.groups.get(group_id)
        if group is None and not create:
            raise ApiError(Errors.GROUP_ID_NOT_FOUND, f"Share group {group_id} not found.")
        if group is None:
            return ShareGroup(group_id)
        if isinstance(group, ShareGroup):
            return group
        raise ApiError(Errors.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a share group.")

    def _heartbeat(self, request: Request) -> CoordinatorResult:
        body = request.body
        group_id, member_id, member_epoch = body["groupId"], body["memberId"], body["memberEpoch"]
        subscribed = body["subscribedTopicNames"]
        now = self.now
        records: list = []
        events: list = []
        state_before = self._state(group_id)

        create = member_epoch == 0
        group = self._get_or_maybe_create_group(group_id, create)
        is_new_group = group_id not in self.c.groups
        max_size = self.config.get("group.share.max.size", 200)
        if len(group.members) >= max_size and (member_id == "" or not group.has_member(member_id)):
            raise ApiError(
                Errors.GROUP_MAX_SIZE_REACHED,
                f"The share group has reached its maximum capacity of {max_size} members.",
            )
        member = group.get_or_create_member(member_id, create)
        throw_if_member_epoch_is_invalid(member, member_epoch)
        is_new_member = member_id not in group.members

        # 1. Create or update the member; bump the group epoch if its subscription changed.
        changes: dict[str, Any] = {"client_id": request.reply.client_id, "client_host": request.client_host}
        if body["rackId"] is not None:
            changes["rack_id"] = body["rackId"]
        if subscribed is not None:
            changes["subscribed_topic_names"] = frozenset(subscribed)
        updated = member.replace(**changes)
        bump = False
        if updated != member or is_new_member:
            records.append((record_key(R_MEMBER, group_id, member_id), member_value(updated)))
            bump = updated.subscribed_topic_names != member.subscribed_topic_names
        bump = bump or self.partitions.initialized_assignment_pending(group)
        members_after = dict(group.members)
        members_after[member_id] = updated
        group_epoch = group.group_epoch
        metadata = self.metadata
        if bump or (metadata.available and group.has_metadata_expired(now)):
            counts = group.subscribed_topic_names(members_after)
            metadata_hash = self.compute_metadata_hash(counts)
            reason = (
                "new group"
                if group_id not in self.c.groups
                else (f"member {member_id} changed its subscription" if bump else None)
            )
            if metadata_hash != group.metadata_hash:
                bump = True
                reason = reason or "the metadata of the subscribed topics changed"
            if bump:
                group_epoch += 1
                records.append((record_key(R_GROUP, group_id), group_epoch_value(group_epoch, metadata_hash)))
                events.append(
                    ("GroupEpochBumped", {"groupEpoch": group_epoch, "metadataHash": metadata_hash, "reason": reason})
                )
            refresh_deadline = (now + METADATA_REFRESH_INTERVAL_MS, group_epoch)  # soft state, set below
        else:
            refresh_deadline = None

        # 2. A new target assignment if the group epoch is ahead of the assignment epoch.
        if group_epoch > group.target_assignment_epoch and self.can_compute_next_target_assignment(group):
            target = self._update_target_assignment(group, group_epoch, members_after, records, events).get(
                member_id, {}
            )
            target_epoch = group_epoch
        else:
            target_epoch = group.target_assignment_epoch
            target = group.target_assignment.get(member_id, {})

        # 3. Reconcile (ShareGroupAssignmentBuilder): the member moves to its target at once.
        reconciled = updated
        if target_epoch != updated.member_epoch:
            reconciled = updated.replace(
                state="STABLE",
                assigned_partitions=target,
                member_epoch=target_epoch,
                previous_member_epoch=updated.member_epoch,
            )
            records.append((record_key(R_CURRENT, group_id, member_id), current_value(reconciled)))

        init_map = self.partitions.maybe_create_initialize_request(
            group, group.subscribed_topic_names(members_after), records
        )

        # Nothing can fail any more: the result (records replayed by the runtime) and the soft state.
        result = CoordinatorResult()
        if refresh_deadline is not None:
            group.set_metadata_refresh_deadline(*refresh_deadline)
        result.records += [StateRecord(key, value) for key, value in records]
        self._schedule_session_timeout(result, group_id, member_id)
        if init_map:
            # The local share-partitions' initialization reads the group's partition metadata as the
            # records leave it (the last metadata record, as replay would read it).
            info = state_partition_metadata_info(
                [v for k, v in records if k == record_key(R_STATE_PARTITION_METADATA, group_id)][-1], self.now
            )
            self.partitions._send_initialize(group_id, group_epoch, init_map, result, info)
        self.created_and_joined_events(
            result,
            group_id,
            is_new_group,
            is_new_member,
            "ShareGroupHeartbeat",
            groupType=SHARE,
            memberId=member_id,
            groupInstanceId=None,
            clientId=request.reply.client_id,
        )
        for name, fields in events:
            self.c.event(result, group_id, name, groupType=SHARE, **fields)
        if reconciled is not updated or is_new_member:
            self.c.event(
                result,
                group_id,
                "MemberAssignmentChanged",
                groupType=SHARE,
                memberId=member_id,
                memberEpoch=reconciled.member_epoch,
                previousMemberEpoch=reconciled.previous_member_epoch,
                memberState=reconciled.state,
                assignedPartitions=event_assignment(reconciled.assigned_partitions),
            )
        # The state once the records are replayed: the member is in, so the group is Stable.
        self.state_changed_event(result, group_id, state_before, STABLE, group_epoch, target_epoch)

        response = heartbeat_response(
            member_id=member_id,
            member_epoch=reconciled.member_epoch,
            heartbeat_interval_ms=self.heartbeat_interval_ms(group_id),
        )
        if member_epoch == 0 or subscribed is not None or member.assigned_partitions != reconciled.assigned_partitions:
            response["assignment"] = {"topicPartitions": self.consumers.wire_assignment(reconciled.assigned_partitions)}
        result.response = response
        return result

    def _update_target_assignment(
        self, group: ShareGroup, group_epoch: int, members: dict, records: list, events: list
    ) -> dict:
        """updateTargetAssignment with the simple assignor: records for the members whose target
        changed and for the new assignment epoch. Returns the new target of every member."""
        topics = self.topics()
        specs = {}
        for m_id, m in members.items():
            subscribed = frozenset(t for t in m.subscribed_topic_names if t in topics)
            specs[m_id] = (subscribed, group.target_assignment.get(m_id, {}))
        counts = group.subscribed_topic_names(members)
        homogeneous = all(c == len(members) for t, c in counts.items() if t in topics)
        initialized = initialized_by_name(group)
        try:
            result = ASSIGNOR.assign(
                specs, topics, homogeneous, lambda t, p: p in initialized.get(t, ()), self.metadata.topic_ids
            )
        except PartitionAssignorException as ex:
            raise ApiError(
                Errors.UNKNOWN_SERVER_ERROR, f"Failed to compute a new target assignment for epoch {group_epoch}: {ex}"
            ) from ex
        gid = group.group_id
        changed = []
        for m_id in sorted(result, key=order_key):
            if group.target_assignment.get(m_id, {}) != result[m_id]:
                records.append((record_key(R_TARGET, gid, m_id), target_value(result[m_id])))
                changed.append(m_id)
        records.append((record_key(R_TARGET_EPOCH, gid), target_epoch_value(group_epoch, self.now)))
        total = sum(len(p) for a in result.values() for p in a.values())
        events.append(
            (
                "TargetAssignmentComputed",
                {
                    "assignmentEpoch": group_epoch,
                    "assignor": SIMPLE_ASSIGNOR_NAME,
                    "members": len(result),
                    "changedMembers": changed if len(changed) <= 1000 else len(changed),
                    "targetAssignment": (
                        {m: {t: sorted(ps) for t, ps in sorted(a.items())} for m, a in result.items()}
                        if total <= 10_000
                        else total
                    ),
                },
            )
        )
        return result

    # ================================================================ leaving and fencing
    def share_group_leave(self, body: dict) -> CoordinatorResult:
        group = self.share_group(body["groupId"])
        member = group.get_or_create_member(body["memberId"], False)
        result = self.fence_member(group, member, "MemberLeft", "the member left the group (member epoch -1)")
        result.response = heartbeat_response(member_id=body["memberId"], member_epoch=body["memberEpoch"])
        return result

    def fence_member(self, group: ShareGroup, member: ShareGroupMember, event: str, reason: str) -> CoordinatorResult:
        """shareGroupFenceMember: the member's tombstones and a group epoch bump."""
        gid, mid = group.group_id, member.member_id
        records: list[tuple[str, dict | None]] = [
            (record_key(R_CURRENT, gid, mid), None),
            (record_key(R_TARGET, gid, mid), None),
            (record_key(R_MEMBER, gid, mid), None),
        ]
        remaining = {m: v for m, v in group.members.items() if m != mid}
        metadata_hash = self.compute_metadata_hash(group.subscribed_topic_names(remaining))
        group_epoch = group.group_epoch + 1
        records.append((record_key(R_GROUP, gid), group_epoch_value(group_epoch, metadata_hash)))
        target_epoch = group.target_assignment_epoch
        if not remaining:
            # Kafka 4.4: the last member gone, the (empty) target assignment is at the new epoch.
            target_epoch = group_epoch
            records.append((record_key(R_TARGET_EPOCH, gid), target_epoch_value(group_epoch)))
        before = self._state(gid)
        result = CoordinatorResult()
        result.records += [StateRecord(key, value) for key, value in records]
        result.cancel(session_timer_key(gid, mid))
        self.c.event(
            result,
            gid,
            event,
            groupType=SHARE,
            memberId=mid,
            groupInstanceId=None,
            temporary=False,
            reason=reason,
            memberEpoch=member.member_epoch,
        )
        self.c.event(
            result,
            gid,
            "GroupEpochBumped",
            groupType=SHARE,
            groupEpoch=group_epoch,
            metadataHash=metadata_hash,
            reason=f"1 member(s) removed: {reason}",
        )
        after = STABLE if remaining else EMPTY  # the group's state once the tombstones are replayed
        self.state_changed_event(result, gid, before, after, group_epoch, target_epoch)
        return result

    # ================================================================ timers
    def _schedule_session_timeout(self, result: CoordinatorResult, group_id: str, member_id: str) -> None:
        key, deadline = session_timer_key(group_id, member_id), self.now + self.session_timeout_ms(group_id)
        result.schedule(key, deadline, T_SESSION, {"groupId": group_id, "memberId": member_id})

    def on_session_timeout(self, timer: Timer) -> CoordinatorResult | None:
        """shareGroupFenceMemberOperation: nothing if the group or the member is gone."""
        found = self.timer_member(timer)
        return None if found is None else self.fence_member(*found, "MemberFenced", "the member session expired")

    # ================================================================ metadata
    def on_metadata_change(self, old: dict, new: dict) -> None:
        """onMetadataUpdate: share groups recompute their metadata hash on their next heartbeat."""
        self.request_metadata_refresh()

    # ================================================================ ShareGroupDescribe
    def share_group_describe(self, request: Request) -> dict:
        if not self.enabled():  # every group's entry says so
            return describe_response(
                [described_group(group_id, Errors.UNSUPPORTED_VERSION) for group_id in request.body["groupIds"]]
            )
        return self.describe_groups(request.body, request.api_version)

    def described_group(self, version: int, group_id: str, error: Error | None = None, **fields: Any) -> dict:
        return described_group(group_id, error, **fields)

    def described_own(self, group: ShareGroup) -> dict:
        """ShareGroup.asDescribedGroup's assignor."""
        return {"assignor_name": SIMPLE_ASSIGNOR_NAME}

    def described_member(self, version: int, group: ShareGroup, m: ShareGroupMember) -> dict:
        """ShareGroupMember.asShareGroupDescribeMember."""
        return {
            "memberId": m.member_id,
            "rackId": m.rack_id,
            "memberEpoch": m.member_epoch,
            "clientId": m.client_id,
            "clientHost": m.client_host,
            "subscribedTopicNames": sorted(m.subscribed_topic_names, key=order_key),
            "assignment": {"topicPartitions": self.consumers.wire_assignment(m.assigned_partitions, True)},
        }

    # ================================================================ replay and load
    def _persisted_group(self, group_id: str, create: bool) -> ShareGroup | None:
        return persisted_group(self.c.groups, group_id, create, ShareGroup, f"Group {group_id} is not a share group.")

    def replay(self, kind: str, ids: list, value: dict | None) -> None:
        gid = ids[0]
        group = self._persisted_group(gid, value is not None)
        if group is None:
            return
        if kind == R_GROUP:
            replay_group_metadata(self.c.groups, group, value, "target assignment epoch in invalid.")
        elif kind == R_STATE_PARTITION_METADATA:
            group.state_partition_metadata = None if value is None else state_partition_metadata_info(value, self.now)
        elif kind == R_MEMBER:
            replay_member_metadata(
                group,
                ids[1],
                value,
                ShareGroupMember,
                ("with invalid leave group epoch.", "but member exists in target assignment."),
            )
        elif kind == R_TARGET:
            if value is not None:
                group.update_target_assignment(ids[1], value["topicPartitions"])
            else:
                group.remove_target_assignment(ids[1])
        elif kind == R_TARGET_EPOCH:
            group.target_assignment_epoch = -1 if value is None else int(value["assignmentEpoch"])
            group.assignment_timestamp = 0 if value is None else int(value.get("assignmentTimestamp", 0))
        elif kind == R_CURRENT:
            member_id = ids[1]
            old = group.members.get(member_id)
            if value is not None:
                group.update_member((old or ShareGroupMember(member_id)).with_assignment_value(value))
            elif old is not None:
                group.update_member(
                    old.replace(
                        member_epoch=LEAVE_GROUP_MEMBER_EPOCH,
                        previous_member_epoch=LEAVE_GROUP_MEMBER_EPOCH,
                        assigned_partitions={},
                    )
                )
