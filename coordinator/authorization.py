"""Kafka's authorisation of the coordinator APIs (KafkaApis' checks before it calls a coordinator).

One table, `CHECKS`: API name -> the check KafkaApis 4.1.1 makes for it, with the resources and
operations it names and the error codes in the places it puts them (a whole-response error, an
error per group / per transactional id / per topic, or entries left out of a List/Describe
answer). The runtime applies it before dispatch (`PartitionRuntime.handle`), for a request that
names a principal (`Request.principal`: only a gateway's signed bridged request does) and is not
internal; a request without a principal is not authorised here (the JSON path's trust model is the
request topic's ACLs: docs/protocol.md, *Authorisation*), and pays one attribute test.

A check returns None (authorised: the handler runs on the request as it is) or a `Verdict`:
- `response`: the answer now (the handler does not run);
- `body`: the handler runs on this body instead (the authorised part of the request);
- `merge`: applied to the handler's immediate answer (the denied items added, unauthorised topics
  left out, authorisedOperations computed for the principal).

The ACLs are the partition's latest `UpdateAcls` snapshot (coordinator/acl_state.py), evaluated by
StandardAuthorizer's rules (coordinator/acl.py). Before the first snapshot a request with a principal
is answered COORDINATOR_LOAD_IN_PROGRESS (retriable) in its API's error shape: Kafka's
StandardAuthorizer throws AuthorizerNotReadyException (retriable) for anyone but a super user until
its initial load completes, and a broker does not open its listeners before then; the super users
are not known here before the snapshot.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .acl import AclOperation as Op
from .acl import Authorizer
from .acl import ResourceType as RT
from .api import lookup
from .errors import Errors
from .messages import Request
from .protocol.loader import shape

CLUSTER_NAME = "kafka-cluster"
# Topic.isInternal
INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state", "__share_group_state"})
# AclEntry.supportedOperations(GROUP), for authorizedOperations (Utils.to32BitField of the codes).
GROUP_OPERATIONS = (Op.READ, Op.DESCRIBE, Op.DELETE, Op.DESCRIBE_CONFIGS, Op.ALTER_CONFIGS)
NOT_READY_MESSAGE = "the coordinator has not received the broker's ACLs yet (authorizer not ready); retry"


@dataclass
class Verdict:
    response: dict | None = None
    body: dict | None = None
    merge: Callable[[dict], dict] | None = None


class Context:
    """The request's principal and host with the partition's authorizer (AuthHelper)."""

    __slots__ = ("authorizer", "principal", "host", "spec", "request", "metadata")

    def __init__(self, authorizer: Authorizer, request: Request, spec, metadata=None):
        self.metadata = metadata  # the partition's topic metadata (coordinator/metadata.py)
        self.authorizer = authorizer
        self.principal: str = request.principal or ""
        self.host = client_address(request.client_host)
        self.spec = spec
        self.request = request

    def allowed(self, op: Op, rt: RT, name: str) -> bool:
        return self.authorizer.authorize(self.principal, self.host, op, rt, name)

    def topic_name(self, topic: dict) -> str:
        """A request topic's name; one named by id only (OffsetCommit/OffsetFetch v10) takes it
        from the metadata, as KafkaApis does before authorising ("" if unknown)."""
        name = topic.get("name") or ""
        if not name and topic.get("topicId") and self.metadata is not None:
            name = self.metadata.topic_name(topic["topicId"]) or ""
        return name

    def cluster(self, op: Op) -> bool:
        return self.allowed(op, RT.CLUSTER, CLUSTER_NAME)

    def authorized_operations(self, rt: RT, name: str, ops=GROUP_OPERATIONS) -> int:
        return sum(1 << int(op) for op in ops if self.allowed(op, rt, name))

    def error(self, error, message: str | None = None) -> Verdict:
        """The whole request answered with `error` in its API's shape (getErrorResponse)."""
        r = self.request
        return Verdict(response=self.spec.error_response(r.api_version, r.body, error, message))

    def any_topic_write(self) -> bool:
        """authorizeByResourceType(WRITE, TOPIC) (Authorizer's default, as StandardAuthorizer uses it)."""
        return authorize_by_resource_type(self.authorizer, self.principal, self.host, Op.WRITE, RT.TOPIC)


def client_address(client_host: str) -> str:
    """The client's IP address as an ACL's host names it ("127.0.0.1") from the request's
    `clientHost` (InetAddress.toString(): "[host name]/address")."""
    return client_host.rpartition("/")[2]


def authorize_by_resource_type(authorizer: Authorizer, principal: str, host: str, op: Op, rt: RT) -> bool:
    """Kafka's Authorizer.authorizeByResourceType (its default, which StandardAuthorizer keeps):
    whether the principal may perform `op` on at least one resource of the type: allowed on the
    resource "hardcode"; else an ALLOW binding for it (principal or User:*, host or *, the operation
    or ALL) that no DENY covers: a literal DENY of the same name, a wildcard DENY, or a prefixed DENY
    of a prefix of it."""
    from .acl import WILDCARD, WILDCARD_PRINCIPAL, AclPermissionType, PatternType

    # Kafka's default first authorises the resource "hardcode": a super user, an ALLOW that
    # matches any name (wildcard, a prefix of it), or allow.everyone.if.no.acl.found with no ACL
    # matching it, is allowed at once.
    if authorizer.authorize(principal, host, op, rt, "hardcode"):
        return True
    applicable = [
        a
        for a in authorizer._by_type.get(rt, ())
        if a.principal in (principal, WILDCARD_PRINCIPAL) and a.host in (host, WILDCARD) and a.operation in (op, Op.ALL)
    ]
    deny = [a for a in applicable if a.permission == AclPermissionType.DENY]
    if any(a.pattern_type == PatternType.LITERAL and a.resource_name == WILDCARD for a in deny):
        return False
    deny_literal = {a.resource_name for a in deny if a.pattern_type == PatternType.LITERAL}
    deny_prefixes = [a.resource_name for a in deny if a.pattern_type == PatternType.PREFIXED]
    for a in applicable:
        if a.permission != AclPermissionType.ALLOW:
            continue
        if a.pattern_type == PatternType.LITERAL and a.resource_name == WILDCARD:
            return True
        name = a.resource_name
        if any(name.startswith(p) for p in deny_prefixes):
            continue
        if a.pattern_type == PatternType.LITERAL and name in deny_literal:
            continue
        return True
    return False


# ====================================================================== the checks
def _group(op: Op, field: str = "groupId"):
    """One group, the whole request (JoinGroup, SyncGroup, Heartbeat, LeaveGroup, ...)."""

    def check(ctx: Context, body: dict) -> Verdict | None:
        if not ctx.allowed(op, RT.GROUP, body[field]):
            return ctx.error(Errors.GROUP_AUTHORIZATION_FAILED)
        return None

    return check


def _txn_id_write(ctx: Context, body: dict) -> Verdict | None:
    if not ctx.allowed(Op.WRITE, RT.TRANSACTIONAL_ID, body["transactionalId"]):
        return ctx.error(Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    return None


def _cluster_action(ctx: Context, body: dict) -> Verdict | None:
    """Broker-to-broker APIs (the share coordinator's state APIs): CLUSTER_ACTION on the cluster."""
    if not ctx.cluster(Op.CLUSTER_ACTION):
        return ctx.error(Errors.CLUSTER_AUTHORIZATION_FAILED)
    return None


def _find_coordinator(ctx: Context, body: dict) -> Verdict | None:
    """getCoordinator: DESCRIBE on the group (key type 0) or transactional id (1); a share key (2)
    needs CLUSTER_ACTION (a thrown ClusterAuthorizationException: the whole answer)."""
    key_type, version = body.get("keyType", 0), ctx.request.api_version  # v0: groups only
    if key_type == 2:
        return _cluster_action(ctx, body)
    if key_type not in (0, 1):
        return None
    rt, error = (
        (RT.GROUP, Errors.GROUP_AUTHORIZATION_FAILED)
        if key_type == 0
        else (RT.TRANSACTIONAL_ID, Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    )
    if version < 4:
        return None if ctx.allowed(Op.DESCRIBE, rt, body["key"]) else ctx.error(error)
    keys = body["coordinatorKeys"]
    denied = {k for k in keys if not ctx.allowed(Op.DESCRIBE, rt, k)}
    if not denied:
        return None

    def entry(key: str) -> dict:
        return {"key": key, "nodeId": -1, "host": "", "port": -1, "errorCode": error.code, "errorMessage": None}

    allowed = [k for k in keys if k not in denied]
    if not allowed:
        return Verdict(response={"throttleTimeMs": 0, "coordinators": [entry(k) for k in keys]})

    def merge(response: dict) -> dict:
        # In the request's order, as KafkaApis answers key by key.
        found = iter(response["coordinators"])
        response["coordinators"] = [entry(k) if k in denied else next(found) for k in keys]
        return response

    return Verdict(body={**body, "coordinatorKeys": allowed}, merge=merge)


def _topic_partitions(name_key: str = "name", partitions_key: str = "partitions", index: str = "partitionIndex"):
    """A topic's partitions as a response lists them with an error."""

    def answer(topic: dict, error, extra: dict | None = None) -> dict:
        parts = [
            {
                "partitionIndex": p[index] if isinstance(p, dict) else p,
                "errorCode": error.code,
                **(extra or {}),
            }
            for p in topic[partitions_key]
        ]
        out = {name_key: topic.get(name_key) or "", "partitions": parts}
        if "topicId" in topic:
            out["topicId"] = topic["topicId"]
        return out

    return answer


_denied_partitions = _topic_partitions()


def _group_then_topics(group_op: Op, topic_op: Op, group_field: str = "groupId", txn: bool = False):
    """OffsetCommit, OffsetDelete, TxnOffsetCommit: the group (and for TxnOffsetCommit first the
    transactional id), the whole answer; then each topic, TOPIC_AUTHORIZATION_FAILED on each of its
    partitions, the authorised topics going to the coordinator and its answer merged after them."""

    def check(ctx: Context, body: dict) -> Verdict | None:
        if txn and not ctx.allowed(Op.WRITE, RT.TRANSACTIONAL_ID, body["transactionalId"]):
            return ctx.error(Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
        if not ctx.allowed(group_op, RT.GROUP, body[group_field]):
            return ctx.error(Errors.GROUP_AUTHORIZATION_FAILED)
        denied, allowed = [], []
        for topic in body["topics"]:
            name = ctx.topic_name(topic)
            if name and not ctx.allowed(topic_op, RT.TOPIC, name):
                denied.append(topic)
            else:
                allowed.append(topic)
        if not denied:
            return None
        answers = [_denied_partitions(t, Errors.TOPIC_AUTHORIZATION_FAILED) for t in denied]
        if ctx.spec.name == "OffsetDelete":
            for t in answers:
                t.pop("topicId", None)
        if not allowed:
            return Verdict(response={"throttleTimeMs": 0, "errorCode": 0, "topics": answers})

        def merge(response: dict) -> dict:
            if "topics" in response:
                response["topics"] = answers + response["topics"]
            return response

        return Verdict(body={**body, "topics": allowed}, merge=merge)

    return check


def _offset_fetch(ctx: Context, body: dict) -> Verdict | None:
    """Per group DESCRIBE (GROUP_AUTHORIZATION_FAILED for that group); listed topics without
    DESCRIBE answered TOPIC_AUTHORIZATION_FAILED after the coordinator's; an all-topics fetch
    leaves out the topics the principal may not describe."""
    from .group.classic.apis import fetch_group_error, fetch_partition, request_fetch_groups

    version = ctx.request.api_version
    groups = request_fetch_groups(version, body)
    plan: list[tuple[str, Any]] = []  # per group: ("denied", entry) | ("ask", denied topic answers, all_topics)
    asked = []
    changed = False
    for g in groups:
        if not ctx.allowed(Op.DESCRIBE, RT.GROUP, g["groupId"]):
            plan.append(("denied", fetch_group_error(version, g, Errors.GROUP_AUTHORIZATION_FAILED)))
            changed = True
            continue
        if g["topics"] is None:
            plan.append(("all", None))
            asked.append(g)
            changed = True
            continue
        keep, errors = [], []
        for t in g["topics"]:
            name = ctx.topic_name(t)
            if name and not ctx.allowed(Op.DESCRIBE, RT.TOPIC, name):
                answer = {
                    "partitions": [
                        fetch_partition(version, p, error=Errors.TOPIC_AUTHORIZATION_FAILED)
                        for p in t["partitionIndexes"]
                    ]
                }
                answer.update({"topicId": t["topicId"]} if version >= 10 else {"name": t["name"]})
                errors.append(answer)
            else:
                keep.append(t)
        if errors:
            changed = True
        plan.append(("ask", errors))
        asked.append({**g, "topics": keep})
    if not changed:
        return None
    if version >= 8:
        new_body = {**body, "groups": [_fetch_group_body(g) for g in asked]}
    elif asked:
        new_body = {**body, "topics": asked[0]["topics"]}
    else:
        new_body = None

    def finish(answers: list[dict]) -> list[dict]:
        out, it = [], iter(answers)
        for kind, extra in plan:
            if kind == "denied":
                out.append(extra)
                continue
            g = next(it)
            if g.get("errorCode", 0) == 0:
                if kind == "all":
                    g["topics"] = [t for t in g["topics"] if _fetched_topic_allowed(ctx, t)]
                else:
                    g["topics"] = g["topics"] + extra
            out.append(g)
        return out

    if new_body is None:  # v0-7, the one group denied
        return Verdict(response=_offset_fetch_shape(version, finish([])))

    def merge(response: dict) -> dict:
        if version >= 8:
            response["groups"] = finish(response["groups"])
        else:
            [g] = finish([{"topics": response.get("topics", []), "errorCode": response.get("errorCode", 0)}])
            response["topics"] = g["topics"]
        return response

    return Verdict(body=new_body, merge=merge)


def _fetch_group_body(g: dict) -> dict:
    out = {"groupId": g["groupId"], "topics": g["topics"]}
    if g.get("memberId") is not None:
        out["memberId"] = g["memberId"]
    if g.get("memberEpoch", -1) != -1:
        out["memberEpoch"] = g["memberEpoch"]
    return out


def _offset_fetch_shape(version: int, groups: list[dict]) -> dict:
    from .group.classic.apis import offset_fetch_response

    return offset_fetch_response(version, groups)


def _fetched_topic_allowed(ctx: Context, topic: dict) -> bool:
    name = topic.get("name") or ctx.topic_name(topic)
    return not name or ctx.allowed(Op.DESCRIBE, RT.TOPIC, name)


def _describe_groups(field: str, group_error: Callable[[str, object], dict], operations: bool = True):
    """DescribeGroups and the KIP-848 describes: per group DESCRIBE, the denied groups first with
    GROUP_AUTHORIZATION_FAILED, then the coordinator's answers (authorizedOperations computed for
    the principal, where asked)."""

    def check(ctx: Context, body: dict) -> Verdict | None:
        ids = body[field]
        denied = [g for g in ids if not ctx.allowed(Op.DESCRIBE, RT.GROUP, g)]
        include_ops = operations and body.get("includeAuthorizedOperations", False)
        if not denied and not include_ops and ctx.spec.name in ("DescribeGroups", "DescribeShareGroupOffsets"):
            return None
        answers = [group_error(g, Errors.GROUP_AUTHORIZATION_FAILED) for g in denied]
        allowed = [g for g in ids if g not in set(denied)]
        version = ctx.request.api_version

        def merge(response: dict) -> dict:
            results = response.get("groups", [])
            for g in results:
                if include_ops and g.get("errorCode", 0) == 0 and (ctx.spec.name != "DescribeGroups" or version >= 3):
                    g["authorizedOperations"] = ctx.authorized_operations(RT.GROUP, g["groupId"])
            results = [_describe_topics_checked(ctx, g) for g in results]
            response["groups"] = answers + results
            return response

        if not allowed:
            return Verdict(response=merge({"throttleTimeMs": 0, "groups": []}))
        return Verdict(body={**body, field: allowed}, merge=merge)

    return check


def _describe_topics_checked(ctx: Context, group: dict) -> dict:
    """ConsumerGroupDescribe / ShareGroupDescribe / StreamsGroupDescribe: a group whose members'
    assignments (or topology) name a topic the principal may not describe is answered
    TOPIC_AUTHORIZATION_FAILED without its members."""
    name = ctx.spec.name
    if name not in ("ConsumerGroupDescribe", "ShareGroupDescribe", "StreamsGroupDescribe"):
        return group
    topics: set[str] = set()
    if name == "StreamsGroupDescribe":
        topology = group.get("topology") or {}
        for s in topology.get("subtopologies") or []:
            topics.update(s.get("sourceTopics") or [])
            topics.update(s.get("repartitionSinkTopics") or [])
            topics.update(t["name"] for t in s.get("repartitionSourceTopics") or [])
            topics.update(t["name"] for t in s.get("stateChangelogTopics") or [])
        message = "The described group uses topics that the client is not authorized to describe."
    else:
        for m in group.get("members") or []:
            for key in ("assignment", "targetAssignment"):
                for tp in (m.get(key) or {}).get("topicPartitions") or []:
                    topics.add(tp.get("topicName", ""))
        message = "The group has described topic(s) that the client is not authorized to describe."
    if all(ctx.allowed(Op.DESCRIBE, RT.TOPIC, t) for t in topics):
        return group
    out = {
        "groupId": group["groupId"],
        "errorCode": Errors.TOPIC_AUTHORIZATION_FAILED.code,
        "errorMessage": message,
        "members": [],
    }
    if name == "StreamsGroupDescribe":
        out["topology"] = None
    return _filled_group(ctx, out)


def _filled_group(ctx: Context, group: dict) -> dict:
    """A describe's group error entry with every field of the response's group (defaults)."""
    from .protocol.loader import shape

    response = shape(ctx.spec.name + "Response", ctx.request.api_version, {"throttleTimeMs": 0, "groups": [group]})
    return response["groups"][0]


def _described_group_error(group_id: str, error) -> dict:
    """DescribeGroupsResponse.groupError and the KIP-848 describes' error entry (the rest: the
    message's defaults)."""
    return {"groupId": group_id, "errorCode": error.code, "errorMessage": None, "members": []}


def _list_groups(ctx: Context, body: dict) -> Verdict | None:
    """CLUSTER DESCRIBE lists every group; otherwise only the groups the principal may describe."""
    if ctx.cluster(Op.DESCRIBE):
        return None

    def merge(response: dict) -> dict:
        response["groups"] = [g for g in response.get("groups", []) if ctx.allowed(Op.DESCRIBE, RT.GROUP, g["groupId"])]
        return response

    return Verdict(merge=merge)


def _delete_groups(ctx: Context, body: dict) -> Verdict | None:
    ids = body["groupsNames"]
    denied = [g for g in ids if not ctx.allowed(Op.DELETE, RT.GROUP, g)]
    if not denied:
        return None
    answers = [{"groupId": g, "errorCode": Errors.GROUP_AUTHORIZATION_FAILED.code} for g in denied]
    allowed = [g for g in ids if g not in set(denied)]
    if not allowed:
        return Verdict(response={"throttleTimeMs": 0, "results": answers})

    def merge(response: dict) -> dict:
        response["results"] = response.get("results", []) + answers
        return response

    return Verdict(body={**body, "groupsNames": allowed}, merge=merge)


def _init_producer_id(ctx: Context, body: dict) -> Verdict | None:
    """A transactional id: WRITE on it (and TWO_PHASE_COMMIT for enable2Pc); an idempotent producer:
    IDEMPOTENT_WRITE on the cluster, or WRITE on any topic."""
    txn_id = body.get("transactionalId")
    if txn_id is not None:
        if not ctx.allowed(Op.WRITE, RT.TRANSACTIONAL_ID, txn_id):
            return ctx.error(Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
        if body.get("enable2Pc") and not ctx.allowed(Op.TWO_PHASE_COMMIT, RT.TRANSACTIONAL_ID, txn_id):
            return ctx.error(Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
        return None
    if ctx.cluster(Op.IDEMPOTENT_WRITE) or ctx.any_topic_write():
        return None
    return ctx.error(Errors.CLUSTER_AUTHORIZATION_FAILED)


def _add_partitions_to_txn(ctx: Context, body: dict) -> Verdict | None:
    """v0-3 (clients): WRITE on the transactional id, then on each topic; any denied topic fails
    the transaction (TOPIC_AUTHORIZATION_FAILED on its partitions, OPERATION_NOT_ATTEMPTED on the
    others, before the metadata's UNKNOWN_TOPIC_OR_PARTITION). v4+ is broker-to-broker:
    CLUSTER_ACTION."""
    if ctx.request.api_version >= 4:
        return _cluster_action(ctx, body)
    if not ctx.allowed(Op.WRITE, RT.TRANSACTIONAL_ID, body["v3AndBelowTransactionalId"]):
        return ctx.error(Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    topics = body["v3AndBelowTopics"]
    # Kafka authorises only the non-internal topics: an internal one is never authorised.
    denied = {
        t["name"] for t in topics if t["name"] in INTERNAL_TOPICS or not ctx.allowed(Op.WRITE, RT.TOPIC, t["name"])
    }
    if not denied:
        return None
    metadata = ctx.metadata
    results = []
    for t in topics:
        parts = []
        for p in t["partitions"]:
            if t["name"] in denied:
                error = Errors.TOPIC_AUTHORIZATION_FAILED
            elif metadata is not None and not metadata.exists(t["name"], p):
                error = Errors.UNKNOWN_TOPIC_OR_PARTITION
            else:
                error = Errors.OPERATION_NOT_ATTEMPTED
            parts.append({"partitionIndex": p, "partitionErrorCode": error.code})
        results.append({"name": t["name"], "resultsByPartition": parts})
    return Verdict(response={"throttleTimeMs": 0, "errorCode": 0, "resultsByTopicV3AndBelow": results})


def _add_offsets_to_txn(ctx: Context, body: dict) -> Verdict | None:
    if not ctx.allowed(Op.WRITE, RT.TRANSACTIONAL_ID, body["transactionalId"]):
        return ctx.error(Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    if not ctx.allowed(Op.READ, RT.GROUP, body["groupId"]):
        return ctx.error(Errors.GROUP_AUTHORIZATION_FAILED)
    return None


def _describe_transactions(ctx: Context, body: dict) -> Verdict | None:
    """Per transactional id DESCRIBE (TRANSACTIONAL_ID_AUTHORIZATION_FAILED in its entry, in the
    request's order); each transaction's topics only those the principal may describe."""
    ids = body["transactionalIds"]
    denied = {t for t in ids if not ctx.allowed(Op.DESCRIBE, RT.TRANSACTIONAL_ID, t)}

    def entry(txn_id: str) -> dict:  # the other fields: the message's defaults, as Kafka's
        return {"errorCode": Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED.code, "transactionalId": txn_id}

    allowed = [t for t in ids if t not in denied]

    def merge(response: dict) -> dict:
        found = iter(response.get("transactionStates", []))
        states = [entry(t) if t in denied else next(found) for t in ids]
        for s in states:
            s["topics"] = [t for t in s.get("topics") or [] if ctx.allowed(Op.DESCRIBE, RT.TOPIC, t["topic"])]
        response["transactionStates"] = states
        return response

    if not allowed:
        return Verdict(response=merge({"throttleTimeMs": 0, "transactionStates": []}))
    return Verdict(body={**body, "transactionalIds": allowed}, merge=merge)


def _list_transactions(ctx: Context, body: dict) -> Verdict | None:
    def merge(response: dict) -> dict:
        response["transactionStates"] = [
            s
            for s in response.get("transactionStates", [])
            if ctx.allowed(Op.DESCRIBE, RT.TRANSACTIONAL_ID, s["transactionalId"])
        ]
        return response

    return Verdict(merge=merge)


def _heartbeat_with_topics(subscribed: Callable[[dict], list[str]]):
    """ConsumerGroupHeartbeat, ShareGroupHeartbeat, StreamsGroupHeartbeat: READ on the group, then
    DESCRIBE on every topic the request names, or TOPIC_AUTHORIZATION_FAILED for the whole answer."""

    def check(ctx: Context, body: dict) -> Verdict | None:
        if not ctx.allowed(Op.READ, RT.GROUP, body["groupId"]):
            return ctx.error(Errors.GROUP_AUTHORIZATION_FAILED)
        topics = subscribed(body)
        if topics and not all(ctx.allowed(Op.DESCRIBE, RT.TOPIC, t) for t in set(topics)):
            return ctx.error(Errors.TOPIC_AUTHORIZATION_FAILED)
        return None

    return check


def _streams_topics(body: dict) -> list[str]:
    topology = body.get("topology")
    if not topology:
        return []
    topics: list[str] = []
    for s in topology.get("subtopologies") or []:
        topics += s.get("sourceTopics") or []
        topics += s.get("repartitionSinkTopics") or []
        topics += [t["name"] for t in s.get("repartitionSourceTopics") or []]
        topics += [t["name"] for t in s.get("stateChangelogTopics") or []]
    return topics


# ConfigResource.Type -> (the ACL resource it is authorised on, the error when denied)
_CONFIG_RESOURCES = {
    2: (RT.TOPIC, Errors.TOPIC_AUTHORIZATION_FAILED),
    4: (RT.CLUSTER, Errors.CLUSTER_AUTHORIZATION_FAILED),
    8: (RT.CLUSTER, Errors.CLUSTER_AUTHORIZATION_FAILED),
    16: (RT.CLUSTER, Errors.CLUSTER_AUTHORIZATION_FAILED),
    32: (RT.GROUP, Errors.GROUP_AUTHORIZATION_FAILED),
}


def _config_denied(ctx: Context, resource: dict, op: Op):
    """The error of a config resource the principal may not describe / alter, or None."""
    kind = _CONFIG_RESOURCES.get(resource["resourceType"])
    if kind is None:
        return None
    rt, error = kind
    if resource["resourceType"] == 8 and op == Op.ALTER_CONFIGS:
        op = Op.CLUSTER_ACTION  # ControllerApis: a broker logger's change needs CLUSTER_ACTION
    name = CLUSTER_NAME if rt == RT.CLUSTER else resource["resourceName"]
    return None if ctx.allowed(op, rt, name) else error


def _per_config_resource(ctx: Context, body: dict, op: Op, field: str, denied_first: bool, **extra) -> Verdict | None:
    """`op` on each resource of a config request: the denied ones answered in `field` (with
    `extra`), before or after the others' answers."""
    denied, allowed = [], []
    for r in body["resources"]:
        error = _config_denied(ctx, r, op)
        if error is None:
            allowed.append(r)
        else:
            denied.append(
                {
                    "errorCode": error.code,
                    "errorMessage": error.message,
                    "resourceType": r["resourceType"],
                    "resourceName": r["resourceName"],
                    **extra,
                }
            )
    if not denied:
        return None
    if not allowed:
        return Verdict(response={"throttleTimeMs": 0, field: denied})

    def merge(response: dict) -> dict:
        answered = response.get(field, [])
        response[field] = denied + answered if denied_first else answered + denied
        return response

    return Verdict(body={**body, "resources": allowed}, merge=merge)


def _describe_configs(ctx: Context, body: dict) -> Verdict | None:
    """ConfigHelper: DESCRIBE_CONFIGS per resource (GROUP on the group, TOPIC on the topic, the
    cluster for broker ones); the denied resources answered after the others, with no configs."""
    return _per_config_resource(ctx, body, Op.DESCRIBE_CONFIGS, "results", denied_first=False, configs=[])


def _incremental_alter_configs(ctx: Context, body: dict) -> Verdict | None:
    """ControllerApis.authorizeAlterResource: ALTER_CONFIGS per resource; the denied resources
    answered first, with the error's default message."""
    return _per_config_resource(ctx, body, Op.ALTER_CONFIGS, "responses", denied_first=True)


def _describe_share_group_offsets(ctx: Context, body: dict) -> Verdict | None:
    """Per group DESCRIBE (GROUP_AUTHORIZATION_FAILED in its entry); listed topics without DESCRIBE
    answered TOPIC_AUTHORIZATION_FAILED after the coordinator's, all topics: only the described."""
    plan: list[tuple[str, Any]] = []
    asked = []
    changed = False
    for g in body["groups"]:
        if not ctx.allowed(Op.DESCRIBE, RT.GROUP, g["groupId"]):
            plan.append(("denied", {"groupId": g["groupId"], "errorCode": Errors.GROUP_AUTHORIZATION_FAILED.code}))
            changed = True
            continue
        if g["topics"] is None:
            plan.append(("all", None))
            asked.append(g)
            changed = True
            continue
        keep, errors = [], []
        for t in g["topics"]:
            if ctx.allowed(Op.DESCRIBE, RT.TOPIC, t["topicName"]):
                keep.append(t)
            else:
                errors.append(
                    {
                        "topicName": t["topicName"],
                        "topicId": (ctx.metadata.topic_id(t["topicName"]) if ctx.metadata else None)
                        or "AAAAAAAAAAAAAAAAAAAAAA",
                        "partitions": [
                            {
                                "partitionIndex": p,
                                "startOffset": -1,
                                "leaderEpoch": -1,
                                "errorCode": Errors.TOPIC_AUTHORIZATION_FAILED.code,
                                "errorMessage": Errors.TOPIC_AUTHORIZATION_FAILED.message,
                            }
                            for p in t["partitions"]
                        ],
                    }
                )
        changed = changed or bool(errors)
        plan.append(("ask", errors))
        asked.append({**g, "topics": keep})
    if not changed:
        return None

    def merge(response: dict) -> dict:
        out, it = [], iter(response.get("groups", []))
        for kind, extra in plan:
            if kind == "denied":
                out.append(extra)
                continue
            g = next(it, None)
            if g is None:
                continue
            if g.get("errorCode", 0) == 0:
                if kind == "all":
                    g["topics"] = [t for t in g["topics"] if ctx.allowed(Op.DESCRIBE, RT.TOPIC, t["topicName"])]
                else:
                    g["topics"] = g["topics"] + extra
            out.append(g)
        response["groups"] = out
        return response

    if not asked:
        return Verdict(response=merge({"throttleTimeMs": 0, "groups": []}))
    return Verdict(body={**body, "groups": asked}, merge=merge)


def _alter_share_group_offsets(ctx: Context, body: dict) -> Verdict | None:
    """READ on the group (the whole answer), then READ per topic: TOPIC_AUTHORIZATION_FAILED on
    each partition of a denied topic, merged before the coordinator's answer."""
    if not ctx.allowed(Op.READ, RT.GROUP, body["groupId"]):
        # AlterShareGroupOffsetsRequest.getErrorResponse: the error's default message too.
        return ctx.error(Errors.GROUP_AUTHORIZATION_FAILED, Errors.GROUP_AUTHORIZATION_FAILED.message)
    denied = [t for t in body["topics"] if not ctx.allowed(Op.READ, RT.TOPIC, t["topicName"])]
    if not denied:
        return None
    error = Errors.TOPIC_AUTHORIZATION_FAILED
    answers = [
        {
            "topicName": t["topicName"],
            "topicId": (ctx.metadata.topic_id(t["topicName"]) if ctx.metadata else None) or "AAAAAAAAAAAAAAAAAAAAAA",
            "partitions": [
                {"partitionIndex": p["partitionIndex"], "errorCode": error.code, "errorMessage": error.message}
                for p in t["partitions"]
            ],
        }
        for t in denied
    ]
    allowed = [t for t in body["topics"] if t not in denied]

    def merge(response: dict) -> dict:
        if response.get("errorCode", 0) == 0:
            response["responses"] = answers + response.get("responses", [])
        return response

    if not allowed:
        return Verdict(response={"throttleTimeMs": 0, "errorCode": 0, "errorMessage": None, "responses": answers})
    return Verdict(body={**body, "topics": allowed}, merge=merge)


def _delete_share_group_offsets(ctx: Context, body: dict) -> Verdict | None:
    """DELETE on the group (the whole answer), then READ per topic: TOPIC_AUTHORIZATION_FAILED for a
    denied topic, before the coordinator's answers."""
    if not ctx.allowed(Op.DELETE, RT.GROUP, body["groupId"]):
        return ctx.error(Errors.GROUP_AUTHORIZATION_FAILED, Errors.GROUP_AUTHORIZATION_FAILED.message)
    denied = [t for t in body["topics"] if not ctx.allowed(Op.READ, RT.TOPIC, t["topicName"])]
    if not denied:
        return None
    error = Errors.TOPIC_AUTHORIZATION_FAILED
    answers = [
        {
            "topicName": t["topicName"],
            "topicId": "AAAAAAAAAAAAAAAAAAAAAA",
            "errorCode": error.code,
            "errorMessage": error.message,
        }
        for t in denied
    ]
    allowed = [t for t in body["topics"] if t not in denied]

    def merge(response: dict) -> dict:
        if response.get("errorCode", 0) == 0:
            response["responses"] = answers + response.get("responses", [])
        return response

    if not allowed:
        return Verdict(response={"throttleTimeMs": 0, "errorCode": 0, "errorMessage": None, "responses": answers})
    return Verdict(body={**body, "topics": allowed}, merge=merge)


CHECKS: dict[str, Callable[[Context, dict], Verdict | None]] = {
    "FindCoordinator": _find_coordinator,
    "JoinGroup": _group(Op.READ),
    "SyncGroup": _group(Op.READ),
    "Heartbeat": _group(Op.READ),
    "LeaveGroup": _group(Op.READ),
    "OffsetCommit": _group_then_topics(Op.READ, Op.READ),
    "OffsetFetch": _offset_fetch,
    "OffsetDelete": _group_then_topics(Op.DELETE, Op.READ),
    "DescribeGroups": _describe_groups("groups", _described_group_error),
    "ListGroups": _list_groups,
    "DeleteGroups": _delete_groups,
    "InitProducerId": _init_producer_id,
    "AddPartitionsToTxn": _add_partitions_to_txn,
    "AddOffsetsToTxn": _add_offsets_to_txn,
    "EndTxn": _txn_id_write,
    "TxnOffsetCommit": _group_then_topics(Op.READ, Op.READ, txn=True),
    "DescribeTransactions": _describe_transactions,
    "ListTransactions": _list_transactions,
    "ConsumerGroupHeartbeat": _heartbeat_with_topics(lambda b: b.get("subscribedTopicNames") or []),
    "ConsumerGroupDescribe": _describe_groups("groupIds", _described_group_error),
    "ShareGroupHeartbeat": _heartbeat_with_topics(lambda b: b.get("subscribedTopicNames") or []),
    "ShareGroupDescribe": _describe_groups("groupIds", _described_group_error),
    "StreamsGroupHeartbeat": _heartbeat_with_topics(_streams_topics),
    "StreamsGroupDescribe": _describe_groups("groupIds", _described_group_error),
    "StreamsGroupTopologyDescriptionUpdate": _group(Op.READ),
    # The share coordinator's state APIs are broker-to-broker in Kafka.
    "InitializeShareGroupState": _cluster_action,
    "ReadShareGroupState": _cluster_action,
    "WriteShareGroupState": _cluster_action,
    "DeleteShareGroupState": _cluster_action,
    "ReadShareGroupStateSummary": _cluster_action,
    "DescribeShareGroupOffsets": _describe_share_group_offsets,
    "AlterShareGroupOffsets": _alter_share_group_offsets,
    "DeleteShareGroupOffsets": _delete_share_group_offsets,
    "DescribeConfigs": _describe_configs,
    "IncrementalAlterConfigs": _incremental_alter_configs,
}


def check(acls, metadata, spec, request: Request) -> Verdict | None:
    """None if `request` (which names a principal) may go to its handler as it is, else a Verdict.
    `acls`: the partition's ACL snapshot (coordinator/acl_state.py), `metadata` its topics."""
    authorizer = acls.authorizer()
    if authorizer is None:
        return Verdict(
            response=spec.error_response(
                request.api_version, request.body, Errors.COORDINATOR_LOAD_IN_PROGRESS, NOT_READY_MESSAGE
            )
        )
    if request.principal in authorizer.super_users:
        return None
    fn = CHECKS.get(spec.name)
    if fn is None:
        return None
    return fn(Context(authorizer, request, spec, metadata), request.body)


def answer_parked(acls, metadata, reply, body: dict) -> dict:
    """A parked request's answer, with what its authorisation adds (the denied items, the topics
    left out), worked out again from the request as sent (with the ACLs of now)."""
    entry = acls.take_parked(reply)
    if entry is None:
        return body
    spec = lookup(reply.api_key)
    if spec is None:
        return body
    request = Request(
        reply=reply,
        body=entry["body"],
        time_ms=0,
        client_host=entry["clientHost"],
        principal=entry["principal"],
    )
    verdict = check(acls, metadata, spec, request)
    if verdict is None or verdict.merge is None:
        return body
    return shape(spec.name + "Response", reply.api_version, verdict.merge(body))
