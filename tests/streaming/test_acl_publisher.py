"""streaming/acl_publisher.py: the UpdateAcls snapshot from DescribeAcls, its change detection, and
its signed, stamped record on the internal channel (a stand-in admin client answers with
kafka-python's own ACL objects; the real broker is in tests/integration/test_gateway_sasl_e2e.py)."""

from __future__ import annotations

import json

import pytest
from kafka.admin import ACL, ACLOperation, ACLPermissionType, ACLResourcePatternType, ResourcePattern, ResourceType

from coordinator.acl import Acl, AclOperation, Authorizer
from coordinator.acl import ResourceType as CoreResourceType
from coordinator.metadata import BROADCAST_KEY
from streaming.acl_publisher import ACL_FIELDS, AclPublisher, admin_client_config, parse_super_users, read_acls
from streaming.config import StreamConfig
from streaming.trust import parse_stamp, verify

KEY = bytes(range(32))


def acl(principal, op, rtype=ResourceType.GROUP, name="orders", pattern=ACLResourcePatternType.LITERAL, allow=True):
    return ACL(
        principal=principal,
        host="*",
        operation=op,
        permission_type=ACLPermissionType.ALLOW if allow else ACLPermissionType.DENY,
        resource_pattern=ResourcePattern(rtype, name, pattern),
    )


class Admin:
    """Answers describe_acls as kafka-python does (a list of ACL objects, NoError); `error`: raises it."""

    def __init__(self, acls=(), error: Exception | None = None):
        self.acls, self.error, self.filters = list(acls), error, []

    def describe_acls(self, acl_filter):
        self.filters.append(acl_filter)
        if self.error is not None:
            raise self.error
        return list(self.acls), None

    def close(self):
        pass


class Producer:
    def __init__(self):
        self.sent = []

    def send(self, topic, key, value, headers):
        self.sent.append((topic, key, value, dict(headers)))

    def flush(self):
        pass

    def close(self, timeout=None):
        pass


def publisher(admin: Admin, **kwargs) -> tuple[AclPublisher, Producer]:
    producer = Producer()

    class Offline(AclPublisher):
        def _connect(self):
            return admin, producer

    return Offline("127.0.0.1:9092", "internal", 1000, KEY, epoch=7, **kwargs), producer


def test_read_acls_asks_for_every_binding_and_keeps_kafkas_codes_in_a_canonical_order():
    admin = Admin(
        [
            acl("User:bob", ACLOperation.WRITE, ResourceType.TRANSACTIONAL_ID, "tx-", ACLResourcePatternType.PREFIXED),
            acl("User:alice", ACLOperation.READ, allow=False),
        ]
    )
    acls = read_acls(admin)
    [f] = admin.filters
    assert (f.principal, f.host, f.operation, f.permission_type) == (
        None,
        None,
        ACLOperation.ANY,
        ACLPermissionType.ANY,
    )
    assert (f.resource_pattern.resource_type, f.resource_pattern.resource_name) == (ResourceType.ANY, None)
    assert f.resource_pattern.pattern_type == ACLResourcePatternType.ANY
    assert acls == [
        {
            "resourceType": 3,
            "resourceName": "orders",
            "patternType": 3,
            "principal": "User:alice",
            "host": "*",
            "operation": 3,
            "permissionType": 2,
        },
        {
            "resourceType": 5,
            "resourceName": "tx-",
            "patternType": 4,
            "principal": "User:bob",
            "host": "*",
            "operation": 4,
            "permissionType": 3,
        },
    ]
    assert all(type(v) is int for a in acls for k, v in a.items() if k not in ("resourceName", "principal", "host"))


def test_publishes_at_start_and_on_change_only_signed_and_stamped():
    admin = Admin([acl("User:alice", ACLOperation.READ)])
    pub, producer = publisher(admin, super_users="User:admin;User:gateway", allow_everyone_if_no_acl_found=False)
    assert pub.publish_if_changed()
    assert not pub.publish_if_changed()  # the same answer
    admin.acls = list(reversed([acl("User:bob", ACLOperation.DESCRIBE), *admin.acls]))
    assert pub.publish_if_changed()
    admin.acls.reverse()  # the broker's order is not a change
    assert not pub.publish_if_changed()
    admin.acls = []  # all deleted: an empty snapshot is published, not skipped
    assert pub.publish_if_changed()
    assert len(producer.sent) == 3
    stamps = []
    for topic, key, value, headers in producer.sent:
        assert topic == "internal" and key == BROADCAST_KEY.encode()
        assert verify(KEY, key, value, headers["coordinator-mac"], headers["coordinator-seq"])
        stamps.append(parse_stamp(headers["coordinator-seq"]))
    assert stamps == [("acl-publisher", 7, 0), ("acl-publisher", 7, 1), ("acl-publisher", 7, 2)]
    first, second, third = (json.loads(v) for _, _, v, _ in producer.sent)
    assert first["apiKey"] == "UpdateAcls" and first["correlationId"] == 1
    assert first["request"]["superUsers"] == ["User:admin", "User:gateway"]
    assert first["request"]["allowEveryoneIfNoAclFound"] is False
    assert [a["principal"] for a in second["request"]["acls"]] == ["User:alice", "User:bob"]
    assert third["request"]["acls"] == []


def test_a_failed_describe_publishes_nothing_and_the_next_success_does():
    from kafka.errors import ClusterAuthorizationFailedError

    admin = Admin(error=ClusterAuthorizationFailedError("no DESCRIBE on the cluster"))
    pub, producer = publisher(admin)
    with pytest.raises(ClusterAuthorizationFailedError):
        pub.publish_if_changed()
    assert producer.sent == []
    admin.error = None
    assert pub.publish_if_changed() and len(producer.sent) == 1


def test_a_broker_without_an_authorizer_allows_everything_and_so_does_the_snapshot():
    from kafka.errors import SecurityDisabledError

    admin = Admin(error=SecurityDisabledError("No Authorizer is configured."))
    pub, producer = publisher(admin, super_users=["User:admin"])
    assert pub.publish_if_changed() and not pub.publish_if_changed()
    body = json.loads(producer.sent[0][2])["request"]
    assert body == {"acls": [], "superUsers": [], "allowEveryoneIfNoAclFound": True}
    admin.error = None
    admin.acls = [acl("User:alice", ACLOperation.READ)]  # an authorizer now: its ACLs
    assert pub.publish_if_changed()
    assert json.loads(producer.sent[1][2])["request"]["superUsers"] == ["User:admin"]


def test_the_snapshot_is_what_the_core_authorizer_evaluates():
    """The published fields build coordinator/acl.py's bindings as they are (Kafka's codes)."""
    admin = Admin(
        [
            acl("User:alice", ACLOperation.READ, name="orders-", pattern=ACLResourcePatternType.PREFIXED),
            acl("User:alice", ACLOperation.READ, name="orders-secret", allow=False),
        ]
    )
    pub, producer = publisher(admin, super_users=["User:admin"])
    pub.publish_if_changed()
    body = json.loads(producer.sent[0][2])["request"]
    authorizer = Authorizer(
        [Acl(*(a[f] for f in ACL_FIELDS)) for a in body["acls"]],
        body["superUsers"],
        body["allowEveryoneIfNoAclFound"],
    )
    can = authorizer.authorize
    assert can("User:alice", "127.0.0.1", AclOperation.READ, CoreResourceType.GROUP, "orders-eu")
    assert not can("User:alice", "127.0.0.1", AclOperation.READ, CoreResourceType.GROUP, "orders-secret")
    assert can("User:admin", "127.0.0.1", AclOperation.READ, CoreResourceType.GROUP, "orders-secret")


def test_super_users_take_a_list_or_kafkas_string():
    assert parse_super_users("User:admin; User:gateway") == ["User:admin", "User:gateway"]
    assert parse_super_users(["User:admin"]) == ["User:admin"]
    assert parse_super_users("") == [] and parse_super_users(None) == []
    with pytest.raises(ValueError, match="Type:name"):
        parse_super_users("admin")


def test_admin_connection_settings():
    assert admin_client_config({}, "b:9092") == {"bootstrap_servers": "b:9092", "security_protocol": "PLAINTEXT"}
    secured = admin_client_config(
        {
            "admin_bootstrap_servers": "b:9094",
            "admin_security_protocol": "sasl_ssl",
            "admin_ssl_cafile": "/ca.pem",
            "admin_sasl_mechanism": "scram-sha-512",
            "admin_sasl_username": "admin",
            "admin_sasl_password": "pw",
        },
        "b:9092",
    )
    assert secured == {
        "bootstrap_servers": "b:9094",
        "security_protocol": "SASL_SSL",
        "ssl_cafile": "/ca.pem",
        "sasl_mechanism": "SCRAM-SHA-512",
        "sasl_plain_username": "admin",
        "sasl_plain_password": "pw",
    }
    with pytest.raises(ValueError, match="admin_security_protocol"):
        admin_client_config({"admin_security_protocol": "KERBEROS"}, "b:9092")
    with pytest.raises(ValueError, match="admin_sasl_mechanism"):
        admin_client_config({"admin_security_protocol": "SASL_SSL", "admin_sasl_mechanism": "GSSAPI"}, "b:9092")
    with pytest.raises(ValueError, match="admin_sasl_username"):
        admin_client_config({"admin_security_protocol": "SASL_PLAINTEXT"}, "b:9092")


def test_off_by_default_and_configured_from_the_security_table_and_the_environment():
    assert AclPublisher.from_config(StreamConfig.load(environ={}), KEY, 1) is None
    cfg = StreamConfig.load(
        environ={
            "COORD_SECURITY_ACLS_ENABLED": "true",
            "COORD_SECURITY_SUPER_USERS": '["User:admin"]',
            "COORD_SECURITY_ADMIN_SECURITY_PROTOCOL": "SASL_PLAINTEXT",
            "COORD_SECURITY_ADMIN_SASL_USERNAME": "admin",
            "COORD_SECURITY_ADMIN_SASL_PASSWORD": "from-the-environment",
            "COORD_SECURITY_ACL_REFRESH_MS": "250",
        }
    )
    built = {}

    class Offline(AclPublisher):
        def _connect(self):
            built.update(self._admin_config)
            return Admin(), Producer()

    pub = Offline.from_config(cfg, KEY, 3)
    assert pub.interval == 0.25 and pub.super_users == ["User:admin"]
    assert built["sasl_plain_password"] == "from-the-environment"
    assert built["bootstrap_servers"] == cfg.bootstrap
    pub_default_interval = Offline.from_config(
        StreamConfig.load(environ={"COORD_SECURITY_ACLS_ENABLED": "true"}), KEY, 3
    )
    assert pub_default_interval.interval == int(cfg.stream["metadata_refresh_ms"]) / 1000


def test_off_with_principals_publishes_once_the_snapshot_that_allows_everything(monkeypatch):
    """acls_enabled = false with a gateway's principal key: Kafka without an authorizer. The
    coordinators answer principals only once they have a snapshot: the open one, no broker read."""
    from streaming.acl_publisher import OpenAcls

    cfg = StreamConfig.load(environ={"COORD_GATEWAY_PRINCIPAL_KEY_FILE": '"/some/key"'})
    producer = Producer()
    monkeypatch.setattr(OpenAcls, "_connect", lambda self: (None, producer))
    assert AclPublisher.from_config(StreamConfig.load(environ={}), KEY, 2) is None  # no principals: nothing
    pub = AclPublisher.from_config(cfg, KEY, 2)
    assert isinstance(pub, OpenAcls)
    assert pub.publish_if_changed() and not pub.publish_if_changed()
    [(_, key, value, headers)] = producer.sent
    assert verify(KEY, key, value, headers["coordinator-mac"], headers["coordinator-seq"])
    body = json.loads(value)["request"]
    assert body == {"acls": [], "superUsers": [], "allowEveryoneIfNoAclFound": True}
    authorizer = Authorizer([], body["superUsers"], body["allowEveryoneIfNoAclFound"])
    assert authorizer.authorize("User:anyone", "10.0.0.1", AclOperation.DELETE, CoreResourceType.GROUP, "g")
    pub.stop()


def test_the_secured_local_runs_configuration_files(tmp_path):
    """deploy.secured_kafka's service.toml and gateway.toml load as the service's and the gateway's
    configuration: ACLs on, read over SASL_SSL as admin; the gateway's SASL_SSL listener; one key."""
    from deploy.secured_kafka import SUPER_USERS, USERS, write_config_files
    from gateway.config import GatewayConfig

    certs = tmp_path / "certs"
    service, gateway = write_config_files(tmp_path, certs, "127.0.0.1:9092", 9094, certs / "gateway-principal.key")
    assert service.stat().st_mode & 0o077 == 0 and gateway.stat().st_mode & 0o077 == 0
    cfg = StreamConfig.load(service, environ={})
    assert cfg.security["acls_enabled"] and cfg.security["super_users"] == list(SUPER_USERS)
    assert admin_client_config(cfg.security, cfg.bootstrap) == {
        "bootstrap_servers": "127.0.0.1:9094",
        "security_protocol": "SASL_SSL",
        "ssl_cafile": str(certs / "ca.pem"),
        "sasl_mechanism": "SCRAM-SHA-512",
        "sasl_plain_username": "admin",
        "sasl_plain_password": USERS["admin"],
    }
    gw_cfg = StreamConfig.load(gateway, environ={})
    gw = GatewayConfig.from_stream_config(gw_cfg)
    assert (gw.security_protocol, gw.bootstrap_servers) == ("SASL_SSL", "127.0.0.1:9094")
    assert gw_cfg.raw["gateway"]["principal_key_file"] == cfg.raw["gateway"]["principal_key_file"]
    assert gw_cfg.topics == cfg.topics and gw_cfg.security == cfg.security
