"""The coordinators of one coordinator partition, built in one place, and the runtime given them.

The order is the partition's: it is the order of the snapshot's components, of the search for a
timer kind's owner and of the replay of a state-log record.
"""

from __future__ import annotations

from .acl_state import AclSnapshot
from .channel import InternalChannel
from .component import Component, Partition
from .find_coordinator import FindCoordinator
from .group.shard import GroupCoordinator
from .metadata import TopicMetadata
from .metrics import Metrics
from .runtime import PartitionRuntime
from .share.coordinator import ShareCoordinator
from .txn.coordinator import TransactionCoordinator


def build_components(partition: Partition) -> dict[str, Component]:
    """The partition's coordinators, each given the others it calls (built in dependency order,
    listed in the partition's order)."""
    metadata = TopicMetadata(partition)
    transactions = TransactionCoordinator(partition, metadata)
    share = ShareCoordinator(partition, metadata)
    acls = AclSnapshot(partition, metadata)
    groups = GroupCoordinator(partition, metadata, transactions, share, acls)
    # Kafka's GroupMetadataManager.onMetadataUpdate: the groups hear of topic changes.
    metadata.listeners.append(groups.on_metadata_change)
    return {
        FindCoordinator.name: FindCoordinator(partition),
        TopicMetadata.name: metadata,
        TransactionCoordinator.name: transactions,
        GroupCoordinator.name: groups,
        ShareCoordinator.name: share,
        Metrics.name: Metrics(partition, groups, transactions),
        InternalChannel.name: InternalChannel(partition),
        AclSnapshot.name: acls,
    }


class CoordinatorPartition(PartitionRuntime):
    """A coordinator partition of the service: the runtime given these coordinators."""

    build_components = staticmethod(build_components)
    # KafkaApis' checks before the coordinators (coordinator/authorization.py), with its ACLs.
    authorizer = AclSnapshot.name
