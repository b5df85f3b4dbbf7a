"""Helpers for the KIP-848 consumer group tests: a thin client over CoreDriver that speaks
ConsumerGroupHeartbeat / ConsumerGroupDescribe with topic names (converted to the topic ids the
coordinator knows from UpdateMetadata), like GroupMetadataManagerTestContext's builders."""

from __future__ import annotations

from typing import Any

import pytest

from coordinator import CoordinatorPartition
from coordinator.group.consumer.assignors import ASSIGNORS
from coordinator.group.consumer.group import (
    current_value,
    group_epoch_value,
    member_value,
    target_epoch_value,
    target_value,
)
from coordinator.group.consumer.member import ConsumerGroupMember
from coordinator.group.consumer.topic_partitions import freeze
from coordinator.group.modern.ids import kafka_uuid
from coordinator.metadata import BROADCAST_KEY
from coordinator.records import record_key
from tests.core_driver import CoreDriver

GROUP = "fooup"
HB_V = 1


def topic_id(name: str) -> str:
    return kafka_uuid("topic:" + name)


class ConsumerGroupTestClient:
    def __init__(self, group_id: str = GROUP, topics: dict[str, int] | None = None, **overrides: Any):
        self.group_id = group_id
        self.d = CoreDriver(group_id=group_id, **overrides)
        self.names: dict[str, str] = {}
        if topics is not None:
            self.set_topics(topics)

    # ---------------------------------------------------------------- metadata
    def set_topics(self, topics: dict[str, int], ids: dict[str, str] | None = None) -> None:
        ids = ids or {}
        states = []
        for t, n in topics.items():
            tid = ids.get(t) or topic_id(t)
            self.names[tid] = t
            states.append({"topicName": t, "topicId": tid, "numPartitions": n})
        self.d.send("UpdateMetadata", 0, {"topicStates": states}, key=BROADCAST_KEY)

    # ---------------------------------------------------------------- plumbing
    @property
    def now(self) -> int:
        return self.d.now

    def sleep(self, ms: int) -> None:
        self.d.advance(ms)

    def send(self, api: str, version: int, body: dict, client_id: str | None = None) -> dict | None:
        cid, raw = self.d.envelope(api, version, body, client_id=client_id)
        self.d.send_raw(raw, key=body.get("groupId", self.group_id))
        return self.d.response(cid)

    def groups(self):
        return self.d.component("groups")

    def group(self, group_id: str | None = None):
        return self.groups().groups.get(group_id or self.group_id)

    def member(self, member_id: str, group_id: str | None = None):
        return self.group(group_id).members[member_id]

    def records(self, since: int = 0):
        return self.d.records[since:]

    def events(self, name: str | None = None) -> list[dict]:
        return [e for e in self.d.events if name is None or e["event"] == name]

    def timers(self) -> dict:
        return self.d.partition.timers.schedule_view()

    # ---------------------------------------------------------------- requests
    def heartbeat(
        self,
        member_id: str,
        member_epoch: int,
        *,
        version: int = HB_V,
        group_id: str | None = None,
        instance_id: str | None = None,
        rack_id: str | None = None,
        rebalance_timeout: int = -1,
        topics: list[str] | None = None,
        regex: str | None = None,
        assignor: str | None = None,
        owned: dict[str, list[int]] | None = None,
        owned_ids: list[dict] | None = None,
        client_id: str | None = None,
    ) -> dict:
        body: dict = {
            "groupId": group_id if group_id is not None else self.group_id,
            "memberId": member_id,
            "memberEpoch": member_epoch,
            "instanceId": instance_id,
            "rackId": rack_id,
            "rebalanceTimeoutMs": rebalance_timeout,
            "subscribedTopicNames": topics,
            "serverAssignor": assignor,
        }
        if version >= 1:
            body["subscribedTopicRegex"] = regex
        if owned_ids is not None:
            body["topicPartitions"] = owned_ids
        elif owned is not None:
            body["topicPartitions"] = [{"topicId": topic_id(t), "partitions": list(p)} for t, p in owned.items()]
        else:
            body["topicPartitions"] = None
        return self.send("ConsumerGroupHeartbeat", version, body, client_id=client_id)

    def join(self, member_id: str, topics: list[str] | None, *, rebalance_timeout: int = 5000, **kw) -> dict:
        return self.heartbeat(member_id, 0, topics=topics, rebalance_timeout=rebalance_timeout, owned={}, **kw)

    def describe(self, *group_ids: str, version: int = 1, include_operations: bool = False) -> list[dict]:
        resp = self.send(
            "ConsumerGroupDescribe",
            version,
            {"groupIds": list(group_ids) or [self.group_id], "includeAuthorizedOperations": include_operations},
        )
        return resp["groups"]

    def assignment(self, resp: dict) -> dict | None:
        """The response's assignment by topic name, or None if not sent."""
        if resp.get("assignment") is None:
            return None
        return {self.names[tp["topicId"]]: sorted(tp["partitions"]) for tp in resp["assignment"]["topicPartitions"]}

    def inject(self, records: list[tuple[str, dict | None]]) -> None:
        """Append and replay records (Kafka's context.replay(record) in its tests)."""
        self.d.inject(records)

    def inject_group(
        self,
        epoch: int,
        members: list[ConsumerGroupMember],
        targets: dict | None = None,
        assignment_epoch: int | None = None,
        metadata_hash: int | None = None,
        group_id: str | None = None,
    ) -> None:
        """A group as Kafka's ConsumerGroupBuilder writes it: members, epoch, target, current."""
        gid = group_id or self.group_id
        records = [(record_key("ConsumerGroupMemberMetadata", gid, m.member_id), member_value(m)) for m in members]
        if metadata_hash is None:
            subscribed = set().union(*(m.subscribed_topic_names for m in members)) if members else set()
            metadata_hash = self.consumer_manager().compute_metadata_hash(subscribed)
        records.append((record_key("ConsumerGroupMetadata", gid), group_epoch_value(epoch, metadata_hash)))
        targets = targets if targets is not None else {m.member_id: m.assigned_partitions for m in members}
        for mid, a in targets.items():
            records.append((record_key("ConsumerGroupTargetAssignmentMember", gid, mid), target_value(freeze(a))))
        records.append(
            (
                record_key("ConsumerGroupTargetAssignmentMetadata", gid),
                target_epoch_value(epoch if assignment_epoch is None else assignment_epoch),
            )
        )
        for m in members:
            records.append((record_key("ConsumerGroupCurrentMemberAssignment", gid, m.member_id), current_value(m)))
        self.inject(records)

    def consumer_manager(self):
        """The consumer-group manager of the current state (read-only by convention)."""
        return self.d.component("groups").consumer

    # ---------------------------------------------------------------- replay
    def rebuilt(self) -> CoordinatorPartition:
        """The partition rebuilt from every state-log record written so far."""
        return self.d.rebuilt()


def assignment_of(member) -> dict:
    return {t: sorted(p) for t, p in member.assigned_partitions.items()}


class PreparedAssignor:
    """Kafka's MockPartitionAssignor: returns the prepared assignment."""

    def __init__(self, name: str = "mock"):
        self.name = name
        self.assignment: dict = {}
        self.calls = 0

    def prepare(self, assignment: dict) -> None:
        self.assignment = {m: freeze(a) for m, a in assignment.items()}

    def assign(self, spec, describer):
        self.calls += 1
        return {m: self.assignment.get(m, {}) for m in spec.members}


@pytest.fixture
def mock_assignor():
    assignor = PreparedAssignor()
    ASSIGNORS[assignor.name] = assignor
    yield assignor
    ASSIGNORS.pop(assignor.name, None)
