"""The classic (eager, client-side assignment) group: Kafka's ClassicGroup, ClassicGroupMember and
ClassicGroupState, as plain data that snapshots to JSON.

Parked JoinGroup / SyncGroup responses (Kafka's awaitingJoinFuture / awaitingSyncFuture) are the
`ReplyTo` of the request, kept in the member; completing a "future" answers that reply.
Bytes (protocol metadata, assignments) stay base64 strings, as Kafka's JSON converters print them.
"""

from __future__ import annotations

from collections.abc import Callable

from ...errors import ApiError, Errors
from ...messages import ReplyTo
from ...records import record_key
from ..group import CLASSIC, Group, IllegalStateError, register_group_type
from ..javautil import java_hashmap_order
from .consumer_protocol import CONSUMER_PROTOCOL_TYPE, SchemaError, parse_subscription_topics

EMPTY, PREPARING_REBALANCE, COMPLETING_REBALANCE, STABLE, DEAD = (
    "Empty",
    "PreparingRebalance",
    "CompletingRebalance",
    "Stable",
    "Dead",
)
ALL_STATES = (EMPTY, PREPARING_REBALANCE, COMPLETING_REBALANCE, STABLE, DEAD)

# ClassicGroupState.validPreviousStates: target -> states it may be entered from.
VALID_PREVIOUS_STATES = {
    EMPTY: {PREPARING_REBALANCE},
    PREPARING_REBALANCE: {STABLE, COMPLETING_REBALANCE, EMPTY},
    COMPLETING_REBALANCE: {PREPARING_REBALANCE},
    STABLE: {COMPLETING_REBALANCE},
    DEAD: {STABLE, PREPARING_REBALANCE, COMPLETING_REBALANCE, EMPTY, DEAD},
}

NO_LEADER = ""
EMPTY_ASSIGNMENT = ""  # base64 of no bytes


# Timer keys. Timers with equal deadlines fire in key order: join, then session, then sync.
def join_timer_key(group_id: str) -> str:
    return record_key("classic-join", group_id)


def session_timer_key(group_id: str, member_id: str) -> str:
    return record_key("classic-session", group_id, member_id)


def sync_timer_key(group_id: str) -> str:
    return record_key("classic-sync", group_id)


class ClassicGroupMember:
    __slots__ = (
        "member_id",
        "group_instance_id",
        "client_id",
        "client_host",
        "rebalance_timeout_ms",
        "session_timeout_ms",
        "protocol_type",
        "protocols",
        "assignment",
        "awaiting_join",
        "awaiting_sync",
        "is_new",
    )

    def __init__(
        self,
        member_id: str,
        group_instance_id: str | None,
        client_id: str,
        client_host: str,
        rebalance_timeout_ms: int,
        session_timeout_ms: int,
        protocol_type: str,
        protocols: list[tuple[str, str]],
        assignment: str = EMPTY_ASSIGNMENT,
    ):
        self.member_id = member_id
        self.group_instance_id = group_instance_id
        self.client_id = client_id
        self.client_host = client_host
        self.rebalance_timeout_ms = rebalance_timeout_ms
        self.session_timeout_ms = session_timeout_ms
        self.protocol_type = protocol_type
        self.protocols = protocols  # [(name, metadata base64)] in preference order
        self.assignment = assignment
        self.awaiting_join: ReplyTo | None = None
        self.awaiting_sync: ReplyTo | None = None
        self.is_new = False

    @property
    def is_static(self) -> bool:
        return self.group_instance_id is not None

    @property
    def is_awaiting_join(self) -> bool:
        return self.awaiting_join is not None

    @property
    def is_awaiting_sync(self) -> bool:
        return self.awaiting_sync is not None

    def protocol_names(self) -> set[str]:
        return {name for name, _ in self.protocols}

    def metadata(self, protocol_name: str | None) -> str:
        for name, metadata in self.protocols:
            if name == protocol_name:
                return metadata
        raise IllegalStateError(f"Member does not support protocol {protocol_name}")

    def has_satisfied_heartbeat(self) -> bool:
        # New members can be expired even while awaiting join.
        if self.is_new:
            return False
        return self.is_awaiting_join or self.is_awaiting_sync

    def matches(self, protocols: list[tuple[str, str]]) -> bool:
        return protocols == self.protocols

    def vote(self, candidates: set[str]) -> str:
        for name, _ in self.protocols:
            if name in candidates:
                return name
        raise IllegalStateError("Member does not support any of the candidate protocols")

    def has_assignment(self) -> bool:
        return bool(self.assignment)

    def to_json(self) -> dict:
        return {
            "memberId": self.member_id,
            "groupInstanceId": self.group_instance_id,
            "clientId": self.client_id,
            "clientHost": self.client_host,
            "rebalanceTimeoutMs": self.rebalance_timeout_ms,
            "sessionTimeoutMs": self.session_timeout_ms,
            "protocolType": self.protocol_type,
            "protocols": [list(p) for p in self.protocols],
            "assignment": self.assignment,
            "awaitingJoin": self.awaiting_join.to_json() if self.awaiting_join else None,
            "awaitingSync": self.awaiting_sync.to_json() if self.awaiting_sync else None,
            "isNew": self.is_new,
        }

    @staticmethod
    def from_json(d: dict) -> ClassicGroupMember:
        m = ClassicGroupMember(
            d["memberId"],
            d["groupInstanceId"],
            d["clientId"],
            d["clientHost"],
            d["rebalanceTimeoutMs"],
            d["sessionTimeoutMs"],
            d["protocolType"],
            [(n, md) for n, md in d["protocols"]],
            d["assignment"],
        )
        m.awaiting_join = ReplyTo.from_json(d["awaitingJoin"]) if d["awaitingJoin"] else None
        m.awaiting_sync = ReplyTo.from_json(d["awaitingSync"]) if d["awaitingSync"] else None
        m.is_new = d["isNew"]
        return m


@register_group_type
class ClassicGroup(Group):
    type = CLASSIC

    def __init__(
        self,
        group_id: str,
        state: str = EMPTY,
        now_ms: int | None = 0,
        generation_id: int = 0,
        protocol_type: str | None = None,
        protocol_name: str | None = None,
        leader_id: str | None = None,
    ):
        self.group_id = group_id
        self.state = state
        self.previous_state = DEAD
        self.state_timestamp: int | None = now_ms  # currentStateTimestamp (None: unknown)
        self.generation_id = generation_id
        self.protocol_type = protocol_type
        self.protocol_name = protocol_name
        self.leader_id = leader_id
        self.members: dict[str, ClassicGroupMember] = {}  # insertion order (Kafka: HashMap order)
        self.pending_join_members: dict[str, None] = {}  # ordered set
        self.pending_sync_members: dict[str, None] = {}
        self.subscribed_topics: list[str] | None = None
        self.new_member_added = False

    # ================================================================ states
    def state_as_string(self) -> str:
        return self.state

    def is_in_state(self, state: str) -> bool:
        return self.state == state

    def is_empty(self) -> bool:
        return self.state == EMPTY

    def can_rebalance(self) -> bool:
        return self.state in VALID_PREVIOUS_STATES[PREPARING_REBALANCE]

    def transition_to(self, target: str, now_ms: int) -> str:
        """Move to `target` (IllegalStateError if Kafka forbids it); returns the previous state."""
        if self.state not in VALID_PREVIOUS_STATES[target]:
            raise IllegalStateError(
                f"Group {self.group_id} should be in one of {sorted(VALID_PREVIOUS_STATES[target])} states "
                f"before moving to {target} state. Instead it is in {self.state} state."
            )
        self.previous_state = self.state
        self.state = target
        self.state_timestamp = now_ms
        return self.previous_state

    # ================================================================ members
    def has_member(self, member_id: str) -> bool:
        return member_id in self.members

    def member(self, member_id: str) -> ClassicGroupMember | None:
        return self.members.get(member_id)

    def existing_member(self, member_id: str) -> ClassicGroupMember:
        """The member a caller has already validated (an internal error if it is not there)."""
        member = self.members.get(member_id)
        if member is None:
            raise IllegalStateError(f"Member {member_id} is not in group {self.group_id}")
        return member

    def num_members(self) -> int:
        return len(self.members)

    def is_leader(self, member_id: str) -> bool:
        return self.leader_id is not None and self.leader_id == member_id

    def static_member_id(self, instance_id: str) -> str | None:
        for m in self.members.values():
            if m.group_instance_id == instance_id:
                return m.member_id
        return None

    def has_static_member(self, instance_id: str) -> bool:
        return self.static_member_id(instance_id) is not None

    def num_awaiting_join_response(self) -> int:
        return sum(1 for m in self.members.values() if m.is_awaiting_join)

    def supported_protocol_counts(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for m in self.members.values():
            for name, _ in m.protocols:
                counts[name] = counts.get(name, 0) + 1
        return counts

    def add(self, member: ClassicGroupMember, reply: ReplyTo | None = None) -> None:
        if member.group_instance_id is not None and self.has_static_member(member.group_instance_id):
            raise IllegalStateError(
                f"Static member with groupInstanceId={member.group_instance_id} cannot "
                f"be added to group {self.group_id} since it is already a member."
            )
        if not self.members:
            self.protocol_type = member.protocol_type
        if self.protocol_type != member.protocol_type:
            raise IllegalStateError("The group and member's protocol type must be the same.")
        if not self.supports_protocols(member.protocol_type, member.protocol_names()):
            raise IllegalStateError("None of the member's protocols can be supported.")
        if self.leader_id is None:
            self.leader_id = member.member_id
        self.members[member.member_id] = member
        member.awaiting_join = reply
        self.pending_join_members.pop(member.member_id, None)

    def remove(self, member_id: str) -> ClassicGroupMember | None:
        removed = self.members.pop(member_id, None)
        if self.is_leader(member_id):
            self.leader_id = next(iter(self.members), None)
        self.pending_join_members.pop(member_id, None)
        self.pending_sync_members.pop(member_id, None)
        return removed

    def maybe_elect_new_joined_leader(self) -> bool:
        if self.leader_id is None:
            return False
        leader = self.members[self.leader_id]
        if leader.is_awaiting_join:
            return True
        for m in self.members.values():
            if m.is_awaiting_join:
                self.leader_id = m.member_id
                return True
        return False

    def replace_static_member(
        self, instance_id: str, old_member_id: str, new_member_id: str, fence: Callable[[ClassicGroupMember], None]
    ) -> ClassicGroupMember:
        """Give the old member's place, assignment and leadership to a new member id. `fence`
        completes the old member's parked join and sync with FENCED_INSTANCE_ID."""
        old = self.members.pop(old_member_id, None)
        if old is None:
            raise IllegalStateError(f"Cannot replace non-existing member id {old_member_id}")
        fence(old)
        new = ClassicGroupMember(
            new_member_id,
            old.group_instance_id,
            old.client_id,
            old.client_host,
            old.rebalance_timeout_ms,
            old.session_timeout_ms,
            old.protocol_type,
            list(old.protocols),
            old.assignment,
        )
        self.members[new_member_id] = new
        if self.is_leader(old_member_id):
            self.leader_id = new_member_id
        return new

    def update_member(
        self,
        member: ClassicGroupMember,
        protocols: list[tuple[str, str]],
        rebalance_timeout_ms: int,
        session_timeout_ms: int,
        reply: ReplyTo | None,
    ) -> None:
        member.protocols = protocols
        member.rebalance_timeout_ms = rebalance_timeout_ms
        member.session_timeout_ms = session_timeout_ms
        # A previously parked join is replaced without an answer, as Kafka overwrites the future.
        member.awaiting_join = reply

    def is_pending_member(self, member_id: str) -> bool:
        return member_id in self.pending_join_members

    def add_pending_member(self, member_id: str) -> None:
        if self.has_member(member_id):
            raise IllegalStateError(
                f"Attempt to add pending member {member_id} which is already a stable member of the group."
            )
        self.pending_join_members[member_id] = None

    def num_pending_join_members(self) -> int:
        return len(self.pending_join_members)

    def add_pending_sync_member(self, member_id: str) -> None:
        if not self.has_member(member_id):
            raise IllegalStateError(f"Attempt to add pending sync member {member_id} which is not a member.")
        self.pending_sync_members[member_id] = None

    def remove_pending_sync_member(self, member_id: str) -> None:
        if not self.has_member(member_id):
            raise IllegalStateError(f"Attempt to remove pending sync member {member_id} which is not a member.")
        self.pending_sync_members.pop(member_id, None)

    def has_received_sync_from_all_members(self) -> bool:
        return not self.pending_sync_members

    def has_all_members_joined(self) -> bool:
        return len(self.members) == self.num_awaiting_join_response() and not self.pending_join_members

    def not_yet_rejoined_members(self) -> list[ClassicGroupMember]:
        return [m for m in self.members.values() if not m.is_awaiting_join]

    def rebalance_timeout_ms(self) -> int:
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    def validate_member(self, member_id: str, instance_id: str | None) -> None:
        if instance_id is not None:
            existing = self.static_member_id(instance_id)
            if existing is None:
                raise ApiError(Errors.UNKNOWN_MEMBER_ID)
            if existing != member_id:
                raise ApiError(Errors.FENCED_INSTANCE_ID)
        if not self.has_member(member_id):
            raise ApiError(Errors.UNKNOWN_MEMBER_ID)

    def is_static_member_fenced(self, instance_id: str, member_id: str) -> bool:
        existing = self.static_member_id(instance_id)
        return existing is not None and existing != member_id

    # ================================================================ protocols
    def uses_consumer_group_protocol(self) -> bool:
        return self.protocol_type == CONSUMER_PROTOCOL_TYPE

    def supports_protocols(self, member_protocol_type: str, member_protocols: set[str]) -> bool:
        if self.state == EMPTY:
            return member_protocol_type != "" and len(member_protocols) > 0
        counts = self.supported_protocol_counts()
        return (
            self.protocol_type is not None
            and self.protocol_type == member_protocol_type
            and any(counts.get(name, 0) == len(self.members) for name in member_protocols)
        )

    def candidate_protocols(self) -> set[str]:
        n = len(self.members)
        return {name for name, count in self.supported_protocol_counts().items() if count == n}

    def select_protocol(self) -> str:
        """Each member votes for its most preferred protocol that every member supports; the most
        votes wins. Ties go as in Kafka: the first maximum in the HashMap order of the names."""
        if not self.members:
            raise IllegalStateError("Cannot select protocol for empty group")
        candidates = self.candidate_protocols()
        votes: dict[str, int] = {}
        for m in self.members.values():
            name = m.vote(candidates)
            votes[name] = votes.get(name, 0) + 1
        best: str | None = None
        for name in java_hashmap_order(votes):  # Stream.max keeps the first of equal maxima
            if best is None or votes[name] > votes[best]:
                best = name
        if best is None:  # every member votes, and the group has members
            raise IllegalStateError(f"No protocol selected for group {self.group_id}")
        return best

    def compute_subscribed_topics(self) -> list[str] | None:
        if self.protocol_type is None or self.protocol_type != CONSUMER_PROTOCOL_TYPE:
            return None
        if not self.members:
            return []
        if self.protocol_name is not None:
            topics: dict[str, None] = {}
            try:
                for m in self.members.values():
                    for t in parse_subscription_topics(m.metadata(self.protocol_name)):
                        topics[t] = None
                return sorted(topics)
            except SchemaError:
                pass  # Kafka logs and does not know the subscriptions
        return None

    def is_subscribed_to_topic(self, topic: str) -> bool:
        if self.subscribed_topics is not None:
            return topic in self.subscribed_topics
        return self.uses_consumer_group_protocol()

    def init_next_generation(self, now_ms: int) -> None:
        self.generation_id += 1
        if self.members:
            self.protocol_name = self.select_protocol()
            self.subscribed_topics = self.compute_subscribed_topics()
            self.transition_to(COMPLETING_REBALANCE, now_ms)
        else:
            self.protocol_name = None
            self.subscribed_topics = self.compute_subscribed_topics()
            self.transition_to(EMPTY, now_ms)
        self.pending_sync_members.clear()

    def current_members_for_join(self) -> list[dict]:
        """JoinGroupResponseMember list (only the leader gets it)."""
        if self.state in (DEAD, PREPARING_REBALANCE):
            raise IllegalStateError(
                f"Cannot obtain classic member metadata for group {self.group_id} in state {self.state}"
            )
        return [
            {
                "memberId": m.member_id,
                "groupInstanceId": m.group_instance_id,
                "metadata": m.metadata(self.protocol_name),
            }
            for m in self.members.values()
        ]

    def group_assignment(self) -> dict[str, str]:
        return {m.member_id: m.assignment for m in self.members.values()}

    # ================================================================ Group interface
    def protocol_type_or_empty(self) -> str:
        return self.protocol_type or ""

    def validate_offset_commit(
        self, member_id: str, instance_id: str | None, generation_id: int, is_transactional: bool, api_version: int
    ) -> None:
        if self.state == DEAD:
            raise ApiError(Errors.COORDINATOR_NOT_AVAILABLE)
        if generation_id < 0 and self.state == EMPTY:
            # The admin client or a consumer that does not use group management.
            return
        if generation_id >= 0 or member_id != "" or instance_id is not None:
            self.validate_member(member_id, instance_id)
            if generation_id != self.generation_id:
                raise ApiError(Errors.ILLEGAL_GENERATION)
        elif not is_transactional and self.state != EMPTY:
            raise ApiError(Errors.UNKNOWN_MEMBER_ID)
        if not is_transactional and self.state == COMPLETING_REBALANCE:
            raise ApiError(Errors.REBALANCE_IN_PROGRESS)

    def validate_offset_fetch(self, member_id: str | None, member_epoch: int) -> None:
        if self.state == DEAD:
            raise ApiError(Errors.GROUP_ID_NOT_FOUND, f"Group {self.group_id} is in dead state.")

    def validate_offset_delete(self) -> None:
        if self.state == DEAD:
            raise ApiError(Errors.GROUP_ID_NOT_FOUND, f"Group {self.group_id} is in dead state.")
        if (
            self.state in (STABLE, PREPARING_REBALANCE, COMPLETING_REBALANCE)
            and not self.uses_consumer_group_protocol()
        ):
            raise ApiError(Errors.NON_EMPTY_GROUP)

    def validate_delete_group(self) -> None:
        if self.state == DEAD:
            raise ApiError(Errors.GROUP_ID_NOT_FOUND, f"Group {self.group_id} is in dead state.")
        if self.state in (STABLE, PREPARING_REBALANCE, COMPLETING_REBALANCE):
            raise ApiError(Errors.NON_EMPTY_GROUP)

    def offset_expiration_base(self):
        if self.protocol_type is not None:
            if self.state == EMPTY:
                ts = self.state_timestamp
                return lambda o: ts if ts is not None else o.commit_timestamp_ms
            if self.uses_consumer_group_protocol() and self.subscribed_topics is not None and self.state == STABLE:
                return lambda o: o.commit_timestamp_ms
            return None
        # A simple group (no protocol type): expire from the commit time.
        return lambda o: o.commit_timestamp_ms

    def tombstone_record_keys(self) -> list[str]:
        return [record_key("GroupMetadata", self.group_id)]

    def timer_keys(self) -> list[str]:
        keys = [join_timer_key(self.group_id), sync_timer_key(self.group_id)]
        keys += [session_timer_key(self.group_id, m) for m in list(self.members) + list(self.pending_join_members)]
        return keys

    # ================================================================ state log
    def metadata_record_value(self, assignment: dict[str, str]) -> dict:
        """GroupMetadataValue for the group as it is now (newGroupMetadataRecord)."""
        members = []
        for m in self.members.values():
            if self.protocol_name is None:
                raise IllegalStateError("Attempted to write non-empty group metadata with no defined protocol.")
            if m.member_id not in assignment:
                raise IllegalStateError(
                    f"Attempted to write member {m.member_id} of group {self.group_id} with no assignment."
                )
            members.append(
                {
                    "memberId": m.member_id,
                    "groupInstanceId": m.group_instance_id,
                    "clientId": m.client_id,
                    "clientHost": m.client_host,
                    "rebalanceTimeout": m.rebalance_timeout_ms,
                    "sessionTimeout": m.session_timeout_ms,
                    "subscription": m.metadata(self.protocol_name),
                    "assignment": assignment[m.member_id],
                }
            )
        return {
            "type": "GroupMetadata",
            "protocolType": self.protocol_type or "",
            "generation": self.generation_id,
            "protocol": self.protocol_name,
            "leader": self.leader_id,
            "currentStateTimestamp": self.state_timestamp if self.state_timestamp is not None else -1,
            "members": members,
        }

    def empty_metadata_record_value(self) -> dict:
        """newEmptyGroupMetadataRecord: written when a JoinGroup creates the group."""
        return {
            "type": "GroupMetadata",
            "protocolType": "",
            "generation": 0,
            "protocol": None,
            "leader": None,
            "currentStateTimestamp": self.state_timestamp if self.state_timestamp is not None else -1,
            "members": [],
        }

    @staticmethod
    def from_record(group_id: str, value: dict) -> ClassicGroup:
        """GroupMetadataManager.replay(GroupMetadataKey, GroupMetadataValue): Stable with members,
        Empty without; only the selected protocol's metadata survives."""
        protocol_type = value.get("protocolType") or None
        ts = value.get("currentStateTimestamp", -1)
        g = ClassicGroup(
            group_id,
            STABLE if value["members"] else EMPTY,
            None if ts == -1 else ts,
            value["generation"],
            protocol_type,
            value.get("protocol"),
            value.get("leader"),
        )
        protocol = value.get("protocol")
        for mm in value["members"]:
            if protocol is None:  # metadata_record_value never writes members without the protocol
                raise IllegalStateError(f"GroupMetadata record of {group_id} has members but no protocol")
            rebalance = mm["rebalanceTimeout"]
            g.add(
                ClassicGroupMember(
                    mm["memberId"],
                    mm.get("groupInstanceId"),
                    mm["clientId"],
                    mm["clientHost"],
                    mm["sessionTimeout"] if rebalance == -1 else rebalance,
                    mm["sessionTimeout"],
                    value.get("protocolType") or "",
                    [(protocol, mm["subscription"])],
                    mm["assignment"],
                )
            )
        g.subscribed_topics = g.compute_subscribed_topics()
        return g

    # ================================================================ snapshot
    def to_json(self) -> dict:
        return {
            "type": self.type,
            "groupId": self.group_id,
            "state": self.state,
            "previousState": self.previous_state,
            "stateTimestamp": self.state_timestamp,
            "generationId": self.generation_id,
            "protocolType": self.protocol_type,
            "protocolName": self.protocol_name,
            "leaderId": self.leader_id,
            "members": [m.to_json() for m in self.members.values()],
            "pendingJoinMembers": list(self.pending_join_members),
            "pendingSyncMembers": list(self.pending_sync_members),
            "subscribedTopics": self.subscribed_topics,
            "newMemberAdded": self.new_member_added,
        }

    @classmethod
    def from_json(cls, d: dict) -> ClassicGroup:
        g = ClassicGroup(
            d["groupId"],
            d["state"],
            d["stateTimestamp"],
            d["generationId"],
            d["protocolType"],
            d["protocolName"],
            d["leaderId"],
        )
        g.previous_state = d["previousState"]
        for md in d["members"]:
            m = ClassicGroupMember.from_json(md)
            g.members[m.member_id] = m
        g.pending_join_members = dict.fromkeys(d["pendingJoinMembers"])
        g.pending_sync_members = dict.fromkeys(d["pendingSyncMembers"])
        g.subscribed_topics = d["subscribedTopics"]
        g.new_member_added = d["newMemberAdded"]
        return g
