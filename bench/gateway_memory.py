#!/usr/bin/env python3
"""The gateway's memory with many client connections sending partial frames (issue 26).

    .venv/bin/python bench/gateway_memory.py [--connections 8] [--send-mb 40] [--frame-mib 100]
                                             [--bounds 0,200]

A broker and a gateway process (no Spark job: the gateway listens once the broker and the request
topic are there), then `--connections` client connections, each announcing a frame of `--frame-mib`
MiB and sending `--send-mb` MB of it (until its socket stops taking bytes for 2 s: the gateway does
not read it). Printed per `queued_max_request_bytes` bound (MiB; 0 = as before the bound: larger
than everything sent): the gateway's RSS before and after, and how many connections could send all
of their bytes. The gateway's own test of the bound is tests/gateway/test_gateway_limits.py.
"""

from __future__ import annotations

import argparse
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from deploy.kafka_local import LocalKafka, free_port  # noqa: E402
from tests.integration.harness import _to_toml  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
MB = 1_000_000
MiB = 1 << 20


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def start_gateway(broker: LocalKafka, work: Path, bound_mib: int) -> tuple[subprocess.Popen, str]:
    config = work / f"gateway-{bound_mib}.toml"
    gateway = {"base_port": free_port(), "queued_max_request_bytes": (bound_mib or 1 << 20) * MiB}
    settings = {"kafka": {"bootstrap_servers": broker.bootstrap}, "topics": broker.service_topics, "gateway": gateway}
    config.write_text(_to_toml(settings))
    log = work / f"gateway-{bound_mib}.log"
    proc = subprocess.Popen(
        [sys.executable, "-m", "gateway", "--config", str(config)],
        cwd=ROOT,
        stdout=open(log, "wb"),
        stderr=subprocess.STDOUT,
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        for line in log.read_text(errors="replace").splitlines():
            if "GATEWAY-LISTENING" in line:
                return proc, line.split("bootstrap.servers=")[1].strip()
        if proc.poll() is not None:
            raise RuntimeError(log.read_text())
        time.sleep(0.2)
    raise TimeoutError("the gateway did not listen")


def send_partial(address: tuple[str, int], frame_bytes: int, send_bytes: int, sent: list[int], i: int) -> socket.socket:
    s = socket.create_connection(address)
    s.settimeout(2.0)
    chunk = b"\0" * MiB
    try:
        s.sendall(frame_bytes.to_bytes(4, "big") + (11).to_bytes(2, "big"))
        sent[i] = 6
        while sent[i] < send_bytes:
            n = s.send(chunk[: min(len(chunk), send_bytes - sent[i])])
            sent[i] += n
    except TimeoutError:
        pass  # the gateway reads no more of it
    return s


def measure(broker: LocalKafka, work: Path, bound_mib: int, args) -> dict:
    proc, bootstrap = start_gateway(broker, work, bound_mib)
    try:
        time.sleep(1.0)
        before = rss_mb(proc.pid)
        host, _, port = bootstrap.rpartition(":")
        sent = [0] * args.connections
        sockets: list = [None] * args.connections

        def run(i: int) -> None:
            sockets[i] = send_partial((host, int(port)), args.frame_mib * MiB, args.send_mb * MB, sent, i)

        threads = [threading.Thread(target=run, args=(i,)) for i in range(args.connections)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        time.sleep(1.0)  # let the gateway read what it will
        after = rss_mb(proc.pid)
        for s in sockets:
            if s is not None:
                s.close()
        complete = sum(1 for n in sent if n >= args.send_mb * MB)
        return {"before": before, "after": after, "complete": complete, "sent_mb": sum(sent) / MB}
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--connections", type=int, default=8)
    ap.add_argument("--send-mb", type=int, default=40)
    ap.add_argument("--frame-mib", type=int, default=100)
    ap.add_argument("--bounds", default="0,200")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="gateway-memory-") as tmp:
        work = Path(tmp)
        broker = LocalKafka(work / "kafka", free_port(), free_port()).start()
        try:
            from deploy.topics import ensure_topics
            from streaming.config import StreamConfig

            overrides = {"kafka": {"bootstrap_servers": broker.bootstrap}, "topics": broker.service_topics}
            ensure_topics(StreamConfig.load(overrides=overrides))
            print(f"{args.connections} connections, each sending {args.send_mb} MB of a {args.frame_mib} MiB frame:")
            for bound in (int(b) for b in args.bounds.split(",")):
                r = measure(broker, work, bound, args)
                name = "no bound (as before)" if bound == 0 else f"queued_max_request_bytes {bound} MiB"
                print(
                    f"  {name}: gateway RSS {r['before']:.0f} -> {r['after']:.0f} MB (+{r['after'] - r['before']:.0f}), "
                    f"{r['sent_mb']:.0f} MB taken, {r['complete']}/{args.connections} connections sent all"
                )
        finally:
            broker.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
