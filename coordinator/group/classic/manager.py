"""The classic group protocol: Kafka's GroupMetadataManager classicGroup* methods, line by line.

Differences that come from the architecture, not from choice:
- Handlers and timer handlers return a `CoordinatorResult(replay_records=False)`, as Kafka's
  classic paths do: the group is mutated in memory in the handler, and its GroupMetadata records
  (not replayed: they serve load), timers, events and answers go into the result (`r`, passed to every helper).
- A parked JoinGroup / SyncGroup response is the request's `ReplyTo`, kept in the member;
  completing Kafka's future puts the answer into the result (`result.reply`).
- Appending to the state log cannot fail, so Kafka's append-failure branches
  (appendGroupMetadataErrorToResponseError, reverting a static member replacement) never run:
  the success branch runs at once, in the same request.
- Time is the partition clock: the request's append time, or a timer's deadline.
- Member ids are `clientId-UUID` (or `groupInstanceId-UUID`) as in Kafka, but the UUID is derived
  from the request (group id, request-topic partition and offset, correlation id, client id),
  so that re-running a batch produces the same ids.
"""

from __future__ import annotations

import base64
import hashlib
import uuid
from collections.abc import Callable
from typing import Any

from ...errors import ApiError, Error, Errors
from ...messages import ReplyTo, Request
from ...records import record_key
from ...result import CoordinatorResult
from ...timers import Timer
from ..group import CLASSIC, CONSUMER
from .apis import heartbeat_response, join_response, leave_response, sync_response
from .group import (
    COMPLETING_REBALANCE,
    DEAD,
    EMPTY,
    EMPTY_ASSIGNMENT,
    NO_LEADER,
    PREPARING_REBALANCE,
    STABLE,
    ClassicGroup,
    ClassicGroupMember,
    IllegalStateError,
    join_timer_key,
    session_timer_key,
    sync_timer_key,
)

UNKNOWN_MEMBER_ID = ""

# Timer kinds (the component maps them to handlers).
T_JOIN = "classic-join"
T_INITIAL_JOIN = "classic-initial-join"
T_SYNC = "classic-sync"
T_SESSION = "classic-session"


def join_reason(body: dict) -> str:
    reason = body.get("reason")
    return reason if reason else "not provided"


def canonical_b64(value: str) -> str:
    """One spelling per byte string, so that metadata comparisons compare bytes."""
    return base64.b64encode(base64.b64decode(value)).decode("ascii")


def request_protocols(body: dict) -> list[tuple[str, str]]:
    return [(p["name"], canonical_b64(p["metadata"])) for p in body["protocols"]]


class ClassicGroupManager:
    def __init__(self, coordinator):
        self.c = coordinator
        self.p = coordinator.p
        self.config = coordinator.p.config

    # ================================================================ results
    # Kafka mutates a classic group in memory in the handler and returns
    # `CoordinatorResult(records, response, replayRecords=false)`: each handler makes that result,
    # `r`, and passes it to the helpers below, which mutate the group and put their records
    # (GroupMetadata, not replayed), timers, events and the answers to parked requests into it.
    def _handle(
        self, handler: Callable[[CoordinatorResult, Any], dict | CoordinatorResult | None], arg: Any
    ) -> CoordinatorResult:
        """`handler(r, arg)` with a fresh in-memory-only result `r`; a bare response body it returns
        becomes the result's response (a result from a consumer-group path is merged)."""
        r = CoordinatorResult(replay_records=False)
        out = handler(r, arg)
        if isinstance(out, CoordinatorResult):
            r.merge(out)
        elif out is not None:
            r.response = out
        return r

    def append_group_metadata(self, r: CoordinatorResult, group_id: str, value: dict) -> None:
        """A GroupMetadata record of the live classic group: not replayed (the group in memory is
        the truth), it serves coordinator load."""
        r.record(record_key("GroupMetadata", group_id), value)

    # ================================================================ handlers
    def join_group(self, request: Request) -> CoordinatorResult:
        return self._handle(self._join_group, request)

    def sync_group(self, request: Request) -> CoordinatorResult:
        return self._handle(self._sync_group, request)

    def heartbeat(self, request: Request) -> CoordinatorResult:
        return self._handle(self._heartbeat, request)

    def leave_group(self, request: Request) -> CoordinatorResult:
        return self._handle(self._leave_group, request)

    def on_join_timer(self, timer: Timer) -> CoordinatorResult:
        return self._handle(self._on_join_timer, timer)

    def on_initial_join_timer(self, timer: Timer) -> CoordinatorResult:
        return self._handle(self._on_initial_join_timer, timer)

    def on_sync_timer(self, timer: Timer) -> CoordinatorResult:
        return self._handle(self._on_sync_timer, timer)

    def on_session_timer(self, timer: Timer) -> CoordinatorResult:
        return self._handle(self._on_session_timer, timer)

    # ================================================================ helpers
    @property
    def now(self) -> int:
        return self.p.clock_ms

    def generate_member_id(self, request: Request, group_id: str, instance_id: str | None) -> str:
        """ClassicGroup.generateMemberId with a UUID derived from the request, not random."""
        seed = "\x00".join(
            [
                group_id,
                str(request.source[0]),
                str(request.source[1]),
                str(request.reply.correlation_id),
                request.reply.client_id,
                instance_id or "",
                str(request.time_ms),
            ]
        )
        uid = uuid.UUID(bytes=hashlib.sha256(seed.encode("utf-8", "surrogatepass")).digest()[:16], version=4)
        prefix = instance_id if instance_id is not None else request.reply.client_id
        return f"{prefix}-{uid}"

    @staticmethod
    def client_host(request: Request) -> str:
        # Kafka records the client's socket address ("/10.0.0.1"). A request relayed by the gateway
        # carries it (envelope `clientHost`); one written to the request topic directly has none.
        return request.client_host

    def transition(self, r: CoordinatorResult, group: ClassicGroup, target: str) -> None:
        previous = group.transition_to(target, self.now)
        self.c.event(
            r,
            group.group_id,
            "GroupStateChanged",
            groupType=CLASSIC,
            fromState=previous,
            toState=target,
            generationId=group.generation_id,
        )

    def reschedule_session(
        self, r: CoordinatorResult, group: ClassicGroup, member: ClassicGroupMember, timeout_ms: int | None = None
    ) -> None:
        delay = member.session_timeout_ms if timeout_ms is None else timeout_ms
        r.schedule(
            session_timer_key(group.group_id, member.member_id),
            self.now + delay,
            T_SESSION,
            {"groupId": group.group_id, "memberId": member.member_id},
        )

    def cancel_session(self, r: CoordinatorResult, group_id: str, member_id: str) -> None:
        r.cancel(session_timer_key(group_id, member_id))

    def complete_join_future(
        self, r: CoordinatorResult, member: ClassicGroupMember, error: Error = Errors.NONE, **fields
    ) -> bool:
        if member.awaiting_join is None:
            return False
        reply, member.awaiting_join = member.awaiting_join, None
        r.reply(reply, join_response(reply.api_version, error, **fields))
        return True

    def complete_sync_future(
        self, r: CoordinatorResult, member: ClassicGroupMember, error: Error = Errors.NONE, **fields
    ) -> bool:
        if member.awaiting_sync is None:
            return False
        reply, member.awaiting_sync = member.awaiting_sync, None
        r.reply(reply, sync_response(reply.api_version, error, **fields))
        return True

    def fence_member(self, r: CoordinatorResult, member: ClassicGroupMember) -> None:
        """replaceStaticMember: the replaced member's parked join and sync get FENCED_INSTANCE_ID."""
        self.complete_join_future(
            r,
            member,
            Errors.FENCED_INSTANCE_ID,
            member_id=member.member_id,
            protocol_name=None,
            protocol_type=None,
            leader=NO_LEADER,
        )
        self.complete_sync_future(r, member, Errors.FENCED_INSTANCE_ID, assignment=EMPTY_ASSIGNMENT)

    def classic_group(self, group_id: str) -> ClassicGroup | None:
        group = self.c.groups.get(group_id)
        return group if isinstance(group, ClassicGroup) else None

    def respond_join(self, r: CoordinatorResult, reply: ReplyTo, error: Error = Errors.NONE, **fields) -> None:
        r.reply(reply, join_response(reply.api_version, error, **fields))

    # ================================================================ JoinGroup
    def _join_group(self, r: CoordinatorResult, request: Request) -> dict | CoordinatorResult | None:
        body, version, reply = request.body, request.api_version, request.reply
        group_id, member_id = body["groupId"], body["memberId"]
        if version == 0:
            # JoinGroupRequest.maybeOverrideRebalanceTimeout: v0 has none, the session timeout is used.
            body["rebalanceTimeoutMs"] = body["sessionTimeoutMs"]
        # GroupCoordinatorService checks.
        if group_id == "":
            return join_response(version, Errors.INVALID_GROUP_ID, member_id=member_id)
        session = body["sessionTimeoutMs"]
        if (
            session < self.config["group.min.session.timeout.ms"]
            or session > self.config["group.max.session.timeout.ms"]
        ):
            return join_response(version, Errors.INVALID_SESSION_TIMEOUT, member_id=member_id)
        names = [p["name"] for p in body["protocols"]]
        if len(set(names)) != len(names):
            # Kafka's ClassicGroup counts a name listed twice as two supporters, so no protocol
            # could ever be selected for the group; refuse such a member before it joins.
            return join_response(version, Errors.INCONSISTENT_GROUP_PROTOCOL, member_id=member_id)

        existing = self.c.groups.get(group_id)
        convert = False
        if existing is not None and existing.type != CLASSIC:
            if existing.type == CONSUMER and not existing.is_empty():
                # classicGroupJoinToConsumerGroup: the KIP-848 migration path of the group type.
                return existing.classic_join(self.c, request)
            if existing.type == CONSUMER:
                # An empty consumer group is converted; any other type (a streams group too, even
                # empty: Kafka 4.1's classicGroupJoin) is INCONSISTENT_GROUP_PROTOCOL.
                convert = True
            else:
                return join_response(version, Errors.INCONSISTENT_GROUP_PROTOCOL, member_id=UNKNOWN_MEMBER_ID)

        is_unknown = member_id == UNKNOWN_MEMBER_ID
        if (existing is None or convert) and not is_unknown:
            # A missing group is only created for a member without an id.
            return join_response(version, Errors.UNKNOWN_MEMBER_ID, member_id=member_id)
        if convert:
            # maybeDeleteEmptyConsumerGroup: the empty consumer group's tombstones go into this
            # in-memory-only result and are not replayed; the group leaves memory directly
            # (delete_group removes it), as Kafka's removeGroup. A rebuild replays them before the
            # classic group's record, to the same state. Nothing below raises an ApiError.
            r.merge(self.c.delete_group(existing, reason="converted to a classic group by JoinGroup", in_memory=True))
        written_before_join = len(r.records)
        is_new_group = group_id not in self.c.groups
        group = self.classic_group(group_id)
        if group is None:
            group = self.c.create_classic_group(group_id, reason="JoinGroup", result=r)

        if not self.accept_joining_member(group, member_id):
            group.remove(member_id)
            self.cancel_session(r, group_id, member_id)
            self.respond_join(r, reply, Errors.GROUP_MAX_SIZE_REACHED, member_id=UNKNOWN_MEMBER_ID)
        elif is_unknown:
            self.join_new_member(r, request, group)
        else:
            self.join_existing_member(r, request, group)

        if is_new_group and len(r.records) == written_before_join:
            # A newly created group is committed to the log even when the join wrote nothing.
            self.append_group_metadata(r, group_id, group.empty_metadata_record_value())
        return None

    def accept_joining_member(self, group: ClassicGroup, member_id: str) -> bool:
        max_size = self.config["group.max.size"]
        if group.state in (EMPTY, DEAD):
            return True
        if group.state == PREPARING_REBALANCE:
            member = group.member(member_id)
            return (member is not None and member.is_awaiting_join) or group.num_awaiting_join_response() < max_size
        return group.has_member(member_id) or group.num_members() < max_size

    def join_new_member(self, r: CoordinatorResult, request: Request, group: ClassicGroup) -> None:
        body, reply = request.body, request.reply
        if group.state == DEAD:
            self.respond_join(r, reply, Errors.COORDINATOR_NOT_AVAILABLE, member_id=UNKNOWN_MEMBER_ID)
        elif not group.supports_protocols(body["protocolType"], {p["name"] for p in body["protocols"]}):
            self.respond_join(r, reply, Errors.INCONSISTENT_GROUP_PROTOCOL, member_id=UNKNOWN_MEMBER_ID)
        else:
            instance_id = body.get("groupInstanceId")
            new_member_id = self.generate_member_id(request, group.group_id, instance_id)
            if instance_id is not None:
                existing = group.static_member_id(instance_id)
                if existing is not None:
                    self.update_static_member_then_rebalance_or_complete_join(
                        r, request, group, existing, new_member_id
                    )
                else:
                    self.add_member_then_rebalance_or_complete_join(r, request, group, new_member_id)
            elif request.api_version >= 4:  # JoinGroupRequest.requiresKnownMemberId
                group.add_pending_member(new_member_id)
                r.schedule(
                    session_timer_key(group.group_id, new_member_id),
                    self.now + body["sessionTimeoutMs"],
                    T_SESSION,
                    {"groupId": group.group_id, "memberId": new_member_id},
                )
                self.respond_join(r, reply, Errors.MEMBER_ID_REQUIRED, member_id=new_member_id)
            else:
                self.add_member_then_rebalance_or_complete_join(r, request, group, new_member_id)

    def join_existing_member(self, r: CoordinatorResult, request: Request, group: ClassicGroup) -> None:
        body, reply = request.body, request.reply
        member_id, instance_id = body["memberId"], body.get("groupInstanceId")
        if group.state == DEAD:
            self.respond_join(r, reply, Errors.COORDINATOR_NOT_AVAILABLE, member_id=member_id)
            return
        if not group.supports_protocols(body["protocolType"], {p["name"] for p in body["protocols"]}):
            self.respond_join(r, reply, Errors.INCONSISTENT_GROUP_PROTOCOL, member_id=member_id)
            return
        if group.is_pending_member(member_id):
            if instance_id is not None:
                raise IllegalStateError(
                    f"Received unexpected JoinGroup with groupInstanceId={instance_id} "
                    f"for pending member with memberId={member_id}"
                )
            self.add_member_then_rebalance_or_complete_join(r, request, group, member_id)
            return
        try:
            group.validate_member(member_id, instance_id)
        except ApiError as e:
            self.respond_join(r, reply, e.error, member_id=member_id, protocol_type=None, protocol_name=None)
            return
        member = group.existing_member(member_id)
        protocols = request_protocols(body)
        reason = join_reason(body)
        if group.state == PREPARING_REBALANCE:
            self.update_member_then_rebalance_or_complete_join(
                r,
                request,
                group,
                member,
                f"Member {member_id} is joining group during {group.state}; client reason: {reason}",
            )
        elif group.state == COMPLETING_REBALANCE:
            if member.matches(protocols):
                # The member lost its JoinGroup response: answer with the current generation.
                self.respond_join(
                    r,
                    reply,
                    member_id=member_id,
                    generation_id=group.generation_id,
                    protocol_name=group.protocol_name,
                    protocol_type=group.protocol_type,
                    leader=group.leader_id,
                    members=group.current_members_for_join() if group.is_leader(member_id) else [],
                )
            else:
                self.update_member_then_rebalance_or_complete_join(
                    r,
                    request,
                    group,
                    member,
                    f"Updating metadata for member {member_id} during {group.state}; client reason: {reason}",
                )
        elif group.state == STABLE:
            if group.is_leader(member_id):
                # A leader's JoinGroup always rebalances: it may know of changes the metadata hides.
                self.update_member_then_rebalance_or_complete_join(
                    r,
                    request,
                    group,
                    member,
                    f"Leader {member_id} re-joining group during {group.state}; client reason: {reason}",
                )
            elif not member.matches(protocols):
                self.update_member_then_rebalance_or_complete_join(
                    r,
                    request,
                    group,
                    member,
                    f"Updating metadata for member {member_id} during {group.state}; client reason: {reason}",
                )
            else:
                self.respond_join(
                    r,
                    reply,
                    member_id=member_id,
                    generation_id=group.generation_id,
                    protocol_name=group.protocol_name,
                    protocol_type=group.protocol_type,
                    leader=group.leader_id,
                    members=[],
                )
        else:
            # Empty: let the member reset its generation and rejoin.
            self.respond_join(r, reply, Errors.UNKNOWN_MEMBER_ID, member_id=member_id)

    def add_member_then_rebalance_or_complete_join(
        self, r: CoordinatorResult, request: Request, group: ClassicGroup, member_id: str
    ) -> None:
        body = request.body
        member = ClassicGroupMember(
            member_id,
            body.get("groupInstanceId"),
            request.reply.client_id,
            self.client_host(request),
            body["rebalanceTimeoutMs"],
            body["sessionTimeoutMs"],
            body["protocolType"],
            request_protocols(body),
        )
        member.is_new = True
        if group.state == PREPARING_REBALANCE and group.previous_state == EMPTY:
            group.new_member_added = True  # lets the initial rebalance wait longer
        group.add(member, request.reply)
        # A new member cannot heartbeat while its JoinGroup is parked: a retried and abandoned join
        # must not keep it in the group for ever (KAFKA-7610).
        self.reschedule_session(r, group, member, self.config["group.classic.new.member.join.timeout.ms"])
        self.c.event(
            r,
            group.group_id,
            "MemberJoined",
            memberId=member_id,
            groupInstanceId=member.group_instance_id,
            clientId=member.client_id,
        )
        self.maybe_prepare_rebalance_or_complete_join(
            r,
            group,
            f"Adding new member {member_id} with group instance id {member.group_instance_id}; "
            f"client reason: {join_reason(body)}",
        )

    def update_member_then_rebalance_or_complete_join(
        self, r: CoordinatorResult, request: Request, group: ClassicGroup, member: ClassicGroupMember, reason: str
    ) -> None:
        body = request.body
        group.update_member(
            member, request_protocols(body), body["rebalanceTimeoutMs"], body["sessionTimeoutMs"], request.reply
        )
        self.maybe_prepare_rebalance_or_complete_join(r, group, reason)

    def update_static_member_then_rebalance_or_complete_join(
        self, r: CoordinatorResult, request: Request, group: ClassicGroup, old_member_id: str, new_member_id: str
    ) -> None:
        body, reply, version = request.body, request.reply, request.api_version
        instance_id = body["groupInstanceId"]
        current_leader = group.leader_id
        new_member = group.replace_static_member(
            instance_id, old_member_id, new_member_id, lambda m: self.fence_member(r, m)
        )
        # The old id's session timer would expire without effect; it goes now.
        self.cancel_session(r, group.group_id, old_member_id)
        self.reschedule_session(r, group, new_member)
        group.update_member(
            new_member, request_protocols(body), body["rebalanceTimeoutMs"], body["sessionTimeoutMs"], reply
        )
        self.c.event(
            r,
            group.group_id,
            "StaticMemberReplaced",
            groupInstanceId=instance_id,
            oldMemberId=old_member_id,
            newMemberId=new_member_id,
        )
        reason = join_reason(body)
        if group.state == STABLE:
            # Rebalance only if the group's selected protocol would change.
            if (group.protocol_name or "") == group.select_protocol():
                self.append_group_metadata(r, group.group_id, group.metadata_record_value(group.group_assignment()))
                # The append cannot fail here, so Kafka's success callback runs at once.
                if version >= 9:  # JoinGroupRequest.supportsSkippingAssignment
                    is_leader = group.is_leader(new_member_id)
                    self.complete_join_future(
                        r,
                        new_member,
                        member_id=new_member_id,
                        generation_id=group.generation_id,
                        protocol_name=group.protocol_name,
                        protocol_type=group.protocol_type,
                        leader=group.leader_id,
                        skip_assignment=is_leader,
                        members=group.current_members_for_join() if is_leader else [],
                    )
                else:
                    self.complete_join_future(
                        r,
                        new_member,
                        member_id=new_member_id,
                        generation_id=group.generation_id,
                        protocol_name=group.protocol_name,
                        protocol_type=group.protocol_type,
                        leader=current_leader,
                        skip_assignment=False,
                    )
            else:
                self.maybe_prepare_rebalance_or_complete_join(
                    r,
                    group,
                    f"Group's selectedProtocol will change because static member {new_member_id} with "
                    f"instance id {instance_id} joined with change of protocol; client reason: {reason}",
                )
        elif group.state == COMPLETING_REBALANCE:
            # The old member id may already be in the leader's hands: rebalance.
            self.prepare_rebalance(
                r,
                group,
                f"Updating metadata for static member {new_member_id} with instance id "
                f"{instance_id}; client reason: {reason}",
            )
        elif group.state in (EMPTY, DEAD):
            raise IllegalStateError(
                f"Group {group.group_id} was not supposed to be in the state {group.state} "
                f"when the unknown static member {instance_id} rejoins."
            )
        else:
            self.maybe_complete_join_phase(r, group)

    # ================================================================ rebalance
    def maybe_prepare_rebalance_or_complete_join(self, r: CoordinatorResult, group: ClassicGroup, reason: str) -> None:
        if group.can_rebalance():
            self.prepare_rebalance(r, group, reason)
        else:
            self.maybe_complete_join_phase(r, group)

    def prepare_rebalance(self, r: CoordinatorResult, group: ClassicGroup, reason: str) -> None:
        if group.state == COMPLETING_REBALANCE:
            # Members parked in SyncGroup must rejoin.
            self.reset_and_propagate_assignment_with_error(r, group, Errors.REBALANCE_IN_PROGRESS)
        self.remove_sync_expiration(r, group)
        initial = group.state == EMPTY
        if initial:
            delay = self.config["group.initial.rebalance.delay.ms"]
            remaining = max(group.rebalance_timeout_ms() - delay, 0)
            r.schedule(
                join_timer_key(group.group_id),
                self.now + delay,
                T_INITIAL_JOIN,
                {"groupId": group.group_id, "delayMs": delay, "remainingMs": remaining},
            )
        self.transition(r, group, PREPARING_REBALANCE)
        self.c.event(
            r,
            group.group_id,
            "RebalanceStarted",
            reason=reason,
            generationId=group.generation_id,
            members=len(group.members),
            initial=initial,
        )
        if not initial:
            self.maybe_complete_join_else_schedule(r, group)

    def maybe_complete_join_else_schedule(self, r: CoordinatorResult, group: ClassicGroup) -> None:
        if group.has_all_members_joined():
            self.complete_join(r, group)
        else:
            r.schedule(
                join_timer_key(group.group_id),
                self.now + group.rebalance_timeout_ms(),
                T_JOIN,
                {"groupId": group.group_id},
            )

    def maybe_complete_join_phase(self, r: CoordinatorResult, group: ClassicGroup) -> None:
        if group.state != PREPARING_REBALANCE:
            return
        if group.previous_state == EMPTY:
            return  # the initial rebalance waits for its delay
        if not group.has_all_members_joined():
            return
        self.complete_join(r, group)

    def complete_join(self, r: CoordinatorResult, group: ClassicGroup) -> None:
        """completeClassicGroupJoin."""
        r.cancel(join_timer_key(group.group_id))
        gone = [m for m in group.not_yet_rejoined_members() if not m.is_static]
        for m in gone:
            group.remove(m.member_id)
            self.cancel_session(r, group.group_id, m.member_id)
        if gone:
            self.c.event(
                r,
                group.group_id,
                "MembersRemoved",
                memberIds=[m.member_id for m in gone],
                reason="dynamic members did not rejoin before the rebalance timeout",
            )
        if group.state == DEAD:
            return
        if not group.maybe_elect_new_joined_leader() and group.members:
            # Nobody rejoined (only static members that did not rejoin are left): wait another
            # rebalance timeout until session timeouts remove them.
            r.schedule(
                join_timer_key(group.group_id),
                self.now + group.rebalance_timeout_ms(),
                T_JOIN,
                {"groupId": group.group_id},
            )
            self.c.event(
                r,
                group.group_id,
                "JoinPhaseExtended",
                reason="no member rejoined",
                generationId=group.generation_id,
            )
            return
        previous = group.state
        group.init_next_generation(self.now)
        self.c.event(
            r,
            group.group_id,
            "GroupStateChanged",
            groupType=CLASSIC,
            fromState=previous,
            toState=group.state,
            generationId=group.generation_id,
        )
        if group.state == EMPTY:
            self.append_group_metadata(r, group.group_id, group.metadata_record_value({}))
            self.c.event(
                r,
                group.group_id,
                "JoinCompleted",
                generationId=group.generation_id,
                memberIds=[],
                protocolName=None,
                leaderId=None,
            )
            return
        for member in list(group.members.values()):
            self.complete_join_future(
                r,
                member,
                member_id=member.member_id,
                generation_id=group.generation_id,
                protocol_name=group.protocol_name,
                protocol_type=group.protocol_type,
                leader=group.leader_id,
                skip_assignment=False,
                members=group.current_members_for_join() if group.is_leader(member.member_id) else [],
            )
            self.reschedule_session(r, group, member)
            member.is_new = False
            group.add_pending_sync_member(member.member_id)
        r.schedule(
            sync_timer_key(group.group_id),
            self.now + group.rebalance_timeout_ms(),
            T_SYNC,
            {"groupId": group.group_id, "generationId": group.generation_id},
        )
        self.c.event(
            r,
            group.group_id,
            "JoinCompleted",
            generationId=group.generation_id,
            memberIds=list(group.members),
            protocolName=group.protocol_name,
            leaderId=group.leader_id,
        )

    def reset_and_propagate_assignment_with_error(
        self, r: CoordinatorResult, group: ClassicGroup, error: Error
    ) -> None:
        if group.state != COMPLETING_REBALANCE:
            raise IllegalStateError(
                f"Group {group.group_id} must be in CompletingRebalance state but is in {group.state}."
            )
        for m in group.members.values():
            m.assignment = EMPTY_ASSIGNMENT
        self.propagate_assignment(r, group, error)

    def set_and_propagate_assignment(
        self, r: CoordinatorResult, group: ClassicGroup, assignment: dict[str, str]
    ) -> None:
        if group.state != COMPLETING_REBALANCE:
            raise IllegalStateError("The group must be in CompletingRebalance state to set and propagate assignment.")
        for m in group.members.values():
            m.assignment = assignment.get(m.member_id, EMPTY_ASSIGNMENT)
        self.propagate_assignment(r, group, Errors.NONE)

    def propagate_assignment(self, r: CoordinatorResult, group: ClassicGroup, error: Error) -> None:
        protocol_name = group.protocol_name if error is Errors.NONE else None
        protocol_type = group.protocol_type if error is Errors.NONE else None
        for m in list(group.members.values()):
            if self.complete_sync_future(
                r, m, error, protocol_name=protocol_name, protocol_type=protocol_type, assignment=m.assignment
            ):
                # Expirations while the member waited were ignored: expect heartbeats again.
                self.reschedule_session(r, group, m)

    def remove_sync_expiration(self, r: CoordinatorResult, group: ClassicGroup) -> None:
        group.pending_sync_members.clear()
        r.cancel(sync_timer_key(group.group_id))

    # ================================================================ timers
    def _on_join_timer(self, r: CoordinatorResult, timer: Timer) -> None:
        group = self.classic_group(timer.payload["groupId"])
        if group is not None:
            self.complete_join(r, group)

    def _on_initial_join_timer(self, r: CoordinatorResult, timer: Timer) -> None:
        """tryCompleteInitialRebalanceElseSchedule: while members keep arriving, wait another delay,
        up to the rebalance timeout in total."""
        payload = timer.payload
        group = self.classic_group(payload["groupId"])
        if group is None:
            return
        delay, remaining = payload["delayMs"], payload["remainingMs"]
        if group.new_member_added and remaining != 0:
            group.new_member_added = False
            new_delay = min(self.config["group.initial.rebalance.delay.ms"], remaining)
            new_remaining = max(remaining - delay, 0)
            r.schedule(
                join_timer_key(group.group_id),
                self.now + new_delay,
                T_INITIAL_JOIN,
                {"groupId": group.group_id, "delayMs": new_delay, "remainingMs": new_remaining},
            )
        else:
            self.complete_join(r, group)

    def _on_sync_timer(self, r: CoordinatorResult, timer: Timer) -> None:
        """expirePendingSync: members that did not send SyncGroup in time are removed."""
        payload = timer.payload
        group = self.classic_group(payload["groupId"])
        if group is None or payload["generationId"] != group.generation_id:
            return
        if group.state not in (COMPLETING_REBALANCE, STABLE) or group.has_received_sync_from_all_members():
            return
        pending = list(group.pending_sync_members)
        for member_id in pending:
            group.remove(member_id)
            self.cancel_session(r, group.group_id, member_id)
        self.c.event(
            r,
            group.group_id,
            "MembersRemoved",
            memberIds=pending,
            reason="members did not send SyncGroup before the rebalance timeout",
        )
        self.prepare_rebalance(r, group, f"Removing {pending} on pending sync request expiration")

    def _on_session_timer(self, r: CoordinatorResult, timer: Timer) -> None:
        """expireClassicGroupMemberHeartbeat."""
        payload = timer.payload
        group = self.classic_group(payload["groupId"])
        member_id = payload["memberId"]
        if group is None or group.state == DEAD:
            return
        if group.is_pending_member(member_id):
            self.c.event(
                r, group.group_id, "MemberSessionExpired", memberId=member_id, groupInstanceId=None, pending=True
            )
            group.remove(member_id)
            if group.state == PREPARING_REBALANCE and group.has_all_members_joined():
                self.complete_join(r, group)
            return
        member = group.member(member_id)
        if member is None or member.has_satisfied_heartbeat():
            return
        self.c.event(
            r,
            group.group_id,
            "MemberSessionExpired",
            memberId=member_id,
            groupInstanceId=member.group_instance_id,
            pending=False,
        )
        self.remove_member_and_update_group(r, group, member, f"removing member {member_id} on heartbeat expiration.")

    def remove_member_and_update_group(
        self, r: CoordinatorResult, group: ClassicGroup, member: ClassicGroupMember, reason: str
    ) -> None:
        # A new member may time out with a parked JoinGroup: it retries after UNKNOWN_MEMBER_ID.
        self.complete_join_future(r, member, Errors.UNKNOWN_MEMBER_ID, member_id=UNKNOWN_MEMBER_ID)
        group.remove(member.member_id)
        if group.state in (STABLE, COMPLETING_REBALANCE):
            self.maybe_prepare_rebalance_or_complete_join(r, group, reason)
        elif group.state == PREPARING_REBALANCE and group.has_all_members_joined():
            self.complete_join(r, group)

    # ================================================================ SyncGroup
    def _sync_group(self, r: CoordinatorResult, request: Request) -> dict | CoordinatorResult | None:
        body, version = request.body, request.api_version
        if body["groupId"] == "":
            return sync_response(version, Errors.INVALID_GROUP_ID)
        group = self.c.groups.get(body["groupId"])
        if group is None or group.is_empty():
            return sync_response(version, Errors.UNKNOWN_MEMBER_ID)
        if group.type == CLASSIC:
            return self.classic_sync(r, request, group)
        if group.type == CONSUMER:
            return group.classic_sync(self.c, request)
        return sync_response(version, Errors.UNKNOWN_MEMBER_ID)

    def validate_sync(self, group: ClassicGroup, body: dict) -> Error | None:
        if group.state == DEAD:
            return Errors.COORDINATOR_NOT_AVAILABLE
        try:
            group.validate_member(body["memberId"], body.get("groupInstanceId"))
        except ApiError as e:
            return e.error
        if body["generationId"] != group.generation_id:
            return Errors.ILLEGAL_GENERATION
        if _inconsistent(body.get("protocolType"), group.protocol_type) or _inconsistent(
            body.get("protocolName"), group.protocol_name
        ):
            return Errors.INCONSISTENT_GROUP_PROTOCOL
        return None

    def classic_sync(self, r: CoordinatorResult, request: Request, group: ClassicGroup) -> dict | None:
        body, version, reply = request.body, request.api_version, request.reply
        member_id = body["memberId"]
        error = self.validate_sync(group, body)
        if error is not None:
            return sync_response(version, error)
        if group.state == PREPARING_REBALANCE:
            return sync_response(version, Errors.REBALANCE_IN_PROGRESS)
        if group.state == COMPLETING_REBALANCE:
            group.existing_member(member_id).awaiting_sync = reply
            self.remove_pending_sync_member(r, group, member_id)
            if group.is_leader(member_id):
                assignment: dict[str, str] = {}
                for a in body["assignments"]:
                    assignment[a["memberId"]] = canonical_b64(a["assignment"])
                missing = [m for m in group.members if m not in assignment]
                for m in missing:
                    assignment[m] = EMPTY_ASSIGNMENT
                self.append_group_metadata(r, group.group_id, group.metadata_record_value(assignment))
                # The append succeeded (it cannot fail): Kafka's callback runs now.
                if group.state == COMPLETING_REBALANCE and body["generationId"] == group.generation_id:
                    self.set_and_propagate_assignment(r, group, assignment)
                    self.transition(r, group, STABLE)
                    self.c.event(
                        r,
                        group.group_id,
                        "RebalanceCompleted",
                        generationId=group.generation_id,
                        protocolName=group.protocol_name,
                        leaderId=group.leader_id,
                        memberIds=list(group.members),
                        membersWithoutAssignment=missing,
                    )
            return None
        if group.state == STABLE:
            self.remove_pending_sync_member(r, group, member_id)
            member = group.existing_member(member_id)
            return sync_response(
                version,
                Errors.NONE,
                protocol_type=group.protocol_type,
                protocol_name=group.protocol_name,
                assignment=member.assignment,
            )
        raise IllegalStateError(f"Reached unexpected condition for Dead group {group.group_id}")

    def remove_pending_sync_member(self, r: CoordinatorResult, group: ClassicGroup, member_id: str) -> None:
        group.remove_pending_sync_member(member_id)
        if group.state in (DEAD, EMPTY, PREPARING_REBALANCE) or group.has_received_sync_from_all_members():
            r.cancel(sync_timer_key(group.group_id))

    # ================================================================ Heartbeat
    def _heartbeat(self, r: CoordinatorResult, request: Request) -> dict | CoordinatorResult:
        body, version = request.body, request.api_version
        if body["groupId"] == "":
            return heartbeat_response(version, Errors.INVALID_GROUP_ID)
        group = self.c.groups.get(body["groupId"])
        if group is None:
            raise ApiError(Errors.UNKNOWN_MEMBER_ID, f"Group {body['groupId']} not found.")
        if group.type == CONSUMER:
            return group.classic_heartbeat(self.c, request)
        if group.type != CLASSIC:
            raise ApiError(Errors.UNKNOWN_MEMBER_ID, f"Group {body['groupId']} not found.")
        if group.state == DEAD:
            raise ApiError(Errors.COORDINATOR_NOT_AVAILABLE)
        group.validate_member(body["memberId"], body.get("groupInstanceId"))
        if body["generationId"] != group.generation_id:
            raise ApiError(Errors.ILLEGAL_GENERATION)
        if group.state == EMPTY:
            return heartbeat_response(version, Errors.UNKNOWN_MEMBER_ID)
        self.reschedule_session(r, group, group.existing_member(body["memberId"]))
        if group.state == PREPARING_REBALANCE:
            return heartbeat_response(version, Errors.REBALANCE_IN_PROGRESS)
        return heartbeat_response(version, Errors.NONE)

    # ================================================================ LeaveGroup
    def _leave_group(self, r: CoordinatorResult, request: Request) -> dict | CoordinatorResult:
        body, version = request.body, request.api_version
        if body["groupId"] == "":
            return leave_response(version, Errors.INVALID_GROUP_ID)
        identities = (
            body["members"]
            if version >= 3
            else [{"memberId": body["memberId"], "groupInstanceId": None, "reason": None}]
        )
        group = self.c.groups.get(body["groupId"])
        if group is not None and group.type == CONSUMER:
            return group.classic_leave(self.c, request, identities)
        if group is None or group.type != CLASSIC:
            # The service turns "group not found" into UNKNOWN_MEMBER_ID for every member.
            return leave_response(
                version,
                Errors.NONE,
                [
                    {
                        "memberId": i["memberId"],
                        "groupInstanceId": i.get("groupInstanceId"),
                        "errorCode": Errors.UNKNOWN_MEMBER_ID.code,
                    }
                    for i in identities
                ],
            )
        if group.state == DEAD:
            return leave_response(version, Errors.COORDINATOR_NOT_AVAILABLE)

        responses = []
        for ident in identities:
            member_id, instance_id = ident["memberId"], ident.get("groupInstanceId")
            reason = ident.get("reason") or "not provided"
            entry = {"memberId": member_id, "groupInstanceId": instance_id, "errorCode": 0}
            if member_id == UNKNOWN_MEMBER_ID:
                # Administrative removal of a static member by instance id.
                static_id = group.static_member_id(instance_id) if instance_id is not None else None
                if static_id is not None:
                    self.remove_current_member(r, group, static_id, reason)
                else:
                    entry["errorCode"] = Errors.UNKNOWN_MEMBER_ID.code
            elif group.is_pending_member(member_id):
                group.remove(member_id)
                self.cancel_session(r, group.group_id, member_id)
                self.c.event(
                    r,
                    group.group_id,
                    "MemberLeft",
                    memberId=member_id,
                    groupInstanceId=None,
                    pending=True,
                    reason=reason,
                )
            else:
                try:
                    group.validate_member(member_id, instance_id)
                    self.remove_current_member(r, group, member_id, reason)
                except ApiError as e:
                    entry["errorCode"] = e.error.code
            responses.append(entry)

        left = [r["memberId"] for r in responses if r["errorCode"] == 0]
        if left:
            reason = f"explicit `LeaveGroup` request for ({', '.join(left)}) members."
            if group.state in (STABLE, COMPLETING_REBALANCE):
                self.maybe_prepare_rebalance_or_complete_join(r, group, reason)
            elif group.state == PREPARING_REBALANCE:
                self.maybe_complete_join_phase(r, group)
        return leave_response(version, Errors.NONE, responses)

    def remove_current_member(self, r: CoordinatorResult, group: ClassicGroup, member_id: str, reason: str) -> None:
        member = group.existing_member(member_id)
        self.cancel_session(r, group.group_id, member_id)
        self.complete_join_future(r, member, Errors.UNKNOWN_MEMBER_ID, member_id=UNKNOWN_MEMBER_ID)
        group.remove(member_id)
        self.c.event(
            r,
            group.group_id,
            "MemberLeft",
            memberId=member_id,
            groupInstanceId=member.group_instance_id,
            pending=False,
            reason=reason,
        )

    # ================================================================ load
    def on_loaded(self, r: CoordinatorResult, group: ClassicGroup) -> None:
        """GroupMetadataManager.onLoaded for a classic group: session timers for every member, and a
        rebalance if the group is larger than group.max.size now allows."""
        for member in group.members.values():
            self.reschedule_session(r, group, member)
        if group.num_members() > self.config["group.max.size"]:
            self.prepare_rebalance(
                r,
                group,
                f"Freshly-loaded group {group.group_id} (size {group.num_members()}) "
                f"is over capacity {self.config['group.max.size']}. Rebalancing in "
                "order to give a chance for consumers to commit offsets",
            )


def _inconsistent(requested: str | None, current: str | None) -> bool:
    return requested is not None and current is not None and requested != current
