"""The group coordinator: classic groups, KIP-848 consumer groups, the offset store and the group
admin APIs.

Importing this package registers the "groups" component and its APIs (JoinGroup, SyncGroup,
Heartbeat, LeaveGroup, OffsetCommit, OffsetFetch, OffsetDelete, DescribeGroups, ListGroups,
DeleteGroups, ConsumerGroupHeartbeat, ConsumerGroupDescribe, StreamsGroupHeartbeat, StreamsGroupDescribe,
ShareGroupHeartbeat, ShareGroupDescribe, and IncrementalAlterConfigs /
DescribeConfigs for GROUP resources) and the group side of transactions
(TxnOffsetCommit, WriteTxnMarkers).
"""
from . import apis  # noqa: F401  (registers the APIs)
from . import consumer_apis  # noqa: F401  (registers ConsumerGroupHeartbeat / ConsumerGroupDescribe)
from . import txn_offsets  # noqa: F401  (TxnOffsetCommit and WriteTxnMarkers: the group side of transactions)
from .classic import ClassicGroup, ClassicGroupMember, IllegalStateError
from .component import GroupCoordinator
from . import consumer_manager  # noqa: F401,E402  (plugs KIP-848 consumer groups into the component)
from . import group_configs  # noqa: F401,E402  (per-group configs: IncrementalAlterConfigs / DescribeConfigs)
from . import streams_apis, streams_manager  # noqa: F401,E402  (KIP-1071 streams groups)
from . import share_apis, share_manager  # noqa: F401,E402  (KIP-932 share groups: ShareGroupHeartbeat / Describe)
from .group import Group, register_group_type
from .offsets import OffsetAndMetadata, OffsetStore

__all__ = ["ClassicGroup", "ClassicGroupMember", "Group", "GroupCoordinator", "IllegalStateError",
           "OffsetAndMetadata", "OffsetStore", "register_group_type"]
