"""Per-group configs (KIP-848): IncrementalAlterConfigs and DescribeConfigs for GROUP resources.

Kafka keeps a group's dynamic configs (`consumer.session.timeout.ms`, ...) in the KRaft metadata
log and hands them to the GroupConfigManager of every broker; the group coordinator then uses the
group's value when it has one, else its own setting (GroupMetadataManager
.consumerGroupSessionTimeoutMs / consumerGroupHeartbeatIntervalMs). Here the group's coordinator
partition owns them: stored with the partition's state (one chunk per group with overrides),
written to the state log as `["GroupConfig", groupId]` -> `{"type": "GroupConfig", "configs":
{name: value}}` (a tombstone when no override is left), replayed on load.

The table is Kafka 4.4.0's GroupConfig.CONFIG_DEF. Validation is its GroupConfig.validate over the
group's resulting configs (names, parsing, `atLeast` bounds, then only the configs the group sets
against the coordinator's min/max settings, session > heartbeat against the coordinator's value of
the one not set), with Kafka's messages; the admin-side checks are ConfigAdminManager's and
ConfigurationControlManager's. Configs are kept as the strings
the client sent, as Kafka's config records keep them.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..config import DEFAULTS
from ..errors import ApiError, Errors
from ..messages import Request
from ..records import record_key
from ..result import CoordinatorResult

GROUP_RESOURCE_TYPE = 32  # ConfigResource.Type.GROUP
# DescribeConfigsResponse.ConfigSource STATIC_BROKER_CONFIG / DEFAULT_CONFIG / GROUP_CONFIG
SOURCE_STATIC_BROKER, SOURCE_DEFAULT, SOURCE_GROUP = 4, 5, 8
CONFIG_TYPES = {"BOOLEAN": 1, "STRING": 2, "INT": 3, "LONG": 5, "LIST": 7}  # DescribeConfigsResponse.ConfigType
OP_SET, OP_DELETE, OP_APPEND, OP_SUBTRACT = 0, 1, 2, 3
OP_NAMES = {OP_SET: "SET", OP_DELETE: "DELETE", OP_APPEND: "APPEND", OP_SUBTRACT: "SUBTRACT"}
RECORD = "GroupConfig"
INT_MIN, INT_MAX = -(2**31), 2**31 - 1
LONG_MIN, LONG_MAX = -(2**63), 2**63 - 1

CONSUMER_SESSION_TIMEOUT_MS = "consumer.session.timeout.ms"
CONSUMER_HEARTBEAT_INTERVAL_MS = "consumer.heartbeat.interval.ms"
SHARE_SESSION_TIMEOUT_MS = "share.session.timeout.ms"
SHARE_HEARTBEAT_INTERVAL_MS = "share.heartbeat.interval.ms"
SHARE_RECORD_LOCK_DURATION_MS = "share.record.lock.duration.ms"
SHARE_AUTO_OFFSET_RESET = "share.auto.offset.reset"
SHARE_ISOLATION_LEVEL = "share.isolation.level"
STREAMS_SESSION_TIMEOUT_MS = "streams.session.timeout.ms"
STREAMS_HEARTBEAT_INTERVAL_MS = "streams.heartbeat.interval.ms"
STREAMS_NUM_STANDBY_REPLICAS = "streams.num.standby.replicas"


def invalid(message: str) -> ApiError:
    return ApiError(Errors.INVALID_CONFIG, message)


# ---------------------------------------------------------------------- validators (ConfigDef's)
def _at_least(minimum: int):
    def check(name: str, value: int) -> None:  # ConfigDef.Range.atLeast
        if value < minimum:
            raise invalid(f"Invalid value {value} for configuration {name}: Value must be at least {minimum}")

    return check


def _one_of(*valid: str):
    def check(name: str, value: str) -> None:  # ConfigDef.ValidString.in (case-sensitive)
        if value not in valid:
            raise invalid(f"Invalid value {value} for configuration {name}: String must be one of: " + ", ".join(valid))

    return check


# java.time.Duration.parse's pattern (case-insensitive).
_ISO_DURATION = re.compile(
    r"([-+]?)P(?:([-+]?[0-9]+)D)?"
    r"(T(?:([-+]?[0-9]+)H)?(?:([-+]?[0-9]+)M)?(?:([-+]?[0-9]+)(?:[.,]([0-9]{0,9}))?S)?)?",
    re.IGNORECASE,
)


def java_duration_nanos(text: str) -> int:
    """java.time.Duration.parse(text) in nanoseconds; ValueError where Java throws (no match, a bare
    `T`, no section, a long overflow)."""
    m = _ISO_DURATION.fullmatch(text)
    if m is None or m.group(3) == "T" or all(m.group(i) is None for i in (2, 4, 5, 6)):
        raise ValueError(text)

    def long(v: int) -> int:
        if not LONG_MIN <= v <= LONG_MAX:
            raise ValueError(text)  # Math.multiplyExact / addExact
        return v

    days, hours, minutes, seconds = (
        long(long(int(m.group(i) or 0)) * unit) for i, unit in ((2, 86400), (4, 3600), (5, 60), (6, 1))
    )
    total = long(days + long(hours + long(minutes + seconds)))
    fraction = int((m.group(7) or "").ljust(9, "0") or 0)
    nanos = total * 10**9 + (-fraction if (m.group(6) or "").startswith("-") else fraction)
    long(nanos // 10**9)  # Duration.ofSeconds(seconds, nanoAdjustment)
    if m.group(1) == "-":
        nanos = -nanos
        long(nanos // 10**9)  # Duration.negated
    return nanos


def _share_auto_offset_reset(name: str, value: str) -> None:
    """ShareGroupAutoOffsetResetStrategy.Validator: earliest, latest or by_duration:<ISO-8601, >= 0>."""
    ok = value in ("earliest", "latest")
    if not ok and value.startswith("by_duration:"):
        try:
            ok = java_duration_nanos(value[len("by_duration:") :]) >= 0
        except ValueError:
            ok = False
    if not ok:
        raise invalid(
            f"Invalid value {value} for configuration {name}: Invalid value `{value}` for configuration "
            f"{name}. The value must be either 'earliest', 'latest' or of the format "
            f"'by_duration:<PnDTnHnMn.nS>'."
        )


def _list_values(name: str, values: list) -> None:
    """ConfigDef.ValidList.anyNonDuplicateValues(isEmptyAllowed=true, isNullAllowed=false)."""
    if len(set(values)) != len(values):
        raise invalid(f"Configuration '{name}' values must not be duplicated.")
    if any(v == "" for v in values):
        raise invalid(f"Configuration '{name}' values must not be empty.")


def _any(_name: str, _value) -> None:
    pass


@dataclass(frozen=True)
class ConfigKey:
    name: str
    type: str  # ConfigDef.Type: INT, LONG, BOOLEAN, STRING or LIST
    default: Any  # GroupConfig's own default (ConfigDef), None for streams.assignor.name
    validator: Callable[[str, Any], None]
    # The coordinator setting Kafka takes when the group does not set the config (its broker
    # synonym, GroupConfig.ALL_GROUP_CONFIG_SYNONYMS; None: GroupConfig's default).
    setting: str | None = None
    internal: bool = False  # ConfigDef.defineInternal: described only where set

    @property
    def doc(self) -> str:
        return _DOCS[self.name]


_SHARE_AUTO_OFFSET_RESET_DOC = (
    "The strategy to initialize the share-partition start offset. "
    "<ul><li>earliest: automatically reset the offset to the earliest offset</li>"
    "<li>latest: automatically reset the offset to the latest offset</li>"
    "<li>by_duration:&lt;duration&gt;: automatically reset the offset to a configured duration from the current "
    "timestamp. &lt;duration&gt; must be specified in ISO8601 format (PnDTnHnMn.nS). "
    "Negative duration is not allowed.</li>"
    "<li>anything else: throw exception to the share consumer.</li></ul>"
)
_SHARE_ISOLATION_LEVEL_DOC = (
    'Controls how to read records written transactionally. If set to "read_committed", the share group will '
    'only deliver transactional records which have been committed. If set to "read_uncommitted", the share '
    "group will return all messages, even transactional messages which have been aborted. Non-transactional "
    "records will be returned unconditionally in either mode."
)
_DOCS = {
    CONSUMER_SESSION_TIMEOUT_MS: "The timeout to detect client failures when using the consumer group protocol.",
    CONSUMER_HEARTBEAT_INTERVAL_MS: "The heartbeat interval given to the members of a consumer group.",
    "consumer.assignment.interval.ms": "The interval between assignment updates for a consumer group.",
    "consumer.assignor.offload.enable": "Whether to offload consumer group assignment to a group coordinator "
    "background thread.",
    SHARE_SESSION_TIMEOUT_MS: "The timeout to detect client failures when using the share group protocol.",
    SHARE_HEARTBEAT_INTERVAL_MS: "The heartbeat interval given to the members of a share group.",
    SHARE_RECORD_LOCK_DURATION_MS: "The record acquisition lock duration in milliseconds for share groups.",
    "share.delivery.count.limit": "The maximum number of delivery attempts for a record delivered to a share group.",
    "share.partition.max.record.locks": "Share-group record lock limit per share-partition.",
    SHARE_AUTO_OFFSET_RESET: _SHARE_AUTO_OFFSET_RESET_DOC,
    SHARE_ISOLATION_LEVEL: _SHARE_ISOLATION_LEVEL_DOC,
    "share.renew.acknowledge.enable": "Whether the renew acknowledge type is enabled for the share group.",
    "share.assignment.interval.ms": "The interval between assignment updates for a share group.",
    "share.assignor.offload.enable": "Whether to offload share group assignment to a group coordinator background "
    "thread.",
    STREAMS_SESSION_TIMEOUT_MS: "The timeout to detect client failures when using the streams group protocol.",
    STREAMS_HEARTBEAT_INTERVAL_MS: "The heartbeat interval given to the members.",
    STREAMS_NUM_STANDBY_REPLICAS: "The number of standby replicas for each task.",
    "streams.initial.rebalance.delay.ms": "The amount of time the group coordinator will wait for more streams "
    "clients to join a new group before performing the first rebalance. A longer delay means potentially fewer "
    "rebalances.",
    "streams.assignment.interval.ms": "The interval between assignment updates for a streams group.",
    "streams.assignor.offload.enable": "Whether to offload streams group assignment to a group coordinator "
    "background thread.",
    "streams.task.offset.interval.ms": "The interval in which the warmup task changelog offsets on a client are "
    "updated on the broker. The offsets are sent with the next heartbeat after this time has passed.",
    "streams.num.warmup.replicas": "The maximum number of warmup task replicas.",
    "streams.rack.aware.assignment.tags": "List of client tag keys used to distribute standby replicas across Kafka "
    "Streams instances. When configured, and the used broker-side assignor supports it, it will make a best-effort "
    "to distribute standby tasks over each client tag dimension.",
    "streams.acceptable.recovery.lag": "The maximum acceptable lag (number of offsets to catch up) for a client to "
    "be considered caught-up enough to receive an active task assignment.",
    "streams.assignor.name": "The task assignor to use for this streams group, selected by short name from the "
    "assignors registered via the broker configuration group.streams.assignors. When unset, the group defaults to "
    "the first assignor configured in the broker's group.streams.assignors setting. Changing the assignor does not "
    "trigger a rebalance for the group; the new assignor takes effect on the next rebalance.",
    "errors.deadletterqueue.topic.name": "The name of the topic to be used as the dead-letter queue (DLQ) topic for "
    "this share group. If blank (the default), the group does not have a DLQ topic.",
    "errors.deadletterqueue.copy.record.enable": "When writing onto the dead-letter queue topic, whether to copy the "
    "original record onto the DLQ topic, or just write a record containing the context information headers.",
}

# GroupConfig.CONFIG_DEF of Kafka 4.4.0, in its definition order (the order ConfigDef parses in):
# name, type, default, validator, the coordinator setting it falls back to, internal.
K = ConfigKey
CONFIG_KEYS = (
    K(CONSUMER_SESSION_TIMEOUT_MS, "INT", 45000, _at_least(1), "group.consumer.session.timeout.ms"),
    K(CONSUMER_HEARTBEAT_INTERVAL_MS, "INT", 5000, _at_least(1), "group.consumer.heartbeat.interval.ms"),
    K("consumer.assignment.interval.ms", "INT", 1000, _at_least(0), "group.consumer.assignment.interval.ms"),
    K("consumer.assignor.offload.enable", "BOOLEAN", True, _any, "group.consumer.assignor.offload.enable", True),
    K(SHARE_SESSION_TIMEOUT_MS, "INT", 45000, _at_least(1), "group.share.session.timeout.ms"),
    K(SHARE_HEARTBEAT_INTERVAL_MS, "INT", 5000, _at_least(1), "group.share.heartbeat.interval.ms"),
    K(SHARE_RECORD_LOCK_DURATION_MS, "INT", 30000, _at_least(1000), "group.share.record.lock.duration.ms"),
    K("share.delivery.count.limit", "INT", 5, _at_least(2), "group.share.delivery.count.limit"),
    K("share.partition.max.record.locks", "INT", 2000, _at_least(100), "group.share.partition.max.record.locks"),
    K(SHARE_AUTO_OFFSET_RESET, "STRING", "latest", _share_auto_offset_reset),
    K(SHARE_ISOLATION_LEVEL, "STRING", "read_uncommitted", _one_of("read_committed", "read_uncommitted")),
    K("share.renew.acknowledge.enable", "BOOLEAN", True, _any),
    K("share.assignment.interval.ms", "INT", 1000, _at_least(0), "group.share.assignment.interval.ms"),
    K("share.assignor.offload.enable", "BOOLEAN", True, _any, "group.share.assignor.offload.enable", True),
    K(STREAMS_SESSION_TIMEOUT_MS, "INT", 45000, _at_least(1), "group.streams.session.timeout.ms"),
    K(STREAMS_HEARTBEAT_INTERVAL_MS, "INT", 5000, _at_least(1), "group.streams.heartbeat.interval.ms"),
    K(STREAMS_NUM_STANDBY_REPLICAS, "INT", 0, _at_least(0), "group.streams.num.standby.replicas"),
    K("streams.initial.rebalance.delay.ms", "INT", 3000, _at_least(0), "group.streams.initial.rebalance.delay.ms"),
    K("streams.assignment.interval.ms", "INT", 1000, _at_least(0), "group.streams.assignment.interval.ms"),
    K("streams.assignor.offload.enable", "BOOLEAN", True, _any, "group.streams.assignor.offload.enable", True),
    K("streams.task.offset.interval.ms", "INT", 60000, _at_least(1), "group.streams.task.offset.interval.ms", True),
    K("streams.num.warmup.replicas", "INT", 2, _at_least(0), "group.streams.num.warmup.replicas", True),
    K("streams.rack.aware.assignment.tags", "LIST", "", _list_values, "group.streams.rack.aware.assignment.tags"),
    K("streams.acceptable.recovery.lag", "LONG", 10000, _at_least(0), "group.streams.acceptable.recovery.lag", True),
    K("streams.assignor.name", "STRING", None, _any, "group.streams.assignors"),
    K("errors.deadletterqueue.topic.name", "STRING", "", _any),
    K("errors.deadletterqueue.copy.record.enable", "BOOLEAN", False, _any),
)
KEYS_BY_NAME = {k.name: k for k in CONFIG_KEYS}

# GroupConfig.validateValues of Kafka 4.4.0, in its order: each config the group sets against the
# coordinator's bounds (None: no bound on that side).
_BOUNDS = (
    (
        CONSUMER_HEARTBEAT_INTERVAL_MS,
        "group.consumer.min.heartbeat.interval.ms",
        "group.consumer.max.heartbeat.interval.ms",
    ),
    (CONSUMER_SESSION_TIMEOUT_MS, "group.consumer.min.session.timeout.ms", "group.consumer.max.session.timeout.ms"),
    (
        "consumer.assignment.interval.ms",
        "group.consumer.min.assignment.interval.ms",
        "group.consumer.max.assignment.interval.ms",
    ),
    (SHARE_HEARTBEAT_INTERVAL_MS, "group.share.min.heartbeat.interval.ms", "group.share.max.heartbeat.interval.ms"),
    (SHARE_SESSION_TIMEOUT_MS, "group.share.min.session.timeout.ms", "group.share.max.session.timeout.ms"),
    (
        SHARE_RECORD_LOCK_DURATION_MS,
        "group.share.min.record.lock.duration.ms",
        "group.share.max.record.lock.duration.ms",
    ),
    ("share.delivery.count.limit", "group.share.min.delivery.count.limit", "group.share.max.delivery.count.limit"),
    (
        "share.partition.max.record.locks",
        "group.share.min.partition.max.record.locks",
        "group.share.max.partition.max.record.locks",
    ),
    (
        "share.assignment.interval.ms",
        "group.share.min.assignment.interval.ms",
        "group.share.max.assignment.interval.ms",
    ),
    (
        STREAMS_HEARTBEAT_INTERVAL_MS,
        "group.streams.min.heartbeat.interval.ms",
        "group.streams.max.heartbeat.interval.ms",
    ),
    (STREAMS_SESSION_TIMEOUT_MS, "group.streams.min.session.timeout.ms", "group.streams.max.session.timeout.ms"),
    (STREAMS_NUM_STANDBY_REPLICAS, None, "group.streams.max.standby.replicas"),
    (
        "streams.assignment.interval.ms",
        "group.streams.min.assignment.interval.ms",
        "group.streams.max.assignment.interval.ms",
    ),
    ("streams.task.offset.interval.ms", "group.streams.min.task.offset.interval.ms", None),
    ("streams.num.warmup.replicas", None, "group.streams.max.warmup.replicas"),
)
_SESSION_OVER_HEARTBEAT = (
    (CONSUMER_SESSION_TIMEOUT_MS, CONSUMER_HEARTBEAT_INTERVAL_MS),
    (SHARE_SESSION_TIMEOUT_MS, SHARE_HEARTBEAT_INTERVAL_MS),
    (STREAMS_SESSION_TIMEOUT_MS, STREAMS_HEARTBEAT_INTERVAL_MS),
)

_JAVA_INT = re.compile(r"[+-]?\d+")
_JAVA_TRIM = "".join(chr(c) for c in range(0x21))  # String.trim strips every char <= ' '
_JAVA_LIST_SEPARATOR = re.compile(r"[ \t\n\x0b\f\r]*,[ \t\n\x0b\f\r]*")  # ConfigDef's \\s*,\\s*


def to_string(key: ConfigKey, value) -> str | None:
    """ConfigDef.convertToString."""
    if value is None or isinstance(value, str):
        return value
    if key.type == "BOOLEAN":
        return "true" if value else "false"
    if key.type == "LIST":
        return ",".join(value)
    return str(value)


def setting_value(key: ConfigKey, config):
    """The coordinator's value behind a config (AbstractKafkaConfig.extractGroupConfigMap): the
    group.streams.assignors list stands for its first assignor."""
    value = config[key.setting]
    return value[0] if key.setting == "group.streams.assignors" else value


def defaults(config) -> dict:
    """AbstractKafkaConfig.extractGroupConfigMap (4.4): every config with a coordinator setting takes
    its value (an internal config only where the broker's file sets it: here never, so GroupConfig's
    default, the same as the setting's own default), the defaults of DescribeConfigs."""
    return {k.name: setting_value(k, config) for k in CONFIG_KEYS if k.setting and not k.internal}


def _parse_value(key: ConfigKey, value):
    """ConfigDef.parseValue: parseType of the trimmed string, then the key's validator."""
    name = key.name
    if isinstance(value, str):
        trimmed = value.strip(_JAVA_TRIM)
        if key.type in ("INT", "LONG"):
            lo, hi = (INT_MIN, INT_MAX) if key.type == "INT" else (LONG_MIN, LONG_MAX)
            number = int(trimmed) if _JAVA_INT.fullmatch(trimmed) else None
            if number is None or not lo <= number <= hi:
                raise invalid(f"Invalid value {value} for configuration {name}: Not a number of type {key.type}")
            value = number
        elif key.type == "BOOLEAN":
            if trimmed.lower() not in ("true", "false"):
                raise invalid(
                    f"Invalid value {value} for configuration {name}: Expected value to be either true or false"
                )
            value = trimmed.lower() == "true"
        elif key.type == "LIST":
            value = _JAVA_LIST_SEPARATOR.split(trimmed) if trimmed else []
        else:
            value = trimmed
    key.validator(name, value)
    return value


def _config_parse(props: dict) -> dict:
    """ConfigDef.parse: every key in definition order, a missing one taking its default."""
    return {k.name: _parse_value(k, props.get(k.name, k.default)) for k in CONFIG_KEYS}


def parse(overrides: dict[str, str], config) -> dict:
    """GroupConfig.fromProps(extractGroupConfigMap, overrides): every config's value in a group
    (what DescribeConfigs shows)."""
    return _config_parse({**defaults(config), **overrides})


def validate(overrides: dict[str, str], config) -> dict:
    """GroupConfig.validate of Kafka 4.4.0 over the group's configs after the change: names, the
    rack tags' duplicates, parsing, then only the configs the group sets against the coordinator's
    bounds. Raises ApiError(INVALID_CONFIG) with Kafka's message; returns the parsed values."""
    for name in overrides:
        if name not in KEYS_BY_NAME:
            raise invalid(f"Unknown group config name: {name}")
    tags = overrides.get("streams.rack.aware.assignment.tags")
    if tags is not None:
        trimmed = tags.strip(_JAVA_TRIM)
        raw = _JAVA_LIST_SEPARATOR.split(trimmed) if trimmed else []
        if len(set(raw)) != len(raw):
            raise invalid("streams.rack.aware.assignment.tags must not contain duplicate tag keys.")
    values = {k: v for k, v in _config_parse(overrides).items() if k in overrides}
    for name, min_setting, max_setting in _BOUNDS:
        if name not in values:
            continue
        value = values[name]
        lo = config[min_setting] if min_setting else None
        hi = config[max_setting] if max_setting else None
        if lo is not None and hi is not None:
            if not lo <= value <= hi:  # validateIntRange
                raise invalid(f"{name} must be in the range {lo} to {hi} inclusive.")
        elif lo is not None and value < lo:  # validateIntMin
            raise invalid(f"{name} must be greater than or equal to {lo}")
        elif hi is not None and value > hi:  # validateIntMax
            raise invalid(f"{name} must be less than or equal to {hi}")
    if "streams.assignor.name" in values:
        name, registered = values["streams.assignor.name"], list(config["group.streams.assignors"])
        if name not in registered:
            raise invalid(
                f"streams.assignor.name '{name}' is not a registered task assignor. "
                f"Registered assignors are: [{', '.join(registered)}]."
            )
    for session, heartbeat in _SESSION_OVER_HEARTBEAT:
        if session in values or heartbeat in values:
            s = values.get(session, config[KEYS_BY_NAME[session].setting])
            h = values.get(heartbeat, config[KEYS_BY_NAME[heartbeat].setting])
            if s <= h:
                raise invalid(f"{session} must be greater than {heartbeat}")
    dlq = values.get("errors.deadletterqueue.topic.name")
    if dlq and dlq.startswith("__"):
        raise invalid("errors.deadletterqueue.topic.name: DLQ topic name must not start with '__'")
    return values


def clamp(name: str, value, config):
    """GroupConfig.evaluate (4.4): a group's value outside the coordinator's current bounds (changed
    since the group set it) is used capped to them."""
    for bounded, min_setting, max_setting in _BOUNDS:
        if bounded == name:
            if min_setting and value < config[min_setting]:
                return config[min_setting]
            if max_setting and value > config[max_setting]:
                return config[max_setting]
    return value


# ====================================================================== the store
class GroupConfigs:
    """The partition's group configs: groupId -> {name: value string}, one chunk per group
    (`GroupCoordinator.group_configs`, a LazyMap), and the effective values the heartbeat uses."""

    def __init__(self, component):
        self.c = component

    @property
    def config(self):
        return self.c.p.config

    def overrides(self, group_id: str) -> dict[str, str]:
        return dict(self.c.group_configs.get(group_id) or {})

    def effective(self, group_id: str, name: str):
        """The group's value of `name` if the group sets it (validated when written, capped to the
        coordinator's current bounds as GroupConfig.evaluate does), else the coordinator's setting
        (GroupMetadataManager's `groupConfig.flatMap(...).orElse(config...)`), or GroupConfig's
        default where Kafka has no setting (share.auto.offset.reset, ...). Kafka 4.2+'s GroupConfig
        accessors are Optionals, empty for a config the group does not set (KAFKA-20337): 4.1.1 gave
        such a config GroupConfig's static default once the group set any other."""
        key = KEYS_BY_NAME[name]
        overrides = self.c.group_configs.get(group_id)
        if overrides and name in overrides:
            return clamp(name, _parse_value(key, overrides[name]), self.config)
        return setting_value(key, self.config) if key.setting else key.default

    # One accessor per config (what the group types read).
    def consumer_session_timeout_ms(self, group_id: str) -> int:
        return self.effective(group_id, CONSUMER_SESSION_TIMEOUT_MS)

    def consumer_heartbeat_interval_ms(self, group_id: str) -> int:
        return self.effective(group_id, CONSUMER_HEARTBEAT_INTERVAL_MS)

    def share_session_timeout_ms(self, group_id: str) -> int:
        return self.effective(group_id, SHARE_SESSION_TIMEOUT_MS)

    def share_heartbeat_interval_ms(self, group_id: str) -> int:
        return self.effective(group_id, SHARE_HEARTBEAT_INTERVAL_MS)

    def share_record_lock_duration_ms(self, group_id: str) -> int:
        return self.effective(group_id, SHARE_RECORD_LOCK_DURATION_MS)

    def share_auto_offset_reset(self, group_id: str) -> str:
        """ "earliest", "latest" or "by_duration:<ISO-8601 duration>" (java_duration_nanos parses it)."""
        return self.effective(group_id, SHARE_AUTO_OFFSET_RESET)

    def share_isolation_level(self, group_id: str) -> str:
        """ "read_committed" or "read_uncommitted"."""
        return self.effective(group_id, SHARE_ISOLATION_LEVEL)

    def streams_session_timeout_ms(self, group_id: str) -> int:
        return self.effective(group_id, STREAMS_SESSION_TIMEOUT_MS)

    def streams_heartbeat_interval_ms(self, group_id: str) -> int:
        return self.effective(group_id, STREAMS_HEARTBEAT_INTERVAL_MS)

    def streams_num_standby_replicas(self, group_id: str) -> int:
        return self.effective(group_id, STREAMS_NUM_STANDBY_REPLICAS)

    # Kafka 4.3/4.4's configs: stored and described; what reads them is named in docs/protocol.md.
    def consumer_assignment_interval_ms(self, group_id: str) -> int:
        return self.effective(group_id, "consumer.assignment.interval.ms")

    def consumer_assignor_offload_enable(self, group_id: str) -> bool:
        return self.effective(group_id, "consumer.assignor.offload.enable")

    def share_delivery_count_limit(self, group_id: str) -> int:
        return self.effective(group_id, "share.delivery.count.limit")

    def share_partition_max_record_locks(self, group_id: str) -> int:
        return self.effective(group_id, "share.partition.max.record.locks")

    def share_renew_acknowledge_enable(self, group_id: str) -> bool:
        return self.effective(group_id, "share.renew.acknowledge.enable")

    def share_assignment_interval_ms(self, group_id: str) -> int:
        return self.effective(group_id, "share.assignment.interval.ms")

    def share_assignor_offload_enable(self, group_id: str) -> bool:
        return self.effective(group_id, "share.assignor.offload.enable")

    def streams_initial_rebalance_delay_ms(self, group_id: str) -> int:
        return self.effective(group_id, "streams.initial.rebalance.delay.ms")

    def streams_assignment_interval_ms(self, group_id: str) -> int:
        return self.effective(group_id, "streams.assignment.interval.ms")

    def streams_assignor_offload_enable(self, group_id: str) -> bool:
        return self.effective(group_id, "streams.assignor.offload.enable")

    def streams_task_offset_interval_ms(self, group_id: str) -> int:
        return self.effective(group_id, "streams.task.offset.interval.ms")

    def streams_num_warmup_replicas(self, group_id: str) -> int:
        return self.effective(group_id, "streams.num.warmup.replicas")

    def streams_rack_aware_assignment_tags(self, group_id: str) -> list[str]:
        return list(self.effective(group_id, "streams.rack.aware.assignment.tags"))

    def streams_acceptable_recovery_lag(self, group_id: str) -> int:
        return self.effective(group_id, "streams.acceptable.recovery.lag")

    def streams_assignor_name(self, group_id: str) -> str:
        return self.effective(group_id, "streams.assignor.name")

    def errors_dlq_topic_name(self, group_id: str) -> str:
        return self.effective(group_id, "errors.deadletterqueue.topic.name")

    def errors_dlq_copy_record_enable(self, group_id: str) -> bool:
        return self.effective(group_id, "errors.deadletterqueue.copy.record.enable")

    # ------------------------------------------------------------------ IncrementalAlterConfigs
    def incremental_alter_configs(self, request: Request) -> CoordinatorResult:
        body = request.body
        result = CoordinatorResult()
        pending: dict[str, dict] = {}  # group -> its configs after this request's earlier resources
        responses = []
        for resource in body["resources"]:
            try:
                self._alter(resource, body["validateOnly"], result, pending)
                error, message = Errors.NONE, None
            except ApiError as e:
                error, message = e.error, e.message
            responses.append(
                {
                    "errorCode": error.code,
                    "errorMessage": message,
                    "resourceType": resource["resourceType"],
                    "resourceName": resource["resourceName"],
                }
            )
        result.response = {"throttleTimeMs": 0, "responses": responses}
        return result

    def _alter(self, resource: dict, validate_only: bool, result: CoordinatorResult, pending: dict) -> None:
        """Kafka's order: the broker's ConfigAdminManager checks (type, duplicate keys, null values),
        then the controller's (each operation, the group name, the resulting configs)."""
        _check_type(resource)
        ops = resource["configs"]
        names = [op["name"] for op in ops]
        if len(set(names)) != len(names):
            raise ApiError(Errors.INVALID_REQUEST, "Error due to duplicate config keys")
        null_updates = [op["name"] for op in ops if op["configOperation"] != OP_DELETE and op["value"] is None]
        if null_updates:
            raise ApiError(Errors.INVALID_REQUEST, "Null value not supported for : " + ", ".join(null_updates))
        for op in ops:
            kind = op["configOperation"]
            if kind in (OP_APPEND, OP_SUBTRACT):
                # KafkaConfigSchema.isSplittable: the controller's schema (KafkaRaftServer.configSchema,
                # Kafka 4.4.0 too) has only BROKER and TOPIC configs, so no GROUP config splits, not
                # even the LIST streams.rack.aware.assignment.tags.
                raise invalid(f"Can't {OP_NAMES[kind]} to key {op['name']} because its type is not LIST.")
            if kind not in (OP_SET, OP_DELETE):
                raise ApiError(Errors.INVALID_REQUEST, f"Unknown operation type {kind}")
        group_id = _check_group(self.c, resource, "Default group resources are not allowed.")
        current = pending[group_id] if group_id in pending else self.overrides(group_id)
        updated = dict(current)
        for op in ops:
            if op["configOperation"] == OP_SET:
                updated[op["name"]] = op["value"]
            else:
                updated.pop(op["name"], None)
        validate(updated, self.config)
        if validate_only or updated == current:
            return
        pending[group_id] = updated
        result.record(record_key(RECORD, group_id), {"type": RECORD, "configs": updated} if updated else None)
        result.emit(group_id, "GroupConfigChanged", groupId=group_id, configs=updated)

    # ------------------------------------------------------------------ DescribeConfigs
    def describe_configs(self, request: Request) -> dict:
        body, version = request.body, request.api_version
        results = []
        for resource in body["resources"]:
            entry = {
                "errorCode": Errors.NONE.code,
                "errorMessage": "",
                "resourceType": resource["resourceType"],
                "resourceName": resource["resourceName"],
                "configs": [],
            }
            try:
                _check_type(resource)
                group_id = _check_group(self.c, resource, "Group name must not be empty")
                entry["configs"] = self._describe(
                    group_id,
                    resource["configurationKeys"],
                    version,
                    body.get("includeSynonyms", False),
                    body.get("includeDocumentation", False),
                )
            except ApiError as e:
                entry["errorCode"], entry["errorMessage"] = e.error.code, e.message
            results.append(entry)
        return {"throttleTimeMs": 0, "results": results}

    def _describe(
        self, group_id: str, keys: list | None, version: int, synonyms: bool, documentation: bool
    ) -> list[dict]:
        """ConfigHelper.createGroupConfigEntry (4.4) for every config (or the requested ones), as
        ConfigHelperUtils.createResponseConfig lists them: first the internal configs the group sets
        (with the value as set), then every other config."""
        overrides = self.overrides(group_id)
        values = parse(overrides, self.config)
        internal = [(k, overrides[k.name]) for k in CONFIG_KEYS if k.internal and k.name in overrides]
        listed = internal + [(k, values[k.name]) for k in CONFIG_KEYS if not k.internal]
        out = []
        for key, raw in listed:
            if keys and key.name not in keys:
                continue
            value = to_string(key, raw)
            found = self._synonyms(key, overrides, value)
            entry = {
                "name": key.name,
                "value": value,
                "readOnly": False,
                "configSource": found[0]["source"] if found else SOURCE_DEFAULT,
                "isSensitive": False,
                "synonyms": found if synonyms else [],
            }
            if version >= 3:
                entry["configType"] = CONFIG_TYPES[key.type]
                entry["documentation"] = key.doc if documentation else None
            out.append(entry)
        return out

    def _synonyms(self, key: ConfigKey, overrides: dict, value: str | None) -> list[dict]:
        """Kafka 4.4's ConfigHelper.createGroupConfigEntry: the group's own value (GROUP_CONFIG)
        when set, then the broker setting it falls back to (GroupConfig.brokerSynonym) as
        STATIC_BROKER_CONFIG when the service's configuration sets it (its server.properties) and
        as DEFAULT_CONFIG with Kafka's default; a config without a broker setting: GroupConfig's
        default (none for a config without one). The config's source is the first one's."""
        out = [{"name": key.name, "value": value, "source": SOURCE_GROUP}] if key.name in overrides else []
        if key.setting is None:
            if key.default is not None:
                out.append({"name": key.name, "value": to_string(key, key.default), "source": SOURCE_DEFAULT})
            return out
        if key.setting in self.config.static_configs:
            out.append(
                {
                    "name": key.setting,
                    "value": _setting_string(key, self.config[key.setting]),
                    "source": SOURCE_STATIC_BROKER,
                }
            )
        out.append(
            {"name": key.setting, "value": _setting_string(key, DEFAULTS[key.setting]), "source": SOURCE_DEFAULT}
        )
        return out

    # ------------------------------------------------------------------ replay
    def replay(self, _kind: str, ids: list, value: dict | None) -> None:
        group_id = ids[0]
        if value is None:
            self.c.group_configs.pop(group_id, None)
        else:
            self.c.group_configs[group_id] = dict(value["configs"])


def _setting_string(key: ConfigKey, setting) -> str | None:
    """A coordinator setting as DescribeConfigs prints a synonym (a list setting comma-joined)."""
    return ",".join(setting) if isinstance(setting, list) else to_string(key, setting)


def _check_type(resource: dict) -> None:
    if resource["resourceType"] != GROUP_RESOURCE_TYPE:
        raise ApiError(
            Errors.INVALID_REQUEST,
            f"Unsupported resource type: {resource['resourceType']} (the coordinator serves only "
            f"GROUP ({GROUP_RESOURCE_TYPE}) config resources)",
        )


def _check_group(component, resource: dict, empty_message: str) -> str:
    """The resource's group id, if not empty and owned by this partition; else ApiError."""
    group_id = resource["resourceName"]
    if not group_id:
        raise ApiError(Errors.INVALID_REQUEST, empty_message)
    if not component.p.owns(group_id):
        raise ApiError(Errors.NOT_COORDINATOR)
    return group_id


# The APIs (request fields, error shapes): coordinator/protocol/table.py.
