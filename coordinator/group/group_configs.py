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
from dataclasses import dataclass

from ..api import ApiSpec, register
from ..errors import ApiError, Errors
from ..messages import Request, StateRecord
from ..records import parse_record_key, record_key
from ..schema import Array, F, Struct
from .component import GroupCoordinator

GROUP_RESOURCE_TYPE = 32  # ConfigResource.Type.GROUP
SOURCE_DEFAULT, SOURCE_GROUP = 5, 8  # DescribeConfigsResponse.ConfigSource DEFAULT_CONFIG / GROUP_CONFIG
CONFIG_TYPE_INT = 3  # DescribeConfigsResponse.ConfigType.INT
OP_SET, OP_DELETE, OP_APPEND, OP_SUBTRACT = 0, 1, 2, 3
OP_NAMES = {OP_SET: "SET", OP_DELETE: "DELETE", OP_APPEND: "APPEND", OP_SUBTRACT: "SUBTRACT"}
RECORD = "GroupConfig"
INT_MIN, INT_MAX = -(2**31), 2**31 - 1

CONSUMER_SESSION_TIMEOUT_MS = "consumer.session.timeout.ms"
CONSUMER_HEARTBEAT_INTERVAL_MS = "consumer.heartbeat.interval.ms"
SHARE_SESSION_TIMEOUT_MS = "share.session.timeout.ms"
SHARE_HEARTBEAT_INTERVAL_MS = "share.heartbeat.interval.ms"
SHARE_RECORD_LOCK_DURATION_MS = "share.record.lock.duration.ms"


@dataclass(frozen=True)
class ConfigKey:
    name: str
    setting: str  # the coordinator setting that is the default (GroupCoordinatorConfig.extractGroupConfigMap)
    at_least: int
    doc: str


# GroupConfig.CONFIG, in its definition order (the order ConfigDef parses and validates in).
CONFIG_KEYS = (
    ConfigKey(CONSUMER_SESSION_TIMEOUT_MS, "group.consumer.session.timeout.ms", 1,
              "The timeout to detect client failures when using the consumer group protocol."),
    ConfigKey(CONSUMER_HEARTBEAT_INTERVAL_MS, "group.consumer.heartbeat.interval.ms", 1,
              "The heartbeat interval given to the members of a consumer group."),
    ConfigKey(SHARE_SESSION_TIMEOUT_MS, "group.share.session.timeout.ms", 1,
              "The timeout to detect client failures when using the share group protocol."),
    ConfigKey(SHARE_HEARTBEAT_INTERVAL_MS, "group.share.heartbeat.interval.ms", 1,
              "The heartbeat interval given to the members of a share group."),
    ConfigKey(SHARE_RECORD_LOCK_DURATION_MS, "group.share.record.lock.duration.ms", 1000,
              "The record acquisition lock duration in milliseconds for share groups."),
)
KEYS_BY_NAME = {k.name: k for k in CONFIG_KEYS}

# GroupConfig.validateValues: (config, coordinator setting, "greater"/"less" bound), in its order.
_BOUNDS = (
    (CONSUMER_HEARTBEAT_INTERVAL_MS, "group.consumer.min.heartbeat.interval.ms", "max.heartbeat",
     "group.consumer.max.heartbeat.interval.ms"),
    (CONSUMER_SESSION_TIMEOUT_MS, "group.consumer.min.session.timeout.ms", "max.session",
     "group.consumer.max.session.timeout.ms"),
    (SHARE_HEARTBEAT_INTERVAL_MS, "group.share.min.heartbeat.interval.ms", "max.heartbeat",
     "group.share.max.heartbeat.interval.ms"),
    (SHARE_SESSION_TIMEOUT_MS, "group.share.min.session.timeout.ms", "max.session",
     "group.share.max.session.timeout.ms"),
    (SHARE_RECORD_LOCK_DURATION_MS, "group.share.min.record.lock.duration.ms", "max.lock",
     "group.share.max.record.lock.duration.ms"),
)

_JAVA_INT = re.compile(r"[+-]?\d+")
_JAVA_TRIM = "".join(chr(c) for c in range(0x21))  # String.trim strips every char <= ' '


def invalid(message: str) -> ApiError:
    return ApiError(Errors.INVALID_CONFIG, message)


def defaults(config) -> dict[str, int]:
    """The coordinator's values of every group config (extractGroupConfigMap)."""
    return {k.name: config[k.setting] for k in CONFIG_KEYS}


def _parse_int(name: str, value) -> int:
    """ConfigDef.parseType for INT, then Range.atLeast."""
    if isinstance(value, int):
        parsed = value
    else:
        trimmed = value.strip(_JAVA_TRIM)
        parsed = int(trimmed) if _JAVA_INT.fullmatch(trimmed) else None
        if parsed is None or not INT_MIN <= parsed <= INT_MAX:
            raise invalid(f"Invalid value {value} for configuration {name}: Not a number of type INT")
    at_least = KEYS_BY_NAME[name].at_least
    if parsed < at_least:
        raise invalid(f"Invalid value {parsed} for configuration {name}: Value must be at least {at_least}")
    return parsed


def parse(overrides: dict[str, str], config) -> dict[str, int]:
    """GroupConfig.fromProps(coordinator defaults, overrides): every config's effective value."""
    combined: dict = defaults(config)
    combined.update(overrides)
    return {k.name: _parse_int(k.name, combined[k.name]) for k in CONFIG_KEYS}


def validate(overrides: dict[str, str], config) -> dict[str, int]:
    """GroupConfigManager.validate: raises ApiError(INVALID_CONFIG) with Kafka's message."""
    for name in overrides:
        if name not in KEYS_BY_NAME:
            raise invalid(f"Unknown group config name: {name}")
    values = parse(overrides, config)
    for name, min_setting, _, max_setting in _BOUNDS:
        if values[name] < config[min_setting]:
            raise invalid(f"{name} must be greater than or equal to {min_setting}")
        if values[name] > config[max_setting]:
            raise invalid(f"{name} must be less than or equal to {max_setting}")
    for session, heartbeat in ((CONSUMER_SESSION_TIMEOUT_MS, CONSUMER_HEARTBEAT_INTERVAL_MS),
                               (SHARE_SESSION_TIMEOUT_MS, SHARE_HEARTBEAT_INTERVAL_MS)):
        if values[session] <= values[heartbeat]:
            raise invalid(f"{session} must be greater than {heartbeat}")
    return values


# ====================================================================== the store
class GroupConfigs:
    """The partition's group configs: groupId -> {name: value string}, one chunk per group
    (`GroupCoordinator.group_configs`, a LazyMap), and the effective values the heartbeat uses."""

    def __init__(self, component: GroupCoordinator):
        self.c = component

    @property
    def config(self):
        return self.c.p.config

    def overrides(self, group_id: str) -> dict[str, str]:
        return dict(self.c.group_configs.get(group_id) or {})

    def effective(self, group_id: str, name: str) -> int:
        """The group's value if it has overrides (validated when written), else the coordinator's."""
        overrides = self.c.group_configs.get(group_id)
        if not overrides:
            return self.config[KEYS_BY_NAME[name].setting]
        return parse(overrides, self.config)[name]

    def consumer_session_timeout_ms(self, group_id: str) -> int:
        return self.effective(group_id, CONSUMER_SESSION_TIMEOUT_MS)

    def consumer_heartbeat_interval_ms(self, group_id: str) -> int:
        return self.effective(group_id, CONSUMER_HEARTBEAT_INTERVAL_MS)

    # ------------------------------------------------------------------ IncrementalAlterConfigs
    def incremental_alter_configs(self, request: Request) -> dict:
        body = request.body
        responses = []
        for resource in body["resources"]:
            try:
                self._alter(resource, body["validateOnly"])
                error, message = Errors.NONE, None
            except ApiError as e:
                error, message = e.error, e.message
            responses.append({"errorCode": error.code, "errorMessage": message,
                              "resourceType": resource["resourceType"], "resourceName": resource["resourceName"]})
        return {"throttleTimeMs": 0, "responses": responses}

    def _alter(self, resource: dict, validate_only: bool) -> None:
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
        current = self.overrides(group_id)
        updated = dict(current)
        for op in ops:
            if op["configOperation"] == OP_SET:
                updated[op["name"]] = op["value"]
            else:
                updated.pop(op["name"], None)
        validate(updated, self.config)
        if validate_only or updated == current:
            return
        self.c.append_and_replay(record_key(RECORD, group_id),
                                 {"type": RECORD, "configs": updated} if updated else None)
        self.c.emit(group_id, "GroupConfigChanged", configs=updated)

    # ------------------------------------------------------------------ DescribeConfigs
    def describe_configs(self, request: Request) -> dict:
        body, version = request.body, request.api_version
        results = []
        for resource in body["resources"]:
            entry = {"errorCode": Errors.NONE.code, "errorMessage": "",
                     "resourceType": resource["resourceType"], "resourceName": resource["resourceName"],
                     "configs": []}
            try:
                _check_type(resource)
                group_id = _check_group(self.c, resource, "Group name must not be empty")
                entry["configs"] = self._describe(group_id, resource["configurationKeys"], version,
                                                  body.get("includeSynonyms", False),
                                                  body.get("includeDocumentation", False))
            except ApiError as e:
                entry["errorCode"], entry["errorMessage"] = e.error.code, e.message
            results.append(entry)
        return {"throttleTimeMs": 0, "results": results}

    def _describe(self, group_id: str, keys: list | None, version: int, synonyms: bool,
                  documentation: bool) -> list[dict]:
        """ConfigHelper.createGroupConfigEntry for every config (or the requested ones)."""
        overrides = self.overrides(group_id)
        values = parse(overrides, self.config)
        out = []
        for key in CONFIG_KEYS:
            if keys and key.name not in keys:
                continue
            value = str(values[key.name])
            source = SOURCE_GROUP if key.name in overrides else SOURCE_DEFAULT
            entry = {"name": key.name, "value": value, "readOnly": False, "configSource": source,
                     "isSensitive": False,
                     "synonyms": [{"name": key.name, "value": value, "source": source}] if synonyms else []}
            if version >= 3:
                entry["configType"] = CONFIG_TYPE_INT
                entry["documentation"] = key.doc if documentation else None
            out.append(entry)
        return out

    # ------------------------------------------------------------------ replay
    def replay(self, group_id: str, value: dict | None) -> None:
        if value is None:
            self.c.group_configs.pop(group_id, None)
        else:
            self.c.group_configs[group_id] = dict(value["configs"])


def _check_type(resource: dict) -> None:
    if resource["resourceType"] != GROUP_RESOURCE_TYPE:
        raise ApiError(Errors.INVALID_REQUEST,
                       f"Unsupported resource type: {resource['resourceType']} (the coordinator serves only "
                       f"GROUP ({GROUP_RESOURCE_TYPE}) config resources)")


def _check_group(component, resource: dict, empty_message: str) -> str:
    """The resource's group id, if not empty and owned by this partition; else ApiError."""
    group_id = resource["resourceName"]
    if not group_id:
        raise ApiError(Errors.INVALID_REQUEST, empty_message)
    if not component.p.owns(group_id):
        raise ApiError(Errors.NOT_COORDINATOR)
    return group_id


def group_configs(component: GroupCoordinator) -> GroupConfigs:
    m = component.__dict__.get("_group_configs_manager")
    if m is None:
        m = component.__dict__["_group_configs_manager"] = GroupConfigs(component)
    return m


# ====================================================================== API table
def _alter_error(version, body, error, message):
    return {"throttleTimeMs": 0, "responses": [
        {"errorCode": error.code, "errorMessage": message, "resourceType": r["resourceType"],
         "resourceName": r["resourceName"]} for r in (body or {}).get("resources", [])]}


def _describe_error(version, body, error, message):
    return {"throttleTimeMs": 0, "results": [
        {"errorCode": error.code, "errorMessage": message, "resourceType": r["resourceType"],
         "resourceName": r["resourceName"], "configs": []} for r in (body or {}).get("resources", [])]}


INCREMENTAL_ALTER_CONFIGS = register(ApiSpec(
    name="IncrementalAlterConfigs", api_key=44, min_version=0, max_version=1,
    request=Struct(
        F("resources", Array(Struct(
            F("resourceType", "int8"),
            F("resourceName", "string"),
            F("configs", Array(Struct(
                F("name", "string"),
                F("configOperation", "int8"),
                F("value", "string", nullable=(0, None)),
            ))),
        ))),
        F("validateOnly", "bool"),
    ),
    # Names several groups: ownership is checked per resource (NOT_COORDINATOR per resource).
    component="groups", routing_field=None, error_response=_alter_error))

DESCRIBE_CONFIGS = register(ApiSpec(
    name="DescribeConfigs", api_key=32, min_version=1, max_version=4,
    request=Struct(
        F("resources", Array(Struct(
            F("resourceType", "int8"),
            F("resourceName", "string"),
            F("configurationKeys", Array("string"), nullable=(0, None)),
        ))),
        F("includeSynonyms", "bool", versions=(1, None), default=False),
        F("includeDocumentation", "bool", versions=(3, None), default=False),
    ),
    component="groups", routing_field=None, error_response=_describe_error))


def _replay(component, record: StateRecord) -> bool:
    kind, ids = parse_record_key(record.key)
    if kind != RECORD:
        return False
    group_configs(component).replay(ids[0], record.value)
    return True


GroupCoordinator.extend(
    apis={"IncrementalAlterConfigs": lambda c, request: group_configs(c).incremental_alter_configs(request),
          "DescribeConfigs": lambda c, request: group_configs(c).describe_configs(request)},
    replay=_replay,
)
