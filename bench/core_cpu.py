"""CPU time per request through the core, for comparing two source trees on a shared machine.

Each scenario drives the real coordinator through the tests' `CoreDriver` (one request per batch,
the partition decoded from and encoded to its state around every batch, as in the stream) and
measures process CPU time (`time.process_time`), which other processes on the machine disturb far
less than wall time does. With `--trees A B ...` every tree runs each scenario in its own process,
interleaved round by round, and the figures are printed side by side with the ratio to the first.

    .venv/bin/python bench/core_cpu.py                       # this tree
    .venv/bin/python bench/core_cpu.py --trees ../old .      # an older checkout against this one
    .venv/bin/python bench/core_cpu.py --trees ../old . --opcodes --rounds 1   # deterministic figures
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

SCENARIOS = ["OffsetCommit", "ClassicHeartbeat", "ConsumerGroupHeartbeat", "Transaction"]
# Not in the default set (older trees cannot run it): `--scenarios OffsetCommit OffsetCommitAuthorized`
# gives the cost of authorising a request (a principal through a SASL gateway, 200 ACLs of other
# principals and resources besides the ones that allow it) against the same request without one.
EXTRA_SCENARIOS = ["OffsetCommitAuthorized"]


def run_scenario(name: str, n: int, count_calls: bool = False, count_opcodes: bool = False) -> float:
    """Median CPU ms per request (Transaction: per transaction of four requests) over blocks; with
    `count_calls`, the Python function calls per request instead, with `count_opcodes` the Python
    bytecodes executed per request (both deterministic: the same on a busy machine as on an idle
    one, where CPU time on this project's VMs varies by a third from run to run)."""
    from tests.core_driver import CoreDriver

    d = CoreDriver(group_id="g")
    d.send(
        "UpdateMetadata", 0, {"topicStates": [{"topicName": "t", "numPartitions": 8}]}, key="__coordinator_broadcast__"
    )
    send = d.send
    if name == "OffsetCommitAuthorized":
        acls = [
            {
                "resourceType": rt,
                "resourceName": f"{kind}-{i}",
                "patternType": 3 if i % 4 else 4,
                "principal": f"User:u{i}",
                "host": "*",
                "operation": 3,
                "permissionType": 3,
            }
            for i in range(100)
            for rt, kind in ((2, "topic"), (3, "group"))
        ] + [
            {
                "resourceType": rt,
                "resourceName": n,
                "patternType": 3,
                "principal": "User:alice",
                "host": "*",
                "operation": 3,
                "permissionType": 3,
            }
            for rt, n in ((2, "t"), (3, "g"))
        ]
        update = {
            "apiKey": "UpdateAcls",
            "apiVersion": 0,
            "correlationId": 1,
            "clientId": "bench",
            "request": {"acls": acls, "superUsers": ["User:admin"], "allowEveryoneIfNoAclFound": False},
        }
        d.send_raw(
            json.dumps(update).encode(), key="__coordinator_broadcast__", internal=True, stamp=("acl-publisher", 1, 0)
        )

        def send(api, version, body):
            return d.send(api, version, body, principal="User:alice", client_host="/127.0.0.1")

        name = "OffsetCommit"
    if name == "OffsetCommit":
        body = {
            "groupId": "g",
            "generationIdOrMemberEpoch": -1,
            "memberId": "",
            "groupInstanceId": None,
            "retentionTimeMs": -1,
            "topics": [
                {
                    "name": "t",
                    "partitions": [
                        {"partitionIndex": p, "committedOffset": 0, "committedLeaderEpoch": -1, "committedMetadata": ""}
                        for p in range(8)
                    ],
                }
            ],
        }

        def op(i: int) -> None:
            for p in body["topics"][0]["partitions"]:
                p["committedOffset"] = i
            r = send("OffsetCommit", 8, body)
            assert all(p["errorCode"] == 0 for t in r["topics"] for p in t["partitions"]), r
    elif name == "ClassicHeartbeat":
        join = {
            "groupId": "g",
            "sessionTimeoutMs": 45000,
            "rebalanceTimeoutMs": 60000,
            "memberId": "",
            "groupInstanceId": None,
            "protocolType": "consumer",
            "protocols": [{"name": "range", "metadata": ""}],
            "reason": None,
        }
        r = d.send("JoinGroup", 9, join)
        join["memberId"] = r["memberId"]
        d.send("JoinGroup", 9, join)
        d.advance(3100)
        gen = d.send("JoinGroup", 9, join) or {}
        generation = gen.get("generationId", 1)

        def op(i: int) -> None:
            r = d.send(
                "Heartbeat",
                4,
                {"groupId": "g", "generationId": generation, "memberId": join["memberId"], "groupInstanceId": None},
            )
            assert r["errorCode"] == 0, r
    elif name == "ConsumerGroupHeartbeat":
        r = d.send(
            "ConsumerGroupHeartbeat",
            0,
            {
                "groupId": "g",
                "memberId": "m-1-xxxxxxxxxxxxxxxxx",
                "memberEpoch": 0,
                "instanceId": None,
                "rackId": None,
                "rebalanceTimeoutMs": 60000,
                "subscribedTopicNames": ["t"],
                "serverAssignor": None,
                "topicPartitions": [],
            },
        )
        state = {"epoch": r["memberEpoch"]}

        def op(i: int) -> None:
            resp = d.send(
                "ConsumerGroupHeartbeat",
                0,
                {
                    "groupId": "g",
                    "memberId": "m-1-xxxxxxxxxxxxxxxxx",
                    "memberEpoch": state["epoch"],
                    "instanceId": None,
                    "rackId": None,
                    "rebalanceTimeoutMs": -1,
                    "subscribedTopicNames": None,
                    "serverAssignor": None,
                    "topicPartitions": None,
                },
            )
            assert resp["errorCode"] == 0, resp
            state["epoch"] = resp["memberEpoch"]
    elif name == "Transaction":
        from coordinator.routing import coordinator_partition

        tid = next(f"tx-{i}" for i in range(10_000) if coordinator_partition(f"tx-{i}") == coordinator_partition("g"))
        r = d.send(
            "InitProducerId",
            3,
            {"transactionalId": tid, "transactionTimeoutMs": 60000, "producerId": -1, "producerEpoch": -1},
            key=tid,
        )
        pid, epoch = r["producerId"], r["producerEpoch"]

        def op(i: int) -> None:
            r = d.send(
                "AddPartitionsToTxn",
                3,
                {
                    "v3AndBelowTransactionalId": tid,
                    "v3AndBelowProducerId": pid,
                    "v3AndBelowProducerEpoch": epoch,
                    "v3AndBelowTopics": [{"name": "t", "partitions": [0, 1]}],
                },
                key=tid,
            )
            assert all(
                p["partitionErrorCode"] == 0 for t in r["resultsByTopicV3AndBelow"] for p in t["resultsByPartition"]
            ), r
            r = d.send(
                "EndTxn",
                3,
                {"transactionalId": tid, "producerId": pid, "producerEpoch": epoch, "committed": True},
                key=tid,
            )
            assert r["errorCode"] == 0, r
            d.advance(1)  # the markers' batch: Complete* is written at the start of the next one
            d.advance(1)
    else:
        raise SystemExit(f"unknown scenario {name}")
    for i in range(5):  # warm up
        op(i)
    if count_opcodes:
        ops = [0]

        def tracer(frame, event, arg):
            frame.f_trace_opcodes = True
            if event == "opcode":
                ops[0] += 1
            return tracer

        sys.settrace(tracer)
        for i in range(n):
            op(10 + i)
        sys.settrace(None)
        return ops[0] / n
    if count_calls:
        calls = [0]

        def counter(frame, event, arg):
            if event in ("call", "c_call"):
                calls[0] += 1

        sys.setprofile(counter)
        for i in range(n):
            op(10 + i)
        sys.setprofile(None)
        return calls[0] / n
    blocks = []
    for b in range(7):
        t = time.process_time()
        for i in range(n):
            op(10 + b * n + i)
        blocks.append((time.process_time() - t) * 1000 / n)
    return statistics.median(blocks)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--trees", nargs="*", help="source trees to compare (default: this one)")
    ap.add_argument("--requests", type=int, default=40, help="requests per timed block (7 blocks)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--calls", action="store_true", help="count Python function calls per request instead")
    ap.add_argument("--opcodes", action="store_true", help="count Python bytecodes per request instead")
    ap.add_argument("--scenarios", nargs="*", help=f"default: {' '.join(SCENARIOS)}; also {' '.join(EXTRA_SCENARIOS)}")
    ap.add_argument("--one", help=argparse.SUPPRESS)  # internal: run one scenario here, print JSON
    args = ap.parse_args()
    if args.one:
        print(json.dumps(run_scenario(args.one, args.requests, args.calls, args.opcodes)))
        return 0
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    trees = [os.path.abspath(t) for t in (args.trees or [here])]
    scenarios = args.scenarios or SCENARIOS
    results: dict[str, dict[str, list[float]]] = {t: {s: [] for s in scenarios} for t in trees}
    for _ in range(args.rounds):
        for scenario in scenarios:
            for tree in trees:
                env = dict(os.environ, PYTHONPATH=tree)
                out = subprocess.run(
                    [
                        sys.executable,
                        os.path.join(here, "bench", "core_cpu.py"),
                        "--one",
                        scenario,
                        "--requests",
                        str(args.requests),
                        *(["--calls"] if args.calls else []),
                        *(["--opcodes"] if args.opcodes else []),
                    ],
                    cwd=tree,
                    env=env,
                    capture_output=True,
                    text=True,
                    check=True,
                )
                results[tree][scenario].append(json.loads(out.stdout.strip().splitlines()[-1]))
    counted = args.calls or args.opcodes
    what = "Python bytecodes" if args.opcodes else "Python function calls" if args.calls else "CPU ms"
    print(
        f"{what} per request (Transaction: per AddPartitionsToTxn + EndTxn + markers + Complete), median of "
        f"{args.rounds} rounds; ratio to the first tree"
    )
    print(f"{'scenario':<24}" + "".join(f"{os.path.basename(t) or t:>22}" for t in trees))
    for scenario in scenarios:
        base = statistics.median(results[trees[0]][scenario])
        cells = []
        for t in trees:
            m = statistics.median(results[t][scenario])
            cells.append(f"{m:>12.3f} ({m / base:4.2f}x)" if not counted else f"{m:>12.0f} ({m / base:4.2f}x)")
        print(f"{scenario:<24}" + "".join(f"{c:>22}" for c in cells))
    return 0


if __name__ == "__main__":
    sys.exit(main())
