"""Secured clients through the gateway: a broker of its own (deploy/secured_kafka.py) with a
SASL_SSL listener (PLAIN and SCRAM-SHA-256/512, StandardAuthorizer, super users admin, gateway and
ANONYMOUS) and a PLAINTEXT listener the service's job uses (its principal is ANONYMOUS); a gateway in
front with a SASL_SSL listener (certificates of deploy/certs.py) reaching the broker over SASL_SSL as
`User:gateway` with SCRAM-SHA-512 (its own SCRAM client, and kafka-python's in its bridge), signing
its bridged requests' principal with a key the job verifies (a commit that gets through proves the
signed record was accepted by the real state function: an unverified principal is refused).

- confluent-kafka clients with SCRAM-SHA-256 and with PLAIN produce, consume in a group and commit
  through the gateway; the pass-through traffic is authorised by the broker as the client's own
  principal (a topic the client has no ACL for is refused TOPIC_AUTHORIZATION_FAILED through the
  gateway, though the gateway's own identity may read it);
- a wrong password fails through the gateway exactly as against the broker directly (the same
  SASL_AUTHENTICATION_FAILED answer and message, then the connection closed);
- the coordinator APIs are authorised with the broker's own ACLs: the job runs with `[security]
  acls_enabled` (deploy/secured_kafka.service_settings), its ACL publisher reading them over
  SASL_SSL as admin (SCRAM-SHA-512). A DIFFERENTIAL check: Java kafka-clients (GatewayClient's
  `authz` probe: a consumer group, a transactional producer, an Admin; the four probes in one JVM,
  `authz-all`: seven JVMs starting at once starved the machine) as bob with SCRAM-SHA-256
  (consumer protocol) and as alice with PLAIN (classic protocol), with the same ACLs, against the
  broker directly and against the gateway print the same outcome for every step: a group they may
  read consumes and commits, a transactional id they may write commits, and the same errors for a
  group they may not read, a topic they may not read (OffsetCommit, OffsetFetch), a transactional
  id they may not write, describing, listing the offsets of and deleting a group they may not
  describe, describing a transaction they may not describe, a wrong password; listing groups and
  transactions shows the same (their own only). Kafka's kafka-consumer-groups (`--describe
  --all-groups`, as carol with PLAIN) lists and describes the same groups against both;
- kafka-acls through the gateway (as admin, SCRAM-SHA-512) adds an ACL; the service's coordinators
  apply it at their next ACL refresh (a commit refused as the broker refuses it before is accepted
  after).
The three run at once, in one test (their waits overlap).
"""

from __future__ import annotations

import asyncio
import base64
import concurrent.futures
import ssl
import subprocess
import time
import uuid
from pathlib import Path

import pytest

from deploy.certs import make_all, make_principal_key
from deploy.kafka_local import free_port
from deploy.secured_kafka import USERS, gateway_settings, secured_broker, service_settings, toml_tables
from gateway.sasl import ScramClient
from gateway.security import UpstreamSecurity, request_caller
from gateway.upstream import Upstream, UpstreamClosed

from .gateway_process import Gateway, run_concurrently
from .harness import StreamJob
from .java_client import JVM_OPTS, compile_java_client

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def secured(tmp_path_factory, shared_jobs):
    shared_jobs.stop_running()  # one job at a time on the machine
    # the Java client compiles while the broker, the job and the gateway start
    java_classes = concurrent.futures.ThreadPoolExecutor(1).submit(
        compile_java_client, tmp_path_factory.mktemp("sasl-java")
    )
    certs = make_all(tmp_path_factory.mktemp("certs"), ["broker", "gateway"])
    principal_key = make_principal_key(certs)
    sasl_port = free_port()
    broker = secured_broker(tmp_path_factory.mktemp("sasl-kafka"), free_port(), sasl_port, free_port(), certs)
    broker.start()
    job = None
    gateway = None
    try:
        job = StreamJob(
            broker.bootstrap,
            tmp_path_factory.mktemp("sasl-job"),
            "sasl",
            # As the broker it is compared with (tests' brokers gather no classic group for 3 s), and
            # the test run's ten coordinator partitions (its listings ask every one).
            coordinator={"coordinator.partitions": 10, "group.initial.rebalance.delay.ms": 0},
        )
        _grant(broker.bootstrap)  # before the job starts: its first ACL snapshot has them
        # the service verifies the gateway's signed principals with the same key, and authorises
        # the coordinator APIs with the broker's ACLs (read over SASL_SSL as admin)
        settings = service_settings(certs, sasl_port, principal_key)
        settings["security"]["acl_refresh_ms"] = 500
        with open(job.config_file, "a") as f:
            f.write("\n" + toml_tables(settings))
        # The gateway starts alongside the job: it is ready once the job answers it.
        starting = concurrent.futures.ThreadPoolExecutor(1).submit(
            Gateway,
            job.config_file,
            tmp_path_factory.mktemp("sasl-gateway"),
            client_id="sasl-gateway",
            settings=gateway_settings(certs, sasl_port, principal_key),
        )
        try:
            job.start()
        finally:
            gateway = starting.result()
        yield {
            "certs": certs,
            "broker_sasl": f"127.0.0.1:{sasl_port}",
            "broker_plaintext": broker.bootstrap,
            "gateway": gateway,
            "job": job,
            "java": java_classes,
        }
    finally:
        if gateway is not None:
            gateway.stop()
        if job is not None:
            job.kill()
        broker.stop(timeout=3)


TOPIC, SECRET_TOPIC = "sasl-data", "sasl-secret"
# The authorisation differential's names (GatewayClient.authz): its data topic per side (the broker's
# transactions and the service's do not share a partition), a topic nobody but super users may read,
# groups and transactional ids of each user's own, and a group and a transaction nobody but super
# users may describe.
P = "acl"
SIDES = {"broker": f"{P}-topic-broker", "gateway": f"{P}-topic-gateway"}


def _grant(plaintext_bootstrap: str) -> None:
    """The data topics and the ACLs (as ANONYMOUS, a super user on the PLAINTEXT listener): alice and
    bob may use TOPIC and their groups; nobody but super users may read SECRET_TOPIC."""
    from confluent_kafka.admin import (
        AclBinding,
        AclOperation,
        AclPermissionType,
        AdminClient,
        NewTopic,
        ResourcePatternType,
        ResourceType,
    )

    admin = AdminClient({"bootstrap.servers": plaintext_bootstrap})
    topics = [TOPIC, SECRET_TOPIC, f"{P}-secret", *SIDES.values()]
    for f in admin.create_topics([NewTopic(t, 1, 1) for t in topics]).values():
        f.result(30)

    def allow(rtype, name, pattern, user, op):
        return AclBinding(rtype, name, pattern, f"User:{user}", "*", op, AclPermissionType.ALLOW)

    literal, prefixed = ResourcePatternType.LITERAL, ResourcePatternType.PREFIXED
    bindings = []
    for user in ("alice", "bob"):
        for op in (AclOperation.READ, AclOperation.WRITE, AclOperation.DESCRIBE):
            bindings.append(allow(ResourceType.TOPIC, TOPIC, literal, user, op))
            bindings.append(allow(ResourceType.TOPIC, f"{P}-topic-", prefixed, user, op))
        bindings.append(allow(ResourceType.GROUP, f"sasl-{user}-", prefixed, user, AclOperation.READ))
        bindings.append(allow(ResourceType.GROUP, f"{P}-group-{user}", prefixed, user, AclOperation.READ))
        bindings.append(allow(ResourceType.TRANSACTIONAL_ID, f"{P}-tx-{user}", prefixed, user, AclOperation.WRITE))
    for op in (AclOperation.READ, AclOperation.DESCRIBE):  # carol: kafka-consumer-groups
        bindings.append(allow(ResourceType.TOPIC, f"{P}-topic-", prefixed, "carol", op))
    bindings.append(allow(ResourceType.GROUP, f"{P}-group-carol", prefixed, "carol", AclOperation.READ))
    for f in admin.create_acls(bindings).values():
        f.result(30)


def _client(secured, user: str, mechanism: str, **more) -> dict:
    return {
        "bootstrap.servers": secured["gateway"].bootstrap,
        "security.protocol": "SASL_SSL",
        "ssl.ca.location": str(secured["certs"] / "ca.pem"),
        "sasl.mechanism": mechanism,
        "sasl.username": user,
        "sasl.password": USERS[user],
        **more,
    }


def _produce_consume_commit(secured, user: str, mechanism: str) -> None:
    from confluent_kafka import Consumer, Producer, TopicPartition

    marker = f"{user}-{uuid.uuid4().hex}".encode()
    producer = Producer(_client(secured, user, mechanism))
    producer.produce(TOPIC, marker)
    assert producer.flush(60) == 0, "not delivered"
    group = f"sasl-{user}-{uuid.uuid4().hex[:8]}"
    consumer = Consumer(
        _client(
            secured,
            user,
            mechanism,
            **{"group.id": group, "auto.offset.reset": "earliest", "enable.auto.commit": False},
        )
    )
    try:
        consumer.subscribe([TOPIC])
        deadline = time.monotonic() + 120
        seen = None
        while seen is None:
            assert time.monotonic() < deadline, f"{user} read nothing through the gateway"
            msg = consumer.poll(1.0)
            if msg is not None and msg.error() is None and msg.value() == marker:
                seen = msg
        consumer.commit(message=seen, asynchronous=False)  # OffsetCommit, bridged to the service
        committed = consumer.committed([TopicPartition(TOPIC, seen.partition())], timeout=30)
        assert committed[0].offset == seen.offset() + 1
    finally:
        consumer.close()


def test_scram_and_plain_clients_produce_consume_and_commit(secured):
    run_concurrently(
        {
            "bob": lambda: _produce_consume_commit(secured, "bob", "SCRAM-SHA-256"),
            "alice": lambda: _produce_consume_commit(secured, "alice", "PLAIN"),
        }
    )


def test_pass_through_is_authorised_as_the_client(secured):
    """The broker refuses alice a topic she has no ACL for, through the gateway too: her Fetch and
    Metadata went on her own connection, authenticated as her (the gateway's identity may read it)."""
    from confluent_kafka import Consumer, KafkaError

    consumer = Consumer(_client(secured, "alice", "PLAIN", **{"group.id": f"sasl-alice-{uuid.uuid4().hex[:8]}"}))
    try:
        consumer.subscribe([SECRET_TOPIC])
        deadline = time.monotonic() + 60
        while True:
            assert time.monotonic() < deadline, "no authorisation error for the secret topic"
            msg = consumer.poll(1.0)
            if msg is not None and msg.error() is not None:
                assert msg.error().code() == KafkaError.TOPIC_AUTHORIZATION_FAILED, msg.error()
                break
    finally:
        consumer.close()


async def _authenticate(address: str, cafile, password: str) -> tuple[int, str | None, bool]:
    """(error code, message, closed after) of a SCRAM-SHA-256 exchange as bob with `password`."""
    host, _, port = address.rpartition(":")
    security = UpstreamSecurity(tls=ssl.create_default_context(cafile=str(cafile)))
    upstream = await Upstream.open(host, int(port), security=security)
    call = request_caller(upstream, "sasl-e2e")

    try:
        assert (await call(17, 1, {"mechanism": "SCRAM-SHA-256"}))["errorCode"] == 0
        scram = ScramClient("SCRAM-SHA-256", "bob", password)
        first = await call(36, 2, {"authBytes": scram.first_message()})
        assert first["errorCode"] == 0
        final = await call(36, 2, {"authBytes": scram.final_message(base64.b64decode(first["authBytes"]))})
        if final["errorCode"] != 0:
            try:
                await asyncio.wait_for(upstream.task, 10)  # the reader ends when the peer closes
            except (TimeoutError, UpstreamClosed):
                pass
        return final["errorCode"], final["errorMessage"], upstream.closed
    finally:
        upstream.close()


def test_a_wrong_password_fails_as_against_the_broker(secured):
    cafile = secured["certs"] / "ca.pem"
    direct = asyncio.run(_authenticate(secured["broker_sasl"], cafile, "wrong"))
    through = asyncio.run(_authenticate(secured["gateway"].bootstrap, cafile, "wrong"))
    assert direct[0] == 58 and direct[2], direct  # SASL_AUTHENTICATION_FAILED, then closed
    assert through == direct
    ok = asyncio.run(_authenticate(secured["gateway"].bootstrap, cafile, USERS["bob"]))
    assert ok[0] == 0 and not ok[2]


# ------------------------------------------------------------------ authorisation of the coordinator APIs
def _java_config(secured, tmp_path, user: str, mechanism: str) -> Path:
    """A Java client's security settings (`-Dclient.config`, or a tool's --command-config)."""
    module = "scram.ScramLoginModule" if mechanism.startswith("SCRAM") else "plain.PlainLoginModule"
    path = tmp_path / f"{user}-{mechanism}.properties"
    path.write_text(
        "security.protocol=SASL_SSL\n"
        "ssl.truststore.type=PEM\n"
        f"ssl.truststore.location={secured['certs'] / 'ca.pem'}\n"
        f"sasl.mechanism={mechanism}\n"
        f"sasl.jaas.config=org.apache.kafka.common.security.{module} required "
        f'username="{user}" password="{USERS[user]}";\n'
    )
    return path


def _java(
    classpath: str, config: Path | None, main: str, *args: str, timeout: float = 240, heap: str | None = None
) -> list[str]:
    """A Java program's stdout lines (Kafka's tools print their errors there too, and exit 0)."""
    options = [*JVM_OPTS, *([f"-Xmx{heap}"] if heap else []), *([f"-Dclient.config={config}"] if config else [])]
    run = subprocess.run(
        ["java", *options, "-cp", classpath, main, *args],
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert run.returncode == 0, f"{main} {args} exited {run.returncode}: {run.stdout[-2000:]}{run.stderr[-3000:]}"
    return run.stdout.splitlines()


@pytest.fixture(scope="module")
def java(secured) -> str:
    """The Java client's classpath (compiled during the module's set-up)."""
    return secured["java"].result(timeout=300)


def _hidden_group_and_transaction(bootstrap: str, topic: str, **security) -> None:
    """As a super user: a record in `topic`, a group with committed offsets and a committed
    transaction that only super users may describe (on the broker, or in the service)."""
    from confluent_kafka import Consumer, Producer, TopicPartition

    common = {"bootstrap.servers": bootstrap, **security}
    producer = Producer({**common, "transactional.id": f"{P}-hidden-tx"})
    producer.init_transactions(60)
    producer.begin_transaction()
    producer.produce(topic, b"hidden")
    producer.commit_transaction(60)
    consumer = Consumer({**common, "group.id": f"{P}-hidden-group", "enable.auto.commit": False})
    try:
        consumer.commit(offsets=[TopicPartition(topic, 0, 1)], asynchronous=False)
    finally:
        consumer.close()


def _admin_security(secured) -> dict:
    return {
        "security.protocol": "SASL_SSL",
        "ssl.ca.location": str(secured["certs"] / "ca.pem"),
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.username": "admin",
        "sasl.password": USERS["admin"],
    }


def _results(lines: list[str], label: str | None = None) -> dict[str, str]:
    """step -> outcome of the RESULT lines (of the probe `label`, with authz-all)."""
    head = "RESULT " if label is None else f"RESULT {label} "
    return dict(line[len(head) :].split(" ", 1) for line in lines if line.startswith(head))


def test_coordinator_apis_are_authorised_as_the_broker_authorises_them(secured, java, tmp_path):
    """Three flows at once (their waits overlap; each keeps to names the others' listings leave out):
    the differential, kafka-consumer-groups against both, kafka-acls through the gateway."""
    run_concurrently(
        {
            "differential": lambda: _differential(secured, java, tmp_path),
            "kafka-consumer-groups": lambda: _consumer_groups_tool(secured, java, tmp_path),
            "kafka-acls": lambda: _acls_tool(secured, java, tmp_path),
        }
    )


def _differential(secured, java: str, tmp_path: Path) -> None:
    """The same Java clients with the same ACLs against the broker directly and through the gateway,
    as bob (SCRAM-SHA-256, KIP-848 consumer protocol) and alice (PLAIN, classic): the same outcomes."""
    run_concurrently(
        {
            "broker": lambda: _hidden_group_and_transaction(secured["broker_plaintext"], SIDES["broker"]),
            "gateway": lambda: _hidden_group_and_transaction(
                secured["gateway"].bootstrap, SIDES["gateway"], **_admin_security(secured)
            ),
        }
    )
    bootstrap = {"broker": secured["broker_sasl"], "gateway": secured["gateway"].bootstrap}
    users = {"bob": ("SCRAM-SHA-256", "consumer"), "alice": ("PLAIN", "classic")}
    # The four probes (each user against each side) at once in one JVM: one JVM start, not four.
    probes = {
        f"{side}-{user}": (
            f"{_java_config(secured, tmp_path, user, users[user][0])},{bootstrap[side]},{user},{users[user][1]},"
            f"{SIDES[side]}"
        )
        for side in bootstrap
        for user in users
    }
    specs = [f"{label}={spec}" for label, spec in probes.items()]
    lines = _java(java, None, "GatewayClient", "authz-all", P, *specs, heap="512m")  # four probes' clients
    out = {(side, user): _results(lines, f"{side}-{user}") for side in bootstrap for user in users}
    for user in users:
        direct, through = out["broker", user], out["gateway", user]
        # the broker's answers are what Kafka does; they must be the expected ones for the check to mean anything
        assert direct["group-consume-commit"] == "OK" and direct["txn-commit"] == "OK", direct
        assert direct["group-denied"].startswith("GroupAuthorizationException"), direct
        assert direct["topic-denied-commit"].startswith("TopicAuthorizationException"), direct
        assert direct["topic-denied-fetch-offsets"].startswith("TopicAuthorizationException"), direct
        assert direct["txn-denied"].startswith("TransactionalIdAuthorizationException"), direct
        for step in ("describe-hidden-group", "offsets-hidden-group", "delete-hidden-group"):
            assert direct[step].startswith("GroupAuthorizationException"), (step, direct)
        assert direct["describe-hidden-transaction"].startswith("TransactionalIdAuthorizationException"), direct
        assert direct["list-groups"].split(",")[0] == f"{P}-group-{user}", direct
        assert direct["list-transactions"] == f"{P}-tx-{user}", direct
        assert direct["wrong-password"].startswith("SaslAuthenticationException"), direct
        differing = [
            f"{step}:\n  broker:  {direct.get(step)}\n  gateway: {through.get(step)}"
            for step in sorted(direct.keys() | through.keys())
            if direct.get(step) != through.get(step)
        ]
        assert not differing, f"{user}:\n" + "\n".join(differing)


def _consumer_groups_tool(secured, java: str, tmp_path: Path) -> None:
    """kafka-consumer-groups --describe --all-groups as carol (PLAIN): the groups she may describe
    (her own, not the hidden one, not alice's or bob's), with their offsets, the same through the
    gateway as against the broker."""
    from confluent_kafka import Consumer, TopicPartition

    config = _java_config(secured, tmp_path, "carol", "PLAIN")
    group = f"{P}-group-carol"
    for side, bootstrap in (("broker", secured["broker_sasl"]), ("gateway", secured["gateway"].bootstrap)):
        consumer = Consumer(_client(secured, "carol", "PLAIN", **{"group.id": group, "bootstrap.servers": bootstrap}))
        try:
            consumer.commit(offsets=[TopicPartition(SIDES[side], 0, 1)], asynchronous=False)
        finally:
            consumer.close()
    tables: dict[str, list[list[str]]] = {}

    def describe(side: str, bootstrap: str):
        lines = _java(
            java, config, "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand", "--bootstrap-server",
            bootstrap, "--command-config", str(config), "--timeout", "60000", "--describe", "--all-groups",
        )  # fmt: skip
        tables[side] = [line.split() for line in lines if line.startswith(f"{P}-")]

    run_concurrently(
        {
            "broker": lambda: describe("broker", secured["broker_sasl"]),
            "gateway": lambda: describe("gateway", secured["gateway"].bootstrap),
        }
    )
    # GROUP TOPIC PARTITION CURRENT-OFFSET ...: the groups and their partitions' committed offsets
    direct = sorted((row[0], row[1].replace("-broker", "-SIDE"), row[3]) for row in tables["broker"])
    through = sorted((row[0], row[1].replace("-gateway", "-SIDE"), row[3]) for row in tables["gateway"])
    assert direct == [(group, f"{P}-topic-SIDE", "1")], tables
    assert through == direct, tables


def _acls_tool(secured, java: str, tmp_path: Path) -> None:
    """kafka-acls --add through the gateway (as admin, SCRAM-SHA-512) adds the ACL at the broker; the
    ACL publisher sends it to the coordinators: bob's commit in a group he could not read fails as
    against the broker before, and is accepted after. (The group is outside the differential's
    listings: its name does not start with P.)"""
    from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

    group = f"late-{P}-group"

    def commit(bootstrap: str) -> int:
        """The commit's error code (0: committed); a time-out on the loaded machine is tried again."""
        while True:
            more = {"group.id": group, "bootstrap.servers": bootstrap}
            consumer = Consumer(_client(secured, "bob", "SCRAM-SHA-256", **more))
            try:
                consumer.commit(offsets=[TopicPartition(SIDES["gateway"], 0, 1)], asynchronous=False)
                return 0
            except KafkaException as e:
                if e.args[0].code() != KafkaError._TIMED_OUT:
                    return e.args[0].code()
            finally:
                consumer.close()

    refused = commit(secured["gateway"].bootstrap)
    assert refused != 0 and refused == commit(secured["broker_sasl"]), refused  # as the broker refuses it
    config = _java_config(secured, tmp_path, "admin", "SCRAM-SHA-512")
    lines = _java(
        java, config, "org.apache.kafka.tools.AclCommand", "--bootstrap-server", secured["gateway"].bootstrap,
        "--command-config", str(config), "--add", "--allow-principal", "User:bob", "--operation", "Read",
        "--group", group,
    )  # fmt: skip
    text = "\n".join(lines)
    assert f"name={group}" in text and "principal=User:bob" in text and "operation=READ" in text, text
    deadline = time.monotonic() + 120
    # The broker (FindCoordinator's DESCRIBE check) knows the ACL at once, the coordinators at their
    # next ACL refresh: until then GROUP_AUTHORIZATION_FAILED.
    while (code := commit(secured["gateway"].bootstrap)) != 0:
        assert code in (refused, KafkaError.GROUP_AUTHORIZATION_FAILED), code
        assert time.monotonic() < deadline, "the new ACL never reached the coordinators"
    assert "published ACLs" in secured["job"].log_file.read_text(errors="replace")
