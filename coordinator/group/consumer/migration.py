"""Classic-protocol members inside a KIP-848 consumer group, and the online migration of a group
between the classic and the consumer protocols (Kafka 4.x GroupMetadataManager):

- classicGroupJoinToConsumerGroup / classicGroupSyncToConsumerGroup /
  classicGroupHeartbeatToConsumerGroup: a JoinGroup / SyncGroup / Heartbeat of a member that uses
  the classic protocol in a consumer group. The member is a ConsumerGroupMember with a
  ClassicMemberMetadata (its session timeout and JoinGroup protocols); the group's server-side
  assignor computes its assignment, which SyncGroup returns as a ConsumerProtocolAssignment; a
  new group epoch reaches it as REBALANCE_IN_PROGRESS on Heartbeat / SyncGroup. Its timers: the
  session (its own session timeout), the join timeout (armed when it is told to rejoin) and the
  sync timeout (armed by its JoinGroup), each fencing it when it fires.
- convertToConsumerGroup (validateOnlineUpgrade): a ConsumerGroupHeartbeat joining a non-empty
  classic group whose protocol type is "consumer" turns it into a consumer group of classic
  members, each keeping its generation's assignment.
- convertToClassicGroup (validateOnlineDowngrade): when the last consumer-protocol member leaves a
  group whose other members all use the classic protocol, the group becomes a classic group and
  rebalances.
Both conversions obey `group.consumer.migration.policy` (disabled / upgrade / downgrade /
bidirectional; Kafka 4.x's default is bidirectional).

How records are written follows manager.py: computed first, appended and replayed only
when nothing can fail any more.
"""

from __future__ import annotations

from collections.abc import Mapping

from ...errors import ApiError, Errors
from ...messages import Request, StateRecord
from ...records import parse_record_key, record_key
from ...result import CoordinatorResult
from ..classic.apis import heartbeat_response, join_response, sync_response
from ..classic.consumer_protocol import SchemaError, decode_assignment, decode_subscription, encode_assignment
from ..classic.group import STABLE, ClassicGroup, ClassicGroupMember
from ..classic.manager import canonical_b64
from ..group import CLASSIC
from ._java import order_key
from .group import (
    R_CURRENT,
    R_GROUP,
    R_MEMBER,
    R_TARGET,
    R_TARGET_EPOCH,
    ConsumerGroup,
    current_value,
    group_epoch_value,
    join_timer_key,
    member_value,
    sync_timer_key,
    target_epoch_value,
    target_value,
)
from .heartbeat import throw_if_group_is_full
from .member import ConsumerGroupMember, MemberState

CONSUMER_PROTOCOL_TYPE = "consumer"
T_JOIN = "consumer-join"
T_SYNC = "consumer-sync"


def upgrade_enabled(config) -> bool:
    return str(config["group.consumer.migration.policy"]).lower() in ("upgrade", "bidirectional")


def downgrade_enabled(config) -> bool:
    return str(config["group.consumer.migration.policy"]).lower() in ("downgrade", "bidirectional")


def assignment_version(protocols: list[tuple[str, str]]) -> int:
    """ConsumerProtocol.deserializeVersion of the member's first protocol's metadata: the version
    its assignment is serialized with (a newer one than the highest known is capped)."""
    try:
        version = decode_subscription(protocols[0][1]).version
    except (SchemaError, IndexError) as e:
        raise ApiError(
            Errors.UNKNOWN_SERVER_ERROR, "Malformed embedded consumer protocol in version deserialization."
        ) from e
    return min(max(version, 0), 3)


class ClassicMembers:
    """The classic protocol's requests to a consumer group, and the two conversions."""

    def __init__(self, manager):
        self.m = manager
        self.c = manager.c
        self.p = manager.p
        self.config = manager.config

    @property
    def now(self) -> int:
        return self.p.clock_ms

    def known_topics(self, assignment: Mapping) -> dict:
        """toTopicPartitions / toTopicPartitionMap: topics the metadata does not know are dropped."""
        topics = self.m.topics()
        return {t: frozenset(p) for t, p in assignment.items() if t in topics and p}

    # ================================================================ timers
    def schedule_join_timeout_if_absent(
        self, group_id: str, member_id: str, rebalance_timeout_ms: int, result: CoordinatorResult
    ) -> None:
        key = join_timer_key(group_id, member_id)
        if key not in self.p.timers:
            result.schedule(key, self.now + rebalance_timeout_ms, T_JOIN, {"groupId": group_id, "memberId": member_id})

    def schedule_sync_timeout(
        self, group_id: str, member_id: str, rebalance_timeout_ms: int, result: CoordinatorResult
    ) -> None:
        result.schedule(
            sync_timer_key(group_id, member_id),
            self.now + rebalance_timeout_ms,
            T_SYNC,
            {"groupId": group_id, "memberId": member_id},
        )

    def on_join_timeout(self, timer) -> CoordinatorResult | None:
        return self.m.fence_member_operation(
            timer.payload, "the classic member failed to join within the rebalance timeout"
        )

    def on_sync_timeout(self, timer) -> CoordinatorResult | None:
        return self.m.fence_member_operation(timer.payload, "the member failed to sync within timeout")

    # ================================================================ JoinGroup
    def join(self, group: ConsumerGroup, request: Request) -> dict | CoordinatorResult:
        """classicGroupJoinToConsumerGroup (the group is not empty)."""
        body, version, reply = request.body, request.api_version, request.reply
        m = self.m
        gid = group.group_id
        instance_id = body.get("groupInstanceId")
        session_timeout_ms = body["sessionTimeoutMs"]
        protocols = [(p["name"], canonical_b64(p["metadata"])) for p in body["protocols"]]
        member_id = body["memberId"]
        is_unknown = member_id == ""
        if is_unknown:
            member_id = m._generate_member_id(request, gid)

        throw_if_group_is_full(
            len(group.members), group.has_member(member_id), member_id, self.config["group.consumer.max.size"]
        )
        if not group.supports_classic_protocols(body["protocolType"], {n for n, _ in protocols}):
            raise ApiError(Errors.INCONSISTENT_GROUP_PROTOCOL, f"Member {member_id}'s protocols are not supported.")
        if is_unknown and instance_id is None and version >= 4:  # JoinGroupRequest.requiresKnownMemberId
            return join_response(version, Errors.MEMBER_ID_REQUIRED, member_id=member_id)

        records: list = []
        events: list = []
        state_before = m._state(gid)
        if instance_id is None:
            member = group.get_or_create_member(member_id, True)
        else:
            member = m._get_or_maybe_subscribe_static_member(
                group, member_id, -1, instance_id, None, is_unknown, records, events, use_classic_protocol=True
            )
        is_new_member = member.member_id not in group.members
        try:
            subscription = decode_subscription(protocols[0][1])
        except SchemaError as e:
            raise ApiError(
                Errors.UNKNOWN_SERVER_ERROR, "Malformed embedded consumer protocol in subscription deserialization."
            ) from e

        # 1. Create or update the member; bump the group epoch if its subscription changed.
        updated = member.with_classic_join(
            instance_id=instance_id,
            rack_id=subscription.rack_id,
            rebalance_timeout_ms=body["rebalanceTimeoutMs"],
            subscribed_topic_names=subscription.topics,
            client_id=reply.client_id,
            client_host=m.c.classic.client_host(request),
            session_timeout_ms=session_timeout_ms,
            protocols=protocols,
        )
        names_changed = m._has_member_subscription_changed(gid, member, updated, records)
        after: list = []  # soft-state changes, made once nothing can fail
        group_epoch = group.group_epoch
        subscription_type = group.subscription_type()
        if names_changed or (m.metadata.available and group.has_metadata_expired(self.now)):
            group_epoch, subscription_type = m._update_subscription_metadata(
                group, names_changed, member, updated, records, events, after
            )

        # 2. A new target assignment if the group epoch is ahead of the assignment epoch.
        if group_epoch > group.target_assignment_epoch and m.can_compute_next_target_assignment(group):
            target = m._update_target_assignment(
                group, group_epoch, member, updated, subscription_type, records, events
            )
            target_epoch = group_epoch
        else:
            target_epoch = group.target_assignment_epoch
            target = group.target_assignment_of(updated.member_id, updated.instance_id)

        # 3. Reconcile, with the owned partitions of the embedded subscription.
        owned = self.known_topics({t: p for t, p in subscription.owned_partitions})
        reconciled = m._maybe_reconcile(group, updated, target_epoch, target, False, owned, records, after)

        # 4. The last consumer-protocol member, a static one, replaced by this classic member:
        # downgrade (validateOnlineDowngradeWithReplacedMemberId), without a rebalance.
        replaced = group.static_member(instance_id)
        replaced_id = replaced.member_id if replaced is not None else None
        downgrade = (
            replaced is not None
            and replaced.member_id != updated.member_id
            and self.should_downgrade(group, [replaced], events, replacing=True)
        )

        # Nothing can fail any more.
        member_id = reconciled.member_id
        response = join_response(
            version,
            member_id=member_id,
            generation_id=reconciled.member_epoch,
            protocol_type=CONSUMER_PROTOCOL_TYPE,
            protocol_name=protocols[0][0],
        )
        # The records (replayed by the runtime, unless the group is downgraded), then the soft state.
        result = CoordinatorResult(response=response, replay_records=not downgrade)
        result.records += [StateRecord(key, value) for key, value in records]
        for fn in after:
            fn(result)
        if downgrade:
            # validateOnlineDowngradeWithReplacedMember: convertToClassicGroup with the joining
            # member, an in-memory-only result. The classic group is built from the group as the
            # join's records leave it (replayed into a scratch copy; the live group is dropped),
            # and the log holds the join's records, the tombstones of that group and the classic
            # group's record: a rebuild replays them to the same classic group.
            view = ConsumerGroup.from_json(group.to_json())
            scratch = {gid: view}
            for key, value in records:
                kind, ids = parse_record_key(key)
                m.replay_into(scratch, kind, ids, value)
            for name, fields in events:
                self.c.event(result, gid, name, **fields)
            result.merge(
                self.convert_to_classic_group(
                    view,
                    [],
                    "MemberLeft",
                    f"static member {replaced_id} was replaced by {member_id}",
                    rebalance=False,
                )
            )
            return result
        # Timers and events, as ConsumerGroupHeartbeat's.
        result.cancel(join_timer_key(gid, member_id))
        m._schedule_session_timeout(result, gid, member_id, session_timeout_ms)
        self.schedule_sync_timeout(gid, member_id, body["rebalanceTimeoutMs"], result)
        if is_new_member:
            self.c.event(
                result,
                gid,
                "MemberJoined",
                memberId=member_id,
                groupInstanceId=instance_id,
                clientId=reply.client_id,
                protocol=CLASSIC,
            )
        m.member_update_events(
            result, group, updated, reconciled, is_new_member, events, state_before, group_epoch, target_epoch
        )
        return result

    # ================================================================ SyncGroup
    def validate_member(self, group: ConsumerGroup, body: dict) -> ConsumerGroupMember:
        """validateConsumerGroupMember, then throwIfMemberDoesNotUseClassicProtocol and
        throwIfGenerationIdUnmatched."""
        member = group._validate_consumer_group_member(body["memberId"], body.get("groupInstanceId"))
        if not member.use_classic_protocol:
            raise ApiError(Errors.UNKNOWN_MEMBER_ID, f"Member {member.member_id} does not use the classic protocol.")
        if member.member_epoch != body["generationId"]:
            raise ApiError(
                Errors.ILLEGAL_GENERATION,
                f"The request generation id {body['generationId']} is not equal to the member epoch "
                f"{member.member_epoch} of member {member.member_id}.",
            )
        return member

    def sync(self, group: ConsumerGroup, request: Request) -> CoordinatorResult:
        """classicGroupSyncToConsumerGroup: the member's current assignment, serialized as a
        ConsumerProtocolAssignment at the version of its subscription. A member that must rejoin
        gets REBALANCE_IN_PROGRESS with its join timeout armed (Kafka arms it, then throws)."""
        body, version = request.body, request.api_version
        gid = group.group_id
        result = CoordinatorResult()
        try:
            member = self.validate_member(group, body)
            protocol_name = member.supported_classic_protocols[0][0]
            if body.get("protocolType") is not None and body["protocolType"] != CONSUMER_PROTOCOL_TYPE:
                raise ApiError(Errors.INCONSISTENT_GROUP_PROTOCOL)
            if body.get("protocolName") is not None and body["protocolName"] != protocol_name:
                raise ApiError(Errors.INCONSISTENT_GROUP_PROTOCOL)
            self.throw_if_rebalance_in_progress(group, member, result)
            assignment = encode_assignment(
                {t: sorted(p) for t, p in self.known_topics(member.assigned_partitions).items()},
                version=assignment_version(member.supported_classic_protocols),
            )
        except ApiError as e:
            result.response = sync_response(version, e.error)
            return result
        result.cancel(sync_timer_key(gid, member.member_id))
        self.m._schedule_session_timeout(result, gid, member.member_id, member.classic_session_timeout_ms)
        result.response = sync_response(
            version,
            protocol_type=body.get("protocolType"),
            protocol_name=body.get("protocolName"),
            assignment=assignment,
        )
        return result

    def throw_if_rebalance_in_progress(
        self, group: ConsumerGroup, member: ConsumerGroupMember, result: CoordinatorResult
    ) -> None:
        """A newer group epoch: the member must rejoin, unless it is still revoking partitions (it
        rejoined already and reconciles first). The join timeout goes into `result`."""
        if group.group_epoch > member.member_epoch and member.state != MemberState.UNREVOKED_PARTITIONS:
            self.schedule_join_timeout_if_absent(group.group_id, member.member_id, member.rebalance_timeout_ms, result)
            raise ApiError(
                Errors.REBALANCE_IN_PROGRESS,
                f"A new rebalance is triggered in group {group.group_id} and member "
                f"{member.member_id} should rejoin to catch up.",
            )

    # ================================================================ Heartbeat
    def heartbeat(self, group: ConsumerGroup, request: Request) -> CoordinatorResult:
        """classicGroupHeartbeatToConsumerGroup: REBALANCE_IN_PROGRESS when the member must rejoin
        (a newer group epoch, partitions to revoke, or its unreleased partitions are free now)."""
        body = request.body
        gid = group.group_id
        member = self.validate_member(group, body)
        result = CoordinatorResult()
        self.m._schedule_session_timeout(result, gid, member.member_id, member.classic_session_timeout_ms)
        if (
            member.member_epoch < group.group_epoch
            or member.state == MemberState.UNREVOKED_PARTITIONS
            or (member.state == MemberState.UNRELEASED_PARTITIONS and not group.waiting_on_unreleased_partition(member))
        ):
            self.schedule_join_timeout_if_absent(gid, member.member_id, member.rebalance_timeout_ms, result)
            result.response = heartbeat_response(request.api_version, Errors.REBALANCE_IN_PROGRESS)
        else:
            result.response = heartbeat_response(request.api_version, Errors.NONE)
        return result

    # ================================================================ upgrade
    def validate_online_upgrade(self, group: ClassicGroup) -> None:
        """validateOnlineUpgrade; Kafka logs the reason and answers GROUP_ID_NOT_FOUND."""
        gid = group.group_id
        reason = None
        if not upgrade_enabled(self.config):
            reason = "online upgrade is disabled"
        elif not group.uses_consumer_group_protocol():
            reason = "the group does not use the consumer embedded protocol"
        elif group.num_members() > self.config["group.consumer.max.size"]:
            reason = "the group size exceeds the consumer group maximum size"
        if reason is not None:
            raise ApiError(
                Errors.GROUP_ID_NOT_FOUND, f"Cannot upgrade classic group {gid} to consumer group because {reason}."
            )

    def convert_to_consumer_group(self, classic: ClassicGroup, records: list) -> ConsumerGroup:
        """ConsumerGroup.fromClassicGroup + createConsumerGroupRecords: every classic member becomes
        a Stable classic-protocol member at the generation, owning (and targeted with) the
        assignment of that generation. The classic group's tombstone and the answers to its parked
        JoinGroup / SyncGroup requests (`parked_answers`) go into the caller's result once the
        request cannot fail any more. Changes nothing itself."""
        gid = classic.group_id
        group = ConsumerGroup(gid)
        generation = classic.generation_id
        group.group_epoch = group.target_assignment_epoch = generation
        try:
            for cm in classic.members.values():
                decoded = decode_assignment(cm.assignment or "")
                if decoded.user_data:
                    # Kafka 4.1: a custom assignor's userData would be lost (UnsupportedVersionException).
                    raise ApiError(
                        Errors.GROUP_ID_NOT_FOUND,
                        f"Cannot upgrade classic group {gid} to consumer group because an unsupported "
                        "custom assignor is in use. Please refer to the documentation or switch to a "
                        "default assignor before re-attempting the upgrade.",
                    )
                assigned = self.known_topics(decoded.as_dict())
                subscription = decode_subscription(cm.metadata(classic.protocol_name))
                member = ConsumerGroupMember(
                    cm.member_id,
                    member_epoch=generation,
                    previous_member_epoch=generation,
                    state=MemberState.STABLE,
                    instance_id=cm.group_instance_id,
                    rack_id=subscription.rack_id,
                    rebalance_timeout_ms=cm.rebalance_timeout_ms,
                    client_id=cm.client_id,
                    client_host=cm.client_host,
                    subscribed_topic_names=frozenset(subscription.topics),
                    assigned_partitions=assigned,
                    classic_member_metadata={
                        "sessionTimeoutMs": cm.session_timeout_ms,
                        "supportedProtocols": [{"name": n, "metadata": md} for n, md in cm.protocols],
                    },
                )
                group.update_target_assignment(cm.member_id, assigned)
                group.update_member(member)
        except SchemaError as e:
            raise ApiError(
                Errors.GROUP_ID_NOT_FOUND,
                f"Cannot upgrade classic group {gid} to consumer group because the embedded "
                "consumer protocol is malformed.",
            ) from e
        # Kafka 4.1's fromClassicGroup computes the metadata hash of the members' subscriptions.
        group.metadata_hash = self.m.compute_metadata_hash(group.subscribed_topic_names())
        members = list(group.members.values())
        records += [(record_key(R_MEMBER, gid, mm.member_id), member_value(mm)) for mm in members]
        records.append((record_key(R_GROUP, gid), group_epoch_value(generation, group.metadata_hash)))
        records += [
            (record_key(R_TARGET, gid, mm.member_id), target_value(group.target_assignment[mm.member_id]))
            for mm in members
        ]
        records.append((record_key(R_TARGET_EPOCH, gid), target_epoch_value(generation)))
        records += [(record_key(R_CURRENT, gid, mm.member_id), current_value(mm)) for mm in members]
        return group

    @staticmethod
    def parked_answers(classic: ClassicGroup, result: CoordinatorResult) -> None:
        """completeAllJoinFutures / completeAllSyncFutures(REBALANCE_IN_PROGRESS) of a classic group
        upgraded online, into `result`: its members rejoin as members of the consumer group. Kafka
        completes them before converting, so that they are answered even if the heartbeat then
        fails; here a heartbeat that fails changes nothing, and they stay parked in the classic
        group, answered when its rebalance ends."""
        for cm in classic.members.values():
            if cm.awaiting_join is not None:
                reply = cm.awaiting_join
                result.reply(
                    reply, join_response(reply.api_version, Errors.REBALANCE_IN_PROGRESS, member_id=cm.member_id)
                )
            if cm.awaiting_sync is not None:
                reply = cm.awaiting_sync
                result.reply(reply, sync_response(reply.api_version, Errors.REBALANCE_IN_PROGRESS))

    # ================================================================ downgrade
    def should_downgrade(
        self, group: ConsumerGroup, leaving: list[ConsumerGroupMember], events: list, replacing: bool = False
    ) -> bool:
        """validateOnlineDowngradeWithFencedMembers, or with `replacing`
        validateOnlineDowngradeWithReplacedMemberId (a classic member takes the leaving one's place).
        Why a downgrade is skipped (Kafka logs it) goes into `events` as a DowngradeSkipped event."""
        if not group.all_members_use_classic_protocol_except(leaving):
            return False
        remaining = len(group.members) - (0 if replacing else len(leaving))
        if remaining <= 0:
            return False  # the group is empty: nothing to downgrade
        if not downgrade_enabled(self.config):
            events.append(("DowngradeSkipped", {"reason": "online downgrade is disabled"}))
            return False
        if remaining > self.config["group.max.size"]:
            events.append(("DowngradeSkipped", {"reason": "its group size is greater than classic group max size"}))
            return False
        return True

    def convert_to_classic_group(
        self, group: ConsumerGroup, leaving: list[ConsumerGroupMember], event: str, reason: str, rebalance: bool = True
    ) -> CoordinatorResult:
        """convertToClassicGroup: the consumer group's tombstones, a Stable classic group at the
        group epoch whose members (all but the leaving ones) keep their target assignment
        (serialized at their subscription's version), its GroupMetadata record, session timers,
        and a rebalance when members left (not when a static member was replaced: the replacing
        member, already in `group`, holds the replaced one's target).

        As Kafka's, an in-memory-only result (replay_records=False): the groups are swapped in
        memory directly ("the classicGroup reference is needed for triggering the rebalance"), and
        the records serve coordinator load (a rebuild replays the tombstones, then the classic
        group's record). Called once nothing can fail."""
        gid = group.group_id
        leaving_ids = {m.member_id for m in leaving}
        classic = ClassicGroup(
            gid, state=STABLE, now_ms=self.now, generation_id=group.group_epoch, protocol_type=CONSUMER_PROTOCOL_TYPE
        )
        for member_id in sorted(group.members, key=order_key):
            if member_id in leaving_ids:
                continue
            mm = group.members[member_id]
            classic.add(
                ClassicGroupMember(
                    member_id,
                    mm.instance_id,
                    mm.client_id,
                    mm.client_host,
                    mm.rebalance_timeout_ms,
                    # A downgrade leaves only classic-protocol members (they have a session timeout).
                    mm.classic_session_timeout_ms,  # type: ignore[arg-type]
                    CONSUMER_PROTOCOL_TYPE,
                    list(mm.supported_classic_protocols),
                    None,  # type: ignore[arg-type]  # (no assignment yet: each is encoded below)
                )
            )
        classic.protocol_name = classic.select_protocol()
        classic.subscribed_topics = classic.compute_subscribed_topics()
        assignments = {}
        for cm in classic.members.values():
            target = group.target_assignment.get(cm.member_id, {})
            try:
                version = assignment_version([(classic.protocol_name, cm.metadata(classic.protocol_name))])
            except ApiError:
                version = 0
            cm.assignment = assignments[cm.member_id] = encode_assignment(
                {t: sorted(p) for t, p in self.known_topics(target).items()}, version=version
            )

        result = CoordinatorResult(replay_records=False)
        before = str(group.state)
        for m in leaving:
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
        result.merge(  # (delete_group takes the consumer group out of memory)
            self.c.delete_group(
                group,
                reason="downgraded online to a classic group: the last consumer-protocol member left",
                in_memory=True,
            )
        )
        self.c.groups[gid] = classic
        result.record(record_key("GroupMetadata", gid), classic.metadata_record_value(assignments))
        self.c.event(
            result,
            gid,
            "GroupCreated",
            groupType=CLASSIC,
            reason="online downgrade from a consumer group",
            fromState=before,
            state=classic.state_as_string(),
            generationId=classic.generation_id,
            members=list(classic.members),
        )
        self.c.ensure_expiration_timer(result)
        for cm in classic.members.values():
            self.c.classic.reschedule_session(result, classic, cm)
        if rebalance:
            self.c.classic.prepare_rebalance(result, classic, f"Downgrade group {gid} from consumer to classic.")
        return result
