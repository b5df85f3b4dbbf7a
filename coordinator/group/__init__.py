"""The group coordinator: classic groups, the offset store and the group admin APIs.

Importing this package registers the "groups" component and its APIs (JoinGroup, SyncGroup,
Heartbeat, LeaveGroup, OffsetCommit, OffsetFetch, OffsetDelete, DescribeGroups, ListGroups,
DeleteGroups) and the group side of transactions (TxnOffsetCommit, WriteTxnMarkers).
"""
from . import apis  # noqa: F401  (registers the APIs)
from . import txn_offsets  # noqa: F401  (TxnOffsetCommit and WriteTxnMarkers: the group side of transactions)
from .classic import ClassicGroup, ClassicGroupMember, IllegalStateError
from .component import GroupCoordinator
from .group import Group, register_group_type
from .offsets import OffsetAndMetadata, OffsetStore

__all__ = ["ClassicGroup", "ClassicGroupMember", "Group", "GroupCoordinator", "IllegalStateError",
           "OffsetAndMetadata", "OffsetStore", "register_group_type"]
