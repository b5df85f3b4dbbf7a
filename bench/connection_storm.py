#!/usr/bin/env python3
"""Many Kafka clients connecting at once, through the gateway and straight to the broker.

    .venv/bin/python bench/connection_storm.py [--clients 500,2000] [--gateway-checkout DIR]

One broker and one gateway (started here; the gateway needs no coordinator job for this: it answers
FindCoordinator itself and passes ApiVersions and Metadata through; the request topic it waits for
is created here). For each count, in the same run, N clients start at the same moment against each
path, each doing what a Kafka client does first on its bootstrap connection: ApiVersions, Metadata,
FindCoordinator (through the gateway: its own answer; straight: the broker's coordinator). A client
whose connection fails (refused, reset, closed, no answer in 10 s) tries again on a new one, as a
client does after its reconnect backoff (100 ms here), until it is connected or 60 s have passed.
Printed per path: clients connected, clients that saw an error (and which), time until every
client was connected; for the gateway also the broker connections it opened and lost (its log).
All clients keep their connections open until the round ends (the storm's peak holds N at once).
`--gateway-checkout` runs the gateway of another checkout (e.g. an older commit's `git archive`)
to compare; `--gateway-open-files 1024` starts the gateway with that soft limit of open files (a
common default: the gateway raises it to the hard limit itself, older ones did not).
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kafka import KafkaAdminClient  # noqa: E402
from kafka.admin import NewTopic  # noqa: E402

from deploy.kafka_local import LocalKafka, free_port  # noqa: E402
from gateway.codec import decode_response, encode_request  # noqa: E402

ATTEMPT_TIMEOUT = 10.0
DEADLINE = 60.0
BACKOFF = 0.1
REQUESTS = [  # (api key, version, body): a client's first requests on its bootstrap connection
    (18, 3, {"clientSoftwareName": "storm", "clientSoftwareVersion": "1"}),
    (3, 12, {"topics": None, "allowAutoTopicCreation": False, "includeTopicAuthorizedOperations": False}),
    (10, 4, {"keyType": 0, "coordinatorKeys": ["storm-group-{n}"]}),  # a group of its own
]


def raise_fd_limit(needed: int) -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < needed:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(needed, hard), hard))
    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    if soft < needed:
        sys.exit(f"open files limit {soft} < {needed} (ulimit -n): raise the hard limit")


def frames(client: int) -> list[bytes]:
    out = []
    for cid, (key, version, body) in enumerate(REQUESTS):
        if key == 10:
            body = {**body, "coordinatorKeys": [f"storm-group-{client}"]}
        payload = encode_request(key, version, cid, f"storm-{client}", body)
        out.append(len(payload).to_bytes(4, "big") + payload)
    return out


async def attempt(host: str, port: int, requests: list[bytes]) -> asyncio.StreamWriter:
    """One connection doing the client's first requests; the open connection once all are answered."""
    reader, writer = await asyncio.open_connection(host, port)
    try:
        for cid, frame in enumerate(requests):
            writer.write(frame)
            size = int.from_bytes(await reader.readexactly(4), "big")
            answer = await reader.readexactly(size)
            header, body = decode_response(answer, REQUESTS[cid][0], REQUESTS[cid][1])
            if header["correlationId"] != cid:
                raise ConnectionError(f"answer to correlation id {header['correlationId']}, expected {cid}")
            if REQUESTS[cid][0] == 18 and body["errorCode"]:
                raise ConnectionError(f"ApiVersions error {body['errorCode']}")
        return writer
    except BaseException:
        writer.close()
        raise


def error_kind(e: BaseException) -> str:
    if isinstance(e, asyncio.IncompleteReadError):
        return "closed by peer"
    if isinstance(e, TimeoutError):
        return "no answer in time"
    if isinstance(e, ConnectionResetError):
        return "reset"
    if isinstance(e, ConnectionRefusedError):
        return "refused"
    return type(e).__name__


async def storm(host: str, port: int, clients: int) -> dict:
    requests = [frames(n) for n in range(clients)]
    start = asyncio.Event()
    errors: collections.Counter[str] = collections.Counter()
    failed_once: set[int] = set()
    connected_after: dict[int, float] = {}
    writers: list[asyncio.StreamWriter] = []
    t0 = 0.0

    async def client(n: int) -> None:
        await start.wait()
        loop = asyncio.get_running_loop()
        while loop.time() - t0 < DEADLINE:
            try:
                writers.append(await asyncio.wait_for(attempt(host, port, requests[n]), ATTEMPT_TIMEOUT))
                connected_after[n] = loop.time() - t0
                return
            except (OSError, asyncio.IncompleteReadError, TimeoutError) as e:
                errors[error_kind(e)] += 1
                failed_once.add(n)
                await asyncio.sleep(BACKOFF)

    tasks = [asyncio.create_task(client(n)) for n in range(clients)]
    await asyncio.sleep(0.1)
    t0 = asyncio.get_running_loop().time()
    start.set()
    await asyncio.gather(*tasks)
    for w in writers:
        w.close()
    times = sorted(connected_after.values())
    return {
        "connected": len(times),
        "failed_once": len(failed_once),
        "errors": dict(errors),
        "p50": statistics.median(times) if times else float("nan"),
        "all": times[-1] if len(times) == clients else float("nan"),
    }


def gateway_log_counts(log: Path) -> tuple[int, int]:
    """(client connections closed because their broker connection failed, log lines about it)."""
    text = log.read_text(errors="replace")
    lost = sum(
        1
        for line in text.splitlines()
        if "broker connection lost" in line or "the broker closed the connection" in line
    )
    return lost, text.count("Traceback")


def start_gateway(
    checkout: Path, broker: LocalKafka, work: Path, open_files: int | None
) -> tuple[subprocess.Popen, str, Path]:
    config = work / "gateway.toml"
    config.write_text(
        f'[kafka]\nbootstrap_servers = "{broker.bootstrap}"\n'
        f'[gateway]\nbase_port = {free_port()}\nclient_id = "storm-gateway"\n'
    )
    log = work / "gateway.log"
    proc = subprocess.Popen(
        [sys.executable, "-m", "gateway", "--config", str(config)],
        cwd=checkout,
        env=dict(os.environ, PYTHONUNBUFFERED="1"),
        stdout=open(log, "ab"),
        stderr=subprocess.STDOUT,
        preexec_fn=None
        if open_files is None
        else lambda: resource.setrlimit(
            resource.RLIMIT_NOFILE, (open_files, resource.getrlimit(resource.RLIMIT_NOFILE)[1])
        ),
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        for line in log.read_text(errors="replace").splitlines():
            if "GATEWAY-LISTENING" in line:
                return proc, line.split("bootstrap.servers=")[1].strip(), log
        if proc.poll() is not None:
            break
        time.sleep(0.3)
    proc.kill()
    raise RuntimeError(f"the gateway did not listen:\n{log.read_text(errors='replace')[-3000:]}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--clients", default="500,2000")
    ap.add_argument("--gateway-checkout", type=Path, default=ROOT)
    ap.add_argument("--gateway-open-files", type=int, help="the gateway's soft limit of open files")
    args = ap.parse_args()
    counts = [int(c) for c in args.clients.split(",")]
    raise_fd_limit(max(counts) + 1024)
    work = Path(tempfile.mkdtemp(prefix="bench-connection-storm-"))
    broker = LocalKafka(work / "kafka", free_port(), free_port()).start()
    gateway = None
    try:
        admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
        admin.create_topics([NewTopic("coordinator-requests", 2, 1)])
        admin.close()
        gateway, bootstrap, log = start_gateway(args.gateway_checkout.resolve(), broker, work, args.gateway_open_files)
        paths = {"gateway": bootstrap, "broker": broker.bootstrap}
        rows = []
        for clients in counts:
            for path, address in paths.items():
                host, _, port = address.rpartition(":")
                lost_before, _ = gateway_log_counts(log)
                result = asyncio.run(storm(host, int(port), clients))
                lost = gateway_log_counts(log)[0] - lost_before if path == "gateway" else None
                rows.append((clients, path, result, lost))
                print(
                    f"{clients} clients, {path}: {result}"
                    + (f", closed on broker failure {lost}" if lost is not None else ""),
                    flush=True,
                )
                time.sleep(2)  # the closed connections drain
        print(
            f"\nconnection storm (ApiVersions, Metadata, FindCoordinator per client), gateway from {args.gateway_checkout}:"
        )
        print(
            f"{'clients':>7s} {'path':8s} {'connected':>9s} {'saw an error':>12s} {'errors':30s} {'p50 (s)':>8s} {'all (s)':>8s} {'closed: broker conn failed':>26s}"
        )
        for clients, path, r, lost in rows:
            errs = ", ".join(f"{k} {v}" for k, v in sorted(r["errors"].items())) or "none"
            print(
                f"{clients:7d} {path:8s} {r['connected']:9d} {r['failed_once']:12d} {errs:30s} "
                f"{r['p50']:8.2f} {r['all']:8.2f} {'' if lost is None else lost:>26}"
            )
    finally:
        if gateway is not None:
            gateway.terminate()
            try:
                gateway.wait(timeout=20)
            except subprocess.TimeoutExpired:
                gateway.kill()
                gateway.wait()
        broker.stop(timeout=5)


if __name__ == "__main__":
    main()
