"""A KIP-932 share consumer over the request topic: it joins a share group with
ShareGroupHeartbeat, reads its assigned partitions' records from Kafka, and acquires and
acknowledges them through the share coordinator's state APIs.

    with CoordinatorClient(bootstrap, "orders-share") as cc:
        c = ShareConsumer(cc, "orders", ["orders"], bootstrap_servers=bootstrap)
        c.start()                      # joins, then heartbeats in a thread
        for record in c.poll():        # acquired records of the assigned partitions
            ...
        c.acknowledge(records)         # ACCEPT: they will not be delivered again
        c.stop()                       # leaves the group (member epoch -1)

In Kafka the partition leader's SharePartition acquires records for the share consumers that fetch
(ShareFetch), keeps the acquisition locks, and writes the share-partition state to the share
coordinator. This service is not the partition leader, so the consumer plays that part, in the
smallest form that keeps its guarantees:

- **Claim, then acquire.** To acquire records of a share-partition, a consumer claims it: a
  ReadShareGroupState with the next leader epoch (the share coordinator records it), then writes the
  records it takes as ACQUIRED (delivery state 1, delivery count + 1) with that leader epoch. A write
  under an older leader epoch is FENCED_LEADER_EPOCH, so between the claim and the write nobody else
  acquired: two consumers never acquire the same record at once (a compare-and-set). (Kafka's leader
  keeps ACQUIRED in memory and persists in-flight records as AVAILABLE; here the acquisition must be
  visible to the other consumers, so it is persisted.)
- **Acknowledge.** ACCEPT writes the records as ACKNOWLEDGED (2) with the same delivery count (which
  wins over ACQUIRED when the coordinator merges the batches); REJECT writes ARCHIVED (4). RELEASE
  only drops this consumer's hold: the coordinator's merge keeps ACQUIRED over AVAILABLE at the same
  delivery count, so released records become available when their lock expires (below). The start
  offset moves past leading acknowledged records at the next claim. A record delivered
  `max_delivery_count` (5) times is archived instead of acquired.
- **Acquisition locks.** Kafka's leader releases a record whose lock (`record_lock_duration_ms`,
  30 s) expired. The state has no timestamps, so a consumer takes over ACQUIRED records only once it
  has itself seen them ACQUIRED for longer than the lock duration (a consumer that died while holding
  records thus delays them by at most about twice the lock duration); the holder acknowledges only
  within its own lock.
- **Initialization.** The group coordinator initializes a share-partition (start offset -1) before
  assigning it; a start offset of -1 is resolved with `auto_offset_reset` (Kafka's
  `share.auto.offset.reset`, default latest) and written with the first acquisition. A
  share-partition without any state (a coordinator without that step) is initialized here.
  Writes carry the state epoch read at the claim (FENCED_STATE_EPOCH once offsets were altered).
  An acknowledgement is not fenced by a later claim: it carries the largest leader epoch (Kafka
  4.4.0's coordinator only compares a write's leader epoch, records none, and refuses a negative
  one, which 4.1.1 took for "unchecked"), and the largest state epoch if this consumer never claimed.

Records are read with kafka-python (assign + seek), topics named by id in the protocol
(`TopicNames`).
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass

from kafka import KafkaConsumer, TopicPartition

from .consumer_group import TopicNames
from .heartbeat_loop import LEAVE, NONE, HeartbeatMember
from .request_client import CoordinatorClient

HEARTBEAT = "ShareGroupHeartbeat"
INVALID_REQUEST, FENCED_LEADER_EPOCH = 42, 74
AVAILABLE, ACQUIRED, ACKNOWLEDGED, ARCHIVED = 0, 1, 2, 4
ACCEPT, RELEASE, REJECT = "accept", "release", "reject"
UNCHECKED_EPOCH = 2**31 - 1  # no recorded epoch is newer: the write is never fenced by it


@dataclass(frozen=True)
class ShareRecord:
    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    delivery_count: int


def share_key(group_id: str, topic_id: str, partition: int) -> str:
    return f"{group_id}:{topic_id}:{partition}"


class ShareConsumer(HeartbeatMember):
    API = HEARTBEAT
    API_VERSION = 1
    THREAD_NAME = "share"

    def __init__(
        self,
        client: CoordinatorClient,
        group_id: str,
        topics: list[str],
        *,
        bootstrap_servers: str,
        member_id: str | None = None,
        rack_id: str | None = None,
        auto_offset_reset: str = "latest",
        max_records: int = 50,
        record_lock_duration_ms: int = 30000,
        max_delivery_count: int = 5,
        response_timeout_s: float = 5.0,
        retry_backoff_s: float = 0.5,
        on_assignment: Callable[[dict], None] | None = None,
    ):
        super().__init__(
            client,
            group_id,
            member_id=member_id,
            response_timeout_s=response_timeout_s,
            retry_backoff_s=retry_backoff_s,
        )
        self.topics = list(topics)
        self.rack_id = rack_id
        self.auto_offset_reset = auto_offset_reset
        self._state_epochs: dict[tuple, int] = {}  # (topic id, partition) -> state epoch read at the claim
        self.max_records = max_records
        self.lock_ms = record_lock_duration_ms
        self.max_delivery_count = max_delivery_count
        self.on_assignment = on_assignment
        self.names = TopicNames(bootstrap_servers)
        self._consumer = KafkaConsumer(
            bootstrap_servers=bootstrap_servers, enable_auto_commit=False, group_id=None, consumer_timeout_ms=1000
        )
        self.assignment: dict[str, set[int]] = {}  # topicId -> partitions
        self._full = True
        self._seen_acquired: dict[tuple, float] = {}  # (topicId, partition, first, last, count) -> first seen
        self._held: dict[tuple, tuple] = {}  # (topicId, partition, offset) -> (count, lock deadline)
        self._backoff: dict[tuple, float] = {}  # (topicId, partition) -> not before (monotonic)
        self._turn = 0
        self._rng = random.Random()

    # ================================================================ membership
    def assigned(self) -> dict[str, set[int]]:
        with self._lock:
            return {t: set(p) for t, p in self.assignment.items() if p}

    def _request(self) -> dict:
        full = self._full or self.member_epoch == 0
        return {
            "groupId": self.group_id,
            "memberId": self.member_id,
            "memberEpoch": self.member_epoch,
            "rackId": self.rack_id if full else None,
            "subscribedTopicNames": self.topics if full else None,
        }

    def _resend_in_full(self) -> None:
        self._full = True

    def _fenced(self) -> None:
        self.assignment = {}

    def _on_answer(self, body: dict, resp: dict) -> None:
        self._full = False
        if resp["assignment"] is not None:
            self.assignment = {tp["topicId"]: set(tp["partitions"]) for tp in resp["assignment"]["topicPartitions"]}
            if self.on_assignment is not None:
                self.on_assignment(self.assigned())

    def kill(self) -> None:
        """Stop heartbeating without a word, as a crashed process would (its acquired records stay
        ACQUIRED until the others' view of their lock expires)."""
        super().kill()

    def stop(self) -> dict | None:
        self.kill()
        self.release_held()
        try:
            if self.member_epoch == 0:
                return None
            return self._send_leave(
                {
                    "groupId": self.group_id,
                    "memberId": self.member_id,
                    "memberEpoch": LEAVE,
                    "rackId": None,
                    "subscribedTopicNames": None,
                }
            )
        finally:
            self.close()

    def close(self) -> None:
        self._consumer.close()
        self.names.close()

    # ================================================================ share-partition state
    def _state_call(self, api: str, tid: str, partition: int, pdata: dict) -> dict:
        body = {
            "groupId": self.group_id,
            "topics": [{"topicId": tid, "partitions": [{"partition": partition, **pdata}]}],
        }
        resp = self.client.request(
            api, 0, body, key=share_key(self.group_id, tid, partition), timeout=self.response_timeout_s
        )
        return resp["results"][0]["partitions"][0]

    def _reset_offset(self, tp) -> int:
        if self.auto_offset_reset == "earliest":
            return self._consumer.beginning_offsets([tp])[tp]
        return self._consumer.end_offsets([tp])[tp]

    def _claim(self, tid: str, topic: str, partition: int) -> tuple[int, dict] | None:
        """Become the share-partition's acquirer: (leader epoch, state) or None if beaten."""
        summary = self._state_call("ReadShareGroupStateSummary", tid, partition, {"leaderEpoch": 0})
        if summary["errorCode"] != NONE:
            return None
        epoch = summary["leaderEpoch"] + 1
        state = self._state_call("ReadShareGroupState", tid, partition, {"leaderEpoch": epoch})
        if state["errorCode"] == INVALID_REQUEST:
            # No state: the group coordinator initializes a share-partition before assigning it, so
            # only a coordinator without that step (or a state deleted since) gets here.
            init = self._state_call(
                "InitializeShareGroupState",
                tid,
                partition,
                {"stateEpoch": 0, "startOffset": self._reset_offset(TopicPartition(topic, partition))},
            )
            if init["errorCode"] != NONE:
                return None
            state = self._state_call("ReadShareGroupState", tid, partition, {"leaderEpoch": epoch})
        if state["errorCode"] != NONE:
            return None
        if state["startOffset"] == -1:  # initialized by the group coordinator: share.auto.offset.reset
            state = {**state, "startOffset": self._reset_offset(TopicPartition(topic, partition))}
        self._state_epochs[(tid, partition)] = state.get("stateEpoch", 0)
        return epoch, state

    def _available(self, tid: str, partition: int, state: dict, end: int) -> tuple[int, list[tuple]]:
        """(new start offset, [(first, last, delivery count)] that may be acquired), in offset order."""
        now = time.monotonic()
        start = state["startOffset"]
        batches = sorted(
            (b["firstOffset"], b["lastOffset"], b["deliveryState"], b["deliveryCount"]) for b in state["stateBatches"]
        )
        new_start = start
        for first, last, st, _ in batches:  # leading acknowledged / archived records are done
            if first <= new_start <= last and st in (ACKNOWLEDGED, ARCHIVED):
                new_start = last + 1
        out: list[tuple] = []
        cursor = new_start
        for first, last, st, count in batches:
            if last < cursor:
                continue
            if first > cursor:
                out.append((cursor, first - 1, 0))
            lo = max(first, cursor)
            if st == AVAILABLE:
                out.append((lo, last, count))
            elif st == ACQUIRED:
                seen = self._seen_acquired.setdefault((tid, partition, first, last, count), now)
                if (now - seen) * 1000 >= self.lock_ms:
                    out.append((lo, last, count))  # its lock has expired in this consumer's view
            cursor = last + 1
        if cursor < end:
            out.append((cursor, end - 1, 0))
        return new_start, [(f, min(last, end - 1), c) for f, last, c in out if f < end]

    def _acquire(self, tid: str, topic: str, partition: int) -> list[tuple] | None:
        """Claim the share-partition and acquire up to max_records: [(first, last, count)]; None
        if another consumer's claim came between."""
        claimed = self._claim(tid, topic, partition)
        if claimed is None:
            return None
        epoch, state = claimed
        end = self._consumer.end_offsets([TopicPartition(topic, partition)])[TopicPartition(topic, partition)]
        new_start, ranges = self._available(tid, partition, state, end)
        taken, archived, budget = [], [], self.max_records
        for first, last, count in ranges:
            if budget <= 0:
                break
            if count >= self.max_delivery_count:
                archived.append((first, last, count))
                continue
            last = min(last, first + budget - 1)
            taken.append((first, last, count + 1))
            budget -= last - first + 1
        if not taken and not archived and new_start == state["startOffset"]:
            return []
        batches = [
            {"firstOffset": f, "lastOffset": last, "deliveryState": ACQUIRED, "deliveryCount": c}
            for f, last, c in taken
        ]
        batches += [
            {"firstOffset": f, "lastOffset": last, "deliveryState": ARCHIVED, "deliveryCount": c}
            for f, last, c in archived
        ]
        written = self._state_call(
            "WriteShareGroupState",
            tid,
            partition,
            {
                "stateEpoch": state.get("stateEpoch", 0),
                "leaderEpoch": epoch,
                "startOffset": new_start,
                "stateBatches": batches,
            },
        )
        if written["errorCode"] != NONE:
            return None  # FENCED_LEADER_EPOCH: another consumer claimed it meanwhile
        return taken

    # ================================================================ records
    def poll(self) -> list[ShareRecord]:
        """Acquire and fetch records of the next assigned share-partition that has some (at most
        max_records), taking the partitions in turn; [] if none has any now. One partition per
        call keeps the time between acquisition and acknowledgement short (the lock runs)."""
        out: list[ShareRecord] = []
        now = time.monotonic()
        candidates = [
            (tid, p)
            for tid, ps in sorted(self.assigned().items())
            for p in sorted(ps)
            if self._backoff.get((tid, p), 0) <= now
        ]
        if not candidates:
            return out
        self._turn += 1
        for i in range(len(candidates)):
            tid, partition = candidates[(self._turn + i) % len(candidates)]
            topic = self.names.name(tid)
            if topic is None:
                continue
            acquired = self._acquire(tid, topic, partition)
            if acquired is None:
                # Beaten by another consumer's claim: retry this partition after a random pause, so
                # that two consumers sharing it do not keep fencing each other.
                self._backoff[(tid, partition)] = time.monotonic() + self._rng.uniform(0.5, 2.5)
                continue
            for first, last, count in acquired:
                deadline = time.monotonic() + self.lock_ms / 1000
                tp = TopicPartition(topic, partition)
                self._consumer.assign([tp])
                self._consumer.seek(tp, first)
                got = 0
                fetch_deadline = time.monotonic() + 10
                while got <= last - first and time.monotonic() < fetch_deadline:
                    for recs in self._consumer.poll(timeout_ms=500).values():
                        for r in recs:
                            if first <= r.offset <= last:
                                self._held[(tid, partition, r.offset)] = (count, deadline)
                                out.append(ShareRecord(topic, partition, r.offset, r.key, r.value, count))
                                got += 1
            if out:
                return out
        return out

    def acknowledge(self, records: list[ShareRecord], kind: str = ACCEPT) -> list[ShareRecord]:
        """ACCEPT / RELEASE / REJECT the records (only those still within this consumer's lock);
        returns those the share coordinator took."""
        state = {ACCEPT: ACKNOWLEDGED, RELEASE: None, REJECT: ARCHIVED}[kind]
        now = time.monotonic()
        by_partition: dict[tuple, list[tuple]] = {}
        for r in records:
            tid = self.names.topic_id(r.topic)
            held = self._held.pop((tid, r.partition, r.offset), None)
            if held is None or held[1] < now:
                continue  # not ours, or its lock expired: another consumer may have it now
            by_partition.setdefault((tid, r.partition), []).append((r.offset, held[0], r))
        if state is None:
            return []  # RELEASE: the hold is dropped (see the module docstring)
        done: list[ShareRecord] = []
        for (tid, partition), offsets in by_partition.items():
            batches: list[dict] = []
            for offset, count, _ in sorted(offsets, key=lambda o: o[0]):
                if batches and batches[-1]["lastOffset"] + 1 == offset and batches[-1]["deliveryCount"] == count:
                    batches[-1]["lastOffset"] = offset
                else:
                    batches.append(
                        {"firstOffset": offset, "lastOffset": offset, "deliveryState": state, "deliveryCount": count}
                    )
            result = self._state_call(
                "WriteShareGroupState",
                tid,
                partition,
                {
                    "stateEpoch": self._state_epochs.get((tid, partition), UNCHECKED_EPOCH),
                    "leaderEpoch": UNCHECKED_EPOCH,
                    "startOffset": -1,
                    "stateBatches": batches,
                },
            )
            if result["errorCode"] == NONE:
                done += [r for _, _, r in offsets]
        return done

    def release_held(self) -> None:
        """Drop what this consumer holds (on close); see RELEASE."""
        self._held.clear()
