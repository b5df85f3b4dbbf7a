"""KIP-848 consumer groups: the algorithms (sans-IO, stdlib only) and their coordinator wiring.

Modules
    assignors/           server-side assignors `uniform` (default) and `range`
    target_assignment    TargetAssignmentBuilder: a group epoch's new target assignment
    reconciliation       CurrentAssignmentBuilder: a member's next state (revoke before assign)
    member               ConsumerGroupMember, MemberState, ResolvedRegularExpression
    group_state          group state derivation, partition epochs, subscription type, assignor choice
    group                ConsumerGroup: a group's state, record-shaped updates, offset validation
    heartbeat            ConsumerGroupHeartbeat request / epoch / static-member checks
    topic_partitions     assignment helpers ({topic: frozenset} <-> {topic: [sorted]})
    regex                subscription regexes matched in linear time (RE2's guarantee)
    apis                 ConsumerGroupHeartbeat / ConsumerGroupDescribe response builders
    manager              the wiring: ConsumerGroupHeartbeat, ConsumerGroupDescribe, records, timers
    migration            classic members in a consumer group (online upgrade and downgrade)

Behaviour follows Apache Kafka 4.1.1's group coordinator, the version the project follows (see
docs/protocol.md; each module names the Kafka code it tracks).

Topic identity: requests carry topic ids (as Kafka's); inside the core, assignments are keyed by
topic NAME, resolved through the broker's metadata (coordinator/metadata.py), which knows each
name's current id. A topic deleted and re-created under its name gets a new id, and the metadata
change revokes the old topic's partitions and assigns the new one's, as Kafka does with ids
(`ConsumerGroupManager.on_metadata_change`). What the choice still shows is iteration order (Kafka
follows the HashSet order of random ids, here name order).
"""

from ..modern.member import LEAVE_GROUP_MEMBER_EPOCH, LEAVE_GROUP_STATIC_MEMBER_EPOCH
from .assignors import ASSIGNORS, DEFAULT_ASSIGNORS, PartitionAssignorException, assign
from .group import ConsumerGroup
from .group_state import (
    ConsumerGroupState,
    IllegalStateError,
    PartitionEpochs,
    derive_group_state,
    preferred_server_assignor,
    subscription_type,
)
from .member import ConsumerGroupMember, MemberState, ResolvedRegularExpression
from .reconciliation import CurrentAssignmentBuilder, reconcile, subscribed_topics
from .target_assignment import TargetAssignmentBuilder, TargetAssignmentResult

__all__ = [
    "ASSIGNORS",
    "ConsumerGroup",
    "ConsumerGroupMember",
    "ConsumerGroupState",
    "CurrentAssignmentBuilder",
    "DEFAULT_ASSIGNORS",
    "IllegalStateError",
    "LEAVE_GROUP_MEMBER_EPOCH",
    "LEAVE_GROUP_STATIC_MEMBER_EPOCH",
    "MemberState",
    "PartitionAssignorException",
    "PartitionEpochs",
    "ResolvedRegularExpression",
    "TargetAssignmentBuilder",
    "TargetAssignmentResult",
    "assign",
    "derive_group_state",
    "preferred_server_assignor",
    "reconcile",
    "subscribed_topics",
    "subscription_type",
]
