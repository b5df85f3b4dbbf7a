#!/usr/bin/env python3
"""The gateway's own CPU per bridged request: decode the client's OffsetCommit v8, route it, write
the JSON envelope, encode the service's answer. No sockets and no Kafka clients (kafka-python's
producer and consumer are the rest of the gateway's cost: bench/gateway_throughput.py measures
the whole process), so the figure hardly moves with the machine's load.

    .venv/bin/python bench/gateway_request_cost.py [--requests 20000]
    .venv/bin/python bench/gateway_request_cost.py --before-checkout DIR   # and an older gateway's

`--before-checkout`: a `git archive` of an older commit whose gateway used kio (its codec's
`decode_request`/`to_json`/`from_json`/`encode_response`, and `json.dumps` for the envelope), with
kio installed in this .venv; both are measured in the same run, alternating, and the ratio printed.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from coordinator.api import lookup  # noqa: E402
from gateway import apis, codec  # noqa: E402
from gateway.bridge import _encode  # noqa: E402

BODY = {
    "groupId": "bench-gateway-1-7",
    "generationIdOrMemberEpoch": -1,
    "memberId": "",
    "groupInstanceId": None,
    "topics": [
        {
            "name": "bench-gw-commits",
            "partitions": [
                {"partitionIndex": 3, "committedOffset": 12345, "committedLeaderEpoch": -1, "committedMetadata": ""}
            ],
        }
    ],
}
ANSWER = {
    "throttleTimeMs": 0,
    "topics": [{"name": "bench-gw-commits", "partitions": [{"partitionIndex": 3, "errorCode": 0}]}],
}
FRAME = codec.encode_request(8, 8, 5, "bench-1", BODY)
SPEC = lookup("OffsetCommit")


def envelope(body: dict) -> dict:
    return {
        "apiKey": "OffsetCommit",
        "apiVersion": 8,
        "correlationId": 12345678,
        "clientId": "bench-1",
        "replyTo": "coordinator-responses.gateway",
        "kafkaClient": True,
        "request": body,
        "clientHost": "/127.0.0.1",
    }


def now() -> None:
    body = codec.decode_request(FRAME, 8, 8)[1]
    sub = apis.plan(SPEC, 8, body, 50)[0]
    _encode(envelope(sub.body)).encode()
    codec.encode_response(5, 8, 8, ANSWER)


def before(checkout: Path):
    spec = importlib.util.spec_from_file_location("gateway_codec_before", checkout / "gateway" / "codec.py")
    assert spec is not None and spec.loader is not None
    old = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = old
    spec.loader.exec_module(old)
    response = old.response_class(8, 8)

    def run() -> None:
        body = old.to_json(old.decode_request(FRAME, 8, 8)[1])
        sub = apis.plan(SPEC, 8, body, 50)[0]
        json.dumps(envelope(sub.body), separators=(",", ":")).encode()
        old.encode_response(5, old.from_json(response, ANSWER))

    return run


def cost(fn, n: int) -> float:
    start = time.process_time()
    for _ in range(n):
        fn()
    return (time.process_time() - start) / n * 1e6


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--requests", type=int, default=20000)
    ap.add_argument("--before-checkout", type=Path)
    args = ap.parse_args()
    paths = {"now": now}
    if args.before_checkout:
        paths["before"] = before(args.before_checkout)
    results: dict[str, list[float]] = {name: [] for name in paths}
    for _ in range(3):  # alternating, so that both see the same machine
        for name, fn in paths.items():
            results[name].append(cost(fn, args.requests))
    for name, values in results.items():
        print(f"{name:7s} {min(values):6.1f} us CPU per request (rounds: {', '.join(f'{v:.1f}' for v in values)})")
    if "before" in results:
        print(f"now / before: {min(results['now']) / min(results['before']):.2f}x")


if __name__ == "__main__":
    main()
