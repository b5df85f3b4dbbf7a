"""The coordinators' metrics, kept per coordinator partition in its state, deterministic per batch.

At the end of every batch that did anything, `run_batch` hands the batch's final outputs (events,
state-log records, the requests it applied) and the batch time to `Metrics.finish_batch`, which
updates cumulative counters, gauges and histograms kept in the partition's state and returns one
metrics record: the partition's totals and a sequence number. The record is a function of the
stored state and the batch, so a replayed batch emits the identical record, and whoever sums the
newest record of every partition (streaming/metrics_exporter.py) never counts anything twice.

Gauges (groups by type and state, transactions by state, transactional ids) follow the events
that change them (Kafka keeps its gauges with hooks on state transitions the same way), so a
batch costs what its events cost, never a scan of the partition. Only a state that has no metrics
yet (a new partition, a state written before metrics existed, a partition rebuilt from its state
log) is counted once by a scan, in its first batch. Durations are logical: rebalance duration is
the time between the events that start and end it, heartbeat latency the batch time less the
request's append time. The groups being rebalanced are kept one chunk per group
(`RebalanceStart`), so the partition-wide chunk stays small.

Series are stored by their Prometheus name and labels (`name{label="value"}`), so the record is
what the exporter serves. docs/operations.md, "Metrics", documents every series.
"""

from __future__ import annotations

from collections import Counter
from operator import itemgetter
from typing import TYPE_CHECKING, Any

from .chunks import UNCHANGED, LazyMap
from .component import Component, Partition
from .messages import Outputs

if TYPE_CHECKING:
    from .group.shard import GroupCoordinator
    from .txn.coordinator import TransactionCoordinator

METRICS_SCHEMA = 1

# Histogram bucket upper bounds (ms) for durations and latencies; the last bucket is +Inf.
BUCKETS_MS = (10, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 30000, 60000, 300000)

HEARTBEAT_APIS = ("Heartbeat", "ConsumerGroupHeartbeat", "StreamsGroupHeartbeat")
CLASSIC_STATES = ("Empty", "PreparingRebalance", "CompletingRebalance", "Stable", "Dead")
CONSUMER_STATES = ("Empty", "Assigning", "Reconciling", "Stable", "Dead")
TXN_OPEN_STATES = ("Ongoing", "PrepareCommit", "PrepareAbort")
_PREPARE = {"COMMIT": "PrepareCommit", "ABORT": "PrepareAbort"}
_INIT_REASONS = {
    "new transactional id": "new",
    "epoch bump": "epoch_bump",
    "retry": "retry",
    "producer id rotation (epoch exhausted)": "rotation",
}


def series(name: str, **labels) -> str:
    """The Prometheus series name: name{a="x",b="y"} (labels sorted; values are plain words)."""
    if not labels:
        return name
    return name + "{" + ",".join(f'{k}="{v}"' for k, v in sorted(labels.items())) + "}"


def _empty() -> dict:
    return {"schema": METRICS_SCHEMA, "seq": 0, "counters": {}, "gauges": {}, "histograms": {}}


class Metrics(Component):
    name = "metrics"

    def __init__(self, partition: Partition, groups: GroupCoordinator, transactions: TransactionCoordinator):
        super().__init__(partition)  # no handlers: it only reads the batch's events
        self.groups = groups  # the gauges count their groups and transactions when a state has none
        self.transactions = transactions
        self._fetch = None
        self._data: dict | None = None  # None: not read this batch
        self._initialized = True  # False: the state had no metrics chunk (count once)
        # Groups whose rebalance is in progress: group id -> {"startMs", "protocol"}.
        self.rebalances: LazyMap[str, dict[str, Any]] = LazyMap(
            partition.chunks, "RebalanceStart", lambda _k, v: v, lambda v: v
        )
        # Per batch (finish_batch): each event's group type, the event being counted, and the
        # groups the batch's events touched with their type and last event time.
        self._protocols: list[str | None] = []
        self._event_index = 0
        self._groups_touched: dict[str, str] = {}
        self._last_event_ms: dict[str, int] = {}

    # ---------------------------------------------------------------- storage
    def bind_rest(self, fetch) -> None:
        self._fetch = fetch

    @property
    def data(self) -> dict:
        if self._data is None:
            stored = self._fetch() if self._fetch is not None else None
            self._initialized = stored is not None
            self._data = stored if stored is not None else _empty()
        return self._data

    def rest_json(self):
        # Only a batch that counted writes the chunk: a state not yet counted stays without one.
        return UNCHANGED if self._data is None or not self._initialized else self._data

    def chunk_maps(self) -> tuple:
        return (self.rebalances,)

    def to_json(self) -> dict:  # formats 1 and 2 (whole snapshots)
        data = self.data
        return {
            "data": data if self._initialized else None,  # None: still to be counted
            "rebalances": {k: self.rebalances[k] for k in self.rebalances},
        }

    def load_json(self, data: dict) -> None:
        self._data = data.get("data") or None
        self._initialized = self._data is not None
        for k, v in data.get("rebalances", {}).items():
            self.rebalances[k] = v

    # ---------------------------------------------------------------- updating
    def _add(self, name: str, value: float = 1, **labels) -> None:
        c = self.data["counters"]
        key = series(name, **labels)
        c[key] = c.get(key, 0) + value

    def _gauge(self, name: str, delta: int, **labels) -> None:
        g = self.data["gauges"]
        key = series(name, **labels)
        g[key] = g.get(key, 0) + delta

    def _observe(self, name: str, value_ms: float, **labels) -> None:
        h = self.data["histograms"]
        key = series(name, **labels)
        entry = h.get(key)
        if entry is None:
            entry = h[key] = {"buckets": [0] * (len(BUCKETS_MS) + 1), "sum": 0, "count": 0}
        i = next((i for i, bound in enumerate(BUCKETS_MS) if value_ms <= bound), len(BUCKETS_MS))
        entry["buckets"][i] += 1
        entry["sum"] += value_ms
        entry["count"] += 1

    def finish_batch(self, out: Outputs, batch_time_ms: int) -> dict | None:
        """Account for the batch's outputs; the metrics record, or None if the batch did nothing."""
        if not (out.events or out.records or out.responses or out.applied or out.requests or out.data):
            return None
        data = self.data
        gauges_from_scan = not self._initialized
        self._groups_touched, self._last_event_ms = {}, {}
        self._protocols = self._event_protocols(out.events)
        for i, event in enumerate(out.events):
            self._event_index = i
            self._on_event(event.body, gauges_from_scan)
        # Counted per batch, then added once per series (in the order each series first appears, as
        # adding them one request at a time would: the record's counters keep that order).
        for name, n in _offset_commits(out.records).items():
            self._add(name, n)
        per_api = _per_api(out.applied, batch_time_ms)
        if per_api is None:  # heartbeats (a latency each), several APIs, or an unusual time
            per_api = {}
            for api, time_ms in out.applied:
                wait = max(0, batch_time_ms - time_ms)
                totals = per_api.get(api)
                if totals is None:
                    totals = per_api[api] = [0, 0]
                totals[0] += 1
                totals[1] += wait
                if api in HEARTBEAT_APIS:
                    self._observe("group_heartbeat_latency_ms", wait, api=api)
        for api, (n, waited) in per_api.items():
            self._add("requests_total", n, api=api)
            self._add("request_queue_time_ms_sum", waited, api=api)
        self._settle_consumer_rebalances()
        if gauges_from_scan:
            self._count_by_scan()
            self._initialized = True
        data["seq"] += 1
        return {
            "coordinatorPartition": self.p.partition_id,
            "seq": data["seq"],
            "batchTimeMs": batch_time_ms,
            "counters": dict(data["counters"]),
            "gauges": dict(data["gauges"]),
            "histograms": {
                k: {"buckets": list(v["buckets"]), "sum": v["sum"], "count": v["count"]}
                for k, v in data["histograms"].items()
            },
        }

    # ---------------------------------------------------------------- events
    def _event_protocols(self, events) -> list[str | None]:
        """The group type each group event is about. MemberJoined and MemberLeft do not say: they
        take the type of the next event of their group that does (in the same handler: a state
        change, a deletion), else of the previous one, else the group's."""
        hints: list[str | None] = [None] * len(events)
        for i, e in enumerate(events):
            body = e.body
            if "groupId" in body:
                hints[i] = body.get("groupType") or _TYPE_OF_EVENT.get(body.get("event"))
        out: list[str | None] = [None] * len(events)
        following: dict[str, str] = {}
        for i in range(len(events) - 1, -1, -1):
            gid = events[i].body.get("groupId")
            if gid is None:
                continue
            hint = hints[i]
            if hint is not None:
                following[gid] = hint
            out[i] = hint or following.get(gid)
        preceding: dict[str, str] = {}
        for i, e in enumerate(events):
            gid = e.body.get("groupId")
            if gid is None:
                continue
            protocol = out[i]
            if protocol is None:
                protocol = out[i] = preceding.get(gid)
            if protocol is not None:
                preceding[gid] = protocol
        return out

    def _protocol(self, group_id: str, body: dict) -> str:
        protocol = self._protocols[self._event_index]
        if protocol is None:
            group = self.groups.groups.get(group_id)
            protocol = group.type if group is not None else "classic"
        self._groups_touched[group_id] = protocol
        self._last_event_ms[group_id] = body["timeMs"]
        return protocol

    def _on_event(self, e: dict, gauges_from_scan: bool) -> None:
        name = e.get("event", "")
        handler = _EVENT_HANDLERS.get(name)
        if handler is not None:
            handler(self, e, not gauges_from_scan)

    def _group_created(self, e: dict, gauges: bool) -> None:
        protocol = self._protocol(e["groupId"], e)
        self._add("group_created_total", protocol=protocol)
        if gauges:
            self._gauge("group_count", 1, protocol=protocol)
            if protocol == "classic":  # a classic group starts Empty (a downgraded one says how it
                # starts); a consumer group's first state comes with its own event
                self._gauge("classic_group_count", 1, state=e.get("state") or "Empty")

    def _group_deleted(self, e: dict, gauges: bool) -> None:
        gid = e["groupId"]
        protocol = self._protocol(gid, e)
        self._add("group_deleted_total", protocol=protocol)
        if gauges:
            self._gauge("group_count", -1, protocol=protocol)
            if e.get("state"):
                self._gauge(f"{protocol}_group_count", -1, state=e["state"])
        self._end_rebalance(gid, e["timeMs"], completed=False)

    def _group_state_changed(self, e: dict, gauges: bool) -> None:
        gid, protocol = e["groupId"], self._protocol(e["groupId"], e)
        before, after = e.get("fromState"), e.get("toState")
        if gauges:
            if before is not None:
                self._gauge(f"{protocol}_group_count", -1, state=before)
            if after is not None:
                self._gauge(f"{protocol}_group_count", 1, state=after)
        if protocol == "classic":
            if after == "PreparingRebalance":
                if gid in self.rebalances:  # from CompletingRebalance: this one failed, a new one starts
                    self._end_rebalance(gid, e["timeMs"], completed=False)
                self.rebalances[gid] = {"startMs": e["timeMs"], "protocol": protocol}
            elif after == "Stable":
                self._end_rebalance(gid, e["timeMs"], completed=True)
            elif after in ("Empty", "Dead"):
                self._end_rebalance(gid, e["timeMs"], completed=False)
        else:
            if after == "Stable":
                self._end_rebalance(gid, e["timeMs"], completed=True)
            elif after in ("Empty", "Dead"):
                self._end_rebalance(gid, e["timeMs"], completed=False)

    def _end_rebalance(self, gid: str, time_ms: int, completed: bool) -> None:
        started = self.rebalances.get(gid)
        if started is None:
            return
        del self.rebalances[gid]
        protocol = started["protocol"]
        if completed:
            self._add("group_rebalance_completed_total", protocol=protocol)
            self._observe("group_rebalance_duration_ms", max(0, time_ms - started["startMs"]), protocol=protocol)
        else:
            self._add("group_rebalance_failed_total", protocol=protocol)

    def _rebalance_started(self, e: dict, gauges: bool) -> None:  # classic
        self._add("group_rebalance_started_total", protocol="classic")

    def _rebalance_completed(self, e: dict, gauges: bool) -> None:  # classic: SyncGroup of the leader
        self._add("group_assignment_changes_total", len(e.get("memberIds") or ()), protocol="classic")

    def _group_epoch_bumped(self, e: dict, gauges: bool) -> None:  # consumer / streams / share: Kafka's rebalance
        gid = e["groupId"]
        protocol = e.get("groupType") or "consumer"
        self._add("group_rebalance_started_total", protocol=protocol)
        if gid not in self.rebalances:
            self.rebalances[gid] = {"startMs": e["timeMs"], "protocol": protocol}
        self._groups_touched.setdefault(gid, protocol)
        self._last_event_ms[gid] = e["timeMs"]

    def _settle_consumer_rebalances(self) -> None:
        """A consumer group's epoch bump that left every member reconciled keeps the group Stable
        (no state change to see): its rebalance ends when the batch does."""
        groups = self.groups.groups
        for gid, protocol in self._groups_touched.items():
            if protocol not in ("consumer", "streams", "share") or gid not in self.rebalances:
                continue
            group = groups.get(gid)
            if group is not None and group.type == protocol and group.state_as_string() == "Stable":
                self._end_rebalance(gid, self._last_event_ms.get(gid, self.p.clock_ms), completed=True)

    def _member_joined(self, e: dict, gauges: bool) -> None:
        self._add("group_member_joined_total", protocol=self._protocol(e["groupId"], e))

    def _member_left(self, e: dict, gauges: bool) -> None:
        reason = {"MemberLeft": "left", "MemberSessionExpired": "expired"}.get(e["event"])
        if reason is None:  # MemberFenced
            reason = "expired" if "session expired" in str(e.get("reason")) else "fenced"
        if e["event"] == "MemberLeft" and e.get("temporary"):
            return  # a static member leaving temporarily keeps its place until its session expires
        self._add("group_member_left_total", protocol=self._protocol(e["groupId"], e), reason=reason)

    def _members_removed(self, e: dict, gauges: bool) -> None:
        self._add(
            "group_member_left_total",
            len(e.get("memberIds") or ()),
            protocol=self._protocol(e["groupId"], e),
            reason="removed",
        )

    def _assignment_changed(self, e: dict, gauges: bool) -> None:
        self._add("group_assignment_changes_total", protocol=e.get("groupType") or "consumer")

    def _offsets_expired(self, e: dict, gauges: bool) -> None:
        self._add("group_offset_expiration_total", len(e.get("partitions") or ()))

    def _offsets_deleted(self, e: dict, gauges: bool) -> None:
        self._add("group_offset_deletion_total", len(e.get("partitions") or ()))

    def _txn_started(self, e: dict, gauges: bool) -> None:
        self._add("txn_started_total")
        if gauges:
            self._gauge("txn_count", 1, state="Ongoing")

    def _txn_prepared(self, e: dict, gauges: bool) -> None:
        self._add("txn_prepared_total", result=e["result"])
        if gauges:
            if e.get("fromState") == "Ongoing":
                self._gauge("txn_count", -1, state="Ongoing")
            self._gauge("txn_count", 1, state=_PREPARE[e["result"]])

    def _txn_completed(self, e: dict, gauges: bool) -> None:
        self._add("txn_completed_total", result=e["result"])
        if gauges:
            self._gauge("txn_count", -1, state=_PREPARE[e["result"]])

    def _txn_timed_out(self, e: dict, gauges: bool) -> None:
        self._add("txn_timed_out_total")

    def _producer_fenced(self, e: dict, gauges: bool) -> None:
        self._add("txn_producer_fenced_total")

    def _producer_initialized(self, e: dict, gauges: bool) -> None:
        reason = _INIT_REASONS.get(e.get("reason", ""), "other")
        self._add("txn_init_producer_id_total", reason=reason)
        if reason == "new" and gauges:
            self._gauge("txn_transactional_id_count", 1)

    def _tid_expired(self, e: dict, gauges: bool) -> None:
        self._add("txn_transactional_id_expired_total")
        if gauges:
            self._gauge("txn_transactional_id_count", -1)

    def _pid_block(self, e: dict, gauges: bool) -> None:
        self._add("txn_producer_id_block_allocated_total")

    # ---------------------------------------------------------------- first batch of an old state
    def _count_by_scan(self) -> None:
        """The gauges of a state that had no metrics: counted once, from every group and
        transaction (O(partition), once, like the first batch after a format upgrade)."""
        gauges = self.data["gauges"] = {}
        for group in self.groups.groups.values():
            self._gauge("group_count", 1, protocol=group.type)
            self._gauge(f"{group.type}_group_count", 1, state=group.state_as_string())
        for md in self.transactions.txns.values():
            self._gauge("txn_transactional_id_count", 1)
            state = md.state.state_name
            if state in TXN_OPEN_STATES:
                self._gauge("txn_count", 1, state=state)
        for state in TXN_OPEN_STATES:
            gauges.setdefault(series("txn_count", state=state), 0)


# ---------------------------------------------------------------- counted per batch
# A batch holds a state-log record and an applied request per request. The applied requests of a
# batch of one API are counted by C functions over the whole batch (twice as fast as a Python step
# per request); the records by a plain loop (C functions were slower there: a test per record).
_API, _TIME = itemgetter(0), itemgetter(1)
_INT = {int}
_OFFSET_COMMIT_KEY = '["OffsetCommit"'
TXN_OFFSET_COMMITS, OFFSET_COMMITS = "group_txn_offset_commit_total", "group_offset_commit_total"


def _offset_commits(records: list) -> dict[str, int]:
    """The commit counters the batch's state-log records add to, in the order each first appears:
    one for each OffsetCommit record that is not a tombstone, transactional when it has a producer
    id (>= 0)."""
    commits: dict[str, int] = {}
    for record in records:
        if record.key.startswith(_OFFSET_COMMIT_KEY) and (value := record.value) is not None:
            name = TXN_OFFSET_COMMITS if value.get("producerId", -1) >= 0 else OFFSET_COMMITS
            commits[name] = commits.get(name, 0) + 1
    return commits


def _per_api(applied: list[tuple[str, int]], batch_time_ms: int) -> dict[str, list[int]] | None:
    """{api: [requests, total queue time]} of a batch of one API other than a heartbeat, every
    request appended at or before the batch time (int milliseconds: the sum is exact); None for any
    other batch (counted request by request)."""
    if not applied:
        return {}
    apis = Counter(map(_API, applied))
    if len(apis) != 1 or type(batch_time_ms) is not int:
        return None
    [(api, n)] = apis.items()
    times = list(map(_TIME, applied))
    if api in HEARTBEAT_APIS or set(map(type, times)) != _INT or max(times) > batch_time_ms:
        return None
    return {api: [n, n * batch_time_ms - sum(times)]}  # the sum of max(0, batch time - time)


# The group type of events that only one type emits.
_TYPE_OF_EVENT = {
    "GroupEpochBumped": "consumer",
    "MemberAssignmentChanged": "consumer",
    "MemberFenced": "consumer",
    "RebalanceStarted": "classic",
    "RebalanceCompleted": "classic",
    "JoinCompleted": "classic",
    "MembersRemoved": "classic",
    "MemberSessionExpired": "classic",
    "StaticMemberReplaced": "classic",
}

_EVENT_HANDLERS = {
    "GroupCreated": Metrics._group_created,
    "GroupDeleted": Metrics._group_deleted,
    "GroupStateChanged": Metrics._group_state_changed,
    "RebalanceStarted": Metrics._rebalance_started,
    "RebalanceCompleted": Metrics._rebalance_completed,
    "GroupEpochBumped": Metrics._group_epoch_bumped,
    "MemberJoined": Metrics._member_joined,
    "MemberLeft": Metrics._member_left,
    "MemberSessionExpired": Metrics._member_left,
    "MemberFenced": Metrics._member_left,
    "MembersRemoved": Metrics._members_removed,
    "MemberAssignmentChanged": Metrics._assignment_changed,
    "OffsetsExpired": Metrics._offsets_expired,
    "OffsetsDeleted": Metrics._offsets_deleted,
    "TransactionStarted": Metrics._txn_started,
    "TransactionPrepared": Metrics._txn_prepared,
    "TransactionCompleted": Metrics._txn_completed,
    "TransactionAbortedByTimeout": Metrics._txn_timed_out,
    "ProducerFenced": Metrics._producer_fenced,
    "ProducerInitialized": Metrics._producer_initialized,
    "TransactionalIdExpired": Metrics._tid_expired,
    "ProducerIdBlockAllocated": Metrics._pid_block,
}
