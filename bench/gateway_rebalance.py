#!/usr/bin/env python3
"""A Java consumer group of three through the gateway and against the broker's own coordinator:
time to a stable group, and rebalance time after a member is SIGKILLed.

    .venv/bin/python bench/gateway_rebalance.py [--rounds 2] [--protocols classic,consumer]

One broker, one job and one gateway (started here). For each protocol and each round, in the same
run, a fresh group on each path:
- "gateway": three Java consumers (tests/integration/java, kafka-clients 4.1) bootstrap to the
  gateway: the service's coordinators answer their group requests;
- "broker": the same three bootstrap to the broker: Kafka's own group coordinator answers.
Measured (wall clock, from this process):
- stable: launching the three JVMs -> every member has a non-empty assignment and together they
  own every partition once (includes the JVMs' start, the same on both paths);
- rebalance: SIGKILL of one member -> the two others own every partition. A killed member never
  leaves: this is dominated by its session timeout (classic: session.timeout.ms = 6 s, set by the
  client; consumer: group.consumer.session.timeout.ms = 10 s, set on the broker and the service
  alike), then by the rebalance itself.
Both coordinators get the same group settings (initial rebalance delay 0, heartbeat 1 s).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from kafka import KafkaAdminClient, KafkaProducer  # noqa: E402
from kafka.admin import NewTopic  # noqa: E402

from deploy.kafka_local import LocalKafka, free_port  # noqa: E402
from tests.integration.gateway_process import Gateway  # noqa: E402
from tests.integration.harness import StreamJob  # noqa: E402
from tests.integration.java_client import JavaMember, assignments, compile_java_client  # noqa: E402

PARTITIONS = 6
SESSION = {
    "group.initial.rebalance.delay.ms": 0,
    "group.consumer.session.timeout.ms": 10000,
    "group.consumer.min.session.timeout.ms": 6000,
    "group.consumer.heartbeat.interval.ms": 1000,
    "group.consumer.min.heartbeat.interval.ms": 1000,
}
TIMEOUT = 180


def stable_at(members: list[JavaMember]) -> float | None:
    """When the members' latest assignments came to cover every partition once, each member holding
    one at least (the time of the last of those ASSIGNED lines); None if they do not (yet). After a
    kill the survivors' earlier assignments lack the victim's partitions, so only the takeover
    completes them."""
    latest: dict[str, tuple[float, list[int]]] = {}
    for m in members:
        with m.cond:
            for t, line in zip(m.times, m.lines, strict=True):
                if line.startswith("ASSIGNED "):
                    for member, parts in assignments([line]).items():
                        latest[member] = (t, parts)
    owned = sorted(p for _, ps in latest.values() for p in ps)
    if len(latest) == len(members) and owned == list(range(PARTITIONS)) and all(ps for _, ps in latest.values()):
        return max(t for t, _ in latest.values())
    return None


def wait_stable(members: list[JavaMember], since: float) -> float:
    deadline = time.monotonic() + TIMEOUT
    while time.monotonic() < deadline:
        t = stable_at(members)
        if t is not None and t >= since:
            return t - since
        time.sleep(0.05)
    raise TimeoutError(f"no stable group within {TIMEOUT}s: {[m.snapshot()[-3:] for m in members]}")


def one_round(classpath: str, bootstrap: str, topic: str, group: str, protocol: str, logs: Path) -> tuple[float, float]:
    launched = time.monotonic()
    members = [
        JavaMember(classpath, "consume", bootstrap, group, topic, protocol, f"m{i}", log_dir=logs) for i in range(3)
    ]
    try:
        stable = wait_stable(members, launched)
        # Let the group settle (a consumer-protocol group reconciles in steps), then kill one.
        time.sleep(2)
        killed = time.monotonic()
        members[0].kill()
        rebalance = wait_stable(members[1:], killed)
        return stable, rebalance
    finally:
        for m in members:
            m.stop()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--protocols", default="classic,consumer")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-gateway-rebalance-"))
    broker = LocalKafka(work / "kafka", free_port(), free_port(), extra_config=SESSION).start()
    job = gateway = None
    try:
        job = StreamJob(
            broker.bootstrap,
            work / "job",
            "bench-gw",
            txn={"markers": "broker"},
            stream={"metadata_refresh_ms": 1000},
            coordinator={"coordinator.partitions": 10, **SESSION},
        ).start()
        gateway = Gateway(job.config_file, work / "gateway", client_id="bench-gateway")
        classpath = compile_java_client(work / "java")
        topic = "bench-rebalance-in"
        admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
        admin.create_topics([NewTopic(topic, PARTITIONS, 1)])
        admin.close()
        producer = KafkaProducer(bootstrap_servers=broker.bootstrap)
        for i in range(600):
            producer.send(topic, f"v{i}".encode(), partition=i % PARTITIONS)
        producer.flush()
        producer.close()
        results: dict[tuple[str, str], list[tuple[float, float]]] = {}
        for protocol in args.protocols.split(","):
            for r in range(args.rounds):
                for path, bootstrap in (("gateway", gateway.bootstrap), ("broker", broker.bootstrap)):
                    stable, rebalance = one_round(
                        classpath, bootstrap, topic, f"bench-{protocol}-{path}-{r}", protocol, work
                    )
                    results.setdefault((protocol, path), []).append((stable, rebalance))
                    print(
                        f"{protocol:8s} {path:7s} round {r}: stable {stable:6.2f} s, "
                        f"rebalance after kill {rebalance:6.2f} s",
                        flush=True,
                    )
        print("\nJava group of three (kafka-clients 4.1), median of", args.rounds, "rounds:")
        print(f"{'protocol':9s} {'path':8s} {'stable (s)':>11s} {'rebalance after kill (s)':>25s}")
        for (protocol, path), rows in results.items():
            print(
                f"{protocol:9s} {path:8s} {statistics.median(s for s, _ in rows):11.2f} "
                f"{statistics.median(b for _, b in rows):25.2f}"
            )
    finally:
        if gateway is not None:
            gateway.stop()
        if job is not None:
            job.stop()
        broker.stop(timeout=5)


if __name__ == "__main__":
    main()
