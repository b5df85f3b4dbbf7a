"""Helpers for the group coordinator tests: a thin client over CoreDriver that speaks the group
APIs with Kafka-like defaults (GroupMetadataManagerTestContext's builders)."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from typing import Any

from coordinator.errors import Errors
from coordinator.group.classic.consumer_protocol import encode_subscription
from coordinator.group.offsets import OffsetAndMetadata
from coordinator.result import CoordinatorResult
from tests.core_driver import CoreDriver

GROUP = "group-id"
JOIN_V = 9  # the latest JoinGroup; versions >= 4 require a known member id


def protocols(*names: str, topics: list[str] | None = None) -> list[dict]:
    """Consumer protocols, each with a ConsumerProtocolSubscription of `topics` as metadata."""
    meta = encode_subscription(topics if topics is not None else ["foo"])
    return [{"name": n, "metadata": meta} for n in names]


def join_body(group: str = "g") -> dict:
    """A new member's JoinGroup (the consumer protocol, "range"), as a client first sends it."""
    return {
        "groupId": group,
        "sessionTimeoutMs": 10000,
        "rebalanceTimeoutMs": 10000,
        "memberId": "",
        "groupInstanceId": None,
        "protocolType": "consumer",
        "protocols": protocols("range"),
        "reason": None,
    }


def b64(*data: int) -> str:
    return base64.b64encode(bytes(data)).decode()


# ---------------------------------------------------------------- test-only seeding
# Kafka's tests reach into the shard (replay a record, call a manager's method); here that goes
# through the same path as a handler: build a result, and the runtime applies it.
def seed_transactional_offset(
    comp, producer_id: int, group_id: str, topic: str, partition: int, offset: int, metadata: str = ""
) -> None:
    """Tests only: one offset of an open transaction, as an OffsetCommit record tagged with the
    producer id (what Kafka's tests replay), applied by the runtime."""
    value = OffsetAndMetadata(offset, None, metadata, comp.p.clock_ms, None)
    record = comp.offset_commit_record(group_id, topic, partition, value, producer_id)
    comp.p.apply(CoordinatorResult(records=[record]))


def run_classic(comp, helper: Callable[..., Any], *args: Any) -> Any:
    """Tests only: a classic-group helper (`helper(r, *args)`) into an in-memory-only result, as a
    classic handler runs it, then applied by the runtime."""
    result = CoordinatorResult(replay_records=False)
    out = helper(result, *args)
    comp.p.apply(result)
    return out


class GroupTestClient:
    """Sends group requests through a CoreDriver (one request per batch, state re-encoded between
    batches) and keeps their correlation ids so parked responses can be read later."""

    def __init__(self, group_id: str = GROUP, **overrides: Any):
        self.group_id = group_id
        self.d = CoreDriver(group_id=group_id, **overrides)

    # ---------------------------------------------------------------- plumbing
    @property
    def now(self) -> int:
        return self.d.now

    def send(self, api: str, version: int, body: dict, client_id: str | None = None) -> tuple[int, dict | None]:
        cid, raw = self.d.envelope(api, version, body, client_id=client_id)
        self.d.send_raw(raw, key=body.get("groupId", self.group_id))
        return cid, self.d.response(cid)

    def response(self, cid: int) -> dict | None:
        return self.d.response(cid)

    def sleep(self, ms: int) -> None:
        self.d.advance(ms)

    def groups(self):
        return self.d.component("groups")

    def group(self, group_id: str | None = None):
        return self.groups().groups.get(group_id or self.group_id)

    def sibling(self, group_id: str) -> GroupTestClient:
        """A client for another group of the same coordinator partition (same driver)."""
        other = GroupTestClient.__new__(GroupTestClient)
        other.group_id, other.d = group_id, self.d
        return other

    def mutate(self, fn: Callable[[Any], None]) -> None:
        """Run `fn` on the component directly (as Kafka's tests call group.transitionTo or the
        manager's methods), keeping what it writes and emits."""
        self.d.call(lambda part: fn(part.component("groups")))

    def records(self, since: int = 0) -> list[tuple[str, dict | None]]:
        return self.d.records[since:]

    def events(self, name: str | None = None) -> list[dict]:
        return [e for e in self.d.events if name is None or e["event"] == name]

    def timers(self) -> dict:
        return self.d.partition.timers.to_json()

    # ---------------------------------------------------------------- requests
    def join(
        self,
        member_id: str = "",
        *,
        instance_id: str | None = None,
        version: int = JOIN_V,
        session_timeout: int = 10000,
        rebalance_timeout: int = 5000,
        protocol_type: str = "consumer",
        protos: list[dict] | None = None,
        group_id: str | None = None,
        client_id: str | None = None,
        reason: str | None = None,
    ) -> tuple[int, dict | None]:
        body = {
            "groupId": group_id if group_id is not None else self.group_id,
            "sessionTimeoutMs": session_timeout,
            "rebalanceTimeoutMs": rebalance_timeout,
            "memberId": member_id,
            "protocolType": protocol_type,
            "protocols": protos if protos is not None else protocols("range"),
        }
        if version >= 5:
            body["groupInstanceId"] = instance_id
        if version >= 8:
            body["reason"] = reason
        return self.send("JoinGroup", version, body, client_id=client_id)

    def join_dynamic(self, **kw) -> tuple[int, dict | None]:
        """v4+ dynamic join: the MEMBER_ID_REQUIRED round trip, then the real join."""
        _, first = self.join("", **kw)
        assert first["errorCode"] == Errors.MEMBER_ID_REQUIRED.code, first
        return self.join(first["memberId"], **kw)

    def sync(
        self,
        member_id: str,
        generation: int,
        assignments: dict[str, str] | None = None,
        *,
        instance_id: str | None = None,
        version: int = 5,
        protocol_type: str | None = None,
        protocol_name: str | None = None,
        group_id: str | None = None,
    ) -> tuple[int, dict | None]:
        body = {
            "groupId": group_id if group_id is not None else self.group_id,
            "generationId": generation,
            "memberId": member_id,
            "assignments": [{"memberId": m, "assignment": a} for m, a in (assignments or {}).items()],
        }
        if version >= 3:
            body["groupInstanceId"] = instance_id
        if version >= 5:
            body["protocolType"] = protocol_type
            body["protocolName"] = protocol_name
        return self.send("SyncGroup", version, body)

    def heartbeat(
        self,
        member_id: str,
        generation: int,
        *,
        instance_id: str | None = None,
        version: int = 4,
        group_id: str | None = None,
    ) -> dict:
        body = {
            "groupId": group_id if group_id is not None else self.group_id,
            "generationId": generation,
            "memberId": member_id,
        }
        if version >= 3:
            body["groupInstanceId"] = instance_id
        return self.send("Heartbeat", version, body)[1]

    def leave(self, *members: dict, version: int = 5, group_id: str | None = None, member_id: str = "") -> dict:
        body: dict = {"groupId": group_id if group_id is not None else self.group_id}
        if version >= 3:
            body["members"] = list(members)
        else:
            body["memberId"] = member_id
        return self.send("LeaveGroup", version, body)[1]

    def commit(
        self,
        offsets: dict[tuple[str, int], int] | list,
        *,
        member_id: str = "",
        generation: int = -1,
        instance_id: str | None = None,
        version: int = 9,
        metadata: str | None = None,
        retention: int | None = None,
        group_id: str | None = None,
    ) -> dict:
        topics: dict[str, list] = {}
        items = offsets.items() if isinstance(offsets, dict) else offsets
        for (topic, partition), offset in items:
            topics.setdefault(topic, []).append(
                {"partitionIndex": partition, "committedOffset": offset, "committedMetadata": metadata}
            )
        body = {
            "groupId": group_id if group_id is not None else self.group_id,
            "generationIdOrMemberEpoch": generation,
            "memberId": member_id,
            "topics": [{"name": t, "partitions": ps} for t, ps in topics.items()],
        }
        if version >= 7:
            body["groupInstanceId"] = instance_id
        if retention is not None:
            body["retentionTimeMs"] = retention
        return self.send("OffsetCommit", version, body)[1]

    def fetch(
        self,
        topics: dict[str, list[int]] | None,
        *,
        version: int = 9,
        require_stable: bool = False,
        group_id: str | None = None,
    ) -> dict:
        gid = group_id if group_id is not None else self.group_id
        req_topics = None if topics is None else [{"name": t, "partitionIndexes": ps} for t, ps in topics.items()]
        if version >= 8:
            body = {"groups": [{"groupId": gid, "topics": req_topics}], "requireStable": require_stable}
        else:
            body = {"groupId": gid, "topics": req_topics}
            if version >= 7:
                body["requireStable"] = require_stable
        return self.send("OffsetFetch", version, body)[1]

    def committed(self, topic: str, partition: int, group_id: str | None = None) -> int:
        resp = self.fetch({topic: [partition]}, group_id=group_id)
        return resp["groups"][0]["topics"][0]["partitions"][0]["committedOffset"]


def group_on_partition(partition: int, prefix: str = "g", other: bool = False) -> str:
    """A group id that the given coordinator partition owns (or, with other=True, does not)."""
    from coordinator.routing import coordinator_partition

    return next(g for g in (f"{prefix}{i}" for i in range(10000)) if (coordinator_partition(g) == partition) != other)


def error_of(resp: dict) -> int:
    return resp["errorCode"]


def dump(obj) -> str:
    return json.dumps(obj, indent=1, sort_keys=True)


# ---------------------------------------------------------------- scenarios (TestContext helpers)


def join_and_complete(c: GroupTestClient, *, instance_id: str | None = None, version: int = JOIN_V, **kw) -> dict:
    """joinClassicGroupAndCompleteJoin: one member joins an empty group and the initial delay
    passes, so the group is CompletingRebalance at generation 1."""
    if instance_id is None and version >= 4:
        cid, resp = c.join_dynamic(version=version, **kw)
    else:
        cid, resp = c.join("", instance_id=instance_id, version=version, **kw)
    assert resp is None
    c.sleep(c.d.config["group.initial.rebalance.delay.ms"])
    resp = c.response(cid)
    assert resp is not None and resp["errorCode"] == 0, resp
    return resp


def join_and_rebalance(c: GroupTestClient, **kw) -> dict:
    """joinClassicGroupAsDynamicMemberAndCompleteRebalance: join, complete, leader SyncGroup -> Stable."""
    resp = join_and_complete(c, **kw)
    _, sync = c.sync(resp["memberId"], resp["generationId"], {resp["memberId"]: b64(0)})
    assert sync["errorCode"] == 0, sync
    return resp


def static_members_join_and_rebalance(
    c: GroupTestClient,
    leader_instance: str,
    follower_instance: str,
    rebalance_timeout: int = 10000,
    session_timeout: int = 10000,
) -> dict:
    """staticMembersJoinAndRebalance: two static members, generation 1, Stable, with assignments."""
    protos = protocols("range", "roundrobin")
    kw = dict(session_timeout=session_timeout, rebalance_timeout=rebalance_timeout, protos=protos)
    lcid, lresp = c.join("", instance_id=leader_instance, **kw)
    fcid, fresp = c.join("", instance_id=follower_instance, **kw)
    assert lresp is None and fresp is None
    # The second member extends the initial delay, up to the rebalance timeout.
    c.sleep(max(rebalance_timeout, c.d.config["group.initial.rebalance.delay.ms"]))
    leader, follower = c.response(lcid), c.response(fcid)
    assert leader["errorCode"] == 0 and follower["errorCode"] == 0
    assert leader["leader"] == leader["memberId"]
    gen = leader["generationId"]
    leader_assignment, follower_assignment = b64(1), b64(2)
    fscid, _ = c.sync(follower["memberId"], gen, instance_id=follower_instance)
    _, ls = c.sync(
        leader["memberId"],
        gen,
        {leader["memberId"]: leader_assignment, follower["memberId"]: follower_assignment},
        instance_id=leader_instance,
    )
    assert ls["errorCode"] == 0 and c.response(fscid)["errorCode"] == 0
    return {
        "leaderId": leader["memberId"],
        "followerId": follower["memberId"],
        "generationId": gen,
        "leaderAssignment": leader_assignment,
        "followerAssignment": follower_assignment,
        "protocols": protos,
    }
