"""Kafka's ACL rules (StandardAuthorizer, 4.4.0's StandardAuthorizerData), sans-IO.

A request's principal may perform an operation on a resource when:

- the principal is a super user (`super.users`, e.g. "User:admin"): always;
- else the ACLs that apply to the resource are those of its type whose pattern matches its name:
  LITERAL with the same name, LITERAL "*" (any name), or PREFIXED with a prefix of the name. Of
  these, one applies to the request when its principal is the request's or "User:*", its host is
  the client's address, "*" or (Kafka 4.4) a CIDR range holding the address, and its operation is the requested one or ALL; an ALLOW ACL for READ,
  WRITE, DELETE or ALTER also allows DESCRIBE, and one for ALTER_CONFIGS also DESCRIBE_CONFIGS (a
  DENY ACL implies nothing: DENY READ does not deny DESCRIBE);
- any applicable DENY: denied, whatever ALLOWs there are; else any applicable ALLOW: allowed;
- none applicable: denied if the resource has any ACL at all (for anyone), otherwise the default
  (`allow.everyone.if.no.acl.found`, false: denied).

The ACLs are the broker's own (read with DescribeAcls and published to the coordinator partitions
by `UpdateAcls`: coordinator/acl_state.py); coordinator/authorization.py applies them to the
coordinator APIs (docs/protocol.md, *Authorisation*).
"""

from __future__ import annotations

import enum
import functools
import ipaddress
from collections.abc import Iterable
from dataclasses import dataclass

WILDCARD = "*"
WILDCARD_PRINCIPAL = "User:*"


class ResourceType(enum.IntEnum):
    """Kafka's codes (org.apache.kafka.common.resource.ResourceType)."""

    TOPIC = 2
    GROUP = 3
    CLUSTER = 4
    TRANSACTIONAL_ID = 5
    DELEGATION_TOKEN = 6
    USER = 7


class PatternType(enum.IntEnum):
    LITERAL = 3
    PREFIXED = 4


class AclOperation(enum.IntEnum):
    """Kafka's codes (org.apache.kafka.common.acl.AclOperation)."""

    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12
    CREATE_TOKENS = 13
    DESCRIBE_TOKENS = 14
    TWO_PHASE_COMMIT = 15


class AclPermissionType(enum.IntEnum):
    DENY = 2
    ALLOW = 3


IMPLIES_DESCRIBE = frozenset(
    {AclOperation.DESCRIBE, AclOperation.READ, AclOperation.WRITE, AclOperation.DELETE, AclOperation.ALTER}
)
IMPLIES_DESCRIBE_CONFIGS = frozenset({AclOperation.DESCRIBE_CONFIGS, AclOperation.ALTER_CONFIGS})


@dataclass(frozen=True)
class Acl:
    """One ACL binding, as DescribeAcls returns it."""

    resource_type: ResourceType
    resource_name: str
    pattern_type: PatternType
    principal: str
    host: str
    operation: AclOperation
    permission: AclPermissionType

    def matches_resource(self, resource_type: ResourceType, name: str) -> bool:
        if self.resource_type != resource_type:
            return False
        if self.pattern_type == PatternType.LITERAL:
            return self.resource_name in (name, WILDCARD)
        return name.startswith(self.resource_name)


@functools.lru_cache(maxsize=256)
def _network(cidr: str) -> ipaddress.IPv4Network | ipaddress.IPv6Network | None:
    try:
        if ":" in cidr:
            return ipaddress.IPv6Network(cidr, strict=False)
        # commons-net's SubnetUtils: dotted-quad address and a 0-32 mask, nothing else.
        address, _, mask = cidr.partition("/")
        if address.count(".") != 3 or not mask.isdigit():
            return None
        return ipaddress.IPv4Network(cidr, strict=False)
    except ValueError:
        return None


def host_in_range(host: str, acl_host: str) -> bool:
    """Kafka 4.4's CidrUtils.isInRange: an ACL's host in CIDR notation ("10.0.0.0/8",
    "2001:db8::/32") matches every client address in its range, network and broadcast addresses
    included (SubnetUtils' inclusive host count); a host that is no CIDR, or an address of the
    other family, matches nothing."""
    if "/" not in acl_host:
        return False
    network = _network(acl_host)
    if network is None:
        return False
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    return address.version == network.version and address in network


def acl_result(acl: Acl, principal: str, host: str, operation: AclOperation) -> AclPermissionType | None:
    """What one ACL of the resource says of the request (None: it does not apply): Kafka's
    StandardAuthorizerData.findResult."""
    if acl.principal not in (principal, WILDCARD_PRINCIPAL):
        return None
    if acl.host != WILDCARD and acl.host != host and not host_in_range(host, acl.host):
        return None
    if acl.operation != AclOperation.ALL:
        if acl.permission == AclPermissionType.ALLOW:
            if operation == AclOperation.DESCRIBE:
                if acl.operation not in IMPLIES_DESCRIBE:
                    return None
            elif operation == AclOperation.DESCRIBE_CONFIGS:
                if acl.operation not in IMPLIES_DESCRIBE_CONFIGS:
                    return None
            elif operation != acl.operation:
                return None
        elif operation != acl.operation:
            return None
    return acl.permission


class Authorizer:
    """The broker's ACLs and super users, evaluated as StandardAuthorizer evaluates them.

    The ACLs are indexed as StandardAuthorizerData's sorted set lets it find them: by (type, name)
    for literal ones (the wildcard "*" is the name "*"), and by (type, prefix) for prefixed ones,
    probed with each prefix length that occurs; so a request's cost does not grow with the ACLs
    of other resources."""

    def __init__(
        self, acls: Iterable[Acl] = (), super_users: Iterable[str] = (), allow_everyone_if_no_acl_found: bool = False
    ):
        self.super_users = frozenset(super_users)
        self.allow_if_no_acl = allow_everyone_if_no_acl_found
        self._by_type: dict[ResourceType, list[Acl]] = {}
        self._literal: dict[tuple[ResourceType, str], list[Acl]] = {}
        self._prefixed: dict[tuple[ResourceType, str], list[Acl]] = {}
        self._prefix_lengths: dict[ResourceType, list[int]] = {}
        for acl in acls:
            self._by_type.setdefault(acl.resource_type, []).append(acl)
            if acl.pattern_type == PatternType.LITERAL:
                self._literal.setdefault((acl.resource_type, acl.resource_name), []).append(acl)
            else:
                self._prefixed.setdefault((acl.resource_type, acl.resource_name), []).append(acl)
        for rt, prefix in self._prefixed:
            self._prefix_lengths.setdefault(rt, []).append(len(prefix))
        for rt, lengths in self._prefix_lengths.items():
            self._prefix_lengths[rt] = sorted(set(lengths))

    def matching(self, resource_type: ResourceType, name: str) -> list[Acl]:
        """The ACLs whose pattern matches the resource (every principal's)."""
        out: list[Acl] = []
        literal = self._literal
        found = literal.get((resource_type, name))
        if found:
            out += found
        if name != WILDCARD:
            found = literal.get((resource_type, WILDCARD))
            if found:
                out += found
        lengths = self._prefix_lengths.get(resource_type)
        if lengths:
            prefixed = self._prefixed
            for n in lengths:
                if n > len(name):
                    break
                found = prefixed.get((resource_type, name[:n]))
                if found:
                    out += found
        return out

    def authorize(
        self, principal: str, host: str, operation: AclOperation, resource_type: ResourceType, name: str
    ) -> bool:
        """Whether `principal` (e.g. "User:alice") from `host` (the client's address, "127.0.0.1")
        may perform `operation` on the resource."""
        if principal in self.super_users:
            return True
        acls = self.matching(resource_type, name)
        allowed = False
        for acl in acls:
            result = acl_result(acl, principal, host, operation)
            if result == AclPermissionType.DENY:
                return False
            if result == AclPermissionType.ALLOW:
                allowed = True
        if allowed:
            return True
        return self.allow_if_no_acl and not acls

    def filter_authorized(
        self, principal: str, host: str, operation: AclOperation, resource_type: ResourceType, names: Iterable[str]
    ) -> list[str]:
        """The names the principal may see (List*/Describe* filtering keeps these)."""
        return [n for n in names if self.authorize(principal, host, operation, resource_type, n)]
