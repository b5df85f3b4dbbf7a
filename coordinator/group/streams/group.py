"""The KIP-1071 streams group as a group type of the groups component (Kafka's
`streams/StreamsGroup` behind the `Group` interface).

Persistent part, one field per record type (StreamsGroup* records of __consumer_offsets):
    group epoch, metadata hash       StreamsGroupMetadata
    topology                         StreamsGroupTopology (the record value, see streams/topology.py)
    members (metadata)               StreamsGroupMemberMetadata
    members (current assignment)     StreamsGroupCurrentMemberAssignment
    target assignment per member     StreamsGroupTargetAssignmentMember
    target assignment epoch          StreamsGroupTargetAssignmentMetadata
Derived on every change: which process owns each task (active / standby / warm-up), the state.
Derived too: the static members (instance id -> member id).
Soft state (in the snapshot, not in the log; reset when the partition is rebuilt from its log, as
Kafka keeps it in memory): the configured topology, the metadata refresh deadline, the member that
asked for an application shutdown, the endpoint information epoch, the task offsets each member
reported (Kafka 4.4.0's MemberTaskOffsets: `taskOffsets` and `taskEndOffsets`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

from ...errors import ApiError, Errors
from ...records import record_key
from ..group import STREAMS, register_group_type
from ..modern.group import ModernGroup
from ..modern.records import RecordValues
from .member import StreamsGroupMember
from .tasks import EMPTY, TasksTuple
from .topology import ConfiguredTopology, configured_from_json, configured_to_json, source_topic_map

STREAMS_PROTOCOL_TYPE = "streams"
EMPTY_STATE, NOT_READY, ASSIGNING, RECONCILING, STABLE, DEAD = (
    "Empty",
    "NotReady",
    "Assigning",
    "Reconciling",
    "Stable",
    "Dead",
)

R_GROUP = "StreamsGroupMetadata"
R_TOPOLOGY = "StreamsGroupTopology"
R_MEMBER = "StreamsGroupMemberMetadata"
R_TARGET = "StreamsGroupTargetAssignmentMember"
R_TARGET_EPOCH = "StreamsGroupTargetAssignmentMetadata"
R_CURRENT = "StreamsGroupCurrentMemberAssignment"
RECORD_TYPES = (R_GROUP, R_TOPOLOGY, R_MEMBER, R_TARGET, R_TARGET_EPOCH, R_CURRENT)


def derive_state(
    members: Iterable[StreamsGroupMember],
    topology: dict | None,
    validated_topology_epoch: int,
    group_epoch: int,
    target_assignment_epoch: int,
) -> str:
    """StreamsGroup.maybeUpdateGroupState over the given parts: a handler derives the state its
    records will leave before the runtime replays them. Kafka 4.2+: the group is NotReady until its
    topology's epoch is the one a heartbeat validated (configured against the topics, a field of
    the StreamsGroupMetadata record); 4.1.1 asked the configured topology, soft state that a
    new group's first heartbeat did not keep."""
    members = list(members)
    if not members:
        return EMPTY_STATE
    if topology is None or topology["epoch"] != validated_topology_epoch:
        return NOT_READY
    if group_epoch > target_assignment_epoch:
        return ASSIGNING
    if any(not m.is_reconciled_to(target_assignment_epoch) for m in members):
        return RECONCILING
    return STABLE


def session_timer_key(group_id: str, member_id: str) -> str:
    return record_key("streams-session", group_id, member_id)


def rebalance_timer_key(group_id: str, member_id: str) -> str:
    return record_key("streams-rebalance", group_id, member_id)


def initial_rebalance_timer_key(group_id: str) -> str:
    """StreamsGroup.initialRebalanceTimeoutKey: the group's first assignment, delayed."""
    return record_key("streams-initial-rebalance", group_id)


def unknown_member(member_id: str | None, group_id: str) -> ApiError:
    return ApiError(Errors.UNKNOWN_MEMBER_ID, f"Member {member_id} is not a member of group {group_id}.")


# ====================================================================== record values
_VALUES = RecordValues(R_GROUP, R_MEMBER, R_TARGET, R_TARGET_EPOCH, R_CURRENT, TasksTuple.to_wire)


def group_epoch_value(
    epoch: int,
    metadata_hash: int,
    validated_topology_epoch: int,
    assignment_configs: Mapping[str, str],
    stored_description_epoch: int = -1,
    failed_description_epoch: int = -1,
) -> dict:
    """StreamsGroupMetadataValue (StreamsCoordinatorRecordHelpers.newStreamsGroupMetadataRecord):
    Kafka 4.2+ keeps the validated topology epoch in it (-1: none), 4.3+ the assignment configs the
    epoch was computed with (`lastAssignmentConfigs`, in key order), 4.4.0 the topology-description
    epochs (-1 without a description plugin, as here)."""
    return {
        **_VALUES.group_epoch(epoch, metadata_hash),
        "validatedTopologyEpoch": validated_topology_epoch,
        "lastAssignmentConfigs": [{"key": k, "value": v} for k, v in sorted(assignment_configs.items())],
        "storedDescriptionTopologyEpoch": stored_description_epoch,
        "failedDescriptionTopologyEpoch": failed_description_epoch,
    }


member_value = _VALUES.member
target_value = _VALUES.target
target_epoch_value = _VALUES.target_epoch
current_value = _VALUES.current


def topology_value(topology: dict) -> dict:
    return {"type": R_TOPOLOGY, **topology}


@register_group_type
class StreamsGroup(ModernGroup):
    type = STREAMS
    records = _VALUES

    def __init__(self, group_id: str):
        super().__init__(group_id)
        self.topology: dict | None = None
        # The topology epoch the last epoch bump found configured (StreamsGroupMetadata record;
        # 0 in a group no record made yet, as Kafka's TimelineInteger, -1 in a record without it).
        self.validated_topology_epoch = 0
        # The assignment configs of the last epoch bump (StreamsGroupMetadata record, 4.3+: a
        # change of them triggers a rebalance; none in a record written before 4.3).
        self.last_assignment_configs: dict[str, str] = {}
        # KIP-1331's topology-description epochs (StreamsGroupMetadata record, 4.4.0): kept as the
        # records carry them; without a description plugin they stay -1.
        self.stored_description_topology_epoch = -1
        self.failed_description_topology_epoch = -1
        self.members: dict[str, StreamsGroupMember] = {}
        self.target_assignment: dict[str, TasksTuple] = {}
        # derived
        self.active_owner: dict[tuple, str] = {}
        self.standby_owners: dict[tuple, set] = {}
        self.warmup_owners: dict[tuple, set] = {}
        self.static_members: dict[str, str] = {}  # instance id -> member id
        # soft
        self.configured_topology: ConfiguredTopology | None = None
        self.shutdown_request_member_id: str | None = None
        # Kafka's StreamsGroup field (0 at creation since 4.2, -1 before; not a record: a group
        # loaded from its records starts at 0 again), bumped whenever a member's endpoint changes
        # or a member with an endpoint is handed other tasks.
        self.endpoint_information_epoch = 0
        # member id -> (taskOffsets, taskEndOffsets), each {subtopology: {partition: offset}}
        self.task_offsets: dict[str, tuple[dict, dict]] = {}

    # ================================================================ record-shaped updates
    def update_member(self, member: StreamsGroupMember) -> None:
        old = self.members.get(member.member_id)
        if old is not None:
            self._remove_task_owner(old)
        self.members[member.member_id] = member
        self._add_task_owner(member)
        if old is not None and old.instance_id is not None:
            self.static_members.pop(old.instance_id, None)
        if member.instance_id is not None:
            self.static_members[member.instance_id] = member.member_id

    def remove_member(self, member_id: str) -> None:
        old = self.members.pop(member_id, None)
        if old is not None:
            self._remove_task_owner(old)
            if old.instance_id is not None:
                self.static_members.pop(old.instance_id, None)
        self.task_offsets.pop(member_id, None)
        if not self.members:
            self.shutdown_request_member_id = None

    def _add_task_owner(self, m: StreamsGroupMember) -> None:
        for tasks in (m.assigned_tasks, m.tasks_pending_revocation):
            for s, parts in tasks.active.items():
                for p in parts:
                    self.active_owner[(s, p)] = m.process_id
            for owners, role in ((self.standby_owners, tasks.standby), (self.warmup_owners, tasks.warmup)):
                for s, parts in role.items():
                    for p in parts:
                        owners.setdefault((s, p), set()).add(m.process_id)

    def _remove_task_owner(self, m: StreamsGroupMember) -> None:
        for tasks in (m.assigned_tasks, m.tasks_pending_revocation):
            for s, parts in tasks.active.items():
                for p in parts:
                    if self.active_owner.get((s, p)) == m.process_id:
                        del self.active_owner[(s, p)]
            for owners, role in ((self.standby_owners, tasks.standby), (self.warmup_owners, tasks.warmup)):
                for s, parts in role.items():
                    for p in parts:
                        procs = owners.get((s, p))
                        if procs is not None:
                            procs.discard(m.process_id)
                            if not procs:
                                del owners[(s, p)]

    # ================================================================ queries
    def current_active_task_process_id(self, s: str, p: int) -> str | None:
        return self.active_owner.get((s, p))

    def current_standby_task_process_ids(self, s: str, p: int) -> set:
        return self.standby_owners.get((s, p), set())

    def current_warmup_task_process_ids(self, s: str, p: int) -> set:
        return self.warmup_owners.get((s, p), set())

    def target_assignment_of(self, member_id: str) -> TasksTuple:
        return self.target_assignment.get(member_id, EMPTY)

    def static_member(self, instance_id: str | None) -> StreamsGroupMember | None:
        member_id = None if instance_id is None else self.static_members.get(instance_id)
        return None if member_id is None else self.members.get(member_id)

    def has_static_member(self, instance_id: str | None) -> bool:
        return instance_id is not None and instance_id in self.static_members

    def member_task_offsets(self, member_id: str) -> tuple[dict, dict]:
        """MemberTaskOffsets of the member (EMPTY: none reported)."""
        return self.task_offsets.get(member_id, ({}, {}))

    def get_member(self, member_id: str) -> StreamsGroupMember:
        member = self.members.get(member_id)
        if member is None:
            raise unknown_member(member_id, self.group_id)
        return member

    @property
    def state(self) -> str:
        """StreamsGroup.maybeUpdateGroupState, computed on demand."""
        return derive_state(
            self.members.values(),
            self.topology,
            self.validated_topology_epoch,
            self.group_epoch,
            self.target_assignment_epoch,
        )

    # ================================================================ Group interface
    def is_empty(self) -> bool:
        return not self.members

    def is_in_states(self, states_lower: set[str]) -> bool:
        """StreamsGroupState.toLowerCaseString: NotReady is "not_ready" in ListGroups' filter."""
        state = self.state
        return ("not_ready" if state == NOT_READY else state.lower()) in states_lower

    def protocol_type_or_empty(self) -> str:
        return STREAMS_PROTOCOL_TYPE

    def validate_offset_commit(
        self, member_id: str, instance_id: str | None, generation_id: int, is_transactional: bool, api_version: int
    ) -> Callable[[str, int], None] | None:
        """StreamsGroup.validateOffsetCommit (the member epoch comes as the generation id). Kafka
        4.3+: an older epoch is no longer refused outright; the answer is a validator of each
        committed partition (createAssignmentEpochValidator), None when every partition passes."""
        if generation_id < 0 and not self.members:
            return None
        if is_transactional and generation_id == -1 and member_id == "" and instance_id is None:
            return None
        member = self.get_member(member_id)
        if not is_transactional and api_version < 9:
            raise ApiError(
                Errors.UNSUPPORTED_VERSION,
                "OffsetCommit version 9 or above must be used by members using the streams group protocol",
            )
        if generation_id == member.member_epoch:
            return None
        if generation_id > member.member_epoch:
            raise ApiError(
                Errors.STALE_MEMBER_EPOCH,
                f"Received member epoch {generation_id} is newer than current member epoch {member.member_epoch}.",
            )
        return self._assignment_epoch_validator(member, generation_id)

    def _assignment_epoch_validator(self, member: StreamsGroupMember, received: int) -> Callable[[str, int], None]:
        """createAssignmentEpochValidator: a commit with an older epoch is accepted for a partition
        of a source (or repartition source) topic whose task the member has, assigned or pending
        revocation, since that epoch or earlier (a zombie's commit for a task given away is fenced)."""
        if self.topology is None:
            raise ApiError(Errors.STALE_MEMBER_EPOCH, "Topology is not available for offset commit validation.")
        subtopology_of = source_topic_map(self.topology)

        def validate(topic: str, partition: int) -> None:
            sid = subtopology_of.get(topic)
            if sid is None:
                raise ApiError(Errors.STALE_MEMBER_EPOCH, f"Topic {topic} is not in the topology.")
            epoch = member.active_task_epoch(sid, partition)
            if epoch is None:
                raise ApiError(
                    Errors.STALE_MEMBER_EPOCH,
                    f"Task {sid}-{partition} is not assigned or pending revocation for member.",
                )
            if received < epoch:
                raise ApiError(
                    Errors.STALE_MEMBER_EPOCH,
                    f"Received member epoch {received} is older than assignment epoch {epoch} for task {sid}-{partition}.",
                )

        return validate

    def validate_offset_fetch(self, member_id: str | None, member_epoch: int) -> None:
        if member_id is None and member_epoch < 0:
            return
        member = None if member_id is None else self.members.get(member_id)
        if member is None:
            raise unknown_member(member_id, self.group_id)
        _validate_member_epoch(member_epoch, member.member_epoch)

    def validate_offset_delete(self) -> None:
        pass

    def validate_delete_group(self) -> None:
        if self.state != EMPTY_STATE:
            raise ApiError(Errors.NON_EMPTY_GROUP)

    def is_subscribed_to_topic(self, topic: str) -> bool:
        configured = self.configured_topology
        if not self.members or configured is None or not configured.is_ready() or configured.subtopologies is None:
            return False
        return any(
            topic in s.source_topics or topic in s.repartition_source_topics for s in configured.subtopologies.values()
        )

    def offset_expiration_base(self):
        return lambda o: o.commit_timestamp_ms

    def tombstone_record_keys(self) -> list[str]:
        """StreamsGroup.createGroupTombstoneRecords, in Kafka's order."""
        gid = self.group_id
        keys = self.member_tombstone_keys(sorted(self.members))
        keys.append(record_key(R_GROUP, gid))
        keys.append(record_key(R_TOPOLOGY, gid))
        return keys

    def timer_keys(self) -> list[str]:
        keys = [initial_rebalance_timer_key(self.group_id)]  # StreamsGroup.cancelTimers
        for m in self.members:
            keys += [session_timer_key(self.group_id, m), rebalance_timer_key(self.group_id, m)]
        return keys

    # ================================================================ snapshot
    def to_json(self) -> dict:
        return {
            "type": self.type,
            "groupId": self.group_id,
            "groupEpoch": self.group_epoch,
            "metadataHash": self.metadata_hash,
            "targetAssignmentEpoch": self.target_assignment_epoch,
            "assignmentTimestamp": self.assignment_timestamp,
            "topology": self.topology,
            "validatedTopologyEpoch": self.validated_topology_epoch,
            "lastAssignmentConfigs": dict(sorted(self.last_assignment_configs.items())),
            "storedDescriptionTopologyEpoch": self.stored_description_topology_epoch,
            "failedDescriptionTopologyEpoch": self.failed_description_topology_epoch,
            "members": [self.members[m].to_json() for m in sorted(self.members)],
            "targetAssignment": {m: t.to_wire() for m, t in sorted(self.target_assignment.items())},
            "configuredTopology": configured_to_json(self.configured_topology),
            "metadataRefreshDeadline": list(self.metadata_refresh_deadline),
            "shutdownRequestMemberId": self.shutdown_request_member_id,
            "endpointInformationEpoch": self.endpoint_information_epoch,
            "taskOffsets": {
                m: [_offsets_to_json(o), _offsets_to_json(e)] for m, (o, e) in sorted(self.task_offsets.items())
            },
        }

    @classmethod
    def from_json(cls, data: Mapping) -> StreamsGroup:
        g = cls(data["groupId"])
        g.group_epoch = int(data["groupEpoch"])
        g.metadata_hash = int(data["metadataHash"])
        g.target_assignment_epoch = int(data["targetAssignmentEpoch"])
        g.assignment_timestamp = int(data.get("assignmentTimestamp", 0))
        g.topology = data.get("topology")
        g.validated_topology_epoch = int(data.get("validatedTopologyEpoch", -1))
        # Snapshots written before these fields load as a 4.1 record does: no configs, no epochs.
        g.last_assignment_configs = dict(data.get("lastAssignmentConfigs", {}))
        g.stored_description_topology_epoch = int(data.get("storedDescriptionTopologyEpoch", -1))
        g.failed_description_topology_epoch = int(data.get("failedDescriptionTopologyEpoch", -1))
        for m in data.get("members", []):
            g.update_member(StreamsGroupMember.from_json(m))
        g.target_assignment = {m: TasksTuple.from_wire(t) for m, t in data.get("targetAssignment", {}).items()}
        g.configured_topology = configured_from_json(data.get("configuredTopology"))
        g.metadata_refresh_deadline = list(data.get("metadataRefreshDeadline", [0, 0]))
        g.shutdown_request_member_id = data.get("shutdownRequestMemberId")
        g.endpoint_information_epoch = int(data.get("endpointInformationEpoch", 0))
        g.task_offsets = {
            m: (_offsets_from_json(o), _offsets_from_json(e)) for m, (o, e) in data.get("taskOffsets", {}).items()
        }
        return g


def _validate_member_epoch(received: int, expected: int) -> None:
    if received != expected:
        raise ApiError(
            Errors.STALE_MEMBER_EPOCH,
            f"The received member epoch {received} does not match the expected member epoch {expected}.",
        )


def _offsets_to_json(offsets: dict) -> dict:
    return {s: {str(p): o for p, o in sorted(parts.items())} for s, parts in sorted(offsets.items())}


def _offsets_from_json(data: dict) -> dict:
    return {s: {int(p): int(o) for p, o in parts.items()} for s, parts in data.items()}
