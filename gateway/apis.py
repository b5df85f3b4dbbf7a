"""Which Kafka APIs the gateway bridges to the service, and how each is routed.

A bridged request is sent to the coordinator partition that owns its group or transactional id,
as a Kafka client sends it to that id's coordinator. APIs about several ids (DescribeGroups, ...)
are split into one request per coordinator partition and their answers merged in request order;
ListGroups and ListTransactions go to every partition (each lists its own, as a broker does).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from coordinator.api import ApiSpec, lookup
from coordinator.routing import coordinator_partition, key_for_partition

FIND_COORDINATOR = 10
API_VERSIONS = 18
METADATA = 3
DESCRIBE_CLUSTER = 60
PRODUCE = 0
FETCH = 1

# Passed through on the client's own broker connection, not a shared one: the broker holds a Fetch
# up to its max wait and a Produce until its acks, throttles both by bytes (muting the connection),
# and both carry the large payloads; on a shared connection every other client would wait behind them.
OWN_UPSTREAM_APIS = frozenset({PRODUCE, FETCH})

# Share-group APIs: a share group's records are handed out by the partition leader (ShareFetch), which
# the service is not, so none of them is advertised and no client reaches the broker's share coordinator.
HIDDEN_API_KEYS = frozenset(
    {
        76,
        77,
        78,
        79,  # ShareGroupHeartbeat, ShareGroupDescribe, ShareFetch, ShareAcknowledge
        90,
        91,
        92,  # Describe/Alter/DeleteShareGroupOffsets
    }
)


@dataclass(frozen=True)
class Route:
    """How one bridged API finds its coordinator partition(s).

    - single: `key(body, version)` is the routing key;
    - split: `items(version)` names the request's list of ids (or of objects with `item_key`),
      `results` the response's list, whose entries carry their id in `result_key`;
    - fan_out: the request goes to every partition and `results` lists are concatenated."""

    key: Callable[[dict, int], str | None] | None = None
    items: Callable[[int], str | None] | None = None
    item_key: str | None = None  # None: the items are the ids themselves
    results: str | None = None
    result_key: str | None = None
    fan_out: bool = False
    # v -> whether this version is split (OffsetFetch v8+ batches groups; v0-7 has one groupId)
    split_from: int = 0


def _field(name: str) -> Callable[[dict, int], str | None]:
    return lambda body, version: body.get(name)


def _add_partitions_key(body: dict, version: int) -> str | None:
    if version < 4:
        return body.get("v3AndBelowTransactionalId")
    txns = body.get("transactions") or []  # v4+ is Kafka's broker-to-broker batch form
    return txns[0].get("transactionalId") if txns else None


GROUP = _field("groupId")
TXN = _field("transactionalId")

ROUTES: dict[str, Route] = {
    "JoinGroup": Route(key=GROUP),
    "SyncGroup": Route(key=GROUP),
    "Heartbeat": Route(key=GROUP),
    "LeaveGroup": Route(key=GROUP),
    "OffsetCommit": Route(key=GROUP),
    "OffsetDelete": Route(key=GROUP),
    "TxnOffsetCommit": Route(key=GROUP),  # the group's coordinator, as in Kafka
    "ConsumerGroupHeartbeat": Route(key=GROUP),
    "StreamsGroupHeartbeat": Route(key=GROUP),
    "OffsetFetch": Route(
        key=GROUP, items=lambda v: "groups", item_key="groupId", results="groups", result_key="groupId", split_from=8
    ),
    "DescribeGroups": Route(items=lambda v: "groups", results="groups", result_key="groupId"),
    "DeleteGroups": Route(items=lambda v: "groupsNames", results="results", result_key="groupId"),
    "ConsumerGroupDescribe": Route(items=lambda v: "groupIds", results="groups", result_key="groupId"),
    "StreamsGroupDescribe": Route(items=lambda v: "groupIds", results="groups", result_key="groupId"),
    "DescribeTransactions": Route(
        items=lambda v: "transactionalIds", results="transactionStates", result_key="transactionalId"
    ),
    "ListGroups": Route(fan_out=True, results="groups"),
    "ListTransactions": Route(fan_out=True, results="transactionStates"),
    "InitProducerId": Route(key=TXN),
    "AddPartitionsToTxn": Route(key=_add_partitions_key),
    "AddOffsetsToTxn": Route(key=TXN),
    "EndTxn": Route(key=TXN),
}


def bridged_spec(api_key: int) -> ApiSpec | None:
    """The service's spec of a bridged API, by Kafka's numeric key."""
    return _BY_KEY.get(api_key)


def _by_key() -> dict[int, ApiSpec]:
    out = {}
    for name in ROUTES:
        spec = lookup(name)
        if spec is not None and not spec.internal:
            out[spec.api_key] = spec
    return out


_BY_KEY = _by_key()


def service_versions(api_key: int) -> tuple[int, int] | None:
    """The versions the gateway offers for an API it answers or bridges (None: pass through)."""
    spec = lookup("FindCoordinator") if api_key == FIND_COORDINATOR else _BY_KEY.get(api_key)
    return (spec.min_version, spec.max_version) if spec else None


@dataclass(frozen=True)
class SubRequest:
    key: str  # the routing key
    body: dict
    indexes: list[int]  # positions of its items in the client's request (split APIs)


def plan(spec: ApiSpec, version: int, body: dict, partitions: int) -> list[SubRequest]:
    """The request(s) to send for one client request."""
    route = ROUTES[spec.name]
    if route.fan_out:
        return [SubRequest(key_for_partition(p, partitions), body, []) for p in range(partitions)]
    if route.items is not None and version >= route.split_from:
        field = route.items(version)
        items = body.get(field) or []
        by_partition: dict[int, SubRequest] = {}
        for i, item in enumerate(items):
            item_id = item.get(route.item_key) if route.item_key else item
            p = coordinator_partition(item_id or "", partitions)
            if p not in by_partition:
                by_partition[p] = SubRequest(item_id or "", {**body, field: []}, [])
            by_partition[p].body[field].append(item)
            by_partition[p].indexes.append(i)
        if not by_partition:  # an empty list: any partition answers it
            return [SubRequest(key_for_partition(0, partitions), body, [])]
        return list(by_partition.values())
    if route.key is None:  # ROUTES gives every single-partition API its key
        raise ValueError(f"{spec.name} has no routing key")
    return [SubRequest(route.key(body, version) or "", body, [])]


def merge(spec: ApiSpec, subs: list[SubRequest], answers: list[dict]) -> dict:
    """One response from the answers to `plan`'s requests (in the same order)."""
    if len(answers) == 1:
        return answers[0]
    route = ROUTES[spec.name]
    merged = dict(answers[0])
    for a in answers:
        if a.get("errorCode"):
            merged["errorCode"] = a["errorCode"]
            if "errorMessage" in a:
                merged["errorMessage"] = a["errorMessage"]
            break
    if route.fan_out:
        merged[route.results] = [r for a in answers for r in (a.get(route.results) or [])]
        return merged
    # Split: results back in the order of the client's items.
    placed: list[tuple[int, dict]] = []
    for sub, a in zip(subs, answers, strict=True):
        results = a.get(route.results) or []
        if len(results) == len(sub.indexes):
            placed.extend(zip(sub.indexes, results, strict=True))
        else:  # an error shape without per-item entries: keep what there is
            placed.extend((sub.indexes[0] if sub.indexes else 0, r) for r in results)
    placed.sort(key=lambda pr: pr[0])
    merged[route.results] = [r for _, r in placed]
    return merged
