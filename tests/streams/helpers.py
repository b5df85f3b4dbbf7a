"""A thin StreamsGroupHeartbeat / StreamsGroupDescribe client over CoreDriver (like
GroupMetadataManagerTestContext's streams helpers)."""

from __future__ import annotations

from typing import Any

from coordinator import CoordinatorPartition
from tests.consumer.consumer_group_helpers import ConsumerGroupTestClient

GROUP = "fooup"


def topic_info(name: str, partitions: int = 0) -> dict:
    return {"name": name, "partitions": partitions, "replicationFactor": 0, "topicConfigs": []}


def subtopology(sid: str, source=(), changelog=(), sink=(), rsource=(), copartition=()) -> dict:
    return {
        "subtopologyId": sid,
        "sourceTopics": list(source),
        "sourceTopicRegex": [],
        "stateChangelogTopics": [topic_info(t) for t in changelog],
        "repartitionSinkTopics": list(sink),
        "repartitionSourceTopics": [topic_info(t) for t in rsource],
        "copartitionGroups": list(copartition),
    }


def topology(epoch: int = 0, *subs: dict) -> dict:
    return {"epoch": epoch, "subtopologies": list(subs)}


def tasks(**by_subtopology) -> list[dict]:
    return [{"subtopologyId": s, "partitions": sorted(p)} for s, p in sorted(by_subtopology.items())]


class StreamsTestClient(ConsumerGroupTestClient):
    def heartbeat(
        self,
        member_id: str,
        epoch: int,
        *,
        topology: dict | None = None,
        active=None,
        standby=None,
        warmup=None,
        process_id: str | None = None,
        rebalance_timeout_ms: int | None = None,
        group_id: str | None = None,
        **fields: Any,
    ) -> dict:
        body = {
            "groupId": group_id or self.group_id,
            "memberId": member_id,
            "memberEpoch": epoch,
            "endpointInformationEpoch": fields.pop("endpointInformationEpoch", 0),
            **fields,
        }
        if epoch == 0:
            body.setdefault("rebalanceTimeoutMs", 300000 if rebalance_timeout_ms is None else rebalance_timeout_ms)
            body["processId"] = process_id or f"process-{member_id}"
            body.setdefault("activeTasks", [])
            body.setdefault("standbyTasks", [])
            body.setdefault("warmupTasks", [])
        elif rebalance_timeout_ms is not None:
            body["rebalanceTimeoutMs"] = rebalance_timeout_ms
        if topology is not None:
            body["topology"] = topology
        if active is not None or standby is not None or warmup is not None:
            body["activeTasks"], body["standbyTasks"], body["warmupTasks"] = active or [], standby or [], warmup or []
        return self.send("StreamsGroupHeartbeat", 0, body)

    def join(self, member_id: str, topo: dict, **kw) -> dict:
        return self.heartbeat(member_id, 0, topology=topo, **kw)

    def ack(self, member_id: str, response: dict) -> dict:
        """Heartbeat owning exactly the tasks of `response` at its epoch (a member that revoked what
        it was told to)."""
        return self.heartbeat(
            member_id,
            response["memberEpoch"],
            active=response["activeTasks"] or [],
            standby=response["standbyTasks"] or [],
            warmup=response["warmupTasks"] or [],
        )

    def describe(self, *group_ids: str) -> dict:
        return self.send(
            "StreamsGroupDescribe",
            0,
            {"groupIds": list(group_ids) or [self.group_id], "includeAuthorizedOperations": False},
        )

    def described(self, group_id: str | None = None) -> dict:
        return self.describe(group_id or self.group_id)["groups"][0]

    def rebuilt(self) -> CoordinatorPartition:
        return self.d.rebuilt()


def status_codes(response: dict) -> list[int]:
    return [s["statusCode"] for s in response["status"] or []]


def active_of(response_or_member) -> dict:
    if isinstance(response_or_member, dict):
        return {t["subtopologyId"]: set(t["partitions"]) for t in response_or_member["activeTasks"] or []}
    return {s: set(p) for s, p in response_or_member.assigned_tasks.active.items()}
