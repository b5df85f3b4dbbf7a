"""The group coordinator (Kafka's `org.apache.kafka.coordinator.group`): classic groups, KIP-848
consumer groups, share groups, streams groups, the offset store and the group admin APIs.

    shard.py            GroupCoordinator (Kafka's GroupCoordinatorShard): builds its managers and
                        its handler, timer and replay tables
    group.py            the Group interface and the group-type registry
    offsets.py, offset_manager.py, txn_offsets.py   the offset store, OffsetCommit/Fetch/Delete,
                        TxnOffsetCommit and WriteTxnMarkers
    admin.py, group_configs.py   DescribeGroups/ListGroups/DeleteGroups, per-group configs
    classic/, consumer/, share/, streams/   one package per group type

Importing this package registers the "groups" component and the APIs' specs; it patches nothing.
"""

from .classic.group import ClassicGroup, ClassicGroupMember
from .group import Group, IllegalStateError, register_group_type
from .offsets import OffsetAndMetadata, OffsetStore
from .shard import GroupCoordinator

__all__ = [
    "ClassicGroup",
    "ClassicGroupMember",
    "Group",
    "GroupCoordinator",
    "IllegalStateError",
    "OffsetAndMetadata",
    "OffsetStore",
    "register_group_type",
]
