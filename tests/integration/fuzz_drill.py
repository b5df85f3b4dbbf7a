"""The service fuzz drill: hostile records mixed with well-formed ones, sent to a running job, then
the properties checked. Shared by tests/integration/test_fuzz_service.py (CI size) and
bench/fuzz_service.py (larger, any seed)."""

from __future__ import annotations

import time

from kafka import KafkaProducer

from client.topic_reader import end_offsets, read_records
from streaming.config import SERVICE_TOPICS
from streaming.trust import MAC_HEADER
from tests.runtime.fuzz_records import HostileRecords, check_answer

from .harness import wait_topics_known
from .topic_audit import TopicAudit, service_records_only

DATA_TOPIC, DATA_PARTITIONS = "fuzz-topic", 4  # what the corpus's well-formed commits name


def run_fuzz(job, *, seed: int, hostile: int, good: int, timeout_s: float = 300) -> dict:
    """Returns figures; raises AssertionError if a property does not hold."""
    wait_topics_known(job, {DATA_TOPIC: DATA_PARTITIONS})
    audit = TopicAudit(job.bootstrap)
    dead_letters_before = end_offsets(job.bootstrap, job.topics["dead_letters"])
    n = job.cfg.coordinator_partitions
    max_bytes = int(job.cfg.coordinator_config()["coordinator.request.max.bytes"])
    gen = HostileRecords(seed, job.topics, partitions=n, max_value_bytes=max_bytes)
    corpus = gen.corpus(hostile=hostile, good=good, client_id=f"fuzz-{seed}")
    client = job.client(corpus.client_id, start_correlation_id=1_000_000_000)  # after the corpus ids
    producer = KafkaProducer(bootstrap_servers=job.bootstrap, acks="all", max_request_size=4 << 20)
    started = time.monotonic()
    try:
        for i, (key, value) in enumerate(corpus.records):
            if key is None and value is None:
                key = b""  # kafka-python sends no record with neither (other clients can)
            producer.send(job.topics["requests"], key=key, value=value)
            if i % 25 == 0:  # forged records on the internal channel too
                forged_key, forged_value = gen.hostile()
                forged_key = b"" if forged_key is None and forged_value is None else forged_key
                producer.send(
                    job.topics["internal"],
                    key=forged_key,
                    value=forged_value,
                    headers=[(MAC_HEADER, b"f" * 64)] if i % 50 == 0 else [],
                )
        producer.flush()
        for cid, expected in corpus.expected.items():
            check_answer(
                expected, client.wait(cid, timeout=max(5.0, timeout_s - (time.monotonic() - started)))["response"]
            )
        answered_s = time.monotonic() - started
        # Every commit that was answered is durable: the last offset of each (group, partition).
        got = {}
        for group in sorted({g for g, _ in corpus.commits}):  # one request per group: its coordinator
            fetched = client.request(
                "OffsetFetch",
                8,
                {"groups": [{"groupId": group, "topics": None}], "requireStable": False},
                key=group,
                timeout=120,
            )
            got.update(
                {
                    (group, p["partitionIndex"]): p["committedOffset"]
                    for t in fetched["groups"][0]["topics"]
                    for p in t["partitions"]
                }
            )
        assert got == corpus.commits, (got, corpus.commits)
    finally:
        producer.close()
        client.close()
    assert job.proc.poll() is None, job.tail()
    job.wait_caught_up()
    allowed = {job.topics[t] for t in SERVICE_TOPICS}
    grown = audit.grown_topics()
    assert grown <= allowed, grown - allowed
    assert service_records_only(job)
    dead = read_records(job.bootstrap, job.topics["dead_letters"], timeout_s=5, start=dead_letters_before)
    assert not dead, [r.value[:300] for r in dead]  # nothing made the runtime itself fail
    return {"records": len(corpus.records), "wellFormed": len(corpus.expected), "answeredSeconds": round(answered_s, 1)}
