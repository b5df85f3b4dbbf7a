"""Per-group configs (KIP-848): IncrementalAlterConfigs and DescribeConfigs for GROUP resources.

Kafka keeps a group's dynamic configs (`consumer.session.timeout.ms`, ...) in the KRaft metadata
log and hands them to the GroupConfigManager of every broker; the group coordinator then uses the
group's value when it has one, else its own setting (GroupMetadataManager
.consumerGroupSessionTimeoutMs / consumerGroupHeartbeatIntervalMs). Here the group's coordinator
partition owns them: stored with the partition's state (one chunk per group with overrides),
written to the state log as `["GroupConfig", groupId]` -> `{"type": "GroupConfig", "configs":
{name: value}}` (a tombstone when no override is left), replayed on load.

Validation is GroupConfig.validate over the group's resulting configs on top of the coordinator's
(names, INT parsing, `atLeast` bounds, the min/max settings, session > heartbeat), with Kafka's
messages; the admin-side checks are ConfigAdminManager's and ConfigurationControlManager's.
Configs are kept as the strings the client sent, as Kafka's config records keep them.
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
CONFIG_TYPES = {"STRING": 2, "INT": 3}  # DescribeConfigsResponse.ConfigType
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


@dataclass(frozen=True)
class ConfigKey:
    name: str
    type: str  # "INT" or "STRING" (ConfigDef.Type)
    default: int | str  # GroupConfig's own default (ConfigDef)
    validator: Callable[[str, Any], None]
    doc: str
    # The coordinator setting that replaces `default` where Kafka passes the broker's values
    # (GroupCoordinatorConfig.extractGroupConfigMap: consumer.* and share.* INT configs only).
    setting: str | None = None


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

# GroupConfig.CONFIG of Kafka 4.1.1, in its definition order (the order ConfigDef parses and validates in).
CONFIG_KEYS = (
    ConfigKey(
        CONSUMER_SESSION_TIMEOUT_MS,
        "INT",
        45000,
        _at_least(1),
        "The timeout to detect client failures when using the consumer group protocol.",
        "group.consumer.session.timeout.ms",
    ),
    ConfigKey(
        CONSUMER_HEARTBEAT_INTERVAL_MS,
        "INT",
        5000,
        _at_least(1),
        "The heartbeat interval given to the members of a consumer group.",
        "group.consumer.heartbeat.interval.ms",
    ),
    ConfigKey(
        SHARE_SESSION_TIMEOUT_MS,
        "INT",
        45000,
        _at_least(1),
        "The timeout to detect client failures when using the share group protocol.",
        "group.share.session.timeout.ms",
    ),
    ConfigKey(
        SHARE_HEARTBEAT_INTERVAL_MS,
        "INT",
        5000,
        _at_least(1),
        "The heartbeat interval given to the members of a share group.",
        "group.share.heartbeat.interval.ms",
    ),
    ConfigKey(
        SHARE_RECORD_LOCK_DURATION_MS,
        "INT",
        30000,
        _at_least(1000),
        "The record acquisition lock duration in milliseconds for share groups.",
        "group.share.record.lock.duration.ms",
    ),
    ConfigKey(SHARE_AUTO_OFFSET_RESET, "STRING", "latest", _share_auto_offset_reset, _SHARE_AUTO_OFFSET_RESET_DOC),
    ConfigKey(
        SHARE_ISOLATION_LEVEL,
        "STRING",
        "read_uncommitted",
        _one_of("read_committed", "read_uncommitted"),
        _SHARE_ISOLATION_LEVEL_DOC,
    ),
    ConfigKey(
        STREAMS_SESSION_TIMEOUT_MS,
        "INT",
        45000,
        _at_least(1),
        "The timeout to detect client failures when using the streams group protocol.",
    ),
    ConfigKey(STREAMS_HEARTBEAT_INTERVAL_MS, "INT", 5000, _at_least(1), "The heartbeat interval given to the members."),
    ConfigKey(STREAMS_NUM_STANDBY_REPLICAS, "INT", 0, _at_least(0), "The number of standby replicas for each task."),
)
KEYS_BY_NAME = {k.name: k for k in CONFIG_KEYS}
# The coordinator settings that are the defaults when Kafka falls back to its own (no group config).
FALLBACK_SETTINGS = {
    **{k.name: k.setting for k in CONFIG_KEYS if k.setting},
    STREAMS_SESSION_TIMEOUT_MS: "group.streams.session.timeout.ms",
    STREAMS_HEARTBEAT_INTERVAL_MS: "group.streams.heartbeat.interval.ms",
    STREAMS_NUM_STANDBY_REPLICAS: "group.streams.num.standby.replicas",
}

# GroupConfig.validateValues: (config, lower-bound setting, upper-bound setting), in its order
# (None: no bound on that side).
_BOUNDS = (
    (
        CONSUMER_HEARTBEAT_INTERVAL_MS,
        "group.consumer.min.heartbeat.interval.ms",
        "group.consumer.max.heartbeat.interval.ms",
    ),
    (CONSUMER_SESSION_TIMEOUT_MS, "group.consumer.min.session.timeout.ms", "group.consumer.max.session.timeout.ms"),
    (SHARE_HEARTBEAT_INTERVAL_MS, "group.share.min.heartbeat.interval.ms", "group.share.max.heartbeat.interval.ms"),
    (SHARE_SESSION_TIMEOUT_MS, "group.share.min.session.timeout.ms", "group.share.max.session.timeout.ms"),
    (
        SHARE_RECORD_LOCK_DURATION_MS,
        "group.share.min.record.lock.duration.ms",
        "group.share.max.record.lock.duration.ms",
    ),
    (
        STREAMS_HEARTBEAT_INTERVAL_MS,
        "group.streams.min.heartbeat.interval.ms",
        "group.streams.max.heartbeat.interval.ms",
    ),
    (STREAMS_SESSION_TIMEOUT_MS, "group.streams.min.session.timeout.ms", "group.streams.max.session.timeout.ms"),
    (STREAMS_NUM_STANDBY_REPLICAS, None, "group.streams.max.standby.replicas"),
)
_SESSION_OVER_HEARTBEAT = (
    (CONSUMER_SESSION_TIMEOUT_MS, CONSUMER_HEARTBEAT_INTERVAL_MS),
    (SHARE_SESSION_TIMEOUT_MS, SHARE_HEARTBEAT_INTERVAL_MS),
    (STREAMS_SESSION_TIMEOUT_MS, STREAMS_HEARTBEAT_INTERVAL_MS),
)

_JAVA_INT = re.compile(r"[+-]?\d+")
_JAVA_TRIM = "".join(chr(c) for c in range(0x21))  # String.trim strips every char <= ' '


def defaults(config) -> dict[str, int]:
    """GroupCoordinatorConfig.extractGroupConfigMap: the coordinator's consumer.* and share.* INT
    values, the defaults of a group's GroupConfig and of DescribeConfigs (the other configs take
    GroupConfig's own defaults there, whatever the coordinator's group.streams.* settings)."""
    return {k.name: config[k.setting] for k in CONFIG_KEYS if k.setting}


def _validation_defaults(config) -> dict[str, int]:
    """GroupConfigManager.validate puts only extractConsumerGroupConfigMap under the new configs."""
    return {
        name: config[KEYS_BY_NAME[name].setting]
        for name in (CONSUMER_SESSION_TIMEOUT_MS, CONSUMER_HEARTBEAT_INTERVAL_MS)
    }


def _parse_value(key: ConfigKey, value):
    """ConfigDef.parseValue: parseType (INT: Integer.parseInt of the trimmed string; STRING: trimmed),
    then the key's validator."""
    name = key.name
    if key.type == "INT":
        if isinstance(value, int):
            parsed = value
        else:
            trimmed = value.strip(_JAVA_TRIM)
            number = int(trimmed) if _JAVA_INT.fullmatch(trimmed) else None
            if number is None or not INT_MIN <= number <= INT_MAX:
                raise invalid(f"Invalid value {value} for configuration {name}: Not a number of type INT")
            parsed = number
    else:
        parsed = value.strip(_JAVA_TRIM)
    key.validator(name, parsed)
    return parsed


def _config_parse(props: dict) -> dict:
    """ConfigDef.parse: every key in definition order, a missing one taking its default."""
    return {k.name: _parse_value(k, props.get(k.name, k.default)) for k in CONFIG_KEYS}


def parse(overrides: dict[str, str], config) -> dict:
    """GroupConfig.fromProps(extractGroupConfigMap, overrides): every config's value in a group that
    has overrides."""
    return _config_parse({**defaults(config), **overrides})


def validate(overrides: dict[str, str], config) -> dict:
    """GroupConfigManager.validate: raises ApiError(INVALID_CONFIG) with Kafka's message."""
    for name in overrides:
        if name not in KEYS_BY_NAME:
            raise invalid(f"Unknown group config name: {name}")
    values = _config_parse({**_validation_defaults(config), **overrides})
    for name, min_setting, max_setting in _BOUNDS:
        if min_setting and values[name] < config[min_setting]:
            raise invalid(f"{name} must be greater than or equal to {min_setting}")
        if values[name] > config[max_setting]:
            raise invalid(f"{name} must be less than or equal to {max_setting}")
    for session, heartbeat in _SESSION_OVER_HEARTBEAT:
        if values[session] <= values[heartbeat]:
            raise invalid(f"{session} must be greater than {heartbeat}")
    return values


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
        """The group's value of `name` if the group sets it (validated when written), else the
        coordinator's setting (GroupMetadataManager's `groupConfig.flatMap(...).orElse(config...)`),
        or GroupConfig's default where Kafka has no setting (the share.* strings). Kafka 4.2+'s
        GroupConfig accessors are Optionals, empty for a config the group does not set (KAFKA-20337):
        4.1.1 gave such a config GroupConfig's static default once the group set any other, so a
        group with only `streams.session.timeout.ms` set heartbeated every 5000 ms whatever
        `group.streams.heartbeat.interval.ms` said."""
        overrides = self.c.group_configs.get(group_id)
        if overrides and name in overrides:
            return parse(overrides, self.config)[name]
        setting = FALLBACK_SETTINGS.get(name)
        return self.config[setting] if setting else KEYS_BY_NAME[name].default

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
                # No group config is a LIST (ConfigurationControlManager's isSplittable).
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
        """ConfigHelper.createGroupConfigEntry for every config (or the requested ones)."""
        overrides = self.overrides(group_id)
        out = []
        for key in CONFIG_KEYS:
            if keys and key.name not in keys:
                continue
            value = str(self.effective(group_id, key.name))  # ConfigDef.convertToString
            every = self._synonyms(key, overrides, value)
            entry = {
                "name": key.name,
                "value": value,
                "readOnly": False,
                "configSource": every[0]["source"],
                "isSensitive": False,
                "synonyms": every if synonyms else [],
            }
            if version >= 3:
                entry["configType"] = CONFIG_TYPES[key.type]
                entry["documentation"] = key.doc if documentation else None
            out.append(entry)
        return out

    def _synonyms(self, key: ConfigKey, overrides: dict[str, str], value: str) -> list[dict]:
        """Kafka 4.4's ConfigHelper.createGroupConfigEntry: the group's own value (GROUP_CONFIG)
        when set, then the broker setting it falls back to (GroupConfig.brokerSynonym) as
        STATIC_BROKER_CONFIG when the service's configuration sets it (its server.properties) and
        as DEFAULT_CONFIG with Kafka's default; a config without a broker setting: GroupConfig's
        default. The config's source is the first one's."""
        out = [{"name": key.name, "value": value, "source": SOURCE_GROUP}] if key.name in overrides else []
        setting = FALLBACK_SETTINGS.get(key.name)
        if setting is None:
            return [*out, {"name": key.name, "value": str(key.default), "source": SOURCE_DEFAULT}]
        if setting in self.config.static_configs:
            out.append({"name": setting, "value": str(self.config[setting]), "source": SOURCE_STATIC_BROKER})
        return [*out, {"name": setting, "value": str(DEFAULTS[setting]), "source": SOURCE_DEFAULT}]

    # ------------------------------------------------------------------ replay
    def replay(self, _kind: str, ids: list, value: dict | None) -> None:
        group_id = ids[0]
        if value is None:
            self.c.group_configs.pop(group_id, None)
        else:
            self.c.group_configs[group_id] = dict(value["configs"])


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
