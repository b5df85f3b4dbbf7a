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
  SASL_AUTHENTICATION_FAILED answer and message, then the connection closed).
"""

from __future__ import annotations

import asyncio
import ssl
import time
import uuid

import pytest

from deploy.certs import make_all, make_principal_key
from deploy.kafka_local import free_port
from deploy.secured_kafka import USERS, gateway_settings, secured_broker
from gateway.sasl import ScramClient
from gateway.security import UpstreamSecurity, request_caller
from gateway.upstream import Upstream, UpstreamClosed

from .gateway_process import Gateway
from .harness import StreamJob

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def secured(tmp_path_factory, shared_jobs):
    shared_jobs.stop_running()  # one job at a time on the machine
    certs = make_all(tmp_path_factory.mktemp("certs"), ["broker", "gateway"])
    principal_key = make_principal_key(certs)
    sasl_port = free_port()
    broker = secured_broker(tmp_path_factory.mktemp("sasl-kafka"), free_port(), sasl_port, free_port(), certs)
    broker.start()
    job = None
    gateway = None
    try:
        job = StreamJob(broker.bootstrap, tmp_path_factory.mktemp("sasl-job"), "sasl")
        # the service verifies the gateway's signed principals with the same key
        with open(job.config_file, "a") as f:
            f.write(f'\n[gateway]\nprincipal_key_file = "{principal_key}"\n')
        job.start()
        gateway = Gateway(
            job.config_file,
            tmp_path_factory.mktemp("sasl-gateway"),
            client_id="sasl-gateway",
            settings=gateway_settings(certs, sasl_port, principal_key),
        )
        _grant(broker.bootstrap)
        yield {"certs": certs, "broker_sasl": f"127.0.0.1:{sasl_port}", "gateway": gateway}
    finally:
        if gateway is not None:
            gateway.stop()
        if job is not None:
            job.kill()
        broker.stop(timeout=3)


TOPIC, SECRET_TOPIC = "sasl-data", "sasl-secret"


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
    for f in admin.create_topics([NewTopic(TOPIC, 1, 1), NewTopic(SECRET_TOPIC, 1, 1)]).values():
        f.result(30)
    bindings = []
    for user in ("alice", "bob"):
        for op in (AclOperation.READ, AclOperation.WRITE, AclOperation.DESCRIBE):
            bindings.append(
                AclBinding(
                    ResourceType.TOPIC, TOPIC, ResourcePatternType.LITERAL, f"User:{user}", "*", op,
                    AclPermissionType.ALLOW,
                )
            )  # fmt: skip
        bindings.append(
            AclBinding(
                ResourceType.GROUP, f"sasl-{user}-", ResourcePatternType.PREFIXED, f"User:{user}", "*",
                AclOperation.READ, AclPermissionType.ALLOW,
            )
        )  # fmt: skip
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
    _produce_consume_commit(secured, "bob", "SCRAM-SHA-256")
    _produce_consume_commit(secured, "alice", "PLAIN")


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
        assert (await call(17, 1, mechanism="SCRAM-SHA-256")).error_code == 0
        scram = ScramClient("SCRAM-SHA-256", "bob", password)
        first = await call(36, 2, auth_bytes=scram.first_message())
        assert first.error_code == 0
        final = await call(36, 2, auth_bytes=scram.final_message(bytes(first.auth_bytes)))
        if final.error_code != 0:
            try:
                await asyncio.wait_for(upstream.task, 10)  # the reader ends when the peer closes
            except (TimeoutError, UpstreamClosed):
                pass
        return int(final.error_code), final.error_message, upstream.closed
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
