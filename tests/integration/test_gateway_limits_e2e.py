"""The gateway's request-memory bound in a real gateway process (`python -m gateway`, against the
test run's broker; no Spark job: the gateway listens once the broker and the request topic are
there). Eight clients each send 20 MB of a 24 MiB frame, as in issue 26 (there 40 MB of 100 MiB:
the gateway went from 55 to 405 MB RSS). Under a 48 MiB bound two frames are read and the others
wait unread; the gateway's RSS grows by about the bound, not by everything sent.
The asyncio tests of the same (and of the idle and per-address limits) are in
tests/gateway/test_gateway_limits.py."""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
import time

import pytest

from deploy.kafka_local import free_port
from deploy.topics import ensure_topics
from streaming.config import StreamConfig

from .harness import ROOT, _to_toml

pytestmark = pytest.mark.integration

MB, MiB = 1_000_000, 1 << 20
BOUND, FRAME, SEND, CONNECTIONS = 48 * MiB, 24 * MiB, 20 * MB, 8


def rss_mb(pid: int) -> float:
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


def wait_for(condition, what: str, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"no {what} in {timeout}s"
        time.sleep(0.1)


@pytest.fixture
def gateway(kafka, tmp_path):
    # The session's single broker: its topics have one replica (LocalKafka.service_topics).
    topics = kafka.service_topics
    cfg = StreamConfig.load(overrides={"kafka": {"bootstrap_servers": kafka.bootstrap}, "topics": topics})
    ensure_topics(cfg)  # the request topic: the gateway waits for it
    config = tmp_path / "gateway.toml"
    settings = {"base_port": free_port(), "queued_max_request_bytes": BOUND, "client_id": "limits-gateway"}
    config.write_text(
        _to_toml({"kafka": {"bootstrap_servers": kafka.bootstrap}, "topics": topics, "gateway": settings})
    )
    log = tmp_path / "gateway.log"
    proc = subprocess.Popen(
        [sys.executable, "-m", "gateway", "--config", str(config)],
        cwd=ROOT,
        stdout=open(log, "wb"),
        stderr=subprocess.STDOUT,
    )
    try:
        wait_for(lambda: "GATEWAY-LISTENING" in log.read_text() or proc.poll() is not None, "GATEWAY-LISTENING")
        assert proc.poll() is None, log.read_text()
        line = next(x for x in log.read_text().splitlines() if "GATEWAY-LISTENING" in x)
        yield proc, line.split("bootstrap.servers=")[1].strip(), log
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_request_memory_stays_under_its_bound_with_many_partial_frames(gateway):
    proc, bootstrap, log = gateway
    host, _, port = bootstrap.rpartition(":")
    before = rss_mb(proc.pid)
    sent = [0] * CONNECTIONS
    sockets: list[socket.socket] = []

    def send(i: int) -> None:
        s = socket.create_connection((host, int(port)))
        sockets.append(s)
        s.settimeout(2.0)  # a send that makes no progress for 2 s: the gateway does not read this one
        chunk = b"\0" * MiB
        try:
            s.sendall(FRAME.to_bytes(4, "big") + (11).to_bytes(2, "big"))
            while sent[i] < SEND:
                sent[i] += s.send(chunk[: SEND - sent[i]])
        except TimeoutError:
            pass

    threads = [threading.Thread(target=send, args=(i,), daemon=True) for i in range(CONNECTIONS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    wait_for(lambda: "request memory full" in log.read_text(), "'request memory full' in the gateway's log")
    grown = rss_mb(proc.pid) - before
    for s in sockets:
        s.close()
    # Two frames granted (2 x 24 MiB <= 48 MiB), the others not read: their clients' sends stopped
    # once the kernel's socket buffers were full.
    assert sum(n >= SEND for n in sent) < CONNECTIONS, sent
    # What the gateway holds: the granted frames' 2 x 20 MB, and some read-ahead per connection;
    # without the bound it was all 160 MB.
    assert grown < BOUND / MB + 30, (grown, sent)
    assert proc.poll() is None
