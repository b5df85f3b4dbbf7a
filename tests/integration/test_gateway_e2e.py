"""Unchanged Kafka clients through the gateway (gateway/), with the real broker and the real job.

One job and one gateway for the module. A three-member consumer group (kafka-python, then
confluent-kafka) bootstraps to the gateway, consumes a topic and commits; one member is SIGKILLed
(it never leaves) and the others take over its partitions after its session timeout. Every record
produced is consumed, and a record is consumed twice only if it was not yet committed when its
first consumer died or lost it (at-least-once).
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from kafka import KafkaAdminClient, KafkaProducer

from .gateway_process import Gateway
from .harness import ROOT, create_data_topics

pytestmark = pytest.mark.integration

PARTITIONS = 6
WAIT = 180  # seconds: a rebalance waits out a 10 s session on a shared, loaded machine


@pytest.fixture(scope="module")
def job(job_factory):
    return job_factory()


@pytest.fixture(scope="module")
def gateway(job, tmp_path_factory):
    gw = Gateway(job.config_file, tmp_path_factory.mktemp("gateway"), ready_timeout=WAIT)
    try:
        yield gw
    finally:
        gw.stop()


class Member:
    """A group member process; its output lines say what it consumed and committed."""

    def __init__(self, lib: str, bootstrap: str, topic: str, group: str, workdir: Path, n: int):
        self.out = workdir / f"{group}-{n}.out"
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.integration.gateway_member", lib, bootstrap, topic, group],
            cwd=ROOT,
            env=dict(os.environ, PYTHONUNBUFFERED="1"),
            stdout=open(self.out, "wb"),
            stderr=open(workdir / f"{group}-{n}.err", "wb"),
            start_new_session=True,
        )

    def lines(self) -> list[list[str]]:
        text = self.out.read_text(errors="replace")
        return [line.split(" ", 3) for line in text.splitlines() if line.endswith("\n") or line]

    def assignment(self) -> set[int] | None:
        last = None
        for parts in self.lines():
            if parts[0] == "A":
                last = {int(p) for p in parts[1].split(",")} if len(parts) > 1 and parts[1] else set()
        return last

    def consumed(self) -> list[tuple[int, int, str]]:
        return [(int(p[1]), int(p[2]), p[3]) for p in self.lines() if p[0] == "R" and len(p) == 4]

    def kill(self) -> None:
        os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=30)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.kill()


def _produce(bootstrap: str, topic: str, values: list[str]) -> None:
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all")
    try:
        for i, v in enumerate(values):
            producer.send(topic, key=str(i).encode(), value=v.encode())
        producer.flush(timeout=60)
    finally:
        producer.close()


def _wait(condition, what: str, members, gateway, timeout: float = WAIT) -> None:
    deadline = time.time() + timeout
    while time.time() < deadline:
        if condition():
            return
        time.sleep(0.5)
    details = "\n".join(
        f"member {i}: assignment {m.assignment()}, {len(m.consumed())} records, alive={m.proc.poll() is None}"
        for i, m in enumerate(members)
    )
    raise AssertionError(f"{what} within {timeout}s\n{details}\ngateway log:\n{gateway.tail()}")


def run_takeover(lib: str, gateway, topic: str, group: str, workdir: Path) -> None:
    create_data_topics(gateway_broker_bootstrap(gateway), {topic: PARTITIONS})
    first = [f"{topic}-a{i}" for i in range(150)]
    second = [f"{topic}-b{i}" for i in range(150)]
    _produce(gateway.bootstrap, topic, first)  # through the gateway: Metadata and Produce pass through
    members = [Member(lib, gateway.bootstrap, topic, group, workdir, n) for n in range(3)]
    try:

        def consumed_values():
            return {v for m in members for _, _, v in m.consumed()}

        def balanced(live):
            assignments = [m.assignment() for m in live]
            return (
                all(a for a in assignments)
                and sum(len(a) for a in assignments) == PARTITIONS
                and set().union(*assignments) == set(range(PARTITIONS))
            )

        _wait(lambda: balanced(members), "three members share the partitions", members, gateway)
        _wait(lambda: set(first) <= consumed_values(), "the first records consumed", members, gateway)
        victim, survivors = members[0], members[1:]
        victim.kill()  # no LeaveGroup: the others take over after its session times out
        _produce(gateway.bootstrap, topic, second)
        _wait(
            lambda: balanced(survivors) and set(first + second) <= consumed_values(),
            "the survivors take over and consume every record",
            members,
            gateway,
        )
        _check_admin_view(gateway, group, survivors)
    finally:
        for m in members:
            m.stop()
    _check_at_least_once(members)


def _check_admin_view(gateway, group: str, survivors) -> None:
    """An admin client through the gateway (FindCoordinator, then DescribeGroups bridged to the group's
    coordinator partition; ListGroups asked of every partition) sees the group and the socket
    address of each member, as Kafka shows it."""
    admin = KafkaAdminClient(bootstrap_servers=gateway.bootstrap)
    try:
        assert group in {g["group_id"] for g in admin.list_groups()}
        info = admin.describe_groups([group])[group]
        assert info["group_state"] == "Stable"
        assert len(info["members"]) == len(survivors)
        assert {m["client_host"] for m in info["members"]} == {"/127.0.0.1"}
    finally:
        admin.close()


def _check_at_least_once(members) -> None:
    """A record consumed again was not committed by its earlier consumer: that consumer's commits
    for the partition all stopped at or before it."""
    first_seen: dict[tuple[int, int], int] = {}
    for i, m in enumerate(members):
        for p, o, _ in m.consumed():
            first_seen.setdefault((p, o), i)
    commits: dict[tuple[int, int], int] = {}  # (member, partition) -> highest committed offset
    for i, m in enumerate(members):
        for parts in m.lines():
            if parts[0] == "C":
                key = (i, int(parts[1]))
                commits[key] = max(commits.get(key, 0), int(parts[2]))
    seen: dict[tuple[int, int], list[int]] = {}
    for i, m in enumerate(members):
        for p, o, _ in m.consumed():
            seen.setdefault((p, o), []).append(i)
    duplicates = {k: v for k, v in seen.items() if len(v) > 1}
    for (p, o), who in duplicates.items():
        for earlier in set(who[:-1]):
            assert commits.get((earlier, p), 0) <= o, (
                f"record {p}/{o} consumed again although member {earlier} had committed offset {commits[(earlier, p)]}"
            )
    print(f"\n{sum(len(m.consumed()) for m in members)} records consumed, {len(duplicates)} twice")


def gateway_broker_bootstrap(gateway) -> str:
    return gateway.broker_bootstrap


@pytest.fixture(scope="module")
def gw(gateway, kafka):
    gateway.broker_bootstrap = kafka.bootstrap
    return gateway


def test_kafka_python_group_takes_over_a_killed_members_partitions(gw, tmp_path):
    run_takeover("kafka-python", gw, "gw-kp-orders", "gw-kp-group", tmp_path)


def test_confluent_kafka_group_takes_over_a_killed_members_partitions(gw, tmp_path):
    try:
        import confluent_kafka  # noqa: F401
    except ImportError as e:
        pytest.skip(f"confluent-kafka does not import here: {e}")
    run_takeover("confluent-kafka", gw, "gw-ck-orders", "gw-ck-group", tmp_path)


def test_a_malformed_frame_closes_its_connection_and_the_gateway_serves_on(gw):
    host, _, port = gw.bootstrap.rpartition(":")
    with socket.create_connection((host, int(port)), timeout=30) as s:
        s.sendall((12).to_bytes(4, "big") + (11).to_bytes(2, "big") + b"\xff" * 10)  # a JoinGroup of junk
        assert s.recv(1) == b""  # closed, nothing answered
    assert gw.proc.poll() is None
    admin = KafkaAdminClient(bootstrap_servers=gw.bootstrap)  # ApiVersions, Metadata, ListGroups
    try:
        assert isinstance(admin.list_groups(), list)
    finally:
        admin.close()
