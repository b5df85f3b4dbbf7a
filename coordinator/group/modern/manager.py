"""What every modern group type's manager does the same way (Kafka's GroupMetadataManager helpers
that the consumer, share and streams paths share)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, ClassVar

from ...errors import ApiError, Errors
from ...result import CoordinatorResult
from ..admin import GROUP_AUTHORIZED_OPERATIONS
from ..classic.apis import INT32_MIN
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

    def describe_groups(self, body: dict, error_entry, describe) -> dict:
        """{Consumer,Share,Streams}GroupDescribe: each group of this partition and type described
        (`describe(group, operations)`), or its error entry (`error_entry(group_id, error,
        message)`): an empty id, a group another partition owns, a missing group or one of another
        type."""
        operations = GROUP_AUTHORIZED_OPERATIONS if body["includeAuthorizedOperations"] else INT32_MIN
        out = []
        for group_id in body["groupIds"]:
            if group_id == "":
                out.append(error_entry(group_id, Errors.INVALID_GROUP_ID, None))
                continue
            if not self.p.owns(group_id):
                out.append(error_entry(group_id, Errors.NOT_COORDINATOR, None))
                continue
            try:
                group = self.typed_group(group_id)
            except ApiError as e:
                out.append(error_entry(group_id, e.error, e.message))
                continue
            out.append(describe(group, operations))
        return describe_response(out)

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

    def _schedule_rebalance_timeout(
        self, result: CoordinatorResult, group_id: str, member_id: str, member_epoch: int, timeout_ms: int
    ) -> None:
        raise NotImplementedError

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
