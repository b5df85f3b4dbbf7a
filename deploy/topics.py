"""Create (or check) the service's topics.

    python -m deploy.topics [--config override.toml]

- requests, internal: message.timestamp.type=LogAppendTime, so a request's time is the broker's;
- responses, events, dead letters: plain;
- state log: cleanup.policy=compact, one partition per coordinator partition (as __consumer_offsets);
- metrics, timers: cleanup.policy=compact (keyed by coordinator partition).
Existing topics are checked: a request topic without LogAppendTime or a state log with the wrong
partition count is an error, not something to silently run with.
"""

from __future__ import annotations

import argparse
import sys
import time

from kafka import KafkaAdminClient
from kafka.admin import ConfigResource, ConfigResourceType, NewTopic
from kafka.errors import TopicAlreadyExistsError

from streaming.config import StreamConfig


def desired_topics(cfg: StreamConfig) -> list[NewTopic]:
    t = cfg.topics
    # The service's own records may be larger than the broker's 1 MB default (a big group's
    # metadata, an OffsetFetch of many partitions): its topics take what the sink may write.
    big = {"max.message.bytes": str(int(cfg.stream["max_record_bytes"]))}
    return [
        NewTopic(
            t["requests"],
            int(t["requests_partitions"]),
            1,
            topic_configs={"message.timestamp.type": "LogAppendTime", **big},
        ),
        # The internal channel is ordered with the requests by append time, like them.
        NewTopic(t["internal"], 1, 1, topic_configs={"message.timestamp.type": "LogAppendTime", **big}),
        NewTopic(t["responses"], int(t["responses_partitions"]), 1, topic_configs=dict(big)),
        NewTopic(t["dead_letters"], 1, 1, topic_configs=dict(big)),
        NewTopic(t["events"], int(t["events_partitions"]), 1, topic_configs=dict(big)),
        # The newest metrics record of each coordinator partition is what counts: compacted by key.
        NewTopic(
            t["metrics"],
            1,
            1,
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
            1,
            topic_configs={"cleanup.policy": "compact", "min.cleanable.dirty.ratio": "0.1", "segment.ms": "600000"},
        ),
        NewTopic(
            t["state_log"],
            cfg.coordinator_partitions,
            1,
            topic_configs={
                "cleanup.policy": "compact",
                "min.cleanable.dirty.ratio": "0.1",
                "segment.ms": "600000",
                **big,
            },
        ),
    ]


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
        for topic in wanted:
            if topic.name in existing:
                continue
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


def _check(admin: KafkaAdminClient, cfg: StreamConfig, meta: dict) -> None:
    t = cfg.topics
    n = len(meta[t["state_log"]]["partitions"])
    if n != cfg.coordinator_partitions:
        raise RuntimeError(
            f"topic {t['state_log']} has {n} partitions; it needs one per coordinator "
            f"partition ({cfg.coordinator_partitions})"
        )
    for name in (t["requests"], t["internal"]):
        result = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, name)])
        entry = result.get("topic", {}).get(name, {}).get("message.timestamp.type", {})
        if entry.get("value") != "LogAppendTime":
            raise RuntimeError(f"topic {name} must have message.timestamp.type=LogAppendTime")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Create the coordinator topics")
    ap.add_argument("--config")
    args = ap.parse_args(argv)
    cfg = StreamConfig.load(args.config)
    ensure_topics(cfg)
    print("topics ready:", ", ".join(t.name for t in desired_topics(cfg)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
