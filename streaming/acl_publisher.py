"""Publishes the broker's ACLs on the internal channel, for the coordinators' authorisation.

The coordinator APIs of a gateway's authenticated clients are authorised as Kafka's
StandardAuthorizer would (coordinator/acl.py) with the broker's own ACLs: managed with kafka-acls
as usual, read here with DescribeAcls (a filter matching every binding) every `[security]
acl_refresh_ms` (0: `[stream] metadata_refresh_ms`). At start, and whenever the answer changed, the
whole snapshot goes to every coordinator partition as one signed, stamped `UpdateAcls` internal
request (publisher `acl-publisher`), on the same path as the topic metadata
(streaming/metadata_publisher.py `BroadcastPublisher`):

    {"acls": [{"resourceType", "resourceName", "patternType", "principal", "host", "operation",
               "permissionType"}, ...],          # Kafka's codes, sorted
     "superUsers": ["User:admin", ...],           # sorted
     "allowEveryoneIfNoAclFound": false}

`super.users` and `allow.everyone.if.no.acl.found` are the authorizer's settings: a broker does not
reveal them (DescribeConfigs answers the first as a sensitive value, without it), so they are the
service's configuration, `[security] super_users` and `allow_everyone_if_no_acl_found`, which must
say what the brokers' server.properties say.

Off (`acls_enabled = false`, the default), the service behaves as a broker without an authorizer:
when the gateway's requests carry principals (`[gateway] principal_key_file`), `OpenAcls` publishes
once the snapshot that allows everything (the coordinators answer a principal only once they have
a snapshot); without principals nothing is published.

DescribeAcls needs DESCRIBE on the CLUSTER resource (or a super user): the publisher's admin
client has its own connection settings (`[security] admin_*`: bootstrap servers, security
protocol, TLS CA, SASL mechanism and credentials), since the service's own listener may not be
the one that carries the authorizer's identities. A broker without an authorizer answers
SECURITY_DISABLED: it lets everyone do everything, and so does the snapshot published then (no
ACLs, `allowEveryoneIfNoAclFound`), with a warning. Any other failure is logged and retried every
refresh, with new clients; the last snapshot stays.
"""

from __future__ import annotations

import json
import logging

from kafka import KafkaAdminClient

from .metadata_publisher import BroadcastPublisher

log = logging.getLogger(__name__)
PUBLISHER = "acl-publisher"
ACL_FIELDS = ("resourceType", "resourceName", "patternType", "principal", "host", "operation", "permissionType")
SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
SASL_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")


def read_acls(admin: KafkaAdminClient) -> list[dict]:
    """Every ACL binding of the broker (DescribeAcls with a filter matching all), in the
    UpdateAcls shape with Kafka's codes, sorted."""
    from kafka.admin import (
        ACLFilter,
        ACLOperation,
        ACLPermissionType,
        ACLResourcePatternType,
        ResourcePatternFilter,
        ResourceType,
    )

    match_all = ACLFilter(
        principal=None,
        host=None,
        operation=ACLOperation.ANY,
        permission_type=ACLPermissionType.ANY,
        resource_pattern=ResourcePatternFilter(ResourceType.ANY, None, ACLResourcePatternType.ANY),
    )
    acls, _ = admin.describe_acls(match_all)  # raises the broker's error (SecurityDisabledError, ...)
    return sorted(
        (
            {
                "resourceType": int(a.resource_pattern.resource_type),
                "resourceName": a.resource_pattern.resource_name,
                "patternType": int(a.resource_pattern.pattern_type),
                "principal": a.principal,
                "host": a.host,
                "operation": int(a.operation),
                "permissionType": int(a.permission_type),
            }
            for a in acls
        ),
        key=lambda acl: tuple(acl[f] for f in ACL_FIELDS),
    )


def acl_snapshot(acls: list[dict], super_users, allow_everyone_if_no_acl_found: bool) -> dict:
    """The UpdateAcls body: the whole state, in a canonical order (so that == says "unchanged")."""
    return {
        "acls": sorted(acls, key=lambda acl: tuple(acl[f] for f in ACL_FIELDS)),
        "superUsers": sorted(set(super_users)),
        "allowEveryoneIfNoAclFound": bool(allow_everyone_if_no_acl_found),
    }


# The snapshot of a broker without an authorizer: every principal may do everything.
OPEN = acl_snapshot([], [], True)


def update_acls_request(snapshot: dict, correlation_id: int) -> bytes:
    return json.dumps(
        {
            "apiKey": "UpdateAcls",
            "apiVersion": 0,
            "correlationId": correlation_id,
            "clientId": f"coordinator-{PUBLISHER}",
            "request": snapshot,
        }
    ).encode()


def parse_super_users(value) -> list[str]:
    """`[security] super_users`: a list, or Kafka's `super.users` string ("User:a;User:b")."""
    if isinstance(value, str):
        value = value.split(";")
    users = [str(u).strip() for u in value or () if str(u).strip()]
    bad = [u for u in users if ":" not in u]
    if bad:
        raise ValueError(f"[security] super_users: principals are 'Type:name' (e.g. User:admin), not {bad}")
    return users


def admin_client_config(security: dict, bootstrap: str) -> dict:
    """kafka-python settings of the publisher's admin client from `[security] admin_*`."""
    protocol = str(security.get("admin_security_protocol") or "PLAINTEXT").upper()
    if protocol not in SECURITY_PROTOCOLS:
        raise ValueError(f"[security] admin_security_protocol = {protocol!r}: one of {', '.join(SECURITY_PROTOCOLS)}")
    out: dict = {
        "bootstrap_servers": security.get("admin_bootstrap_servers") or bootstrap,
        "security_protocol": protocol,
    }
    if protocol in ("SSL", "SASL_SSL") and security.get("admin_ssl_cafile"):
        out["ssl_cafile"] = str(security["admin_ssl_cafile"])
    if protocol.startswith("SASL_"):
        mechanism = str(security.get("admin_sasl_mechanism") or "PLAIN").upper()
        if mechanism not in SASL_MECHANISMS:
            raise ValueError(f"[security] admin_sasl_mechanism = {mechanism!r}: one of {', '.join(SASL_MECHANISMS)}")
        if not security.get("admin_sasl_username"):
            raise ValueError("[security] admin_sasl_username: the identity DescribeAcls is asked as")
        out.update(
            sasl_mechanism=mechanism,
            sasl_plain_username=str(security["admin_sasl_username"]),
            sasl_plain_password=str(security.get("admin_sasl_password") or ""),
        )
    return out


class AclPublisher(BroadcastPublisher):
    """The broker's ACLs, with the configured super users, as UpdateAcls."""

    publisher = PUBLISHER
    what = "ACL refresh"

    def __init__(self, *args, super_users=(), allow_everyone_if_no_acl_found: bool = False, **kwargs):
        self.super_users = parse_super_users(super_users)
        self.allow_everyone_if_no_acl_found = bool(allow_everyone_if_no_acl_found)
        super().__init__(*args, **kwargs)

    @classmethod
    def from_config(cls, cfg, internal_key: bytes, epoch: int) -> AclPublisher | None:
        """The publisher `[security]` asks for: with `acls_enabled`, the broker's ACLs; without,
        when requests may carry a principal (`[gateway] principal_key_file`), `OpenAcls`; else None."""
        security = cfg.security
        if not security.get("acls_enabled"):
            if not cfg.raw.get("gateway", {}).get("principal_key_file"):
                return None  # no request carries a principal: nothing is authorised
            return OpenAcls(cfg.bootstrap, cfg.topics["internal"], 3_600_000, internal_key, epoch=epoch)
        interval = int(security.get("acl_refresh_ms") or 0) or int(cfg.stream["metadata_refresh_ms"])
        return cls(
            cfg.bootstrap,
            cfg.topics["internal"],
            interval,
            internal_key,
            epoch=epoch,
            admin_config=admin_client_config(security, cfg.bootstrap),
            super_users=security.get("super_users") or (),
            allow_everyone_if_no_acl_found=bool(security.get("allow_everyone_if_no_acl_found")),
        )

    def read(self, admin: KafkaAdminClient) -> dict:
        from kafka.errors import SecurityDisabledError

        try:
            acls = read_acls(admin)
        except SecurityDisabledError:
            if self._last != OPEN:
                log.warning(
                    "the broker has no authorizer (DescribeAcls: SECURITY_DISABLED): it allows everything, "
                    "and so do the coordinators ([security] acls_enabled = true needs a broker with one)"
                )
            return OPEN
        return acl_snapshot(acls, self.super_users, self.allow_everyone_if_no_acl_found)

    def request(self, snapshot: dict, correlation_id: int) -> bytes:
        return update_acls_request(snapshot, correlation_id)

    def describe(self, snapshot: dict) -> str:
        return f"published ACLs: {len(snapshot['acls'])} bindings, super users {', '.join(snapshot['superUsers'])}"


class OpenAcls(AclPublisher):
    """`[security] acls_enabled = false` with a gateway's principals: Kafka without an authorizer,
    which lets every principal do everything. The coordinators answer a request with a principal
    only once they have an ACL snapshot (as a broker's authorizer before its first load), so this
    publishes the snapshot that allows everything (no ACLs, `allowEveryoneIfNoAclFound`) once, and
    reads no broker."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, allow_everyone_if_no_acl_found=True, **kwargs)

    def _connect(self):
        from kafka import KafkaProducer

        return None, KafkaProducer(bootstrap_servers=self.bootstrap, acks="all", client_id=f"coordinator-{PUBLISHER}")

    def read(self, admin) -> dict:
        return OPEN

    def describe(self, snapshot: dict) -> str:
        return "published open ACLs ([security] acls_enabled = false): every principal may do everything"
