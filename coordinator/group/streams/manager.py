"""KIP-1071 streams groups in the groups component: Kafka 4.1's GroupMetadataManager streams path
(streamsGroupHeartbeat, streamsGroupLeave, the session and rebalance timers, streamsGroupDescribe,
the replay of StreamsGroup* records and onLoaded), on the algorithms of `coordinator/group/streams/`.

As for consumer groups, a handler validates and computes on the group as it is and returns a
`CoordinatorResult` (records, events, timers, response); the runtime appends and replays the records,
so a request answered with an error changes nothing. The soft state Kafka keeps in memory (the
configured topology, the metadata refresh deadline, the shutdown request, the endpoint information
epoch) is set by the handler once nothing can fail.

Internal topics: Kafka 4.1's broker creates the missing repartition and changelog topics itself
(KafkaApis.handleStreamsGroupHeartbeat) and answers MISSING_INTERNAL_TOPICS meanwhile. The core
cannot create topics, so it answers the same status and emits a `StreamsInternalTopicsMissing`
event naming them (partitions, replication factor, configs); the client (client/streams_member.py)
creates them from StreamsGroupDescribe's topology, and the next heartbeat after the metadata update
configures the topology.

Built by the group coordinator (`coordinator.group.shard`), which routes its APIs, timers and records here.
"""

from __future__ import annotations

import re
from typing import Any

from ... import api
from ...errors import ApiError, Error, Errors
from ...messages import Request
from ...records import record_key
from ...result import CoordinatorResult
from ...timers import Timer
from ..consumer.heartbeat import (
    throw_if_instance_id_is_fenced,
    throw_if_instance_id_is_unreleased,
    throw_if_static_member_is_unknown,
)
from ..group import STREAMS
from ..modern.manager import ModernGroupManager
from ..modern.member import LEAVE_GROUP_MEMBER_EPOCH, LEAVE_GROUP_STATIC_MEMBER_EPOCH
from ..modern.records import (
    persisted_group,
    replay_group_metadata,
    replay_member_metadata,
    replay_target_assignment_epoch,
)
from .apis import described_group, heartbeat_response
from .assignor import ASSIGNORS, MemberSpec, SubtopologySpec, TaskAssignorError
from .group import (
    R_CURRENT,
    R_GROUP,
    R_MEMBER,
    R_TARGET,
    R_TARGET_EPOCH,
    R_TOPOLOGY,
    StreamsGroup,
    current_value,
    derive_state,
    group_epoch_value,
    initial_rebalance_timer_key,
    member_value,
    rebalance_timer_key,
    session_timer_key,
    target_epoch_value,
    target_value,
    topology_value,
)
from .member import MemberState, StreamsGroupMember
from .reconciliation import reconcile
from .tasks import EMPTY, TasksTuple, tasks_to_wire
from .topology import (
    ASSIGNMENT_DELAYED,
    MISSING_CLIENT_TAGS,
    SHUTDOWN_APPLICATION,
    STALE_TOPOLOGY,
    StreamsInvalidTopologyError,
    configure_topics,
    describe_stored_topology,
    required_topics,
    topology_record_value,
)

T_SESSION = "streams-session"
T_INITIAL_REBALANCE = "streams-initial-rebalance"
INITIAL_DELAY_DETAIL = "Assignment delayed due to the configured initial rebalance delay."
TOPOLOGY_DESCRIPTION_NOT_STORED = 1  # StreamsGroupDescribeResponse.TopologyDescriptionStatus
T_REBALANCE = "streams-rebalance"
INT32_MAX = 2**31 - 1
METADATA_REFRESH_INTERVAL_MS = INT32_MAX
# Kafka's Topic.isInternal / Topic.isValid
INTERNAL_TOPICS = ("__consumer_offsets", "__transaction_state", "__share_group_state")
_LEGAL_TOPIC = re.compile(r"[a-zA-Z0-9._-]{1,249}")


def _invalid(message: str) -> ApiError:
    return ApiError(Errors.INVALID_REQUEST, message)


def _is_blank(value) -> bool:
    return value is not None and all(ord(c) <= 0x20 for c in value)


def throw_if_request_is_invalid(body: dict) -> None:
    """GroupCoordinatorService: throwIfStreamsGroupHeartbeatRequestIsUsingUnsupportedFeatures, then
    throwIfStreamsGroupHeartbeatRequestIsInvalid (Kafka 4.4.0's checks and messages: static members,
    task offsets and warm-up tasks are accepted since 4.4.0)."""
    topology = body["topology"]
    if topology is not None and any(s["sourceTopicRegex"] for s in topology["subtopologies"]):
        raise _invalid("Regular expressions for source topics are not supported yet.")
    if _is_blank(body["memberId"]):
        raise _invalid("MemberId can't be empty.")
    if _is_blank(body["groupId"]):
        raise _invalid("GroupId can't be empty.")
    if _is_blank(body["instanceId"]):
        raise _invalid("InstanceId can't be empty.")
    if _is_blank(body["rackId"]):
        raise _invalid("RackId can't be empty.")
    epoch = body["memberEpoch"]
    if epoch == 0:
        if body["rebalanceTimeoutMs"] == -1:
            raise _invalid("RebalanceTimeoutMs must be provided in first request.")
        for name, label in (
            ("activeTasks", "ActiveTasks"),
            ("standbyTasks", "StandbyTasks"),
            ("warmupTasks", "WarmupTasks"),
        ):
            if body[name]:
                raise _invalid(f"{label} must be empty when (re-)joining.")
        if topology is None:
            raise _invalid("Topology must be non-null when (re-)joining.")
        for s in topology["subtopologies"]:
            for t in s["stateChangelogTopics"]:
                if t["partitions"] != 0:
                    raise ApiError(
                        Errors.STREAMS_INVALID_TOPOLOGY,
                        f"Changelog topic {t['name']} must have an undefined partition count, but it "
                        f"is set to {t['partitions']}.",
                    )
    elif epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
        if body["instanceId"] is None:
            raise _invalid("InstanceId can't be null.")
    elif epoch < LEAVE_GROUP_STATIC_MEMBER_EPOCH:
        raise _invalid(f"MemberEpoch is {epoch}, but must be greater than or equal to -2.")
    if any(body[n] is not None for n in ("activeTasks", "standbyTasks", "warmupTasks")):
        if any(body[n] is None for n in ("activeTasks", "standbyTasks", "warmupTasks")):
            raise _invalid("If one task-type is non-null, all must be non-null.")
    if epoch != 0 and topology is not None:
        raise _invalid("Topology can only be provided when (re-)joining.")


def throw_if_topics_are_invalid(topology: dict | None) -> None:
    """KafkaApis.handleStreamsGroupHeartbeat: no internal and only legal topic names."""
    if topology is None:
        return
    names: list[str] = []
    for s in topology["subtopologies"]:
        for n in (
            s["sourceTopics"]
            + s["repartitionSinkTopics"]
            + [t["name"] for t in s["repartitionSourceTopics"]]
            + [t["name"] for t in s["stateChangelogTopics"]]
        ):
            if n not in names:
                names.append(n)
    internal = [n for n in names if n in INTERNAL_TOPICS]
    if internal:
        raise ApiError(
            Errors.STREAMS_INVALID_TOPOLOGY,
            f"Use of Kafka internal topics {','.join(internal)} in a Kafka Streams topology is prohibited.",
        )
    invalid = [n for n in names if not _LEGAL_TOPIC.fullmatch(n) or n in (".", "..")]
    if invalid:
        raise ApiError(Errors.STREAMS_INVALID_TOPOLOGY, f"Topic names {','.join(invalid)} are not valid topic names.")


class StreamsGroupManager(ModernGroupManager):
    group_class = StreamsGroup
    type_name = "streams"
    revoking_state = MemberState.UNREVOKED_TASKS

    # ================================================================ helpers
    def enabled(self) -> bool:
        """KafkaApis.isStreamsGroupProtocolEnabled: "streams" in group.coordinator.rebalance.protocols."""
        return "streams" in self.config["group.coordinator.rebalance.protocols"]

    # The streams.* group configs (IncrementalAlterConfigs on the group), else the coordinator's
    # group.streams.* settings: GroupConfigManager's fallbacks.
    def session_timeout_ms(self, group_id: str) -> int:
        return self.c.configs.streams_session_timeout_ms(group_id)

    def heartbeat_interval_ms(self, group_id: str) -> int:
        return self.c.configs.streams_heartbeat_interval_ms(group_id)

    def assignment_configs(self, group_id: str) -> dict[str, str]:
        """streamsGroupAssignmentConfigs: what the assignor is given, kept in the StreamsGroupMetadata
        record (`lastAssignmentConfigs`) so that a change triggers a rebalance (4.3+)."""
        configs = {"num.standby.replicas": str(self.c.configs.streams_num_standby_replicas(group_id))}
        tags = self.c.configs.streams_rack_aware_assignment_tags(group_id)
        if tags:
            configs["rack.aware.assignment.tags"] = ",".join(tags)
        return configs

    def assignor_name(self, group_id: str) -> str:
        """streamsGroupAssignor: the group's `streams.assignor.name` if the coordinator has that
        assignor, else the first of `group.streams.assignors`."""
        name = self.c.configs.streams_assignor_name(group_id)
        return name if name in ASSIGNORS else self.config["group.streams.assignors"][0]

    def topology_metadata_hash(self, topology: dict) -> int:
        """StreamsGroup.computeMetadataHash over the topology's required topics that exist."""
        return self.compute_metadata_hash(required_topics(topology))

    def streams_group(self, group_id: str) -> StreamsGroup:
        """GroupMetadataManager.group(): describe and leave (a heartbeat's own check says "Streams group")."""
        return self.typed_group(group_id)

    @staticmethod
    def event(result: CoordinatorResult, group_id: str, event: str, **fields) -> None:
        """A group event that says its group type (the metrics label it by `groupType`), into `result`."""
        fields.setdefault("groupType", STREAMS)
        result.emit(group_id, event, groupId=group_id, **fields)

    # ================================================================ StreamsGroupHeartbeat
    def streams_group_heartbeat(self, request: Request) -> CoordinatorResult:
        if not self.enabled():
            raise ApiError(Errors.UNSUPPORTED_VERSION)
        body = request.body
        throw_if_topics_are_invalid(body["topology"])
        throw_if_request_is_invalid(body)
        if body["memberEpoch"] in (LEAVE_GROUP_MEMBER_EPOCH, LEAVE_GROUP_STATIC_MEMBER_EPOCH):
            return self.streams_group_leave(request)
        return self._heartbeat(request)

    def _heartbeat(self, request: Request) -> CoordinatorResult:
        body = request.body
        group_id, member_id = body["groupId"], body["memberId"]
        now = self.now
        records: list[tuple[str, dict | None]] = []
        events: list[tuple[str, dict]] = []
        status: list[dict] = []
        state_before = self._state(group_id)

        group, member, owned, replaced = self._group_and_member(body, records, events)
        is_new_group = group_id not in self.c.groups
        is_new_member = member_id not in group.members

        # 1. Create or update the member. A static member's new metadata bumps the group epoch
        # only if it matters to the assignment (hasEpochRelevantMemberConfigChanged).
        topology = body["topology"]
        updated = _updated_member(member, request)
        bump = False
        if updated != member:
            records.append((record_key(R_MEMBER, group_id, member_id), member_value(updated)))
            bump = body["instanceId"] is None or _epoch_relevant_changed(member, updated)

        # 2. Initialise or check the group's topology.
        group_topology = self._maybe_update_topology(group, member_id, topology, records, events)
        if group.topology is not None and updated.topology_epoch < group.topology["epoch"]:
            status.append(
                {
                    "statusCode": STALE_TOPOLOGY,
                    "statusDetail": f"The member's topology epoch {updated.topology_epoch} is behind the "
                    f"group's topology epoch {group.topology['epoch']}.",
                }
            )

        # 3. Configure the topology against the topics (and find the internal topics to create).
        configured = group.configured_topology
        reconfigure = group.topology is None
        metadata_hash = group.metadata_hash
        if reconfigure or configured is None or group.has_metadata_expired(now):
            metadata_hash = self.topology_metadata_hash(group_topology)
            if metadata_hash != group.metadata_hash:
                bump = True
                reconfigure = True
            if reconfigure or configured is None:
                try:
                    configured = configure_topics(group_topology, metadata_hash, self.topics())
                except StreamsInvalidTopologyError as e:
                    raise ApiError(Errors.STREAMS_INVALID_TOPOLOGY, str(e)) from e
        validated_topology_epoch = -1
        if configured.is_ready():
            validated_topology_epoch = group_topology["epoch"]
            for tasks in (body["activeTasks"], body["standbyTasks"], body["warmupTasks"]):
                _throw_if_invalid_tasks(configured, tasks)
        task_offsets = None
        if body["taskOffsets"] is not None or body["taskEndOffsets"] is not None:
            task_offsets = _updated_task_offsets(group.member_task_offsets(member_id), body)
        group_task_offsets = dict(group.task_offsets)
        if task_offsets is not None:
            group_task_offsets[member_id] = task_offsets
        if validated_topology_epoch != group.validated_topology_epoch:
            bump = True  # Kafka 4.2+
        # Kafka 4.3+: the assignment configs (standby replicas, rack tags) changed since the last
        # epoch bump (a record without them, written before 4.3, counts as a change).
        assignment_configs = self.assignment_configs(group_id)
        if not bump and assignment_configs != group.last_assignment_configs:
            bump = True

        group_epoch = group.group_epoch
        validated_after = group.validated_topology_epoch
        if bump:
            group_epoch += 1
            validated_after = validated_topology_epoch
            records.append(
                (
                    record_key(R_GROUP, group_id),
                    group_epoch_value(
                        group_epoch,
                        metadata_hash,
                        validated_topology_epoch,
                        assignment_configs,
                        group.stored_description_topology_epoch,
                        group.failed_description_topology_epoch,
                    ),
                )
            )
            events.append(
                (
                    "GroupEpochBumped",
                    {
                        "groupEpoch": group_epoch,
                        "metadataHash": metadata_hash,
                        "reason": "new group"
                        if is_new_group
                        else f"member {member_id} joined or changed its metadata, or the "
                        "topics of the topology changed",
                    },
                )
            )

        # Kafka 4.3+: the first member of an empty group starts the initial rebalance delay, and
        # while it runs no target assignment is computed (every member is given none, at the
        # last assignment epoch); its timer computes the first one.
        delay_key = initial_rebalance_timer_key(group_id)
        schedule_delay = False
        if group.is_empty() and delay_key not in self.p.timers:
            schedule_delay = self.c.configs.streams_initial_rebalance_delay_ms(group_id) > 0

        # 4. A new target assignment if the group epoch is ahead of the assignment epoch and the
        # assignment interval allows it (else Kafka 4.3+ says so in a status); a static member
        # replacing another takes its place and its target (UpdatedMembersAndTargetAssignmentView).
        if schedule_delay or delay_key in self.p.timers:
            status.append({"statusCode": ASSIGNMENT_DELAYED, "statusDetail": INITIAL_DELAY_DETAIL})
            target_epoch = group.target_assignment_epoch
            target = EMPTY
        elif group_epoch > group.target_assignment_epoch and not self.can_compute_next_target_assignment(group):
            status.append(
                {
                    "statusCode": ASSIGNMENT_DELAYED,
                    "statusDetail": "Assignment delayed due to the configured assignment interval.",
                }
            )
            target_epoch = group.target_assignment_epoch
            target = group.target_assignment_of(member_id if replaced is None else replaced.member_id)
        elif group_epoch > group.target_assignment_epoch:
            target = self._update_target_assignment(
                group,
                group_epoch,
                updated,
                replaced,
                configured,
                group_task_offsets,
                assignment_configs,
                records,
                events,
            )[member_id]
            target_epoch = group_epoch
        else:
            target_epoch = group.target_assignment_epoch
            target = group.target_assignment_of(member_id if replaced is None else replaced.member_id)

        # 5. Reconcile the member with its target (revoke before assign).
        reconciled = updated
        if not updated.is_reconciled_to(target_epoch):
            reconciled = reconcile(
                updated,
                target_epoch,
                target,
                group.current_active_task_process_id,
                group.current_standby_task_process_ids,
                group.current_warmup_task_process_ids,
                owned,
            )
            if reconciled != updated:
                records.append((record_key(R_CURRENT, group_id, member_id), current_value(reconciled)))

        # Nothing can fail any more: the result (records replayed by the runtime, timers, events)
        # and the soft state.
        result = CoordinatorResult()
        for key, value in records:
            result.record(key, value)
        members_before = dict(group.members)  # Kafka builds the endpoint map before its records apply
        if replaced is not None:
            del members_before[replaced.member_id]
        if is_new_group:
            # The records' replay fills this group: it holds the soft state set below.
            self.c.groups[group_id] = group
        group.configured_topology = configured
        if task_offsets is not None:
            group.task_offsets[member_id] = task_offsets
        if bump:
            group.set_metadata_refresh_deadline(now + METADATA_REFRESH_INTERVAL_MS, group_epoch)
        if reconciled != updated:
            if reconciled.state == MemberState.UNREVOKED_TASKS:
                self._schedule_rebalance_timeout(
                    result, group_id, member_id, reconciled.member_epoch, reconciled.rebalance_timeout_ms
                )
            else:
                result.cancel(rebalance_timer_key(group_id, member_id))
        self._schedule_session_timeout(result, group_id, member_id)
        if schedule_delay:
            deadline = now + self.c.configs.streams_initial_rebalance_delay_ms(group_id)
            result.schedule(delay_key, deadline, T_INITIAL_REBALANCE, {"groupId": group_id})
        if body["shutdownApplication"] and group.shutdown_request_member_id is None:
            group.shutdown_request_member_id = member_id
            events.append(("StreamsShutdownRequested", {"memberId": member_id}))

        # 6. The events: the group's and member's, those the steps collected, and the state once
        # the records are replayed, from what they hold.
        self._heartbeat_events(
            result, request, updated, reconciled, configured, events, is_new_group, is_new_member, bump
        )
        members_after = dict(members_before)
        members_after[member_id] = reconciled
        state_after = derive_state(members_after.values(), group_topology, validated_after, group_epoch, target_epoch)
        self.state_changed_event(result, group_id, state_before, state_after, group_epoch, target_epoch)

        # 7. The response.
        result.response = self._heartbeat_response(
            request, group, member, reconciled, members_before, configured, status, is_new_group
        )
        if is_new_group:
            _forget_soft_state(group)
        return result

    def _heartbeat_events(
        self,
        result: CoordinatorResult,
        request: Request,
        updated: StreamsGroupMember,
        reconciled: StreamsGroupMember,
        configured,
        events: list[tuple[str, dict]],
        is_new_group: bool,
        is_new_member: bool,
        bump: bool,
    ) -> None:
        """A heartbeat's events, into `result`: GroupCreated and MemberJoined, those the steps
        collected (`events`), the member's assignment change, and the internal topics to create."""
        group_id, member_id = request.body["groupId"], reconciled.member_id
        self.created_and_joined_events(
            result,
            group_id,
            is_new_group,
            is_new_member,
            "StreamsGroupHeartbeat",
            memberId=member_id,
            processId=reconciled.process_id,
            clientId=request.reply.client_id,
            topologyEpoch=reconciled.topology_epoch,
            groupType=STREAMS,
        )
        for name, fields in events:
            self.event(result, group_id, name, **fields)
        if reconciled != updated or is_new_member:
            self.event(
                result,
                group_id,
                "MemberAssignmentChanged",
                memberId=member_id,
                memberEpoch=reconciled.member_epoch,
                previousMemberEpoch=reconciled.previous_member_epoch,
                memberState=reconciled.state.name,
                assignedTasks=reconciled.assigned_tasks.to_wire(),
                tasksPendingRevocation=reconciled.tasks_pending_revocation.to_wire(),
            )
        if configured.internal_topics_to_create and (bump or is_new_member):
            self.event(
                result,
                group_id,
                "StreamsInternalTopicsMissing",
                topics=[configured.internal_topics_to_create[n] for n in sorted(configured.internal_topics_to_create)],
            )

    def _heartbeat_response(
        self,
        request: Request,
        group: StreamsGroup,
        member: StreamsGroupMember,
        reconciled: StreamsGroupMember,
        members_before: dict,
        configured,
        status: list[dict],
        is_new_group: bool,
    ) -> dict:
        """The StreamsGroupHeartbeat answer: the member's tasks when it joins or they changed, the
        endpoints when the member's epoch of them is behind, and the statuses (topology, internal
        topics, a shutdown request, v1: missing client tags). Kafka 4.4 bumps the endpoint
        information epoch when the member's endpoint changed (a joining member's too) or the tasks of
        a member with an endpoint did; a new group answers epoch 0 (its bumped epoch is not kept:
        the group the records create starts at 0)."""
        body = request.body
        member_epoch = body["memberEpoch"]
        response = heartbeat_response(
            request.api_version,
            member_id=member.member_id,
            member_epoch=reconciled.member_epoch,
            heartbeat_interval_ms=self.heartbeat_interval_ms(group.group_id),
            acceptable_recovery_lag=self.c.configs.streams_acceptable_recovery_lag(group.group_id),
            task_offset_interval_ms=self.c.configs.streams_task_offset_interval_ms(group.group_id),
        )
        tasks_changed = member.assigned_tasks != reconciled.assigned_tasks
        if member_epoch == 0 or tasks_changed:
            response["activeTasks"] = tasks_to_wire(reconciled.assigned_tasks.active)
            response["standbyTasks"] = tasks_to_wire(reconciled.assigned_tasks.standby)
            response["warmupTasks"] = tasks_to_wire(reconciled.assigned_tasks.warmup)
        endpoint_changed = member.user_endpoint != reconciled.user_endpoint
        if endpoint_changed or (tasks_changed and reconciled.user_endpoint is not None):
            group.endpoint_information_epoch += 1
        if group.endpoint_information_epoch != body["endpointInformationEpoch"]:
            response["partitionsByUserEndpoint"] = self._endpoint_to_partitions(group, members_before, reconciled)
        if not is_new_group:
            response["endpointInformationEpoch"] = group.endpoint_information_epoch
        if configured.status is not None:
            status.append({"statusCode": configured.status, "statusDetail": configured.status_detail})
        if group.shutdown_request_member_id is not None:
            status.append(
                {
                    "statusCode": SHUTDOWN_APPLICATION,
                    "statusDetail": f"Streams group member {group.shutdown_request_member_id} encountered a "
                    "fatal error and requested a shutdown for the entire application.",
                }
            )
        tags = self.c.configs.streams_rack_aware_assignment_tags(group.group_id)
        if request.api_version >= 1 and tags:
            member_tags = {k for k, _ in reconciled.client_tags}
            missing = [t for t in tags if t not in member_tags]
            if missing:
                status.append(
                    {
                        "statusCode": MISSING_CLIENT_TAGS,
                        "statusDetail": "Missing required client tags for rack-aware standby assignment: "
                        f"[{', '.join(missing)}]. Configure them via 'client.tag.<tagKey>' in your Streams config.",
                    }
                )
        # Kafka 4.2+ sets the list on every answer, [] when there is nothing to say (4.1.1 left it
        # null then; 4.4.0's StreamsGroupHeartbeatResponse.Status has no null default any more).
        response["status"] = status
        return response

    def _group_and_member(
        self, body: dict, records: list, events: list
    ) -> tuple[StreamsGroup, StreamsGroupMember, TasksTuple | None, StreamsGroupMember | None]:
        """The group (a new one, not yet in the groups map, for a joining member), the member (a
        default one for a joining member), the tasks it says it owns (None: unchanged) and the
        static member it replaces (None: none), after Kafka's checks of the group's size, the
        instance id and the member's epoch (getOrMaybeCreate{Dynamic,Static}StreamsGroupMember)."""
        group_id, member_id, member_epoch = body["groupId"], body["memberId"], body["memberEpoch"]
        instance_id = body["instanceId"]
        joining = member_epoch == 0
        group = self.c.groups.get(group_id)
        if group is not None and not isinstance(group, StreamsGroup):
            raise ApiError(Errors.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a streams group.")
        if group is None:
            if not joining:
                raise ApiError(Errors.GROUP_ID_NOT_FOUND, f"Streams group {group_id} not found.")
            group = StreamsGroup(group_id)
        if joining:
            _throw_if_group_is_full(group, instance_id, member_id, self.config["group.streams.max.size"])
        owned = None
        if body["activeTasks"] is not None:
            owned = TasksTuple.of(
                _tasks(body["activeTasks"]), _tasks(body["standbyTasks"]), _tasks(body["warmupTasks"])
            )
        if instance_id is None:
            member = group.members.get(member_id)
            if member is None:
                if not joining:
                    raise ApiError(Errors.UNKNOWN_MEMBER_ID, f"Member {member_id} is not a member of group {group_id}.")
                member = StreamsGroupMember.default(member_id)
            if not joining:
                _throw_if_member_epoch_is_invalid(member, member_epoch, owned)
            return group, member, owned, None
        if not joining:
            known = _static_member_or_throw(group, member_id, instance_id)
            _throw_if_member_epoch_is_invalid(known, member_epoch, owned)
            return group, known, owned, None
        existing = group.static_member(instance_id)
        if existing is None:
            return group, group.members.get(member_id) or StreamsGroupMember.default(member_id), owned, None
        # Only a member that left with epoch -2 releases its instance id; one that rejoins with
        # its own member id is replaced by itself, as in Kafka (tombstones, then itself at epoch 0).
        throw_if_instance_id_is_unreleased(existing, group_id, member_id, instance_id)
        new = existing.replace(member_id=member_id, member_epoch=0, previous_member_epoch=0)
        self._replace_member(records, group, existing, new)
        events.append(
            (
                "StaticMemberReplaced",
                {"groupInstanceId": instance_id, "oldMemberId": existing.member_id, "newMemberId": member_id},
            )
        )
        return group, new, owned, (existing if existing.member_id != member_id else None)

    @staticmethod
    def _replace_member(records: list, group: StreamsGroup, old: StreamsGroupMember, new: StreamsGroupMember) -> None:
        """replaceStreamsMember: the old member's tombstones (its timers stay and will find
        nothing), then the new member with the old one's target assignment."""
        gid = group.group_id
        records.append((record_key(R_CURRENT, gid, old.member_id), None))
        records.append((record_key(R_TARGET, gid, old.member_id), None))
        records.append((record_key(R_MEMBER, gid, old.member_id), None))
        records.append((record_key(R_MEMBER, gid, new.member_id), member_value(new)))
        records.append(
            (record_key(R_TARGET, gid, new.member_id), target_value(group.target_assignment_of(old.member_id)))
        )
        records.append((record_key(R_CURRENT, gid, new.member_id), current_value(new)))

    def _maybe_update_topology(
        self, group: StreamsGroup, member_id: str, topology: dict | None, records: list, events: list
    ) -> dict:
        """maybeUpdateTopology: the first topology initialises the group's; a member with an older
        epoch keeps the group's (and is told STALE_TOPOLOGY); any other difference is refused, as
        Kafka 4.1 does ("Topology updates are not supported yet.")."""
        if topology is not None:
            value = topology_record_value(topology)
            if group.topology is None:
                records.append((record_key(R_TOPOLOGY, group.group_id), topology_value(value)))
                events.append(
                    (
                        "StreamsTopologyInitialized",
                        {
                            "topologyEpoch": value["epoch"],
                            "memberId": member_id,
                            "subtopologies": len(value["subtopologies"]),
                        },
                    )
                )
                return value
            if group.topology["epoch"] > value["epoch"]:
                return group.topology
            if _stored(group.topology) != value:
                raise _invalid("Topology updates are not supported yet.")
            return group.topology
        if group.topology is not None:
            return group.topology
        raise ApiError(Errors.UNKNOWN_SERVER_ERROR, "The topology is null and the group topology is also null.")

    def _update_target_assignment(
        self,
        group: StreamsGroup,
        group_epoch: int,
        updated: StreamsGroupMember | None,
        replaced: StreamsGroupMember | None,
        configured,
        task_offsets: dict,
        assignment_configs: dict[str, str],
        records: list,
        events: list,
    ) -> dict[str, TasksTuple]:
        """maybeUpdateStreamsTargetAssignment (TargetAssignmentBuilder): the assignor sees each
        member's process, its current (not target) active and standby tasks and the task offsets it
        reported (Kafka 4.4.0), and the standby replicas of `assignment_configs`; a topology that is
        not ready gives everyone nothing. A static member replacing another takes its place and its
        target. Returns the new target assignment by member."""
        members = dict(group.members)
        targets = dict(group.target_assignment)
        if updated is not None:
            if replaced is not None:
                del members[replaced.member_id]
                targets[updated.member_id] = targets.pop(replaced.member_id, EMPTY)
            members[updated.member_id] = updated
        specs = {
            m: MemberSpec(
                members[m].process_id,
                members[m].assigned_tasks.active,
                members[m].assigned_tasks.standby,
                task_offsets.get(m, ({}, {}))[0],
            )
            for m in members
        }
        assignor = self.assignor_name(group.group_id)
        if configured.is_ready():
            subs = {
                sid: SubtopologySpec(s.number_of_tasks, s.is_stateful()) for sid, s in configured.subtopologies.items()
            }
            try:
                standbys = int(assignment_configs.get("num.standby.replicas", "0"))
                new = ASSIGNORS[assignor]().assign(specs, subs, standbys)
            except TaskAssignorError as e:
                raise ApiError(
                    Errors.UNKNOWN_SERVER_ERROR,
                    f"Failed to compute a new target assignment for epoch {group_epoch}: {e}",
                ) from e
        else:
            new = {m: EMPTY for m in specs}
        gid = group.group_id
        changed = []
        for m in sorted(specs):
            old = targets.get(m)
            if old is None or old != new[m]:
                records.append((record_key(R_TARGET, gid, m), target_value(new[m])))
                changed.append(m)
        records.append((record_key(R_TARGET_EPOCH, gid), target_epoch_value(group_epoch, self.now)))
        total = sum(t.num_tasks() for t in new.values())
        events.append(
            (
                "TargetAssignmentComputed",
                {
                    "assignmentEpoch": group_epoch,
                    "assignor": assignor,
                    "members": len(new),
                    "changedMembers": changed if len(changed) <= 1000 else len(changed),
                    "targetAssignment": {m: t.to_wire() for m, t in sorted(new.items())} if total <= 10_000 else total,
                },
            )
        )
        return new

    def _endpoint_to_partitions(self, group: StreamsGroup, members: dict, updated: StreamsGroupMember) -> list | None:
        """StreamsGroup.buildEndpointToPartitions (EndpointToPartitionsManager): for each member
        with an endpoint (the other members as they were before this heartbeat, then the
        heartbeating one, last, with its new endpoint and tasks), the partitions of its active and
        standby tasks' source topics. Kafka takes the others in its members map's order, here in
        member id order."""
        out = []
        others = [members[m] for m in sorted(members) if m != updated.member_id]
        for m in [*others, updated]:
            if m.user_endpoint is None:
                continue
            out.append(
                {
                    "userEndpoint": {"host": m.user_endpoint[0], "port": m.user_endpoint[1]},
                    "activePartitions": self._task_partitions(group, m.assigned_tasks.active),
                    "standbyPartitions": self._task_partitions(group, m.assigned_tasks.standby),
                }
            )
        return out

    def _task_partitions(self, group: StreamsGroup, tasks) -> list[dict]:
        """One entry per (subtopology, source topic): the task partitions, cut to the topic's
        partition count as Kafka does."""
        configured = group.configured_topology
        if configured is None or configured.subtopologies is None:
            return []
        topics = self.topics()
        out = []
        for sid in sorted(tasks):
            sub = configured.subtopologies.get(sid)
            if sub is None:
                continue
            parts = sorted(tasks[sid])
            for topic in sorted(set(sub.source_topics) | set(sub.repartition_source_topics)):
                if topic in topics:
                    out.append({"topic": topic, "partitions": parts[: topics[topic]]})
        return out

    # ================================================================ leaving and fencing
    def streams_group_leave(self, request: Request) -> CoordinatorResult:
        body = request.body
        group = self.streams_group(body["groupId"])
        member_id = body["memberId"]
        shutdown_requested = body["shutdownApplication"] and group.shutdown_request_member_id is None
        if shutdown_requested:
            # Kafka records the shutdown request (a plain field, not timeline state) before it
            # looks the member up: an unknown member's request stands although its leave fails.
            group.shutdown_request_member_id = member_id
        instance_id = body["instanceId"]
        try:
            if instance_id is None:
                member = group.get_member(member_id)
            else:
                member = _static_member_or_throw(group, member_id, instance_id)
        except ApiError as e:
            if not shutdown_requested:
                raise
            spec = api.registered(request.api_key)
            result = CoordinatorResult(response=spec.error_response(request.api_version, body, e.error, e.message))
            self.event(result, group.group_id, "StreamsShutdownRequested", memberId=member_id)
            return result
        if body["memberEpoch"] == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
            result = self._static_member_leave(group, member)
        else:
            result = self.fence_member(group, member, "MemberLeft", "the member left the group (member epoch -1)")
            result.response = heartbeat_response(
                request.api_version, member_id=member_id, member_epoch=body["memberEpoch"]
            )
        if shutdown_requested:
            self.event(result, group.group_id, "StreamsShutdownRequested", memberId=member_id)
        return result

    def _static_member_leave(self, group: StreamsGroup, member: StreamsGroupMember) -> CoordinatorResult:
        """streamsGroupStaticMemberGroupLeave: the member stays with epoch -2 and keeps its tasks
        (none pending revocation) until it rejoins under a new member id or its session expires;
        the group epoch does not move."""
        gid = group.group_id
        leaving = member.replace(
            member_epoch=LEAVE_GROUP_STATIC_MEMBER_EPOCH, tasks_pending_revocation=EMPTY
        ).with_assigned_task_epochs_reset()
        before = self._state(gid)
        result = CoordinatorResult(
            heartbeat_response(member_id=member.member_id, member_epoch=LEAVE_GROUP_STATIC_MEMBER_EPOCH)
        )
        result.record(record_key(R_CURRENT, gid, member.member_id), current_value(leaving))
        self.event(
            result,
            gid,
            "MemberLeft",
            memberId=member.member_id,
            groupInstanceId=member.instance_id,
            processId=member.process_id,
            temporary=True,
            reason="static member left temporarily (member epoch -2); it keeps its tasks until its session expires",
            memberEpoch=member.member_epoch,
        )
        members = {**group.members, member.member_id: leaving}
        after = derive_state(
            members.values(),
            group.topology,
            group.validated_topology_epoch,
            group.group_epoch,
            group.target_assignment_epoch,
        )
        self.state_changed_event(result, gid, before, after, group.group_epoch, group.target_assignment_epoch)
        return result

    def fence_member(
        self, group: StreamsGroup, member: StreamsGroupMember, event: str, reason: str
    ) -> CoordinatorResult:
        """streamsGroupFenceMember: the member's tombstones and a group epoch bump. Kafka 4.4 keeps
        the group's metadata hash (4.1.1 wrote 0, and the next heartbeat bumped the epoch again
        when it recomputed it); the last member's leaves the group's (empty) target assignment at
        that epoch."""
        gid, mid = group.group_id, member.member_id
        group_epoch = group.group_epoch + 1
        before = self._state(gid)
        result = CoordinatorResult()
        result.record(record_key(R_CURRENT, gid, mid), None)
        result.record(record_key(R_TARGET, gid, mid), None)
        result.record(record_key(R_MEMBER, gid, mid), None)
        result.record(
            record_key(R_GROUP, gid),
            group_epoch_value(
                group_epoch,
                group.metadata_hash,
                group.validated_topology_epoch,
                group.last_assignment_configs,
                group.stored_description_topology_epoch,
                group.failed_description_topology_epoch,
            ),
        )
        remaining = [m for m_id, m in group.members.items() if m_id != mid]
        target_epoch = group.target_assignment_epoch
        if not remaining:
            # Kafka 4.4: the last member gone, the (empty) target assignment is at the new epoch.
            target_epoch = group_epoch
            result.record(record_key(R_TARGET_EPOCH, gid), target_epoch_value(group_epoch))
        self._cancel_timers(result, gid, mid)
        self.event(
            result,
            gid,
            event,
            memberId=mid,
            processId=member.process_id,
            reason=reason,
            memberEpoch=member.member_epoch,
        )
        self.event(
            result,
            gid,
            "GroupEpochBumped",
            groupEpoch=group_epoch,
            metadataHash=group.metadata_hash,
            reason=f"member {mid} removed: {reason}",
        )
        # The state once the tombstones are replayed: the other members, the new group epoch.
        after = derive_state(remaining, group.topology, group.validated_topology_epoch, group_epoch, target_epoch)
        self.state_changed_event(result, group.group_id, before, after, group_epoch, target_epoch)
        return result

    # ================================================================ timers
    def _schedule_session_timeout(self, result: CoordinatorResult, group_id: str, member_id: str) -> None:
        key, deadline = session_timer_key(group_id, member_id), self.now + self.session_timeout_ms(group_id)
        result.schedule(key, deadline, T_SESSION, {"groupId": group_id, "memberId": member_id})

    def _schedule_rebalance_timeout(
        self, result: CoordinatorResult, group_id: str, member_id: str, member_epoch: int, timeout_ms: int
    ) -> None:
        key, deadline = rebalance_timer_key(group_id, member_id), self.now + timeout_ms
        payload = {
            "groupId": group_id,
            "memberId": member_id,
            "memberEpoch": member_epoch,
            "rebalanceTimeoutMs": timeout_ms,
        }
        result.schedule(key, deadline, T_REBALANCE, payload)

    def _cancel_timers(self, result: CoordinatorResult, group_id: str, member_id: str) -> None:
        result.cancel(session_timer_key(group_id, member_id))
        result.cancel(rebalance_timer_key(group_id, member_id))

    def on_session_timeout(self, timer: Timer) -> CoordinatorResult | None:
        found = self.timer_member(timer)
        return None if found is None else self.fence_member(*found, "MemberFenced", "the member session expired")

    def on_rebalance_timeout(self, timer: Timer) -> CoordinatorResult | None:
        found, payload = self.timer_member(timer, same_epoch=True), timer.payload
        if found is None:
            return None
        group, member = found
        return self.fence_member(
            group,
            member,
            "MemberFenced",
            f"it failed to transition from epoch {payload['memberEpoch']} within {payload['rebalanceTimeoutMs']}ms",
        )

    def on_initial_rebalance_timeout(self, timer: Timer) -> CoordinatorResult | None:
        """computeDelayedTargetAssignment: the first target assignment of the group, at its epoch,
        with the assignment configs of its last epoch bump. Nothing when the group is gone or empty,
        or has no configured topology (a new group's first heartbeat does not keep it, as Kafka's
        does not: its next heartbeat computes the assignment)."""
        group = self.c.groups.get(timer.payload["groupId"])
        if not isinstance(group, StreamsGroup) or group.is_empty():
            return None
        configured = group.configured_topology
        if group.group_epoch <= group.target_assignment_epoch or configured is None:
            return None  # Kafka: an IllegalStateException / a warning, and no records
        if not self.can_compute_next_target_assignment(group):
            return None
        records: list[tuple[str, dict | None]] = []
        events: list[tuple[str, dict]] = []
        configs = group.last_assignment_configs or self.assignment_configs(group.group_id)
        self._update_target_assignment(
            group, group.group_epoch, None, None, configured, group.task_offsets, configs, records, events
        )
        result = CoordinatorResult()
        for key, value in records:
            result.record(key, value)
        for name, fields in events:
            self.event(result, group.group_id, name, **fields)
        after = derive_state(
            group.members.values(),
            group.topology,
            group.validated_topology_epoch,
            group.group_epoch,
            group.group_epoch,
        )
        self.state_changed_event(result, group.group_id, group.state, after, group.group_epoch, group.group_epoch)
        return result

    def on_metadata_change(self, old: dict, new: dict) -> None:
        """onMetadataUpdate: streams groups recompute their metadata hash (and reconfigure their
        topology if it changed) on their next heartbeat."""
        self.request_metadata_refresh()

    # ================================================================ StreamsGroupDescribe
    def streams_group_describe(self, request: Request) -> dict:
        """v1 (KIP-1331): asked for topology descriptions, a broker without a topology-description
        plugin (this service has none) answers NOT_STORED (1) for every described group and no
        description (StreamsGroupTopologyDescriptionManager.attachTopologyDescriptions)."""
        if not self.enabled():
            raise ApiError(Errors.UNSUPPORTED_VERSION)
        response = self.describe_groups(request.body, request.api_version)
        if request.body.get("includeTopologyDescription"):
            for g in response["groups"]:
                if g["errorCode"] == 0:
                    g["topologyDescriptionStatus"] = TOPOLOGY_DESCRIPTION_NOT_STORED
        return response

    def streams_group_topology_description_update(self, request: Request) -> dict:
        """StreamsGroupTopologyDescriptionUpdate (93): KafkaApis answers UNSUPPORTED_VERSION without
        streams groups; with them, GroupCoordinatorService's first check refuses every request
        when no topology-description plugin is configured (the service has none)."""
        if not self.enabled():
            raise ApiError(Errors.UNSUPPORTED_VERSION)
        raise ApiError(
            Errors.UNSUPPORTED_VERSION, "The broker has no streams group topology description plugin configured."
        )

    @staticmethod
    def member_order(member_id: str) -> str:
        return member_id  # Python's string order

    def described_group(self, version: int, group_id: str, error: Error | None = None, **fields: Any) -> dict:
        return described_group(version, group_id, error, **fields)

    def described_own(self, group: StreamsGroup) -> dict:
        """StreamsGroup.asDescribedGroup's topology: the configured one when it is ready, else (Kafka
        4.2+; 4.1.1: null) the topology as the group's record holds it; and (v1) the assignor of the
        next assignment."""
        configured = group.configured_topology
        topology: dict | None
        if configured is not None and configured.is_ready():
            topology = configured.as_describe_topology()
        else:
            topology = None if group.topology is None else describe_stored_topology(group.topology)
        return {"assignorName": self.assignor_name(group.group_id), "topology": topology}

    def described_member(self, version: int, group: StreamsGroup, m: StreamsGroupMember) -> dict:
        """StreamsGroupMember.asStreamsGroupDescribeMember."""
        return {
            "memberId": m.member_id,
            "memberEpoch": m.member_epoch,
            "instanceId": m.instance_id,
            "rackId": m.rack_id,
            "clientId": m.client_id,
            "clientHost": m.client_host,
            "topologyEpoch": m.topology_epoch,
            "processId": m.process_id,
            "userEndpoint": m.user_endpoint_value(),
            "clientTags": m.client_tags_value(),
            "taskOffsets": _described_offsets(group.member_task_offsets(m.member_id)[0]),
            "taskEndOffsets": _described_offsets(group.member_task_offsets(m.member_id)[1]),
            "assignment": m.assigned_tasks.to_wire(),
            "targetAssignment": (group.target_assignment.get(m.member_id) or EMPTY).to_wire(),
            "isClassic": False,
        }

    # ================================================================ replay and load
    def _persisted_group(self, group_id: str, create: bool) -> StreamsGroup | None:
        return persisted_group(
            self.c.groups, group_id, create, StreamsGroup, f"Group {group_id} is not a streams group"
        )

    def replay(self, kind: str, ids: list, value: dict | None) -> None:
        gid = ids[0]
        group = self._persisted_group(gid, value is not None)
        if group is None:
            return
        if kind == R_GROUP:
            replay_group_metadata(
                self.c.groups,
                group,
                value,
                "did not receive StreamsGroupTargetAssignmentMetadataValue tombstone.",
                check_targets=False,
            )
            if value is not None:
                group.validated_topology_epoch = int(value.get("validatedTopologyEpoch", -1))
                group.last_assignment_configs = {c["key"]: c["value"] for c in value.get("lastAssignmentConfigs") or []}
                group.stored_description_topology_epoch = int(value.get("storedDescriptionTopologyEpoch", -1))
                group.failed_description_topology_epoch = int(value.get("failedDescriptionTopologyEpoch", -1))
        elif kind == R_TOPOLOGY:
            group.topology = None if value is None else _stored(value)
            if value is None:
                group.configured_topology = None
        elif kind == R_MEMBER:
            replay_member_metadata(
                group,
                ids[1],
                value,
                StreamsGroupMember.default,
                (
                    "but did not receive StreamsGroupCurrentMemberAssignmentValue tombstone.",
                    "but did not receive StreamsGroupTargetAssignmentMetadataValue tombstone.",
                ),
            )
        elif kind == R_TARGET:
            if value is not None:
                group.target_assignment[ids[1]] = TasksTuple.from_wire(value)
            else:
                group.target_assignment.pop(ids[1], None)
        elif kind == R_TARGET_EPOCH:
            replay_target_assignment_epoch(group, value)
        elif kind == R_CURRENT:
            mid = ids[1]
            if value is not None:
                known = group.members.get(mid) or StreamsGroupMember.default(mid)
                group.update_member(known.with_assignment_value(value))
            else:
                old = group.members.get(mid)
                if old is not None:
                    group.update_member(
                        old.replace(
                            member_epoch=LEAVE_GROUP_MEMBER_EPOCH,
                            previous_member_epoch=LEAVE_GROUP_MEMBER_EPOCH,
                            assigned_tasks=EMPTY,
                            tasks_pending_revocation=EMPTY,
                        )
                    )


def _updated_member(member: StreamsGroupMember, request: Request) -> StreamsGroupMember:
    """The member with what its heartbeat sets (a field the heartbeat leaves out keeps its value)."""
    body = request.body
    endpoint, tags, topology = body["userEndpoint"], body["clientTags"], body["topology"]
    return member.replace(
        instance_id=body["instanceId"] if body["instanceId"] is not None else member.instance_id,
        rack_id=body["rackId"] if body["rackId"] is not None else member.rack_id,
        rebalance_timeout_ms=(
            body["rebalanceTimeoutMs"] if body["rebalanceTimeoutMs"] != -1 else member.rebalance_timeout_ms
        ),
        topology_epoch=topology["epoch"] if topology is not None else member.topology_epoch,
        client_id=request.reply.client_id,
        client_host=request.client_host,
        process_id=body["processId"] if body["processId"] is not None else member.process_id,
        client_tags=tuple(sorted((t["key"], t["value"]) for t in tags)) if tags is not None else member.client_tags,
        # Kafka 4.4: a joining member's endpoint is the one it sends, none if it sends none.
        user_endpoint=(
            (endpoint["host"], endpoint["port"])
            if endpoint is not None
            else None
            if body["memberEpoch"] == 0
            else member.user_endpoint
        ),
    )


def _described_offsets(offsets: dict) -> list[dict]:
    """StreamsGroupMember.taskOffsetsFromMap: by subtopology, then partition."""
    return [
        {"subtopologyId": s, "partition": p, "offset": offsets[s][p]}
        for s in sorted(offsets)
        for p in sorted(offsets[s])
    ]


def _stored(value: dict) -> dict:
    """The topology part of a StreamsGroupTopology record value."""
    return {"epoch": value["epoch"], "subtopologies": value["subtopologies"]}


def _tasks(task_ids: list[dict] | None) -> dict:
    out: dict[str, set] = {}
    for t in task_ids or []:
        out.setdefault(t["subtopologyId"], set()).update(t["partitions"])
    return out


def _contained(owned: dict, assigned: dict) -> bool:
    return all(set(p) <= set(assigned.get(s, ())) for s, p in owned.items())


def _static_member_or_throw(group: StreamsGroup, member_id: str, instance_id: str) -> StreamsGroupMember:
    """The static member of `instance_id`: UNKNOWN_MEMBER_ID if none, FENCED_INSTANCE_ID if another
    member id holds the instance id (throwIfStaticMemberIsUnknown, throwIfInstanceIdIsFenced)."""
    member = group.static_member(instance_id)
    throw_if_static_member_is_unknown(member, instance_id)
    assert member is not None
    throw_if_instance_id_is_fenced(member, group.group_id, member_id, instance_id)
    return member


def _throw_if_group_is_full(group: StreamsGroup, instance_id: str | None, member_id: str, max_size: int) -> None:
    """throwIfStreamsGroupIsFull: a known static member or member may always rejoin."""
    if group.has_static_member(instance_id):
        return
    if len(group.members) >= max_size and (member_id == "" or member_id not in group.members):
        raise ApiError(
            Errors.GROUP_MAX_SIZE_REACHED,
            f"The streams group has reached its maximum capacity of {max_size} members.",
        )


def _epoch_relevant_changed(old: StreamsGroupMember, new: StreamsGroupMember) -> bool:
    """hasEpochRelevantMemberConfigChanged: what a static member changes that the assignment reads."""
    return (old.topology_epoch, old.rack_id, old.client_tags, old.process_id) != (
        new.topology_epoch,
        new.rack_id,
        new.client_tags,
        new.process_id,
    )


def _updated_task_offsets(current: tuple[dict, dict], body: dict) -> tuple[dict, dict]:
    """MemberTaskOffsets.update: a list the heartbeat sends replaces the one reported before."""

    def nested(entries: list[dict]) -> dict:
        out: dict[str, dict] = {}
        for e in entries:
            by_partition = out.setdefault(e["subtopologyId"], {})
            if e["partition"] in by_partition:
                raise _invalid(
                    f"Task offsets contain a duplicate entry for subtopology {e['subtopologyId']} and "
                    f"partition {e['partition']}."
                )
            by_partition[e["partition"]] = e["offset"]
        return out

    offsets, end_offsets = current
    return (
        offsets if body["taskOffsets"] is None else nested(body["taskOffsets"]),
        end_offsets if body["taskEndOffsets"] is None else nested(body["taskEndOffsets"]),
    )


def _throw_if_member_epoch_is_invalid(member: StreamsGroupMember, received: int, owned: TasksTuple | None) -> None:
    """throwIfStreamsGroupMemberEpochIsInvalid (a joining member, epoch 0, passes)."""
    if received == 0:
        return
    if received > member.member_epoch:
        raise ApiError(
            Errors.FENCED_MEMBER_EPOCH,
            f"The streams group member has a greater member epoch ({received}) than the one known by the "
            f"group coordinator ({member.member_epoch}). The member must abandon all its partitions and "
            "rejoin.",
        )
    if received < member.member_epoch:
        a = member.assigned_tasks
        ok = (
            received == member.previous_member_epoch
            and owned is not None
            and _contained(owned.active, a.active)
            and _contained(owned.standby, a.standby)
            and _contained(owned.warmup, a.warmup)
        )
        if not ok:
            raise ApiError(
                Errors.FENCED_MEMBER_EPOCH,
                f"The streams group member has a smaller member epoch ({received}) than the one known by "
                f"the group coordinator ({member.member_epoch}). The member must abandon all its "
                "partitions and rejoin.",
            )


def _throw_if_invalid_tasks(configured, tasks: list[dict] | None) -> None:
    """throwIfRequestContainsInvalidTasks."""
    for t in tasks or []:
        sub = configured.subtopologies.get(t["subtopologyId"])
        if sub is None:
            raise _invalid(f"Subtopology {t['subtopologyId']} does not exist in the topology.")
        for p in t["partitions"]:
            if p < 0 or p >= sub.number_of_tasks:
                raise _invalid(
                    f"Task {p} for subtopology {t['subtopologyId']} is invalid. Number of tasks for "
                    f"this subtopology: {sub.number_of_tasks}"
                )


def _forget_soft_state(group: StreamsGroup) -> None:
    """Kafka computes the heartbeat that creates a group on a group object of its own
    (getOrCreateStreamsGroup); the replay of its records creates the group it keeps, without what
    that heartbeat set outside records: the configured topology (until the next heartbeat
    configures it again, StreamsGroupDescribe shows the topology of the group's record; since
    Kafka 4.2 the state follows the record's validated topology epoch, so the group is not
    NotReady meanwhile), the metadata refresh deadline, a shutdown request, and the endpoint
    information epoch (0, as the answer said). Found by the differential test
    (bench/differential.py)."""
    group.configured_topology = None
    group.metadata_refresh_deadline = [0, 0]
    group.shutdown_request_member_id = None
    group.endpoint_information_epoch = 0
    group.task_offsets = {}
