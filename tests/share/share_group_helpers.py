"""Helpers for the KIP-932 share group tests: ShareGroupHeartbeat / ShareGroupDescribe over the
consumer-group test client (same driver, same UpdateMetadata topic ids)."""

from __future__ import annotations

import json

from coordinator.group.share.group import (
    ShareGroupMember,
    current_value,
    group_epoch_value,
    member_value,
    target_epoch_value,
    target_value,
)
from coordinator.records import record_key
from coordinator.result import CoordinatorResult
from tests.consumer.consumer_group_helpers import ConsumerGroupTestClient
from tests.core_driver import CoreDriver


class ShareGroupTestClient(ConsumerGroupTestClient):
    def __init__(self, *args, **kw):
        super().__init__(*args, **kw)
        self.owners: dict[str, CoreDriver] = {}  # share-state key -> the partition that owns it

    def share_heartbeat(
        self,
        member_id: str,
        member_epoch: int,
        *,
        topics: list[str] | None = None,
        rack_id: str | None = None,
        group_id: str | None = None,
        client_id: str | None = None,
    ) -> dict:
        body = {
            "groupId": group_id if group_id is not None else self.group_id,
            "memberId": member_id,
            "memberEpoch": member_epoch,
            "rackId": rack_id,
            "subscribedTopicNames": topics,
        }
        return self.send("ShareGroupHeartbeat", 1, body, client_id=client_id)

    def on_manager(self, fn) -> None:
        """Call `fn(share manager)` on the live partition and keep its records (as `inject` does;
        Kafka's tests call the GroupMetadataManager method and read the CoordinatorResult)."""
        self.d.call(lambda part: part.apply(fn(part.component("groups").share) or CoordinatorResult()))

    def initialize_share_partitions(self, fail: bool = False) -> int:
        """Deliver the group partition's internal InitializeShareGroupState queries to the owning
        coordinator partitions (each a CoreDriver of its own) and their answers back; `fail` drops
        the queries instead. Returns how many were delivered."""
        owners = self.owners
        pending, self.d.internal_requests = self.d.internal_requests, []
        for key, envelope in pending:
            if fail:
                continue
            owner = owners.get(key) or CoreDriver(key)
            owners[key] = owner
            owner.send_raw(json.dumps(envelope).encode(), key=key)
            answers, owner.internal_requests = owner.internal_requests, []
            for back_key, answer in answers:
                self.d.send_raw(json.dumps(answer).encode(), key=back_key)
        return len(pending)

    def share_join(self, member_id: str, *, topics: list[str], **kw) -> dict:
        """A member's first heartbeat, the initialization of the new share-partitions, and the
        heartbeat that gets them (the member's flow once its group initializes share-partitions)."""
        first = self.share_heartbeat(member_id, 0, topics=topics, **kw)
        if first["errorCode"]:
            return first
        self.initialize_share_partitions()
        return self.share_heartbeat(member_id, first["memberEpoch"], topics=topics, client_id=kw.get("client_id"))

    def share_describe(self, *group_ids: str, include_operations: bool = False) -> list[dict]:
        return self.send(
            "ShareGroupDescribe", 1, {"groupIds": list(group_ids), "includeAuthorizedOperations": include_operations}
        )["groups"]

    def share_manager(self):
        return self.d.component("groups").share

    def inject_share_group(
        self,
        epoch: int,
        members: list[ShareGroupMember],
        targets: dict | None = None,
        assignment_epoch: int | None = None,
        metadata_hash: int | None = None,
        group_id: str | None = None,
    ) -> None:
        """A share group as Kafka's ShareGroupBuilder writes it."""
        gid = group_id or self.group_id
        records = [(record_key("ShareGroupMemberMetadata", gid, m.member_id), member_value(m)) for m in members]
        if metadata_hash is None:
            subscribed = set().union(*(m.subscribed_topic_names for m in members)) if members else set()
            metadata_hash = self.consumer_manager().compute_metadata_hash(subscribed)
        records.append((record_key("ShareGroupMetadata", gid), group_epoch_value(epoch, metadata_hash)))
        targets = targets if targets is not None else {m.member_id: m.assigned_partitions for m in members}
        for mid, a in targets.items():
            records.append((record_key("ShareGroupTargetAssignmentMember", gid, mid), target_value(a)))
        records.append(
            (
                record_key("ShareGroupTargetAssignmentMetadata", gid),
                target_epoch_value(epoch if assignment_epoch is None else assignment_epoch),
            )
        )
        for m in members:
            records.append((record_key("ShareGroupCurrentMemberAssignment", gid, m.member_id), current_value(m)))
        self.inject(records)


def share_member(member_id: str, epoch: int, assigned: dict, topics=("foo", "bar")) -> ShareGroupMember:
    return ShareGroupMember(
        member_id,
        member_epoch=epoch,
        previous_member_epoch=epoch - 1,
        client_id="client",
        client_host="localhost/127.0.0.1",
        subscribed_topic_names=frozenset(topics),
        assigned_partitions={t: frozenset(p) for t, p in assigned.items()},
    )
