"""Coordinator settings, named as Kafka names them, with Kafka's defaults.

`conf/defaults.toml` ([coordinator] table) can override any of them; unknown names are rejected so
that a typo does not silently fall back to a default.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

INT_MAX = 2**31 - 1
STATIC_CONFIGS = "coordinator.static.configs"

DEFAULTS: dict[str, Any] = {
    # Routing (offsets.topic.num.partitions / transaction.state.log.num.partitions in Kafka).
    "coordinator.partitions": 50,
    # With the batch-time horizon (below), timers fire only once the batch time is this far past
    # their deadline, so that a request appended just before a deadline but read in the next
    # micro-batch is applied first. 0 in the pure core (Kafka's exact timing); the stream sets it
    # from [stream] timer_grace_ms.
    "coordinator.timer.grace.ms": 0,
    # How long after its append a record may still be unreadable by a micro-batch (a replicated
    # topic's high watermark follows its followers; brokers' clocks differ). A record the batch read
    # proves that every record appended before its time, less this margin, was readable when the
    # batch looked: timers due by then fire, with no grace. 0 in the pure core and on one broker;
    # the stream sets it ([stream] timer_read_margin_ms).
    "coordinator.timer.read.margin.ms": 0,
    # Whether a batch may fire timers by its batch time (less the grace) when what it read proves
    # less. True in the pure core and with Spark's timeouts (a timed-out call reads nothing); the
    # stream with the timer waker sets False: its wakes are records, and a catch-up read over
    # several batches must not fire the timers due by now before the requests still unread.
    "coordinator.timer.batch.time.horizon": True,
    # What FindCoordinator reports as the coordinator's endpoint.
    "coordinator.endpoint.host": "127.0.0.1",
    "coordinator.endpoint.port": 9092,
    # Topics a request may name in `replyTo` (they must exist, or the broker must auto-create them).
    "coordinator.reply.to.pattern": r"coordinator-responses(\.[A-Za-z0-9._-]{1,200})?",
    # Largest request record value accepted (larger ones get INVALID_REQUEST).
    "coordinator.request.max.bytes": 1048576,
    # The service's own topics (requests, responses, events, state log). Like Kafka's internal
    # topics, they never join a transaction, so no marker is ever written into them. The stream
    # sets them from its [topics] table.
    "coordinator.internal.topics": [],
    # The names the service's configuration sets (conf/defaults.toml's [coordinator] table and the
    # job's file): its "broker file". DescribeConfigs reports a group config that falls back to one
    # of them as STATIC_BROKER_CONFIG, as Kafka does for a `group.*` setting in server.properties,
    # and DEFAULT_CONFIG otherwise. Left empty, it is taken from the names given; to_json() keeps it.
    STATIC_CONFIGS: [],
    # Classic groups (GroupCoordinatorConfig).
    "group.initial.rebalance.delay.ms": 3000,
    "group.max.size": INT_MAX,
    "group.min.session.timeout.ms": 6000,
    "group.max.session.timeout.ms": 1800000,
    "group.classic.new.member.join.timeout.ms": 300000,
    # Offsets.
    "offsets.retention.minutes": 10080,
    "offsets.retention.check.interval.ms": 600000,
    "offset.metadata.max.bytes": 4096,
    "offsets.commit.timeout.ms": 5000,
    # KIP-848 consumer groups.
    "group.consumer.session.timeout.ms": 45000,
    "group.consumer.min.session.timeout.ms": 45000,
    "group.consumer.max.session.timeout.ms": 60000,
    "group.consumer.heartbeat.interval.ms": 5000,
    "group.consumer.min.heartbeat.interval.ms": 5000,
    "group.consumer.max.heartbeat.interval.ms": 15000,
    "group.consumer.max.size": INT_MAX,
    "group.consumer.assignors": ["uniform", "range"],
    "group.consumer.migration.policy": "bidirectional",
    "group.consumer.regex.refresh.interval.ms": 600000,
    # Kafka 4.3+'s assignment batching: a group's next target assignment is computed at most once
    # per interval (a heartbeat within it gets the last one), per group type; 0 computes at once.
    "group.consumer.assignment.interval.ms": 1000,
    "group.consumer.min.assignment.interval.ms": 0,
    "group.consumer.max.assignment.interval.ms": 15000,
    "group.share.assignment.interval.ms": 1000,
    "group.share.min.assignment.interval.ms": 0,
    "group.share.max.assignment.interval.ms": 15000,
    "group.streams.assignment.interval.ms": 1000,
    "group.streams.min.assignment.interval.ms": 0,
    "group.streams.max.assignment.interval.ms": 15000,
    # KIP-1071 streams groups (GroupCoordinatorConfig group.streams.*; also the fallbacks and bounds
    # of the streams.* group configs); StreamsGroupHeartbeat and StreamsGroupDescribe answer
    # UNSUPPORTED_VERSION unless "streams" is in the protocols.
    "group.coordinator.rebalance.protocols": ["classic", "consumer", "streams"],
    "group.streams.session.timeout.ms": 45000,
    "group.streams.min.session.timeout.ms": 45000,
    "group.streams.max.session.timeout.ms": 60000,
    "group.streams.heartbeat.interval.ms": 5000,
    "group.streams.min.heartbeat.interval.ms": 5000,
    "group.streams.max.heartbeat.interval.ms": 15000,
    "group.streams.max.size": INT_MAX,
    "group.streams.num.standby.replicas": 0,
    "group.streams.max.standby.replicas": 2,
    # Kafka 4.2+: every StreamsGroupHeartbeat answer carries it as taskOffsetIntervalMs (4.1 sent 0).
    "group.streams.task.offset.interval.ms": 60000,
    # Kafka 4.4.0's streams assignor inputs (the fallbacks of the streams.* group configs of the
    # same names): warm-up replicas (4.4.0's refinement hands out none yet), the recovery lag
    # StreamsGroupHeartbeat v1 answers, the client tags every member must send (else the
    # MISSING_CLIENT_TAGS status), and the task assignors (the first is the default).
    "group.streams.num.warmup.replicas": 2,
    "group.streams.max.warmup.replicas": 20,
    "group.streams.acceptable.recovery.lag": 10000,
    "group.streams.rack.aware.assignment.tags": [],
    "group.streams.assignors": ["sticky"],
    # Share groups (KIP-932): the defaults and bounds of the share.* group configs
    # (IncrementalAlterConfigs / DescribeConfigs on GROUP resources accept and describe them).
    # group.share.enable stands for Kafka 4.1's `group.share.enable` / `share.version` feature:
    # off, ShareGroupHeartbeat and ShareGroupDescribe answer UNSUPPORTED_VERSION, as KafkaApis does.
    "group.share.enable": True,
    "group.share.max.size": 200,
    # The share coordinator (ShareCoordinatorConfig): update records between two snapshot records
    # of a share-partition.
    "share.coordinator.snapshot.update.records.per.snapshot": 500,
    # How long a DescribeShareGroupOffsets waits for the share-partition summaries other coordinator
    # partitions hold (coordinator/group/share/offsets_admin.py); Kafka's persister has a similar request timeout.
    "share.admin.timeout.ms": 30000,
    "group.share.session.timeout.ms": 45000,
    "group.share.min.session.timeout.ms": 45000,
    "group.share.max.session.timeout.ms": 60000,
    "group.share.heartbeat.interval.ms": 5000,
    "group.share.min.heartbeat.interval.ms": 5000,
    "group.share.max.heartbeat.interval.ms": 15000,
    "group.share.record.lock.duration.ms": 30000,
    "group.share.min.record.lock.duration.ms": 15000,
    "group.share.max.record.lock.duration.ms": 60000,
    # Kafka 4.3/4.4 settings: the fallbacks and bounds of the new group configs (group_configs.py);
    # ShareGroupConfig's delivery count and record locks are the broker's share-fetch side.
    "group.consumer.assignor.offload.enable": True,
    "group.share.assignor.offload.enable": True,
    "group.share.delivery.count.limit": 5,
    "group.share.min.delivery.count.limit": 2,
    "group.share.max.delivery.count.limit": 10,
    "group.share.partition.max.record.locks": 2000,
    "group.share.min.partition.max.record.locks": 100,
    "group.share.max.partition.max.record.locks": 4000,
    "group.streams.initial.rebalance.delay.ms": 3000,
    "group.streams.assignor.offload.enable": True,
    "group.streams.min.task.offset.interval.ms": 15000,
    # Transactions (TransactionStateManagerConfigs).
    "transaction.max.timeout.ms": 900000,
    "transactional.id.expiration.ms": 604800000,
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": 10000,
    "transaction.remove.expired.transaction.cleanup.interval.ms": 3600000,
    # Producer state of the group coordinator's partitions (the log layer's ProducerStateManager of
    # a __consumer_offsets partition): how long a producer id without pending offsets is remembered.
    "producer.id.expiration.ms": 86400000,
    "producer.id.expiration.check.interval.ms": 600000,
    # KIP-890 transaction verification: before a TxnOffsetCommit is stored, the group coordinator
    # asks the transaction coordinator whether its offsets partition is in the transaction (v0-4)
    # or adds it (v5). Kafka's broker setting, default true.
    "transaction.partition.verification.enable": True,
    # How long a TxnOffsetCommit waits for the transaction coordinator's answer when the two are on
    # different coordinator partitions (a round trip over the internal channel: two micro-batches);
    # then it is answered COORDINATOR_NOT_AVAILABLE (retriable), as Kafka answers a timed-out write.
    "transaction.verification.timeout.ms": 60000,
}


def _require(ok: bool, message: str) -> None:
    if not ok:
        raise ValueError(message)


def _check_consumer_group_settings(v: dict) -> None:
    """GroupCoordinatorConfig's checks of the KIP-848 settings (same rules, same wording)."""
    for name in ("group.consumer.max.size", "group.consumer.regex.refresh.interval.ms", "group.share.max.size"):
        _require(v[name] >= 1, f"{name} must be at least 1")
    for prefix in ("group.consumer", "group.share", "group.streams"):  # the same rules for each type
        _check_session_and_heartbeat(v, prefix)
        _check_assignment_interval(v, prefix)
    protocols = v["group.coordinator.rebalance.protocols"]
    _require(
        all(p in ("classic", "consumer", "streams", "share") for p in protocols),
        "group.coordinator.rebalance.protocols: each must be one of classic, consumer, streams, share",
    )
    _require(v["group.streams.max.size"] >= 1, "group.streams.max.size must be at least 1")
    _require(v["group.streams.num.standby.replicas"] >= 0, "group.streams.num.standby.replicas must be at least 0")
    _require(v["group.streams.max.standby.replicas"] >= 0, "group.streams.max.standby.replicas must be at least 0")
    _require(
        v["group.streams.num.standby.replicas"] <= v["group.streams.max.standby.replicas"],
        "group.streams.num.standby.replicas must be less than or equal to group.streams.max.standby.replicas",
    )
    _require(v["group.streams.num.warmup.replicas"] >= 0, "group.streams.num.warmup.replicas must be at least 0")
    _require(
        v["group.streams.num.warmup.replicas"] <= v["group.streams.max.warmup.replicas"],
        "group.streams.num.warmup.replicas must be less than or equal to group.streams.max.warmup.replicas",
    )
    _require(
        v["group.streams.acceptable.recovery.lag"] >= 0, "group.streams.acceptable.recovery.lag must be at least 0"
    )
    tags = v["group.streams.rack.aware.assignment.tags"]
    _require(
        len(set(tags)) == len(tags), "group.streams.rack.aware.assignment.tags must not contain duplicate tag keys."
    )
    _require(
        v["group.streams.assignors"] and all(a == "sticky" for a in v["group.streams.assignors"]),
        "group.streams.assignors: the service's only task assignor is sticky",
    )
    lock = "group.share.record.lock.duration.ms"
    _require(
        v["group.share.min.record.lock.duration.ms"] >= 1000,
        "group.share.min.record.lock.duration.ms must be at least 1000",
    )
    _require(
        v["group.share.max.record.lock.duration.ms"] >= v["group.share.min.record.lock.duration.ms"],
        "group.share.max.record.lock.duration.ms must be greater than or equal to "
        "group.share.min.record.lock.duration.ms",
    )
    _require(
        v[lock] >= v["group.share.min.record.lock.duration.ms"],
        f"{lock} must be greater than or equal to group.share.min.record.lock.duration.ms",
    )
    _require(
        v[lock] <= v["group.share.max.record.lock.duration.ms"],
        f"{lock} must be less than or equal to group.share.max.record.lock.duration.ms",
    )
    assignors = v["group.consumer.assignors"]
    _require(
        len(assignors) > 0 and all(isinstance(a, str) for a in assignors),
        "group.consumer.assignors must name at least one assignor",
    )
    from .group.consumer.assignors import ASSIGNORS  # late: the assignors import nothing from here

    unknown = [a for a in assignors if a not in ASSIGNORS]
    _require(not unknown, f"group.consumer.assignors: unknown assignor(s) {unknown}; available: {sorted(ASSIGNORS)}")
    _require(len(set(assignors)) == len(assignors), "group.consumer.assignors must not repeat a name")
    _require(
        str(v["group.consumer.migration.policy"]).lower() in ("disabled", "upgrade", "downgrade", "bidirectional"),
        "group.consumer.migration.policy must be one of disabled, upgrade, downgrade, bidirectional",
    )


def _check_assignment_interval(v: dict, prefix: str) -> None:
    """GroupCoordinatorConfig's assignment interval checks (Kafka 4.3+), in its order."""
    lo, hi, value = (
        f"{prefix}.min.assignment.interval.ms",
        f"{prefix}.max.assignment.interval.ms",
        f"{prefix}.assignment.interval.ms",
    )
    _require(v[lo] >= 0 and v[hi] >= 0 and v[value] >= 0, f"{prefix}.*assignment.interval.ms must be at least 0")
    _require(v[hi] >= v[lo], f"{hi} must be greater than or equal to {lo}")
    _require(v[value] >= v[lo], f"{value} must be greater than or equal to {lo}")
    _require(v[value] <= v[hi], f"{value} must be less than or equal to {hi}")


def _check_kafka_44_settings(v: dict) -> None:
    """GroupCoordinatorConfig's and ShareGroupConfig's checks of the Kafka 4.3/4.4 settings (their
    wording): each value within its min/max (the assignment intervals: _check_assignment_interval)."""
    for what in ("delivery.count.limit", "partition.max.record.locks"):
        lo, hi, value = f"group.share.min.{what}", f"group.share.max.{what}", f"group.share.{what}"
        _require(v[hi] >= v[value], f"{hi} must be greater than or equal to {value}")
        _require(v[value] >= v[lo], f"{value} must be greater than or equal to {lo}")
    offset = "group.streams.task.offset.interval.ms"
    _require(
        v[offset] >= v["group.streams.min.task.offset.interval.ms"],
        f"{offset} must be greater than or equal to group.streams.min.task.offset.interval.ms",
    )


def _check_session_and_heartbeat(v: dict, prefix: str) -> None:
    """GroupCoordinatorConfig's session / heartbeat checks for `prefix` (group.consumer/share/streams)."""

    def name(kind: str) -> str:
        return f"{prefix}.{kind}"

    for bound in ("min.session.timeout.ms", "min.heartbeat.interval.ms"):
        _require(v[name(bound)] >= 1, f"{name(bound)} must be at least 1")
    for what in ("heartbeat.interval.ms", "session.timeout.ms"):
        lo, hi, value = name("min." + what), name("max." + what), name(what)
        _require(v[hi] >= v[lo], f"{hi} must be greater than or equal to {lo}")
        _require(v[value] >= v[lo], f"{value} must be greater than or equal to {lo}")
        _require(v[value] <= v[hi], f"{value} must be less than or equal to {hi}")
    _require(
        v[name("heartbeat.interval.ms")] < v[name("session.timeout.ms")],
        f"{name('heartbeat.interval.ms')} must be less than {name('session.timeout.ms')}",
    )


class CoordinatorConfig(Mapping[str, Any]):
    def __init__(self, overrides: Mapping[str, Any] | None = None):
        values = dict(DEFAULTS)
        for name, value in (overrides or {}).items():
            if name not in DEFAULTS:
                raise ValueError(f"unknown coordinator setting {name!r}")
            expected = type(DEFAULTS[name])
            if expected is int and (type(value) is not int):
                raise ValueError(f"coordinator setting {name!r} must be an integer")
            if expected is not int and not isinstance(value, expected):
                raise ValueError(f"coordinator setting {name!r} must be a {expected.__name__}")
            values[name] = value
        given = overrides or {}
        values[STATIC_CONFIGS] = sorted(given[STATIC_CONFIGS] if STATIC_CONFIGS in given else given)
        if values["coordinator.partitions"] < 1:
            raise ValueError("coordinator.partitions must be at least 1")
        _check_consumer_group_settings(values)
        _check_kafka_44_settings(values)
        self._values = values

    def __getitem__(self, name: str) -> Any:
        return self._values[name]

    def __iter__(self):
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def with_overrides(self, **kv: Any) -> CoordinatorConfig:
        """Overrides by Kafka name with dots written as underscores, for tests:
        `cfg.with_overrides(group_max_size=10)`."""
        merged = {k: v for k, v in self._values.items() if v != DEFAULTS[k] and k != STATIC_CONFIGS}
        for k, v in kv.items():
            merged[k.replace("_", ".")] = v
        return CoordinatorConfig({**merged, STATIC_CONFIGS: sorted({*self.static_configs, *merged})})

    @property
    def static_configs(self) -> frozenset[str]:
        """The names the configuration sets (see STATIC_CONFIGS in DEFAULTS)."""
        return frozenset(self._values[STATIC_CONFIGS])

    def to_json(self) -> dict:
        return dict(self._values)
