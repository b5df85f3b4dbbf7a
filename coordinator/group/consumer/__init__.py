"""KIP-848 consumer groups, phase 1: the pure algorithmic core (no Spark, no I/O, stdlib only).

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

The coordinator wiring (ConsumerGroupHeartbeat, ConsumerGroupDescribe, records, timers) is
`coordinator/group/consumer/manager.py`.

Behaviour follows Apache Kafka 4.2's group coordinator (see each module for the exact Kafka
change it tracks).

Topic identity: topics are identified by NAME, where Kafka uses topic ids (Uuid). Our requests,
records and snapshots are JSON and clients name topics; ids would add a name<->id map to keep in
sync with the cluster without changing any algorithm. Nothing in these modules interprets the
string, so switching to ids is a matter of passing ids where names are passed now. Two places
depend on the choice and are documented where they occur: iteration order (Kafka's follows
HashSet order of random ids, here name order) and re-created topics (a new id in Kafka, the same
name here: `topic_partitions.restrict_to_topics` drops partitions that no longer exist).
"""

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
from .member import (
    LEAVE_GROUP_MEMBER_EPOCH,
    LEAVE_GROUP_STATIC_MEMBER_EPOCH,
    ConsumerGroupMember,
    MemberState,
    ResolvedRegularExpression,
)
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
