"""A minimal ConsumerGroupHeartbeat driver over the phase-1 modules, for tests only.

It wires the pieces the way Kafka's GroupMetadataManager.consumerGroupHeartbeat does (and the
way phase 2 will): validate the epoch, update the member, bump the group epoch when the
subscription changes or a member joins or leaves, recompute the target when the group epoch is
ahead of the assignment epoch, reconcile the member, apply the result to the group. It skips
what phase 2 owns: request validation, static members, regexes, timers, records, metadata refresh.
"""
from __future__ import annotations

from dataclasses import dataclass

from coordinator.group.consumer.group import ConsumerGroup
from coordinator.group.consumer.heartbeat import should_send_assignment, throw_if_member_epoch_is_invalid
from coordinator.group.consumer.member import LEAVE_GROUP_MEMBER_EPOCH
from coordinator.group.consumer.reconciliation import reconcile
from coordinator.group.consumer.target_assignment import TargetAssignmentBuilder


@dataclass
class Response:
    member_id: str
    member_epoch: int
    assignment: dict | None  # {topic: frozenset} when sent


class MiniCoordinator:
    def __init__(self, group: ConsumerGroup, topics: dict, assignor="uniform"):
        self.group = group
        self.topics = topics
        self.assignor = assignor
        self.target_computations = 0

    def heartbeat(self, member_id: str, member_epoch: int, *, subscribed_topic_names=None,
                  owned=None, rebalance_timeout_ms: int = -1) -> Response:
        group = self.group
        if member_epoch == LEAVE_GROUP_MEMBER_EPOCH:
            group.get_member(member_id)
            group.remove_member(member_id)
            group.remove_target_assignment(member_id)
            group.group_epoch += 1
            return Response(member_id, LEAVE_GROUP_MEMBER_EPOCH, None)

        member = group.get_or_create_member(member_id, member_epoch == 0)
        if member_epoch != 0:
            throw_if_member_epoch_is_invalid(member, member_epoch, owned)
        updated = member.with_heartbeat(subscribed_topic_names=subscribed_topic_names,
                                        rebalance_timeout_ms=rebalance_timeout_ms)
        subscription_changed = (updated.subscribed_topic_names != member.subscribed_topic_names
                                or updated.subscribed_topic_regex != member.subscribed_topic_regex)
        new_member = not group.has_member(member_id)
        if group.group_epoch == 0 or subscription_changed or new_member:
            group.group_epoch += 1

        if group.group_epoch > group.target_assignment_epoch:
            result = (TargetAssignmentBuilder(group.group_id, group.group_epoch, self.assignor)
                      .with_members(group.members).with_static_members(group.static_members)
                      .with_topic_metadata(self.topics).with_target_assignment(group.target_assignment)
                      .add_or_update_member(member_id, updated).build())
            for m, assignment in result.changed.items():
                group.update_target_assignment(m, assignment)
            group.target_assignment_epoch = result.assignment_epoch
            self.target_computations += 1

        reconciled = reconcile(updated, group.target_assignment_epoch,
                               group.target_assignment_of(member_id), group.current_partition_epoch,
                               owned, has_subscription_changed=subscription_changed,
                               topics=self.topics)
        if new_member or reconciled != member:
            group.update_member(reconciled)
        send = should_send_assignment(member_epoch, rebalance_timeout_ms, subscribed_topic_names,
                                      owned, member, reconciled)
        return Response(member_id, reconciled.member_epoch,
                        dict(reconciled.assigned_partitions) if send else None)
