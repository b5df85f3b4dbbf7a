"""Create (or check) the service's topics.

    python -m deploy.topics [--config override.toml]

- requests, internal: message.timestamp.type=LogAppendTime, so a request's time is the broker's;
- responses, events, dead letters: plain;
- state log: cleanup.policy=compact, one partition per coordinator partition (as __consumer_offsets);
- metrics, timers: cleanup.policy=compact (keyed by coordinator partition).
Every topic gets `[topics] replication_factor` replicas and `min.insync.replicas =
[topics] min_insync_replicas` (Kafka's 3 and 2 by default; a single broker is told 1 and 1).
Existing topics are checked: a request topic without LogAppendTime, a state log with the wrong
partition count, or a topic less durable than configured (fewer replicas, a lower
min.insync.replicas) is an error, not something to silently run with.

    python -m deploy.topics --raise-durability [--config override.toml]

adds replicas to (partition reassignment) and raises min.insync.replicas of existing service topics
less durable than configured, then waits for the new replicas to be in sync.
"""

from __future__ import annotations

import argparse
import sys
import time

from kafka import KafkaAdminClient, TopicPartition
from kafka.admin import ConfigResource, ConfigResourceType, NewTopic
from kafka.errors import TopicAlreadyExistsError

from streaming.config import StreamConfig


def desired_topics(cfg: StreamConfig) -> list[NewTopic]:
    t = cfg.topics
    rf, min_isr = cfg.topic_durability
    # The service's own records may be larger than the broker's 1 MB default (a big group's
    # metadata, an OffsetFetch of many partitions): its topics take what the sink may write.
    big = {"max.message.bytes": str(int(cfg.stream["max_record_bytes"]))}
    topics = [
        NewTopic(
            t["requests"],
            int(t["requests_partitions"]),
            rf,
            topic_configs={"message.timestamp.type": "LogAppendTime", **big},
        ),
        # The internal channel is ordered with the requests by append time, like them.
        NewTopic(t["internal"], 1, rf, topic_configs={"message.timestamp.type": "LogAppendTime", **big}),
        NewTopic(t["responses"], int(t["responses_partitions"]), rf, topic_configs=dict(big)),
        NewTopic(t["dead_letters"], 1, rf, topic_configs=dict(big)),
        NewTopic(t["events"], int(t["events_partitions"]), rf, topic_configs=dict(big)),
        # The newest metrics record of each coordinator partition is what counts: compacted by key.
        NewTopic(
            t["metrics"],
            1,
            rf,
            topic_configs={
                "cleanup.policy": "compact",
                "min.cleanable.dirty.ratio": "0.1",
                "segment.ms": "600000",
                **big,
            },
        ),
        # Each coordinator partition's newest deadline is what counts (streaming/timer_waker.py).
        NewTopic(
            t["timers"],
            1,
            rf,
            topic_configs={"cleanup.policy": "compact", "min.cleanable.dirty.ratio": "0.1", "segment.ms": "600000"},
        ),
        NewTopic(
            t["state_log"],
            cfg.coordinator_partitions,
            rf,
            topic_configs={
                "cleanup.policy": "compact",
                "min.cleanable.dirty.ratio": "0.1",
                "segment.ms": "600000",
                **big,
            },
        ),
    ]
    # An acknowledged (acks=all) write is on min_isr replicas: it survives the loss of min_isr - 1 brokers.
    for topic in topics:
        topic.topic_configs["min.insync.replicas"] = str(min_isr)
    return topics


def wait_for_broker(bootstrap: str, timeout_s: float = 120, **client_config) -> None:
    """Until a broker of `bootstrap` accepts connections and answers a metadata request
    (`client_config`: kafka-python's security settings for a secured listener)."""
    import socket

    from deploy.kafka_local import broker_answers

    deadline = time.monotonic() + timeout_s
    while True:
        for host, _, port in (h.rpartition(":") for h in bootstrap.split(",")):
            try:
                socket.create_connection((host, int(port)), timeout=1).close()
            except OSError:
                continue
            if broker_answers(bootstrap, **client_config):
                return
        if time.monotonic() >= deadline:
            raise RuntimeError(f"no Kafka broker answers at {bootstrap} after {timeout_s:.0f} s")
        time.sleep(0.2)


def ensure_topics(cfg: StreamConfig, timeout_s: float = 30) -> None:
    admin = KafkaAdminClient(bootstrap_servers=cfg.bootstrap, request_timeout_ms=15000)
    try:
        wanted = desired_topics(cfg)
        existing = set(admin.list_topics())
        missing = [topic for topic in wanted if topic.name not in existing]
        if missing:
            _check_brokers(admin, cfg, missing)
        for topic in missing:
            try:
                admin.create_topics([topic])
            except TopicAlreadyExistsError:
                pass
        deadline = time.time() + timeout_s
        while True:
            meta = {m["name"]: m for m in admin.describe_topics([t.name for t in wanted]) if m.get("error_code") == 0}
            if all(meta.get(t.name) and meta[t.name]["partitions"] for t in wanted):
                break
            if time.time() > deadline:
                raise RuntimeError("topics were not created in time")
            time.sleep(0.2)
        _check(admin, cfg, meta)
    finally:
        admin.close()


def _check_brokers(admin: KafkaAdminClient, cfg: StreamConfig, missing: list[NewTopic]) -> None:
    """Refuse to create topics with more replicas than the cluster has brokers, saying what to set
    (Kafka itself answers INVALID_REPLICATION_FACTOR; its own topics fall back only when told)."""
    rf, _ = cfg.topic_durability
    brokers = [b for b in admin.describe_cluster()["brokers"] if not b.get("is_fenced")]
    if len(brokers) < rf:
        raise RuntimeError(
            f"the Kafka cluster at {cfg.bootstrap} has {len(brokers)} broker(s) up, fewer than the "
            f"{rf} replicas the service's topics are configured with ([topics] replication_factor), so "
            f"{', '.join(t.name for t in missing)} cannot be created. On a cluster of fewer brokers set "
            f"[topics] replication_factor and min_insync_replicas to fit it (for a single broker: "
            f"COORD_TOPICS_REPLICATION_FACTOR=1 COORD_TOPICS_MIN_INSYNC_REPLICAS=1), as its server.properties "
            f"sets offsets.topic.replication.factor; or start the missing brokers"
        )


def _topic_configs(
    admin: KafkaAdminClient, names: list[str], keys: list[str], wait_s: float = 15.0
) -> dict[str, dict[str, str]]:
    """name -> {key: effective value} (a topic's own setting or the broker's default). A broker that
    does not know a topic yet (one just created: a cluster's metadata reaches each broker in turn)
    answers it with an error and no configs, which kafka-python passes on as an empty dict: such
    topics are asked again, for up to `wait_s`, before their configs count as absent."""
    out: dict[str, dict[str, str]] = {}
    deadline = time.monotonic() + wait_s
    while True:
        pending = [name for name in names if name not in out]
        result = admin.describe_configs(
            [ConfigResource(ConfigResourceType.TOPIC, name, dict.fromkeys(keys)) for name in pending],
            config_filter="all",
        )
        for name, values in result.get("topic", {}).items():
            if name in pending and values:
                out[name] = {k: v.get("value") for k, v in values.items() if k in keys}
        if len(out) == len(names) or time.monotonic() >= deadline:
            return {name: out.get(name, {}) for name in names}
        time.sleep(0.2)


def _check(admin: KafkaAdminClient, cfg: StreamConfig, meta: dict) -> None:
    t = cfg.topics
    n = len(meta[t["state_log"]]["partitions"])
    if n != cfg.coordinator_partitions:
        raise RuntimeError(
            f"topic {t['state_log']} has {n} partitions; it needs one per coordinator "
            f"partition ({cfg.coordinator_partitions})"
        )
    names = [topic.name for topic in desired_topics(cfg)]
    configs = _topic_configs(admin, names, ["message.timestamp.type", "min.insync.replicas"])
    for name in (t["requests"], t["internal"]):
        if configs.get(name, {}).get("message.timestamp.type") != "LogAppendTime":
            raise RuntimeError(f"topic {name} must have message.timestamp.type=LogAppendTime")
    problems = durability_problems(cfg, meta, configs)
    if problems:
        raise RuntimeError(
            "service topics less durable than configured:\n  "
            + "\n  ".join(problems)
            + "\nRaise them with `python -m deploy.topics --raise-durability` (the same config), or with "
            "kafka-reassign-partitions.sh (a plan listing more replicas per partition) and kafka-configs.sh "
            "--alter --entity-type topics --entity-name <topic> --add-config min.insync.replicas=<n>; or "
            "configure [topics] replication_factor / min_insync_replicas down to what they have"
        )


def durability_problems(cfg: StreamConfig, meta: dict, configs: dict[str, dict[str, str]]) -> list[str]:
    """What makes an existing service topic less durable than `[topics]` asks: fewer replicas
    (`meta`: describe_topics by name) or a lower min.insync.replicas (`configs`: effective values)."""
    rf, min_isr = cfg.topic_durability
    problems = []
    for name in [topic.name for topic in desired_topics(cfg)]:
        short = sorted(p["partition_index"] for p in meta[name]["partitions"] if len(p["replica_nodes"]) < rf)
        if short:
            least = min(len(p["replica_nodes"]) for p in meta[name]["partitions"])
            problems.append(
                f"topic {name}: {least} replica(s) on partition(s) {short}, fewer than [topics] replication_factor = {rf}"
            )
        have = int(configs.get(name, {}).get("min.insync.replicas") or 1)
        if have < min_isr:
            problems.append(
                f"topic {name}: min.insync.replicas = {have}, lower than [topics] min_insync_replicas = {min_isr}"
            )
    return problems


def raise_durability(cfg: StreamConfig, timeout_s: float = 300) -> list[str]:
    """Bring existing service topics up to `[topics]`: add replicas on the brokers holding the fewest
    (a partition reassignment; the new replicas copy the log), set min.insync.replicas, and wait
    until every partition has its replicas in sync. Returns what was changed."""
    rf, min_isr = cfg.topic_durability
    admin = KafkaAdminClient(bootstrap_servers=cfg.bootstrap, request_timeout_ms=15000)
    done: list[str] = []
    try:
        names = [topic.name for topic in desired_topics(cfg)]
        meta = {m["name"]: m for m in admin.describe_topics(names) if m.get("error_code") == 0}
        brokers = sorted(b["broker_id"] for b in admin.describe_cluster()["brokers"] if not b.get("is_fenced"))
        if len(brokers) < rf:
            raise RuntimeError(f"{len(brokers)} broker(s) up, fewer than [topics] replication_factor = {rf}")
        load = {b: 0 for b in brokers}
        for m in meta.values():
            for p in m["partitions"]:
                for r in p["replica_nodes"]:
                    if r in load:
                        load[r] += 1
        plan: dict[TopicPartition, list[int]] = {}
        for name, m in sorted(meta.items()):
            for p in sorted(m["partitions"], key=lambda p: p["partition_index"]):
                replicas = list(p["replica_nodes"])
                while len(replicas) < rf:
                    extra = min((b for b in brokers if b not in replicas), key=lambda b: (load[b], b))
                    load[extra] += 1
                    replicas.append(extra)
                if replicas != list(p["replica_nodes"]):
                    plan[TopicPartition(name, p["partition_index"])] = replicas
        if plan:
            errors = {tp: e for tp, e in admin.alter_partition_reassignments(plan).items() if e is not None}
            if errors:
                raise RuntimeError(f"reassignment refused: {errors}")
            done.append(f"{len(plan)} partition(s) given {rf} replicas")
        configs = _topic_configs(admin, names, ["min.insync.replicas"])
        low = [n for n in names if int(configs.get(n, {}).get("min.insync.replicas") or 1) < min_isr]
        if low:
            admin.alter_configs(
                [ConfigResource(ConfigResourceType.TOPIC, n, {"min.insync.replicas": str(min_isr)}) for n in low],
                incremental=True,
            )
            done.append(f"min.insync.replicas = {min_isr} on {', '.join(low)}")
        deadline = time.monotonic() + timeout_s
        while True:
            meta = {m["name"]: m for m in admin.describe_topics(names) if m.get("error_code") == 0}
            lagging = [
                f"{n}-{p['partition_index']}"
                for n, m in meta.items()
                for p in m["partitions"]
                if len(p["replica_nodes"]) < rf or len(p["isr_nodes"]) < len(p["replica_nodes"])
            ]
            if not lagging:
                return done
            if time.monotonic() > deadline:
                raise RuntimeError(f"replicas not in sync after {timeout_s:.0f} s: {lagging[:10]}")
            time.sleep(0.5)
    finally:
        admin.close()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Create the coordinator topics")
    ap.add_argument("--config")
    ap.add_argument(
        "--raise-durability",
        action="store_true",
        help="add replicas to and raise min.insync.replicas of existing topics less durable than [topics] asks",
    )
    args = ap.parse_args(argv)
    cfg = StreamConfig.load(args.config)
    try:
        if args.raise_durability:
            for change in raise_durability(cfg) or ["nothing to raise"]:
                print(change)
        ensure_topics(cfg)
    except RuntimeError as e:
        print(f"deploy.topics: {e}", file=sys.stderr)
        return 1
    print("topics ready:", ", ".join(t.name for t in desired_topics(cfg)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
