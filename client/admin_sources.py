"""Where the admin CLI reads from: the Redis read model (`client/read_model.py`) when it answers,
otherwise the coordinators themselves through the request topic. Both give the same shapes:

    group:       {"groupId", "type", "state", "protocol", "coordinatorPartition",
                  "members": [{"memberId", "groupInstanceId", "clientId", "clientHost",
                               "assignment": {topic: [partitions]}}]}
    offsets:     {(topic, partition): committed offset}
    transaction: {"transactionalId", "state", "producerId", "producerEpoch", "timeoutMs",
                  "startTimestamp", "partitions": [{"topic", "partitions"}], "coordinatorPartition"}

Writes never go through here: the CLI sends them as coordinator requests (admin_cli.py).
"""

from __future__ import annotations

from coordinator.errors import Errors
from coordinator.group.classic.consumer_protocol import SchemaError, decode_assignment
from coordinator.routing import coordinator_partition, key_for_partition

from .admin import GroupAdmin

DESCRIBE_CONSUMER_VERSION, OFFSET_FETCH_VERSION = 1, 9
LIST_TXN_VERSION, DESCRIBE_TXN_VERSION = 1, 0


class ServiceError(RuntimeError):
    """The service answered a read with an error the CLI cannot turn into a result."""


def _assignment_dict(items: list[dict] | None) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for x in items or []:
        out.setdefault(x["topic"], []).extend(x["partitions"])
    return out


class RedisReads:
    """The read model. It trails the coordinators by the projector's lag (a state-log record is
    folded in after the service wrote it), so writes and their preconditions never read it."""

    name = "redis"

    def __init__(self, model):
        self.model = model

    def list_groups(self) -> list[dict]:
        return [self._group(g) for g in self.model.groups()]

    def describe_groups(self, group_ids: list[str]) -> dict[str, dict | None]:
        out = {}
        for g in group_ids:
            raw = self.model.group(g)
            out[g] = self._group(raw) if raw else None
        return out

    @staticmethod
    def _group(raw: dict) -> dict:
        members = [
            {
                "memberId": m.get("memberId"),
                "groupInstanceId": m.get("groupInstanceId"),
                "clientId": m.get("clientId"),
                "clientHost": m.get("clientHost"),
                "assignment": _assignment_dict(m.get("assignment")),
            }
            for m in raw.get("members") or []
        ]
        return {
            "groupId": raw["groupId"],
            "type": raw.get("type"),
            "state": raw.get("state"),
            "protocol": raw.get("protocol") or "",
            "coordinatorPartition": raw.get("coordinatorPartition"),
            "members": members,
        }

    def offsets(self, group_id: str) -> dict[tuple[str, int], int]:
        return {tp: v["committedOffset"] for tp, v in self.model.offsets(group_id).items()}

    def list_transactions(self) -> list[dict]:
        return [t for t in self.model.transactions() if t.get("state") != "Dead"]

    def describe_transaction(self, transactional_id: str) -> dict | None:
        t = self.model.transaction(transactional_id)
        return t if t and t.get("state") != "Dead" else None


class ServiceReads:
    """The coordinators, through the request topic: ListGroups to every coordinator partition,
    ConsumerGroupDescribe / DescribeGroups, OffsetFetch, ListTransactions, DescribeTransactions."""

    name = "coordinators"

    def __init__(self, client, partitions: int, timeout: float):
        self.client = client
        self.partitions = partitions
        self.timeout = timeout
        self.admin = GroupAdmin(client, partitions, timeout)

    def _request(self, api: str, version: int, body: dict, key: str) -> dict:
        return self.client.wait(self.client.send(api, version, body, key=key), self.timeout)["response"]

    def list_groups(self) -> list[dict]:
        return [
            {
                "groupId": g["groupId"],
                "type": g.get("groupType"),
                "state": g.get("groupState"),
                "protocolType": g.get("protocolType"),
                "coordinatorPartition": g["coordinatorPartition"],
            }
            for g in self.admin.list_groups()
        ]

    def describe_groups(self, group_ids: list[str]) -> dict[str, dict | None]:
        """As Kafka's admin client: a group ConsumerGroupDescribe does not know as a consumer group
        is described with DescribeGroups (both are sent at once: one round trip). None for a
        group that does not exist."""
        ids = list(dict.fromkeys(group_ids))
        consumer = [
            (
                g,
                self.client.send(
                    "ConsumerGroupDescribe",
                    DESCRIBE_CONSUMER_VERSION,
                    {"groupIds": [g], "includeAuthorizedOperations": False},
                    key=g,
                ),
            )
            for g in ids
        ]
        classic = self.admin.describe_groups(ids) if ids else {}
        out: dict[str, dict | None] = {}
        for g, cid in consumer:
            d = self.client.wait(cid, self.timeout)["response"]["groups"][0]
            if d["errorCode"] == Errors.NONE.code:
                out[g] = self._consumer_group(d)
                continue
            if d["errorCode"] != Errors.GROUP_ID_NOT_FOUND.code:
                raise ServiceError(f"ConsumerGroupDescribe {g}: {Errors.for_code(d['errorCode']).name}")
            c = classic[g]
            if c["errorCode"] == Errors.GROUP_ID_NOT_FOUND.code or c["groupState"] == "Dead":
                out[g] = None
            elif c["errorCode"] != Errors.NONE.code:
                raise ServiceError(f"DescribeGroups {g}: {Errors.for_code(c['errorCode']).name}")
            else:
                out[g] = self._classic_group(c)
        return {g: out.get(g) for g in group_ids}

    def _consumer_group(self, d: dict) -> dict:
        members = [
            {
                "memberId": m["memberId"],
                "groupInstanceId": m.get("instanceId"),
                "clientId": m["clientId"],
                "clientHost": m["clientHost"],
                "assignment": {t["topicName"]: list(t["partitions"]) for t in m["assignment"]["topicPartitions"]},
            }
            for m in d["members"]
        ]
        return {
            "groupId": d["groupId"],
            "type": "consumer",
            "state": d["groupState"],
            "protocol": d.get("assignorName") or "",
            "coordinatorPartition": coordinator_partition(d["groupId"], self.partitions),
            "members": members,
        }

    def _classic_group(self, d: dict) -> dict:
        members = []
        for m in d["members"]:
            assignment: dict[str, list[int]] = {}
            if d["protocolType"] == "consumer" and m.get("memberAssignment"):
                try:
                    assignment = decode_assignment(m["memberAssignment"]).as_dict()
                except SchemaError:
                    assignment = {}  # Kafka's tool shows no partitions for an assignment it cannot read
            members.append(
                {
                    "memberId": m["memberId"],
                    "groupInstanceId": m.get("groupInstanceId"),
                    "clientId": m["clientId"],
                    "clientHost": m["clientHost"],
                    "assignment": assignment,
                }
            )
        return {
            "groupId": d["groupId"],
            "type": "classic",
            "state": d["groupState"],
            "protocol": d.get("protocolData") or "",
            "coordinatorPartition": coordinator_partition(d["groupId"], self.partitions),
            "members": members,
        }

    def offsets(self, group_id: str) -> dict[tuple[str, int], int]:
        """OffsetFetch v9 as an admin (no member id): every committed offset of the group."""
        resp = self._request(
            "OffsetFetch",
            OFFSET_FETCH_VERSION,
            {
                "groups": [{"groupId": group_id, "memberId": None, "memberEpoch": -1, "topics": None}],
                "requireStable": False,
            },
            key=group_id,
        )
        g = resp["groups"][0]
        if g["errorCode"] != Errors.NONE.code:
            raise ServiceError(f"OffsetFetch {group_id}: {Errors.for_code(g['errorCode']).name}")
        return {
            (t["name"], p["partitionIndex"]): p["committedOffset"]
            for t in g["topics"]
            for p in t["partitions"]
            if p["errorCode"] == Errors.NONE.code and p["committedOffset"] >= 0
        }

    def list_transactions(self, states: list[str] | None = None, duration_ms: int = -1) -> list[dict]:
        body = {"stateFilters": states or [], "producerIdFilters": [], "durationFilter": duration_ms}
        cids = {
            p: self.client.send("ListTransactions", LIST_TXN_VERSION, body, key=key_for_partition(p, self.partitions))
            for p in range(self.partitions)
        }
        out = []
        for p, cid in cids.items():
            resp = self.client.wait(cid, self.timeout)["response"]
            if resp["errorCode"] != Errors.NONE.code:
                raise ServiceError(
                    f"ListTransactions on coordinator partition {p}: {Errors.for_code(resp['errorCode']).name}"
                )
            out += [
                {
                    "transactionalId": t["transactionalId"],
                    "producerId": t["producerId"],
                    "state": t["transactionState"],
                    "coordinatorPartition": p,
                }
                for t in resp["transactionStates"]
            ]
        return sorted(out, key=lambda t: t["transactionalId"])

    def describe_transactions(self, transactional_ids: list[str]) -> dict[str, dict | None]:
        cids = [
            (t, self.client.send("DescribeTransactions", DESCRIBE_TXN_VERSION, {"transactionalIds": [t]}, key=t))
            for t in dict.fromkeys(transactional_ids)
        ]
        out: dict[str, dict | None] = {}
        for tid, cid in cids:
            s = self.client.wait(cid, self.timeout)["response"]["transactionStates"][0]
            if s["errorCode"] == Errors.TRANSACTIONAL_ID_NOT_FOUND.code:
                out[tid] = None
            elif s["errorCode"] != Errors.NONE.code:
                raise ServiceError(f"DescribeTransactions {tid}: {Errors.for_code(s['errorCode']).name}")
            else:
                out[tid] = {
                    "transactionalId": tid,
                    "state": s["transactionState"],
                    "producerId": s["producerId"],
                    "producerEpoch": s["producerEpoch"],
                    "timeoutMs": s["transactionTimeoutMs"],
                    "startTimestamp": s["transactionStartTimeMs"],
                    "partitions": s["topics"],
                    "coordinatorPartition": coordinator_partition(tid, self.partitions),
                }
        return out

    def describe_transaction(self, transactional_id: str) -> dict | None:
        return self.describe_transactions([transactional_id])[transactional_id]
