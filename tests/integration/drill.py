"""Recovery drill helpers: a steady request load, and the reference state of an uninterrupted run."""
from __future__ import annotations

import threading
import time
from typing import Callable

from client import CoordinatorClient
from client.topic_reader import read_records
from coordinator import CoordinatorConfig, CoordinatorPartition, coordinator_partition
from coordinator.batch import InputRecord, run_batch
from coordinator.metadata import BROADCAST_KEY
from run_stream import SELF_CHECK_KEY


class Load(threading.Thread):
    """Sends `make(i) -> (api, version, body, key)` requests at a steady rate until stopped, and
    remembers what it sent."""

    def __init__(self, client: CoordinatorClient, make: Callable[[int], tuple], rate_per_s: float = 20):
        super().__init__(daemon=True)
        self.client, self.make, self.interval = client, make, 1.0 / rate_per_s
        self.sent: dict[int, tuple] = {}
        self.sent_at: dict[int, float] = {}  # correlation id -> time.monotonic() when handed to send
        self._halt = threading.Event()
        self.error: BaseException | None = None

    def run(self) -> None:
        i = 0
        try:
            while not self._halt.is_set():
                api, version, body, key = self.make(i)
                at = time.monotonic()
                cid = self.client.send(api, version, body, key=key)
                self.sent[cid] = (api, version, body, key)
                self.sent_at[cid] = at
                i += 1
                time.sleep(self.interval)
        except BaseException as e:  # noqa: BLE001 - reported by the test
            self.error = e

    def stop(self) -> None:
        self._halt.set()
        self.join(timeout=30)


def request_log(bootstrap: str, topic: str, internal_topic: str) -> list[InputRecord]:
    """Every record of the request topic (and of the internal channel), as the stream saw them
    (key, value, append time, channel). The internal channel's records are all the service's own
    here: the drills forge none."""
    def records(name: str, internal: bool) -> list[InputRecord]:
        return [InputRecord(r.key.decode("utf-8") if r.key is not None else None, r.value, r.timestamp,
                            r.partition, r.offset, None, internal=internal)
                for r in read_records(bootstrap, name, timeout_s=30)]
    return records(topic, False) + records(internal_topic, True)


def client_requests(records: list[InputRecord]) -> list[InputRecord]:
    """The clients' requests: not the internal channel's, nor the job's own self-check (one
    FindCoordinator per query start, run_stream.SELF_CHECK_KEY)."""
    return [r for r in records if not r.internal and r.key != SELF_CHECK_KEY]


def reference_states(records: list[InputRecord], config: CoordinatorConfig,
                     batch_time_ms: int) -> dict[int, dict]:
    """The logical state each coordinator partition has after applying `records` in one
    uninterrupted batch: what a run without kills ends with."""
    n = config["coordinator.partitions"]
    by_partition: dict[int, list[InputRecord]] = {}
    for r in records:
        broadcast = r.internal and r.key == BROADCAST_KEY
        targets = range(n) if broadcast else [coordinator_partition(r.key, n)]
        for p in targets:
            by_partition.setdefault(p, []).append(r)
    out = {}
    for p, recs in by_partition.items():
        part, _ = run_batch(lambda p=p: CoordinatorPartition(p, config), recs, batch_time_ms)
        out[p] = part.logical_state()
    return out


def logical(snapshot: dict) -> dict:
    return snapshot["components"]
