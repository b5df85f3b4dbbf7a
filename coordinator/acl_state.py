"""The broker's ACLs, as the coordinators see them: the newest `UpdateAcls` snapshot.

Kafka's brokers evaluate requests with their StandardAuthorizer, which holds the cluster's ACLs
(from the metadata log) and its `super.users` / `allow.everyone.if.no.acl.found` settings. Here the
ACLs must reach the core deterministically (a replayed batch must authorise as the original did),
so they arrive as a request, like the topic metadata (coordinator/metadata.py): the stream's ACL
publisher reads them from the broker (DescribeAcls) at start and whenever they change, and appends
one `UpdateAcls` request with the broadcast key to the internal channel, signed and stamped
(`acl-publisher`, its epoch, a sequence: coordinator/channel.py drops a replayed or older one). The
stream delivers it to every coordinator partition, which keeps the newest in its state (one
partition-wide chunk, read only by a batch that authorises a request) and evaluates requests with
it (coordinator/acl.py has the rules, coordinator/authorization.py the per-API checks).

The body is always the whole snapshot:
    {"acls": [{"resourceType", "resourceName", "patternType", "principal", "host", "operation",
               "permissionType"}, ...],          Kafka's codes (coordinator/acl.py's enums)
     "superUsers": ["User:admin", ...], "allowEveryoneIfNoAclFound": false}

Only the publisher named `acl-publisher` may send it: a stamped internal record of another
publisher (the metadata publisher, a coordinator partition) is dropped and reported.

Until the first snapshot arrives, `ready` is False: as Kafka's StandardAuthorizer before its initial
load, a request with a principal is then allowed only for a super user (none known yet here), and
answered with a retriable error otherwise (docs/protocol.md, *Authorisation*).
"""

from __future__ import annotations

import hashlib
import json

from . import authorization
from .acl import Acl, AclOperation, AclPermissionType, Authorizer, PatternType, ResourceType
from .chunks import EMPTY_SOURCE, UNCHANGED, LazyMap
from .component import Component
from .messages import Request
from .result import CoordinatorResult

# The stamp's publisher of the only records UpdateAcls is taken from (streaming's ACL publisher).
ACL_PUBLISHER = "acl-publisher"
# The stored form's version (a stored snapshot is {"v": 1, "acls": [[...7 codes and names]], ...}).
STORED_VERSION = 1

# Authorizers built from a snapshot, by the snapshot's digest: a batch that authorises loads the
# partition afresh, and the ACLs rarely change, so the same Authorizer serves every batch (and every
# partition of the worker) until a new snapshot arrives. Bounded: a few snapshots at most are live.
_AUTHORIZERS: dict[str, Authorizer] = {}
_AUTHORIZERS_MAX = 8


def _digest(stored: dict) -> str:
    canonical = json.dumps(
        [stored["acls"], stored["superUsers"], stored["allowEveryoneIfNoAclFound"]], separators=(",", ":")
    )
    return hashlib.sha256(canonical.encode("utf-8", "surrogatepass")).hexdigest()


def authorizer_of(stored: dict) -> Authorizer:
    """The Authorizer of a stored snapshot (cached by its digest)."""
    digest = stored.get("digest") or _digest(stored)
    authorizer = _AUTHORIZERS.get(digest)
    if authorizer is None:
        acls = [
            Acl(ResourceType(rt), name, PatternType(pt), principal, host, AclOperation(op), AclPermissionType(perm))
            for rt, name, pt, principal, host, op, perm in stored["acls"]
        ]
        authorizer = Authorizer(acls, stored["superUsers"], stored["allowEveryoneIfNoAclFound"])
        if len(_AUTHORIZERS) >= _AUTHORIZERS_MAX:
            _AUTHORIZERS.pop(next(iter(_AUTHORIZERS)))
        _AUTHORIZERS[digest] = authorizer
    return authorizer


def stored_snapshot(body: dict) -> tuple[dict | None, str | None]:
    """(the stored form of an UpdateAcls body, None) or (None, why it is refused).

    An ACL of a resource type the coordinators never check (DELEGATION_TOKEN, USER, or a type a
    later Kafka adds) is left out; any other code that is not Kafka's refuses the whole snapshot
    (the previous one stays): a DENY the core could not read must not be dropped silently."""
    acls = []
    for a in body["acls"]:
        try:
            rt = ResourceType(a["resourceType"])
        except ValueError:
            continue
        if rt not in (ResourceType.TOPIC, ResourceType.GROUP, ResourceType.CLUSTER, ResourceType.TRANSACTIONAL_ID):
            continue
        try:
            pt, op, perm = (
                PatternType(a["patternType"]),
                AclOperation(a["operation"]),
                AclPermissionType(a["permissionType"]),
            )
        except ValueError as e:
            return None, f"ACL {json.dumps(a, sort_keys=True)[:500]}: {e}"
        acls.append([int(rt), a["resourceName"], int(pt), a["principal"], a["host"], int(op), int(perm)])
    acls.sort()
    stored = {
        "v": STORED_VERSION,
        "acls": acls,
        "superUsers": sorted(set(body["superUsers"])),
        "allowEveryoneIfNoAclFound": bool(body["allowEveryoneIfNoAclFound"]),
    }
    stored["digest"] = _digest(stored)
    return stored, None


class AclSnapshot(Component):
    name = "acls"
    HANDLERS = {"UpdateAcls": lambda c, request: c.update_acls(request)}

    def __init__(self, partition, metadata=None):
        super().__init__(partition)
        self.metadata = metadata  # the topic metadata (names of topics given by id), for the checks
        self._fetch = None  # reads the stored chunk, when first needed
        self._stored: dict | None = None  # the stored form (stored_snapshot), None before the first
        self._changed = False
        # Authorised requests their handler parked, by reply (`park`): one chunk each, made only
        # when first needed (most batches never look).
        self._parked: LazyMap | None = None

    def _loaded(self) -> AclSnapshot:
        if self._fetch is not None:
            fetch, self._fetch = self._fetch, None
            data = fetch()
            if data is not None:
                self.load_json(data)
            self._changed = False
        return self

    @property
    def ready(self) -> bool:
        """Whether an ACL snapshot has arrived (Kafka: the authorizer's initial load completed)."""
        return self._loaded()._stored is not None

    @property
    def stored(self) -> dict | None:
        return self._loaded()._stored

    def authorizer(self) -> Authorizer | None:
        """The partition's Authorizer, None before the first snapshot."""
        stored = self.stored
        return None if stored is None else authorizer_of(stored)

    def super_user(self, principal: str) -> bool:
        stored = self.stored
        return stored is not None and principal in stored["superUsers"]

    # ------------------------------------------------------------------ parked requests
    # An authorised request whose handler parked it (its answer comes in a later step: a
    # TxnOffsetCommit awaiting its transaction's verification, the share-group offsets admin and a
    # DeleteGroups asking the share coordinator's partitions) keeps here what its answer still
    # needs from the authorisation, worked out again from the request as sent when the answer is
    # sent (coordinator/authorization.py `answer_parked`).
    @property
    def parked(self) -> LazyMap:
        if self._parked is None:
            self._parked = LazyMap(self.p.chunks, "ParkedAuthorization", _plain, _plain)
        return self._parked

    @staticmethod
    def parked_key(reply) -> str:
        return json.dumps([reply.api_key, reply.correlation_id, reply.client_id, reply.reply_to])

    def park(self, reply, request: Request, body: dict) -> None:
        self.parked[self.parked_key(reply)] = {
            "principal": request.principal,
            "clientHost": request.client_host,
            "body": body,
        }

    def take_parked(self, reply) -> dict | None:
        parked = self.parked
        key = self.parked_key(reply)
        return parked.pop(key) if key in parked else None

    def chunk_maps(self) -> tuple:
        return () if self._parked is None else (self._parked,)

    # ------------------------------------------------------------------ authorisation (the runtime's)
    def authorize(self, spec, request: Request):
        """KafkaApis' checks for a request with a principal (coordinator/authorization.py)."""
        return authorization.check(self, self.metadata, spec, request)

    def answer_parked(self, reply, body: dict) -> dict:
        return authorization.answer_parked(self, self.metadata, reply, body)

    # ------------------------------------------------------------------ API
    def update_acls(self, request: Request) -> CoordinatorResult:
        result = CoordinatorResult()
        report = self.p.owns(request.key)  # a broadcast: only its key's owner reports
        if request.publisher != ACL_PUBLISHER:
            if report:
                result.emit(
                    (request.key or "")[:1024],
                    "ForgedInternalRecord",
                    reason=f"UpdateAcls is taken only from the publisher {ACL_PUBLISHER!r}, "
                    f"not {str(request.publisher)[:256]!r}",
                    requestPartition=request.source[0],
                    requestOffset=request.source[1],
                )
            return result
        stored, problem = stored_snapshot(request.body)
        if stored is None:
            if report:
                result.emit(
                    (request.key or "")[:1024],
                    "AclSnapshotRefused",
                    reason=problem,
                    requestPartition=request.source[0],
                    requestOffset=request.source[1],
                )
            return result
        before = self.stored
        if before is None or before.get("digest") != stored["digest"]:
            self._stored, self._changed = stored, True
            if report:
                result.emit(
                    "",
                    "AclsUpdated",
                    acls=len(stored["acls"]),
                    superUsers=len(stored["superUsers"]),
                    allowEveryoneIfNoAclFound=stored["allowEveryoneIfNoAclFound"],
                )
        # No response: a broadcast from the stream's own publisher, nobody awaits an answer.
        return result

    # ------------------------------------------------------------------ snapshot
    def to_json(self) -> dict:
        stored = self.stored
        out = {} if stored is None else dict(stored)
        parked = self.parked
        if parked:
            out["parked"] = {k: parked[k] for k in parked}
        return out

    def load_json(self, data: dict) -> None:
        self._fetch = None
        data = dict(data or {})
        parked = data.pop("parked", None)
        if parked:
            self._parked = LazyMap(EMPTY_SOURCE, "ParkedAuthorization", _plain, _plain)
            self._parked.update(parked)
        if not data:
            self._stored = None
        else:
            if data.get("v", 1) != STORED_VERSION:
                raise ValueError(f"stored ACL snapshot version {data.get('v')} is not {STORED_VERSION}")
            self._stored = data
        self._changed = True

    def load_rest(self, data: dict) -> None:  # (bind_rest is used instead; for completeness)
        self.load_json(data)

    # Chunked storage: decoded on first use (a batch without a principal never reads it).
    def bind_rest(self, fetch) -> None:
        self._fetch = fetch
        self._changed = False

    def rest_json(self):
        if self._fetch is not None or not self._changed:
            return UNCHANGED
        stored = self._stored
        return {} if stored is None else stored


def _plain(*args):
    return args[-1]
