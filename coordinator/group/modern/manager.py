"""What every modern group type's manager does the same way (Kafka's GroupMetadataManager helpers
that the consumer, share and streams paths share)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, ClassVar

from ...errors import ApiError, Error, Errors
from ...result import CoordinatorResult
from ...timers import Timer
from ..admin import GROUP_AUTHORIZED_OPERATIONS
from ..classic.apis import INT32_MIN
from ..consumer._java import order_key
from .apis import describe_response
from .hashing import group_hash, topic_hash


class ModernGroupManager:
    """The base of the consumer, share and streams group managers, given the group coordinator
    that owns them: `group_class` is the group type it manages, `type_name` how Kafka names it in
    messages ("consumer", "share", "streams")."""

    group_class: ClassVar[type[Any]]
    type_name: ClassVar[str]
    # The member state whose rebalance timeout runs (members with partitions or tasks to revoke);
    # None for a type without one (share groups).
    revoking_state: ClassVar[Any] = None

    def __init__(self, coordinator):
        self.c = coordinator
        self.p = coordinator.p
        self.config = coordinator.p.config

    @property
    def now(self) -> int:
        return self.p.clock_ms

    @property
    def metadata(self):
        """The broker's topic metadata (the partition's metadata component)."""
        return self.c.metadata

    def topics(self) -> dict[str, int]:
        """The broker's topics and partition counts (empty until the first UpdateMetadata)."""
        meta = self.metadata
        return meta.topics if meta.available else {}

    def compute_metadata_hash(self, topic_names: Iterable[str]) -> int:
        """ModernGroup.computeMetadataHash over the given topics that exist."""
        topics, ids, racks = self.topics(), self.metadata.topic_ids, self.metadata.topic_racks
        return group_hash({t: topic_hash(t, ids.get(t), topics[t], racks.get(t)) for t in topic_names if t in topics})

    def can_compute_next_target_assignment(self, group) -> bool:
        """Kafka 4.3+'s assignment batching: the group's {type}.assignment.interval.ms (its group
        config, else group.{type}.assignment.interval.ms) since the group's last target assignment
        (a heartbeat within it keeps the last one)."""
        interval = self.c.configs.effective(group.group_id, f"{self.type_name}.assignment.interval.ms")
        return group.can_compute_next_target_assignment(interval, self.now)

    def typed_group(self, group_id: str) -> Any:
        """GroupMetadataManager.{consumer,share,streams}Group(groupId): the group, or
        GROUP_ID_NOT_FOUND when it is missing or of another type."""
        group = self.c.groups.get(group_id)
        if group is None:
            raise ApiError(Errors.GROUP_ID_NOT_FOUND, f"Group {group_id} not found.")
        if not isinstance(group, self.group_class):
            raise ApiError(Errors.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a {self.type_name} group.")
        return group

    def _state(self, group_id: str) -> str | None:
        """The group's state as a string, or None when it is not a group of this type."""
        group = self.c.groups.get(group_id)
        return str(group.state) if isinstance(group, self.group_class) else None

    # ================================================================ {Consumer,Share,Streams}GroupDescribe
    def describe_groups(self, body: dict, version: int) -> dict:
        """Each group of this partition and type described, or its error entry: an empty id, a
        group another partition owns, a missing group or one of another type."""
        operations = GROUP_AUTHORIZED_OPERATIONS if body["includeAuthorizedOperations"] else INT32_MIN
        out = []
        for group_id in body["groupIds"]:
            if group_id == "":
                out.append(self.described_error(version, group_id, Errors.INVALID_GROUP_ID))
                continue
            if not self.p.owns(group_id):
                out.append(self.described_error(version, group_id, Errors.NOT_COORDINATOR))
                continue
            try:
                group = self.typed_group(group_id)
            except ApiError as e:
                out.append(self.described_error(version, group_id, e.error, e.message))
                continue
            out.append(self.describe(version, group, operations))
        return describe_response(out)

    def describe(self, version: int, group: Any, operations: int = INT32_MIN) -> dict:
        """{Consumer,Share,Streams}Group.asDescribedGroup: the group's entry with its members, each
        as the type describes one, in `member_order`."""
        members = [
            self.described_member(version, group, group.members[m])
            for m in sorted(group.members, key=self.member_order)
        ]
        return self.described_group(
            version,
            group.group_id,
            state=group.state_as_string(),
            group_epoch=group.group_epoch,
            assignment_epoch=group.target_assignment_epoch,
            members=members,
            authorized_operations=operations,
            **self.described_own(group),
        )

    @staticmethod
    def member_order(member_id: str) -> Any:
        """The sort key of a described group's members: Java's string order."""
        return order_key(member_id)

    def described_error(self, version: int, group_id: str, error: Error, message: str | None = None) -> dict:
        """The describe entry of a group that cannot be described."""
        return self.described_group(version, group_id, error, message=message)

    def described_group(self, version: int, group_id: str, error: Error | None = None, **fields: Any) -> dict:
        """The type's {Consumer,Share,Streams}GroupDescribeResponse group (`fields`: those of
        `modern.apis.described_modern_group`, and the type's own)."""
        raise NotImplementedError

    def described_own(self, group: Any) -> dict:
        """The type's own fields of its described `group` (assignor, topology)."""
        return {}

    def described_member(self, version: int, group: Any, member: Any) -> dict:
        """The type's {Consumer,Share,Streams}GroupDescribeResponse member."""
        raise NotImplementedError

    def request_metadata_refresh(self) -> None:
        """onMetadataUpdate for groups that only recompute their metadata hash on their next
        heartbeat (share, streams)."""
        for group in self.c.groups.values():
            if isinstance(group, self.group_class):
                group.request_metadata_refresh()

    def on_loaded(self, result: CoordinatorResult) -> None:
        """onLoaded: a session timeout for every member of the type's groups (from now), and the
        rebalance timeout of members with something to revoke."""
        for group in self.c.groups.values():
            if not isinstance(group, self.group_class):
                continue
            for member in group.members.values():
                # For a consumer group the group's session timeout, classic members included
                # (their next heartbeat restores their own), as Kafka's onLoaded.
                self._schedule_session_timeout(result, group.group_id, member.member_id)
                if self.revoking_state is not None and member.state == self.revoking_state:
                    self._schedule_rebalance_timeout(
                        result, group.group_id, member.member_id, member.member_epoch, member.rebalance_timeout_ms
                    )

    def _schedule_session_timeout(self, result: CoordinatorResult, group_id: str, member_id: str) -> None:
        raise NotImplementedError

    def timer_member(self, timer: Timer, same_epoch: bool = False) -> tuple[Any, Any] | None:
        """The group of this type and the member a session or rebalance timer is about, or None
        when either is gone (or, `same_epoch`, the member moved on from the timer's epoch)."""
        payload = timer.payload
        group = self.c.groups.get(payload["groupId"])
        if not isinstance(group, self.group_class):
            return None
        member = group.members.get(payload["memberId"])
        if member is None or (same_epoch and member.member_epoch != payload["memberEpoch"]):
            return None
        return group, member

    def _schedule_rebalance_timeout(
        self, result: CoordinatorResult, group_id: str, member_id: str, member_epoch: int, timeout_ms: int
    ) -> None:
        raise NotImplementedError

    def state_changed_event(
        self,
        result: CoordinatorResult,
        group_id: str,
        before: str | None,
        after: str,
        group_epoch: int,
        assignment_epoch: int,
    ) -> None:
        """GroupStateChanged, into `result`, when the group's state once the result's records are
        replayed (`after`) is not the state `before` them."""
        if after != before:
            self.c.event(
                result,
                group_id,
                "GroupStateChanged",
                groupType=self.type_name,
                fromState=before,
                toState=after,
                groupEpoch=group_epoch,
                assignmentEpoch=assignment_epoch,
            )

    def created_and_joined_events(
        self, result: CoordinatorResult, group_id: str, new_group: bool, new_member: bool, reason: str, **member
    ) -> None:
        """A heartbeat's GroupCreated (and the expiry cycle a new group needs) and MemberJoined
        (`member`: the event's fields) events, into `result`."""
        if new_group:
            self.c.event(result, group_id, "GroupCreated", groupType=self.type_name, reason=reason)
            self.c.ensure_expiration_timer(result)
        if new_member:
            self.c.event(result, group_id, "MemberJoined", **member)
