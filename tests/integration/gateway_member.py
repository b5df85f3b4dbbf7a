"""One consumer group member for the gateway e2e test, run as its own process (so that the test
can SIGKILL it): `python -m tests.integration.gateway_member LIB BOOTSTRAP TOPIC GROUP`.

LIB is kafka-python or confluent-kafka. It prints, flushed, one line per event:
  A <p,p,...>     its partitions after a rebalance
  R <p> <offset> <value>   a record consumed
  C <p> <offset>  a commit that succeeded (the next offset to read)
Records are printed before the commit that covers them (at-least-once).
"""

from __future__ import annotations

import sys

SESSION_MS = 10000
HEARTBEAT_MS = 2000


def out(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def kafka_python(bootstrap: str, topic: str, group: str) -> None:
    from kafka import ConsumerRebalanceListener, KafkaConsumer, OffsetAndMetadata

    class Listener(ConsumerRebalanceListener):
        def on_partitions_revoked(self, revoked):
            pass

        def on_partitions_assigned(self, assigned):
            out("A " + ",".join(str(tp.partition) for tp in sorted(assigned)))

    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap,
        group_id=group,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        session_timeout_ms=SESSION_MS,
        heartbeat_interval_ms=HEARTBEAT_MS,
        max_poll_interval_ms=300000,
        client_id=f"gw-member-{group}",
    )
    consumer.subscribe([topic], listener=Listener())
    while True:
        batches = consumer.poll(timeout_ms=200)
        offsets = {}
        for tp, records in batches.items():
            for r in records:
                out(f"R {tp.partition} {r.offset} {r.value.decode()}")
            offsets[tp] = OffsetAndMetadata(records[-1].offset + 1, "", -1)
        if offsets:
            try:
                consumer.commit(offsets)
            except Exception as e:  # noqa: BLE001 - a rebalance: the records may come again
                out(f"E {type(e).__name__}")
                continue
            for tp, om in offsets.items():
                out(f"C {tp.partition} {om.offset}")


def confluent(bootstrap: str, topic: str, group: str) -> None:
    from confluent_kafka import Consumer, KafkaException, TopicPartition

    def on_assign(consumer, partitions):
        out("A " + ",".join(str(p.partition) for p in sorted(partitions, key=lambda p: p.partition)))

    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "session.timeout.ms": SESSION_MS,
            "heartbeat.interval.ms": HEARTBEAT_MS,
            "group.protocol": "classic",
            "partition.assignment.strategy": "range",
            "client.id": f"gw-member-{group}",
            "broker.address.family": "v4",
        }
    )
    consumer.subscribe([topic], on_assign=on_assign)
    while True:
        records = consumer.consume(num_messages=100, timeout=0.2)
        last = {}
        for r in records:
            if r.error():
                continue
            out(f"R {r.partition()} {r.offset()} {r.value().decode()}")
            last[r.partition()] = r.offset() + 1
        if last:
            try:
                consumer.commit(offsets=[TopicPartition(topic, p, o) for p, o in last.items()], asynchronous=False)
            except KafkaException as e:
                out(f"E {e}")
                continue
            for p, o in last.items():
                out(f"C {p} {o}")


if __name__ == "__main__":
    lib, bootstrap, topic, group = sys.argv[1:5]
    (kafka_python if lib == "kafka-python" else confluent)(bootstrap, topic, group)
