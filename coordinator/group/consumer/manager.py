"""KIP-848 consumer groups in the groups component: Kafka's GroupMetadataManager consumer-group
path (consumerGroupHeartbeat, consumerGroupLeave, the session and rebalance timers, the regex
refresh, consumerGroupDescribe, the record replay and onLoaded), on top of phase 1's algorithmic
core (`coordinator/group/consumer/`).

How a request changes state (as in Kafka): the handler validates, computes everything on the group
as it is, and accumulates state-log records; only when nothing can fail any more are the records
appended and replayed into the group (`_apply`). A request answered with an error therefore
changes nothing. Live state is thus always what replaying the log gives.

Built by the group coordinator (`coordinator.group.shard`), which routes its APIs, timers and records here.
"""

from __future__ import annotations

import dataclasses
from collections.abc import MutableMapping
from typing import Any

from ...acl import AclOperation, ResourceType
from ...authorization import client_address
from ...errors import ApiError, Error, Errors
from ...messages import Request, StateRecord
from ...metadata import ZERO_UUID
from ...records import record_key
from ...result import CoordinatorResult
from ...timers import Timer
from ..classic.apis import leave_response
from ..classic.group import ClassicGroup
from ..modern.group import INITIAL_GROUP_EPOCH
from ..modern.ids import kafka_uuid
from ..modern.manager import ModernGroupManager
from ..modern.member import LEAVE_GROUP_MEMBER_EPOCH, LEAVE_GROUP_STATIC_MEMBER_EPOCH
from ..modern.records import (
    EVENT_MAX_PARTITIONS,
    event_assignment,
    persisted_group,
    replay_group_metadata,
    replay_member_metadata,
    replay_target_assignment_epoch,
)
from ._java import order_key
from .apis import described_group, heartbeat_response
from .assignors import ASSIGNORS, PartitionAssignorException
from .group import (
    METADATA_REFRESH_INTERVAL_MS,
    R_CURRENT,
    R_GROUP,
    R_MEMBER,
    R_PARTITION_METADATA,
    R_REGEX,
    R_TARGET,
    R_TARGET_EPOCH,
    ConsumerGroup,
    current_value,
    group_epoch_value,
    join_timer_key,
    member_value,
    rebalance_timer_key,
    regex_task_key,
    regex_value,
    session_timer_key,
    sync_timer_key,
    target_epoch_value,
    target_value,
)
from .group_state import derive_group_state, server_assignor_counts, subscribed_topic_counts
from .group_state import subscription_type as derive_subscription_type
from .heartbeat import (
    throw_if_group_is_full,
    throw_if_instance_id_is_fenced,
    throw_if_instance_id_is_unreleased,
    throw_if_member_epoch_is_invalid,
    throw_if_request_is_invalid,
    throw_if_static_member_is_unknown,
)
from .member import ConsumerGroupMember, MemberState, ResolvedRegularExpression
from .migration import ClassicMembers
from .reconciliation import reconcile
from .regex import RegexError, compile_regex
from .target_assignment import TargetAssignmentBuilder
from .topic_partitions import freeze

T_SESSION = "consumer-session"
T_REBALANCE = "consumer-rebalance"
T_REGEX = "consumer-regex"

# GroupMetadataManager.REGEX_BATCH_REFRESH_MIN_INTERVAL_MS
REGEX_BATCH_REFRESH_MIN_INTERVAL_MS = 10_000
LONG_MIN = -(2**63)

# UpdateRegularExpressionStatus
NO_CHANGE, REGEX_UPDATED, REGEX_UPDATED_AND_RESOLVED = "NO_CHANGE", "REGEX_UPDATED", "REGEX_UPDATED_AND_RESOLVED"

EXT = "consumer"  # key of this module's state in component.extensions


def unknown_topic_key(topic_id: str) -> str:
    """The name under which assignments hold partitions of a topic id the metadata does not know
    (not a legal topic name, so no topic has it)."""
    return f"<unknown topic id {topic_id}>"


class ConsumerGroupManager(ModernGroupManager):
    group_class = ConsumerGroup
    type_name = "consumer"
    revoking_state = MemberState.UNREVOKED_PARTITIONS

    def __init__(self, coordinator):
        super().__init__(coordinator)
        self.classic_members = ClassicMembers(self)

    @property
    def c_configs(self):
        """The group configs (GroupMetadataManager's groupConfigManager)."""
        return self.c.configs

    # ================================================================ helpers
    def ext(self) -> dict:
        return self.c.extensions.setdefault(EXT, {})

    @property
    def default_assignor(self) -> str:
        return self.config["group.consumer.assignors"][0]

    def consumer_group(self, group_id: str) -> ConsumerGroup:
        """GroupMetadataManager.consumerGroup(groupId)."""
        return self.typed_group(group_id)

    def _owned(self, topic_partitions: list[dict] | None) -> dict | None:
        """The request's owned partitions by topic name. A topic id the metadata does not know maps
        to `unknown_topic_key(id)`: no topic has that name, but the partitions of a deleted or
        re-created topic are renamed to it in the assignments (`on_metadata_change`), so a member
        still owning them is seen owning them, as Kafka (keyed by id) sees it."""
        if topic_partitions is None:
            return None
        names = {tid: name for name, tid in self.metadata.topic_ids.items()}
        owned: dict[str, set] = {}
        for tp in topic_partitions:
            name = names.get(tp["topicId"]) or unknown_topic_key(tp["topicId"])
            owned.setdefault(name, set()).update(tp["partitions"])
        return {t: frozenset(p) for t, p in owned.items()}

    def wire_assignment(self, assignment, with_names: bool = False) -> list[dict]:
        """{topic: partitions} -> [{topicId, (topicName,) partitions}], topics by name; a topic the
        metadata no longer knows (deleted) has no id and is left out, as Kafka leaves out ids its
        image does not know when it describes a group."""
        ids = self.metadata.topic_ids
        out = []
        for topic in sorted(assignment, key=order_key):
            tid = ids.get(topic)
            if tid is None:
                continue
            entry = {"topicId": tid}
            if with_names:
                entry["topicName"] = topic
            entry["partitions"] = sorted(assignment[topic])
            out.append(entry)
        return out

    # ================================================================ ConsumerGroupHeartbeat
    def consumer_group_heartbeat(self, request: Request) -> CoordinatorResult | dict:
        body, version = request.body, request.api_version
        throw_if_request_is_invalid(body, version, self.config["group.consumer.assignors"])
        if body["memberEpoch"] in (LEAVE_GROUP_MEMBER_EPOCH, LEAVE_GROUP_STATIC_MEMBER_EPOCH):
            return self.consumer_group_leave(body)
        return self._heartbeat(request)

    def _heartbeat(self, request: Request) -> CoordinatorResult:
        body = request.body
        group_id, member_id, member_epoch = body["groupId"], body["memberId"], body["memberEpoch"]
        instance_id = body["instanceId"]
        subscribed_names, regex = body["subscribedTopicNames"], body.get("subscribedTopicRegex")
        owned = self._owned(body["topicPartitions"])
        now = self.now
        records: list[tuple[str, dict | None]] = []
        events: list[tuple[str, dict]] = []
        state_before = self._state(group_id)

        # Get or create the group.
        create = member_epoch == 0
        group, converted = self._get_or_maybe_create_group(group_id, create, records)
        is_new_group = group_id not in self.c.groups or converted is not None
        throw_if_group_is_full(
            len(group.members), group.has_member(member_id), member_id, self.config["group.consumer.max.size"]
        )

        # Get or create the member.
        if member_id == "":
            member_id = self._generate_member_id(request, group_id)
        if instance_id is None:
            member = group.get_or_create_member(member_id, create)
            if member_epoch != 0:
                throw_if_member_epoch_is_invalid(member, member_epoch, owned)
        else:
            member = self._get_or_maybe_subscribe_static_member(
                group, member_id, member_epoch, instance_id, owned, create, records, events
            )
        is_new_member = member_id not in group.members

        # 1. Create or update the member; bump the group epoch if the subscription changed.
        updated = member.with_heartbeat(
            instance_id=instance_id,
            rack_id=body["rackId"],
            rebalance_timeout_ms=body["rebalanceTimeoutMs"],
            server_assignor=body["serverAssignor"],
            subscribed_topic_names=subscribed_names,
            subscribed_topic_regex=regex,
            client_id=request.reply.client_id,
            client_host=request.client_host,
        )
        names_changed = self._has_member_subscription_changed(group_id, member, updated, records)
        after: list = []  # soft-state changes and timers, made once nothing can fail
        regex_status = self._maybe_update_regular_expressions(group, member, updated, records, after, request)
        has_subscription_changed = names_changed or regex_status != NO_CHANGE

        group_epoch = group.group_epoch
        subscription_type = group.subscription_type()
        created = is_new_group and not group.members  # not an online upgrade of a classic group
        bump = created or names_changed or regex_status == REGEX_UPDATED_AND_RESOLVED
        if bump or (self.metadata.available and group.has_metadata_expired(now)):
            group_epoch, subscription_type = self._update_subscription_metadata(
                group, bump, member, updated, records, events, after
            )

        # 2. A new target assignment if the group epoch is ahead of the assignment epoch (and the
        # assignment interval allows it).
        if group_epoch > group.target_assignment_epoch and self.can_compute_next_target_assignment(group):
            target = self._update_target_assignment(
                group, group_epoch, member, updated, subscription_type, records, events
            )
            target_epoch = group_epoch
        else:
            target_epoch = group.target_assignment_epoch
            target = group.target_assignment_of(updated.member_id, updated.instance_id)

        # 3. Reconcile the member with its target (revoke before assign).
        reconciled = self._maybe_reconcile(
            group, updated, target_epoch, target, has_subscription_changed, owned, records, after
        )

        # Nothing can fail any more: the result (records replayed by the runtime, timers, events)
        # and the soft state.
        result = CoordinatorResult()
        upgraded = []
        if converted is not None and converted.is_empty():
            result.merge(
                self.c.delete_group(converted, reason="converted to a consumer group by ConsumerGroupHeartbeat")
            )
        elif converted is not None:
            # The parked requests are answered, and the classic group's tombstone goes first in
            # the log (its timers are cancelled).
            self.classic_members.parked_answers(converted, result)
            upgraded = list(converted.members.values())
            result.merge(
                self.c.delete_group(converted, reason="upgraded online to a consumer group by ConsumerGroupHeartbeat")
            )
        result.records += [StateRecord(key, value) for key, value in records]
        for cm in upgraded:
            self._schedule_session_timeout(result, group_id, cm.member_id, cm.session_timeout_ms)
        for fn in after:
            fn(result)
        self._schedule_session_timeout(result, group_id, member_id)
        self.created_and_joined_events(
            result,
            group_id,
            is_new_group,
            is_new_member,
            "ConsumerGroupHeartbeat",
            memberId=member_id,
            groupInstanceId=instance_id,
            clientId=request.reply.client_id,
        )
        self.member_update_events(
            result, group, updated, reconciled, is_new_member, events, state_before, group_epoch, target_epoch
        )

        # The response. The assignment goes back on a full request (joining with epoch 0, or
        # rebalance timeout, subscription and owned partitions all set) or when it changed.
        response = heartbeat_response(
            member_id=reconciled.member_id,
            member_epoch=reconciled.member_epoch,
            heartbeat_interval_ms=self.c_configs.consumer_heartbeat_interval_ms(group_id),
        )
        full = (
            body["rebalanceTimeoutMs"] != -1
            and (subscribed_names is not None or regex is not None)
            and body["topicPartitions"] is not None
        )
        if member_epoch == 0 or full or member.assigned_partitions != reconciled.assigned_partitions:
            response["assignment"] = {"topicPartitions": self.wire_assignment(reconciled.assigned_partitions)}
        result.response = response
        return result

    def member_update_events(
        self,
        result: CoordinatorResult,
        group: ConsumerGroup,
        updated: ConsumerGroupMember,
        reconciled: ConsumerGroupMember,
        is_new_member: bool,
        events: list[tuple[str, dict]],
        state_before: str | None,
        group_epoch: int,
        target_epoch: int,
    ) -> None:
        """The events of a member's heartbeat or classic join, into `result`: those collected on the
        way, the member's assignment change, and GroupStateChanged, the state once the records are
        replayed derived from what they hold."""
        group_id = group.group_id
        for name, fields in events:
            self.c.event(result, group_id, name, **fields)
        self._emit_assignment_change(group_id, updated, reconciled, is_new_member, result)
        members_after = self._effective_members(group, reconciled)
        state_after = str(derive_group_state(members_after.values(), group_epoch, target_epoch))
        self.state_changed_event(result, group_id, state_before, state_after, group_epoch, target_epoch)

    def _emit_assignment_change(
        self,
        group_id: str,
        updated: ConsumerGroupMember,
        reconciled: ConsumerGroupMember,
        is_new_member: bool,
        result: CoordinatorResult,
    ) -> None:
        if reconciled != updated or is_new_member:
            self.c.event(
                result,
                group_id,
                "MemberAssignmentChanged",
                memberId=reconciled.member_id,
                memberEpoch=reconciled.member_epoch,
                previousMemberEpoch=reconciled.previous_member_epoch,
                memberState=reconciled.state.name,
                assignedPartitions=event_assignment(reconciled.assigned_partitions),
                partitionsPendingRevocation=event_assignment(reconciled.partitions_pending_revocation),
            )

    def _generate_member_id(self, request: Request, group_id: str) -> str:
        """Version 0 lets the coordinator generate the member id (Uuid.randomUuid in Kafka); here
        derived from the request so that a replayed batch generates the same id."""
        return kafka_uuid(
            "\x00".join(
                [
                    group_id,
                    str(request.source[0]),
                    str(request.source[1]),
                    str(request.reply.correlation_id),
                    request.reply.client_id,
                    str(request.time_ms),
                ]
            )
        )

    def _get_or_maybe_create_group(
        self, group_id: str, create: bool, records: list
    ) -> tuple[ConsumerGroup, ClassicGroup | None]:
        """getOrMaybeCreateConsumerGroup. Returns the group (a new or converted one is not in the
        groups map until its records are replayed) and the classic group it replaces, if any: an
        empty one (maybeDeleteEmptyClassicGroup) or a non-empty one upgraded online
        (validateOnlineUpgrade + convertToConsumerGroup, whose records go into `records`)."""
        group = self.c.groups.get(group_id)
        if group is None and not create:
            raise ApiError(Errors.GROUP_ID_NOT_FOUND, f"Consumer group {group_id} not found.")
        if group is None:
            return ConsumerGroup(group_id), None
        if create and isinstance(group, ClassicGroup) and group.is_empty():
            return ConsumerGroup(group_id), group  # maybeDeleteEmptyClassicGroup
        if isinstance(group, ConsumerGroup):
            return group, None
        if create and isinstance(group, ClassicGroup):
            self.classic_members.validate_online_upgrade(group)
            return self.classic_members.convert_to_consumer_group(group, records), group
        raise ApiError(Errors.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a consumer group.")

    def _get_or_maybe_subscribe_static_member(
        self,
        group: ConsumerGroup,
        member_id: str,
        member_epoch: int,
        instance_id: str,
        owned,
        create: bool,
        records: list,
        events: list,
        use_classic_protocol: bool = False,
    ) -> ConsumerGroupMember:
        """getOrMaybeSubscribeStaticConsumerGroupMember."""
        existing = group.static_member(instance_id)
        if create:
            if existing is None:
                return group.get_or_create_member(member_id, True)
            # Between consumer-protocol members only a member that left with epoch -2 releases its
            # instance id (KAFKA-16566: the newcomer is rejected, not the holder).
            if not use_classic_protocol and not existing.use_classic_protocol:
                throw_if_instance_id_is_unreleased(existing, group.group_id, member_id, instance_id)
            new = existing.replace(member_id=member_id, member_epoch=0, previous_member_epoch=0)
            self._replace_member(records, group, existing, new)
            events.append(
                (
                    "StaticMemberReplaced",
                    {"groupInstanceId": instance_id, "oldMemberId": existing.member_id, "newMemberId": member_id},
                )
            )
            return new
        throw_if_static_member_is_unknown(existing, instance_id)
        assert existing is not None  # (throw_if_static_member_is_unknown raised otherwise)
        throw_if_instance_id_is_fenced(existing, group.group_id, member_id, instance_id)
        if not use_classic_protocol:
            throw_if_member_epoch_is_invalid(existing, member_epoch, owned)
        return existing

    @staticmethod
    def _remove_member_records(group_id: str, member_id: str) -> list:
        """removeMember: the tombstones of a member, in the order replay expects."""
        return [
            (record_key(R_CURRENT, group_id, member_id), None),
            (record_key(R_TARGET, group_id, member_id), None),
            (record_key(R_MEMBER, group_id, member_id), None),
        ]

    def _replace_member(
        self, records: list, group: ConsumerGroup, old: ConsumerGroupMember, new: ConsumerGroupMember
    ) -> None:
        """replaceMember: the old member's tombstones (its timers stay and will find nothing), then
        the new member with the old one's target assignment."""
        gid = group.group_id
        records += self._remove_member_records(gid, old.member_id)
        records.append((record_key(R_MEMBER, gid, new.member_id), member_value(new)))
        records.append(
            (record_key(R_TARGET, gid, new.member_id), target_value(group.target_assignment.get(old.member_id, {})))
        )
        records.append((record_key(R_CURRENT, gid, new.member_id), current_value(new)))

    @staticmethod
    def _has_member_subscription_changed(
        group_id: str, member: ConsumerGroupMember, updated: ConsumerGroupMember, records: list
    ) -> bool:
        """A ConsumerGroupMemberMetadata record if anything about the member changed; True if its
        subscribed topic names did."""
        if updated != member:
            records.append((record_key(R_MEMBER, group_id, updated.member_id), member_value(updated)))
            return updated.subscribed_topic_names != member.subscribed_topic_names
        return False

    def _effective_members(self, group: ConsumerGroup, updated: ConsumerGroupMember) -> dict:
        """The members once `updated` is in: a static member replacing another takes its place."""
        previous = group.static_member_id(updated.instance_id)
        removed = [previous] if previous is not None and previous != updated.member_id else []
        return group.with_members_replaced(removed, updated)

    def _update_subscription_metadata(
        self,
        group: ConsumerGroup,
        bump: bool,
        member: ConsumerGroupMember,
        updated: ConsumerGroupMember,
        records: list,
        events: list,
        after: list,
    ):
        """updateSubscriptionMetadata: the new metadata hash of the subscribed topics and the
        subscription type; bumps the group epoch when asked to or when the hash changed. The refresh
        deadline (soft state) is set by `after`, once nothing can fail."""
        members = self._effective_members(group, updated)
        counts = subscribed_topic_counts(members.values(), group.resolved_regular_expressions)
        metadata_hash = self.compute_metadata_hash(counts)
        subscription_type = derive_subscription_type(members.values(), group.resolved_regular_expressions)
        reason = (
            "new group"
            if group.group_epoch == INITIAL_GROUP_EPOCH and not group.members
            else f"member {updated.member_id} changed its subscription"
            if bump
            else None
        )
        if metadata_hash != group.metadata_hash:
            bump = True
            reason = reason or "the metadata of the subscribed topics changed"
        group_epoch = group.group_epoch
        if bump:
            group_epoch += 1
            records.append((record_key(R_GROUP, group.group_id), group_epoch_value(group_epoch, metadata_hash)))
            events.append(
                ("GroupEpochBumped", {"groupEpoch": group_epoch, "metadataHash": metadata_hash, "reason": reason})
            )
        deadline = self.now + METADATA_REFRESH_INTERVAL_MS
        after.append(lambda _result: group.set_metadata_refresh_deadline(deadline, group_epoch))
        return group_epoch, subscription_type

    def _preferred_assignor(
        self, group: ConsumerGroup, member: ConsumerGroupMember, updated: ConsumerGroupMember
    ) -> str:
        """computePreferredServerAssignor: the assignor most members name, else the default."""
        counts = server_assignor_counts(group.members.values())
        for name, delta in ((member.server_assignor_name, -1), (updated.server_assignor_name, 1)):
            if name is not None:
                counts[name] = counts.get(name, 0) + delta
                if counts[name] <= 0:
                    del counts[name]
        if not counts:
            return self.default_assignor
        best = max(counts.values())
        return min((n for n, c in counts.items() if c == best), key=order_key)

    def _update_target_assignment(
        self,
        group: ConsumerGroup,
        group_epoch: int,
        member: ConsumerGroupMember,
        updated: ConsumerGroupMember,
        subscription_type,
        records: list,
        events: list,
    ):
        """updateTargetAssignment: run the preferred assignor; records for the members whose target
        changed and for the new assignment epoch. Returns the updated member's new target."""
        assignor = self._preferred_assignor(group, member, updated)
        builder = (
            TargetAssignmentBuilder(group.group_id, group_epoch, ASSIGNORS[assignor])
            .with_members(group.members)
            .with_static_members(group.static_members)
            .with_subscription_type(subscription_type)
            .with_target_assignment(group.target_assignment)
            .with_topic_metadata(self.topics())
            .with_resolved_regular_expressions(group.resolved_regular_expressions)
            .add_or_update_member(updated.member_id, updated)
        )
        previous = group.static_member_id(updated.instance_id)
        if previous is not None and previous != updated.member_id:
            builder.remove_member(previous)
        try:
            result = builder.build()
        except PartitionAssignorException as ex:
            raise ApiError(
                Errors.UNKNOWN_SERVER_ERROR, f"Failed to compute a new target assignment for epoch {group_epoch}: {ex}"
            ) from ex
        gid = group.group_id
        for m, assignment in result.changed.items():
            records.append((record_key(R_TARGET, gid, m), target_value(assignment)))
        records.append((record_key(R_TARGET_EPOCH, gid), target_epoch_value(group_epoch, self.now)))
        total = sum(len(p) for a in result.target_assignment.values() for p in a.values())
        events.append(
            (
                "TargetAssignmentComputed",
                {
                    "assignmentEpoch": group_epoch,
                    "assignor": assignor,
                    "members": len(result.target_assignment),
                    "changedMembers": list(result.changed) if len(result.changed) <= 1000 else len(result.changed),
                    "targetAssignment": result.target_assignment_json() if total <= EVENT_MAX_PARTITIONS else total,
                },
            )
        )
        return result.target_assignment.get(updated.member_id, {})

    def _maybe_reconcile(
        self,
        group: ConsumerGroup,
        member: ConsumerGroupMember,
        target_epoch: int,
        target,
        has_subscription_changed: bool,
        owned,
        records: list,
        after: list,
    ) -> ConsumerGroupMember:
        """maybeReconcile: the member's next state; a current-assignment record if it changed, and
        the rebalance timeout armed while the member has partitions to revoke."""
        if not has_subscription_changed and member.is_reconciled_to(target_epoch):
            return member
        new = reconcile(
            member,
            target_epoch,
            target,
            group.current_partition_epoch,
            owned,
            has_subscription_changed=has_subscription_changed,
            resolved_regular_expressions=group.resolved_regular_expressions,
            topics=self.topics(),
        )
        if new != member:
            gid = group.group_id
            records.append((record_key(R_CURRENT, gid, new.member_id), current_value(new)))
            if not new.use_classic_protocol:
                if new.state == MemberState.UNREVOKED_PARTITIONS:
                    after.append(
                        lambda result: self._schedule_rebalance_timeout(
                            result, gid, new.member_id, new.member_epoch, new.rebalance_timeout_ms
                        )
                    )
                else:
                    after.append(lambda result: result.cancel(rebalance_timer_key(gid, new.member_id)))
        return new

    # ================================================================ leaving and fencing
    def consumer_group_leave(self, body: dict) -> CoordinatorResult:
        """consumerGroupLeave: epoch -1 leaves (the member is fenced: tombstones and a group epoch
        bump); epoch -2 is a static member leaving for a while (only its member epoch changes, its
        assignment is kept until its session expires)."""
        group_id, member_id, member_epoch = body["groupId"], body["memberId"], body["memberEpoch"]
        instance_id = body["instanceId"]
        group = self.consumer_group(group_id)
        response = heartbeat_response(member_id=member_id, member_epoch=member_epoch)
        if instance_id is None:
            member = group.get_member(member_id)
            result = self.fence_members(group, [member], "MemberLeft", "the member left the group (member epoch -1)")
            result.response = response
            return result
        static = group.static_member(instance_id)
        throw_if_static_member_is_unknown(static, instance_id)
        assert static is not None  # (throw_if_static_member_is_unknown raised otherwise)
        member = static
        throw_if_instance_id_is_fenced(member, group_id, member_id, instance_id)
        if member_epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
            # Assignment epochs reset to 0: the member rejoining under a new id owns the partitions
            # as from epoch 0 (Kafka's resetAssignedPartitionsEpochsToZero).
            leaving = member.replace(
                member_epoch=LEAVE_GROUP_STATIC_MEMBER_EPOCH, partitions_pending_revocation={}
            ).with_assignment_epochs_reset_to_zero()
            before = self._state(group_id)
            result = CoordinatorResult(
                heartbeat_response(member_id=member.member_id, member_epoch=LEAVE_GROUP_STATIC_MEMBER_EPOCH)
            )
            result.record(record_key(R_CURRENT, group_id, member.member_id), current_value(leaving))
            self.c.event(
                result,
                group_id,
                "MemberLeft",
                memberId=member.member_id,
                groupInstanceId=instance_id,
                temporary=True,
                reason="static member left temporarily (member epoch -2); it keeps its "
                "assignment until its session expires",
            )
            after = str(
                derive_group_state(
                    group.with_members_replaced(updated=leaving).values(),
                    group.group_epoch,
                    group.target_assignment_epoch,
                )
            )
            self.state_changed_event(result, group_id, before, after, group.group_epoch, group.target_assignment_epoch)
            return result
        result = self.fence_members(group, [member], "MemberLeft", "the static member left the group (member epoch -1)")
        result.response = response
        return result

    def fence_members(
        self, group: ConsumerGroup, members: list[ConsumerGroupMember], event: str, reason: str
    ) -> CoordinatorResult:
        """consumerGroupFenceMembers: tombstones for each member (and for resolved regexes nobody
        subscribes to any more), then one group epoch bump; the members' timers are cancelled."""
        result = CoordinatorResult()
        if not members:
            return result
        skipped: list[tuple[str, dict]] = []
        if self.classic_members.should_downgrade(group, members, skipped):
            # validateOnlineDowngradeWithFencedMembers: the group becomes a classic group (an
            # in-memory-only result, as Kafka's convertToClassicGroup).
            for m in members:
                self._cancel_timers(result, group.group_id, m.member_id)
            return result.merge(self.classic_members.convert_to_classic_group(group, members, event, reason))
        gid = group.group_id
        for name, fields in skipped:
            self.c.event(result, gid, name, **fields)
        records: list = []
        for m in members:
            records += self._remove_member_records(gid, m.member_id)
        removed_ids = [m.member_id for m in members]
        remaining = group.with_members_replaced(removed_ids)
        regex_counts: dict[str, int] = {}
        for m in members:
            if m.subscribed_topic_regex:
                regex_counts[m.subscribed_topic_regex] = regex_counts.get(m.subscribed_topic_regex, 0) + 1
        deleted = set()
        for regex in sorted(regex_counts):
            if group.num_subscribed_members(regex) == regex_counts[regex]:
                records.append((record_key(R_REGEX, gid, regex), None))
                deleted.add(regex)
        resolved = {r: v for r, v in group.resolved_regular_expressions.items() if r not in deleted}
        metadata_hash = self.compute_metadata_hash(subscribed_topic_counts(remaining.values(), resolved))
        group_epoch = group.group_epoch + 1
        records.append((record_key(R_GROUP, gid), group_epoch_value(group_epoch, metadata_hash)))
        target_epoch = group.target_assignment_epoch
        if len(group.members) == len(members):
            # Kafka 4.4: the last members gone, the (empty) target assignment is at the new epoch.
            target_epoch = group_epoch
            records.append((record_key(R_TARGET_EPOCH, gid), target_epoch_value(group_epoch)))
        before = self._state(gid)
        result.records += [StateRecord(key, value) for key, value in records]
        for m in members:
            self._cancel_timers(result, gid, m.member_id)
            self.c.event(
                result,
                gid,
                event,
                memberId=m.member_id,
                groupInstanceId=m.instance_id,
                temporary=False,
                reason=reason,
                memberEpoch=m.member_epoch,
            )
        self.c.event(
            result,
            gid,
            "GroupEpochBumped",
            groupEpoch=group_epoch,
            metadataHash=metadata_hash,
            reason=f"{len(members)} member(s) removed: {reason}",
        )
        # The state once the tombstones are replayed: the remaining members, the new group epoch.
        after = str(derive_group_state(remaining.values(), group_epoch, target_epoch))
        self.state_changed_event(result, gid, before, after, group_epoch, target_epoch)
        return result

    def classic_leave(self, group: ConsumerGroup, request: Request, identities: list[dict]) -> CoordinatorResult:
        """classicGroupLeaveToConsumerGroup: each identity is validated; the valid ones are fenced
        together (one group epoch bump)."""
        responses: list[dict] = []
        valid: dict[str, ConsumerGroupMember] = {}
        for ident in identities:
            member_id, instance_id = ident["memberId"], ident.get("groupInstanceId")
            entry = {"memberId": member_id, "groupInstanceId": instance_id, "errorCode": 0}
            try:
                if instance_id is None:
                    member = group.get_member(member_id)
                else:
                    static = group.static_member(instance_id)
                    throw_if_static_member_is_unknown(static, instance_id)
                    assert static is not None  # (throw_if_static_member_is_unknown raised otherwise)
                    member = static
                    # Administrative removal by instance id comes without a member id.
                    if member_id != "":
                        throw_if_instance_id_is_fenced(member, group.group_id, member_id, instance_id)
                valid.setdefault(member.member_id, member)
            except ApiError as e:
                entry["errorCode"] = e.error.code
            responses.append(entry)
        result = self.fence_members(
            group, list(valid.values()), "MemberLeft", "removed by a LeaveGroup request (classic protocol)"
        )
        result.response = leave_response(request.api_version, Errors.NONE, responses)
        return result

    # ================================================================ timers
    def _schedule_session_timeout(
        self, result: CoordinatorResult, group_id: str, member_id: str, timeout_ms: int | None = None
    ) -> None:
        """The member's session: the group's consumer.session.timeout.ms (its config, else
        group.consumer.session.timeout.ms), or a classic member's own."""
        if timeout_ms is None:
            timeout_ms = self.c_configs.consumer_session_timeout_ms(group_id)
        result.schedule(
            session_timer_key(group_id, member_id),
            self.now + timeout_ms,
            T_SESSION,
            {"groupId": group_id, "memberId": member_id},
        )

    def _schedule_rebalance_timeout(
        self, result: CoordinatorResult, group_id: str, member_id: str, member_epoch: int, rebalance_timeout_ms: int
    ) -> None:
        result.schedule(
            rebalance_timer_key(group_id, member_id),
            self.now + rebalance_timeout_ms,
            T_REBALANCE,
            {
                "groupId": group_id,
                "memberId": member_id,
                "memberEpoch": member_epoch,
                "rebalanceTimeoutMs": rebalance_timeout_ms,
            },
        )

    def _cancel_timers(self, result: CoordinatorResult, group_id: str, member_id: str) -> None:
        for key in (
            session_timer_key(group_id, member_id),
            rebalance_timer_key(group_id, member_id),
            join_timer_key(group_id, member_id),
            sync_timer_key(group_id, member_id),
        ):
            result.cancel(key)

    def fence_member_operation(self, payload: dict, reason: str) -> CoordinatorResult | None:
        """consumerGroupFenceMemberOperation: nothing if the group or the member is gone."""
        group = self.c.groups.get(payload["groupId"])
        if not isinstance(group, ConsumerGroup):
            return None
        member = group.members.get(payload["memberId"])
        if member is None:
            return None
        return self.fence_members(group, [member], "MemberFenced", reason)

    def on_session_timeout(self, timer: Timer) -> CoordinatorResult | None:
        return self.fence_member_operation(timer.payload, "the member session expired")

    def on_rebalance_timeout(self, timer: Timer) -> CoordinatorResult | None:
        """The member did not revoke its partitions within its rebalance timeout: fenced, unless it
        moved on from that epoch."""
        found, payload = self.timer_member(timer, same_epoch=True), timer.payload
        if found is None:
            return None
        group, member = found
        return self.fence_members(
            group,
            [member],
            "MemberFenced",
            f"it failed to transition from epoch {payload['memberEpoch']} within {payload['rebalanceTimeoutMs']}ms",
        )

    # ================================================================ regular expressions
    def _maybe_update_regular_expressions(
        self,
        group: ConsumerGroup,
        member: ConsumerGroupMember,
        updated: ConsumerGroupMember,
        records: list,
        after: list,
        request: Request,
    ) -> str:
        """maybeUpdateRegularExpressions: whether the member's regex changed (and is already
        resolved), and whether the group's regexes must be (re)resolved; resolution runs at the start
        of the next micro-batch (Kafka runs it on an executor and applies the result as a later
        write). The resolution is authorised as the request that asks for it (Kafka passes its
        RequestContext to TopicRegexResolver): its principal and host go with the task."""
        now = self.now
        gid = group.group_id
        old, new = member.subscribed_topic_regex, updated.subscribed_topic_regex
        require_refresh = False
        status = NO_CHANGE
        if (old or "") != (new or ""):
            status = REGEX_UPDATED
            if old and group.num_subscribed_members(old) == 1:
                records.append((record_key(R_REGEX, gid, old), None))
            if new:
                if group.num_subscribed_members(new) == 0:
                    try:
                        compile_regex(new)
                    except RegexError as e:
                        raise ApiError(
                            Errors.INVALID_REGULAR_EXPRESSION,
                            f"SubscribedTopicRegex `{new}` is not a valid regular expression: {e.description}.",
                        ) from e
                    require_refresh = True
                elif new in group.resolved_regular_expressions:
                    status = REGEX_UPDATED_AND_RESOLVED
            elif old:
                status = REGEX_UPDATED_AND_RESOLVED
        subscribed = group.subscribed_regular_expressions()
        if not require_refresh and not subscribed:
            return status
        key = regex_task_key(gid)
        if key in self.p.deferred:
            return status
        resolved = group.resolved_regular_expressions
        first = resolved[min(resolved, key=order_key)] if resolved else None
        last_refresh = first.timestamp if first is not None else LONG_MIN
        if now <= last_refresh + REGEX_BATCH_REFRESH_MIN_INTERVAL_MS:
            return status
        if old:
            subscribed[old] = subscribed.get(old, 0) - 1
            if subscribed[old] <= 0:
                del subscribed[old]
        if new:
            subscribed[new] = subscribed.get(new, 0) + 1
        require_refresh |= len(subscribed) != len(resolved)
        require_refresh |= (first.version if first is not None else 0) < self.ext().get("newTopicsVersion", -1)
        require_refresh |= now > last_refresh + self.config["group.consumer.regex.refresh.interval.ms"]
        if require_refresh and subscribed:
            payload = {"groupId": gid, "memberId": updated.member_id, "regexes": sorted(subscribed, key=order_key)}
            if request.principal is not None:
                payload["principal"] = request.principal
                payload["clientHost"] = request.client_host
            after.append(lambda result: result.defer(key, T_REGEX, payload))
        return status

    def _describable_topics(self, payload: dict):
        """TopicRegexResolver.filterTopicDescribeAuthorizedTopics: with the principal of the
        request that asked for the resolution, only the topics it may DESCRIBE (a request without
        a principal, the JSON path, is not authorised against ACLs: every topic)."""
        principal = payload.get("principal")
        if principal is None:
            return lambda topic: True
        authorizer = self.c.acls.authorizer() if self.c.acls is not None else None
        if authorizer is None:  # no snapshot: nothing is authorised (Kafka: the authorizer not ready)
            return lambda topic: False
        host = client_address(payload.get("clientHost") or "")
        return lambda topic: authorizer.authorize(principal, host, AclOperation.DESCRIBE, ResourceType.TOPIC, topic)

    def on_resolve_regexes(self, timer: Timer) -> CoordinatorResult | None:
        """TopicRegexResolver.resolveRegularExpressions then handleRegularExpressionsResult."""
        payload = timer.payload
        group = self.c.groups.get(payload["groupId"])
        if not isinstance(group, ConsumerGroup):
            return None
        gid = group.group_id
        topics = sorted(self.topics(), key=order_key)
        version = self.ext().get("metadataVersion", 0)
        records: list = []
        new_resolved = dict(group.resolved_regular_expressions)
        bump = False
        describable = self._describable_topics(payload)
        for regex in payload["regexes"]:
            if group.num_subscribed_members(regex) == 0:
                continue
            try:
                pattern = compile_regex(regex)
                matched = frozenset(t for t in topics if pattern.fullmatch(t) and describable(t))
            except RegexError:
                matched = frozenset()
            resolved = ResolvedRegularExpression(matched, version, self.now)
            old = group.resolved_regular_expressions.get(regex)
            if old is None or old.topics != resolved.topics:
                bump = True
            new_resolved[regex] = resolved
            records.append((record_key(R_REGEX, gid, regex), regex_value(resolved)))
        counts = subscribed_topic_counts(group.members.values(), new_resolved)
        metadata_hash = self.compute_metadata_hash(counts)
        if metadata_hash != group.metadata_hash:
            bump = True
        group_epoch = group.group_epoch
        if bump:
            group_epoch += 1
            records.append((record_key(R_GROUP, gid), group_epoch_value(group_epoch, metadata_hash)))
        if not records:
            return None
        # Nothing can fail any more: the records (replayed by the runtime), the events, the soft state.
        result = CoordinatorResult()
        for key, value in records:
            result.record(key, value)
        self.c.event(
            result,
            gid,
            "RegularExpressionsResolved",
            resolved={r: sorted(new_resolved[r].topics) for r in payload["regexes"] if r in new_resolved},
        )
        if bump:
            group.set_metadata_refresh_deadline(self.now + METADATA_REFRESH_INTERVAL_MS, group_epoch)
            self.c.event(
                result,
                gid,
                "GroupEpochBumped",
                groupEpoch=group_epoch,
                metadataHash=metadata_hash,
                reason="regular expressions resolved to new topics",
            )
        # The state once the records are replayed (they change only the group epoch).
        before = str(group.state)
        after = str(derive_group_state(group.members.values(), group_epoch, group.target_assignment_epoch))
        self.state_changed_event(result, gid, before, after, group_epoch, group.target_assignment_epoch)
        return result

    # ================================================================ metadata
    def on_metadata_change(self, old: dict, new: dict) -> CoordinatorResult:
        """onMetadataUpdate: the groups subscribed to changed topics refresh their metadata hash on
        their next heartbeat (here every consumer group is asked: a refresh only recomputes the hash,
        and the epoch is bumped only if the hash of the group's own topics changed)."""
        ext = self.ext()
        # The image version: strictly increasing, and not below the clock so that it stays ahead of
        # the versions in resolved regexes after the partition is rebuilt from its log.
        ext["metadataVersion"] = max(self.now, ext.get("metadataVersion", -1) + 1)
        if "newTopicsVersion" not in ext or set(new) - set(old):
            ext["newTopicsVersion"] = ext["metadataVersion"]
        gone = self._topics_gone()
        result = CoordinatorResult()
        for group in list(self.c.groups.values()):
            if isinstance(group, ConsumerGroup):
                group.request_metadata_refresh()
                if gone:
                    self._rename_gone_topics(group, gone, result)
        return result

    def _topics_gone(self) -> dict[str, str]:
        """The topics of the previous metadata that no longer exist under their id: deleted, or
        re-created under the same name (a new id). name -> old id."""
        before, now = self.metadata.previous_topic_ids, self.metadata.topic_ids
        gone = {}
        for name, old_id in before.items():
            new_id = now.get(name)
            if new_id is None or (new_id != old_id and ZERO_UUID not in (new_id, old_id)):
                gone[name] = old_id
        return gone

    def _rename_gone_topics(self, group: ConsumerGroup, gone: dict[str, str], result: CoordinatorResult) -> None:
        """Kafka keys assignments by topic id, so the partitions of a topic that is gone (deleted,
        or re-created with a new id) are no longer the topic's of that name: they must be revoked,
        and a re-created topic's partitions are assigned anew. Here assignments are keyed by name;
        the old partitions are renamed to `unknown_topic_key(old id)` in the members' current and
        target assignments (records, replayed), which no topic has: the next assignment treats
        them as gone and the topic's partitions as new, and a member reporting the old id still
        owns them until it revokes them."""

        def renamed(assignment):
            if not any(t in gone for t in assignment):
                return None
            out: dict = {}
            for topic, partitions in assignment.items():
                key = unknown_topic_key(gone[topic]) if topic in gone else topic
                out[key] = frozenset(out.get(key, frozenset()) | partitions)
            return out

        def renamed_epochs(epochs):
            # The partitions keep their assignment epochs under the placeholder name.
            out: dict = {}
            for topic, partitions in epochs.items():
                key = unknown_topic_key(gone[topic]) if topic in gone else topic
                out[key] = {**out.get(key, {}), **partitions}
            return out

        gid = group.group_id
        for member in list(group.members.values()):
            assigned = renamed(member.assigned_partitions)
            pending = renamed(member.partitions_pending_revocation)
            if assigned is not None or pending is not None:
                updated = dataclasses.replace(
                    member,
                    assigned_partitions=freeze(member.assigned_partitions if assigned is None else assigned),
                    partitions_pending_revocation=freeze(
                        member.partitions_pending_revocation if pending is None else pending
                    ),
                    partition_epochs=renamed_epochs(member.partition_epochs),
                )
                result.record(record_key(R_CURRENT, gid, member.member_id), current_value(updated))
        for member_id, assignment in list(group.target_assignment.items()):
            target = renamed(assignment)
            if target is not None:
                result.record(record_key(R_TARGET, gid, member_id), target_value(freeze(target)))

    # ================================================================ ConsumerGroupDescribe
    def consumer_group_describe(self, request: Request) -> dict:
        return self.describe_groups(request.body, request.api_version)

    def described_group(self, version: int, group_id: str, error: Error | None = None, **fields: Any) -> dict:
        return described_group(version, group_id, error, **fields)

    def described_own(self, group: ConsumerGroup) -> dict:
        """ConsumerGroup.asDescribedGroup's assignor."""
        return {"assignor_name": group.preferred_server_assignor(self.default_assignor) or self.default_assignor}

    def described_member(self, version: int, group: ConsumerGroup, m: ConsumerGroupMember) -> dict:
        """ConsumerGroupMember.asConsumerGroupDescribeMember."""
        return {
            "memberId": m.member_id,
            "instanceId": m.instance_id,
            "rackId": m.rack_id,
            "memberEpoch": m.member_epoch,
            "clientId": m.client_id,
            "clientHost": m.client_host,
            "subscribedTopicNames": sorted(m.subscribed_topic_names, key=order_key),
            "subscribedTopicRegex": m.subscribed_topic_regex,  # "" without a regex, as in Kafka
            "assignment": {"topicPartitions": self.wire_assignment(m.assigned_partitions, True)},
            "targetAssignment": {
                "topicPartitions": self.wire_assignment(group.target_assignment.get(m.member_id, {}), True)
            },
            "memberType": 0 if m.use_classic_protocol else 1,
        }

    # ================================================================ replay and load
    def replay(self, kind: str, ids: list, value: dict | None) -> None:
        self.replay_into(self.c.groups, kind, ids, value)

    def replay_into(self, groups: MutableMapping, kind: str, ids: list, value: dict | None) -> None:
        """A consumer group record replayed into `groups` (the live map, or a scratch one holding a
        copy of a group: the group as a handler's records leave it, before they are applied)."""
        gid = ids[0]
        group = persisted_group(groups, gid, value is not None, ConsumerGroup, f"Group {gid} is not a consumer group")
        if group is None:
            return
        if kind == R_GROUP:
            replay_group_metadata(
                groups, group, value, "did not receive ConsumerGroupTargetAssignmentMetadataValue tombstone."
            )
        elif kind == R_PARTITION_METADATA:
            pass  # pre-4.1 subscription metadata: Kafka only deletes it
        elif kind == R_MEMBER:
            replay_member_metadata(
                group,
                ids[1],
                value,
                ConsumerGroupMember,
                (
                    "but did not receive ConsumerGroupCurrentMemberAssignmentValue tombstone.",
                    "but did not receive ConsumerGroupTargetAssignmentMetadataValue tombstone.",
                ),
            )
        elif kind == R_TARGET:
            if value is not None:
                group.update_target_assignment(ids[1], freeze(value["topicPartitions"]))
            else:
                group.remove_target_assignment(ids[1])
        elif kind == R_TARGET_EPOCH:
            replay_target_assignment_epoch(group, value)
        elif kind == R_CURRENT:
            member_id = ids[1]
            if value is not None:
                base = group.members.get(member_id) or ConsumerGroupMember(member_id)
                group.update_member(base.with_assignment_value(value))
                return
            old = group.members.get(member_id)
            if old is None:
                return
            group.update_member(
                old.replace(
                    member_epoch=LEAVE_GROUP_MEMBER_EPOCH,
                    previous_member_epoch=LEAVE_GROUP_MEMBER_EPOCH,
                    assigned_partitions={},
                    partitions_pending_revocation={},
                )
            )
        elif kind == R_REGEX:
            regex = ids[1]
            group.update_resolved_regular_expression(
                regex, None if value is None else ResolvedRegularExpression.from_json(value)
            )
