"""Unchanged Kafka clients through the gateway (gateway/), with the real broker and the test run's
shared job.

The gateway is gateway_process's (one for this module and test_gateway_java_e2e while both run
against the shared job). Two three-member consumer groups, one of kafka-python members and one of
confluent-kafka members, bootstrap to the gateway at the same time, each consumes a topic of its own
and commits; one member of each group is SIGKILLed (it never leaves) and the others take over its
partitions after its session timeout (both groups wait out their session timeouts together). In each
group every record produced is consumed, and a record is consumed twice only if it was not yet
committed when its first consumer died or lost it (at-least-once).
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

from .gateway_process import gateway_fixture, run_concurrently  # noqa: F401 - fixtures
from .harness import ROOT, wait_topics_known

pytestmark = [pytest.mark.integration, pytest.mark.shared_job("plain")]

TOPIC_PARTITIONS = 6  # of each group's data topic
WAIT = 180  # seconds: a rebalance waits out a 10 s session on a shared, loaded machine
# The client families: (topic, group) of each, unique to this module.
FAMILIES = {
    "kafka-python": ("gw-kp-orders", "gw-kp-group"),
    "confluent-kafka": ("gw-ck-orders", "gw-ck-group"),
}


@pytest.fixture(scope="module")
def topics(job):
    """The groups' topics, known to every coordinator partition of the job before the groups commit."""
    wait_topics_known(job, {topic: TOPIC_PARTITIONS for topic, _ in FAMILIES.values()})


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
    """Wait for `condition`; `what` names the family (two groups are waited for at once)."""
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
    """One family's group through a takeover: its failures name `lib`."""
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
                and sum(len(a) for a in assignments) == TOPIC_PARTITIONS
                and set().union(*assignments) == set(range(TOPIC_PARTITIONS))
            )

        _wait(lambda: balanced(members), f"{lib}: three members share the partitions", members, gateway)
        _wait(lambda: set(first) <= consumed_values(), f"{lib}: the first records consumed", members, gateway)
        victim, survivors = members[0], members[1:]
        victim.kill()  # no LeaveGroup: the others take over after its session times out
        _produce(gateway.bootstrap, topic, second)
        _wait(
            lambda: balanced(survivors) and set(first + second) <= consumed_values(),
            f"{lib}: the survivors take over and consume every record",
            members,
            gateway,
        )
        _check_admin_view(lib, gateway, group, survivors)
    finally:
        for m in members:
            m.stop()
    _check_at_least_once(lib, members)


def _check_admin_view(lib: str, gateway, group: str, survivors) -> None:
    """An admin client through the gateway (FindCoordinator, then DescribeGroups bridged to the group's
    coordinator partition; ListGroups asked of every partition) sees the group and the socket
    address of each member, as Kafka shows it."""
    admin = KafkaAdminClient(bootstrap_servers=gateway.bootstrap)
    try:
        # The listing is the whole shared job's: only this group's presence is checked.
        assert group in {g["group_id"] for g in admin.list_groups()}, f"{lib}: {group} not listed"
        info = admin.describe_groups([group])[group]
        assert info["group_state"] == "Stable", f"{lib}: {info}"
        assert len(info["members"]) == len(survivors), f"{lib}: {info}"
        assert {m["client_host"] for m in info["members"]} == {"/127.0.0.1"}, f"{lib}: {info}"
    finally:
        admin.close()


def _check_at_least_once(lib: str, members) -> None:
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
                f"{lib}: record {p}/{o} consumed again although member {earlier} had committed offset "
                f"{commits[(earlier, p)]}"
            )
    print(f"\n{lib}: {sum(len(m.consumed()) for m in members)} records consumed, {len(duplicates)} twice")


def test_kafka_python_and_confluent_kafka_groups_take_over_killed_members_partitions(gateway, topics, tmp_path):
    """Both families at once: their victims die at about the same time, so that the two session
    timeouts are waited out together."""
    flows = {}
    for lib, (topic, group) in FAMILIES.items():
        flows[lib] = lambda lib=lib, topic=topic, group=group: run_takeover(lib, gateway, topic, group, tmp_path)
    try:
        import confluent_kafka  # noqa: F401
    except ImportError as e:
        missing = e
        del flows["confluent-kafka"]
    else:
        missing = None
    run_concurrently(flows)
    if missing is not None:
        pytest.skip(f"kafka-python's takeover passed; confluent-kafka does not import here: {missing}")


def test_a_malformed_frame_closes_its_connection_and_the_gateway_serves_on(gateway):
    host, _, port = gateway.bootstrap.rpartition(":")
    with socket.create_connection((host, int(port)), timeout=30) as s:
        s.sendall((12).to_bytes(4, "big") + (11).to_bytes(2, "big") + b"\xff" * 10)  # a JoinGroup of junk
        assert s.recv(1) == b""  # closed, nothing answered
    assert gateway.proc.poll() is None
    admin = KafkaAdminClient(bootstrap_servers=gateway.bootstrap)  # ApiVersions, Metadata, ListGroups
    try:
        assert isinstance(admin.list_groups(), list)
    finally:
        admin.close()


def _recv_exactly(s: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = s.recv(n - len(data))
        assert chunk, "the gateway closed the connection"
        data += chunk
    return data


def test_an_oversized_join_group_is_answered_invalid_request_and_the_connection_serves_on(gateway):
    """1 MiB and 8 MiB of protocol metadata: more than the service takes on its request topic. The
    gateway's producer raised MessageSizeTooLargeError and the connection was dropped unanswered."""
    from coordinator.errors import Errors
    from gateway.codec import decode_response, encode_request
    from tests.gateway.test_gateway_server import join_group

    host, _, port = gateway.bootstrap.rpartition(":")
    with socket.create_connection((host, int(port)), timeout=60) as s:
        for cid, size in ((1, 1 << 20), (2, 8 << 20)):
            request = join_group(cid, b"m" * size)
            s.sendall(len(request).to_bytes(4, "big") + request)
            answer = _recv_exactly(s, int.from_bytes(_recv_exactly(s, 4), "big"))
            header, body = decode_response(answer, 11, 9)
            assert header["correlationId"] == cid and body["errorCode"] == Errors.INVALID_REQUEST.code
        find = encode_request(10, 4, 3, "big", {"keyType": 0, "coordinatorKeys": ["big"]})
        s.sendall(len(find).to_bytes(4, "big") + find)  # the same connection goes on
        header, body = decode_response(_recv_exactly(s, int.from_bytes(_recv_exactly(s, 4), "big")), 10, 4)
        assert header["correlationId"] == 3 and body["coordinators"][0]["errorCode"] == 0
    log = gateway.log_file.read_text(errors="replace")
    assert "Traceback" not in log and "MessageSizeTooLarge" not in log
