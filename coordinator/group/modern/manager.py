"""What every modern group type's manager does the same way (Kafka's GroupMetadataManager helpers
that the consumer, share and streams paths share)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, ClassVar

from ...errors import ApiError, Errors
from .hashing import group_hash, topic_hash


class ModernGroupManager:
    """The base of the consumer, share and streams group managers, given the group coordinator
    that owns them: `group_class` is the group type it manages, `type_name` how Kafka names it in
    messages ("consumer", "share", "streams")."""

    group_class: ClassVar[type[Any]]
    type_name: ClassVar[str]

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
