"""Per-group configs: IncrementalAlterConfigs / DescribeConfigs for GROUP resources, the
GroupConfig state-log record, and their use by ConsumerGroupHeartbeat (Kafka's GroupConfigTest,
GroupConfigManagerTest, ConfigHelper's group entries and GroupMetadataManagerTest
.testConsumerGroupDynamicConfigs)."""

from __future__ import annotations

import pytest

import state
from coordinator import CoordinatorConfig, CoordinatorPartition, coordinator_partition
from coordinator.errors import ApiError, Errors
from coordinator.group.group_configs import CONFIG_KEYS, parse, validate
from coordinator.messages import StateRecord
from coordinator.routing import key_for_partition
from tests.consumer.consumer_group_helpers import ConsumerGroupTestClient

GROUP = 32
SESSION, HEARTBEAT = "consumer.session.timeout.ms", "consumer.heartbeat.interval.ms"
CFG = CoordinatorConfig()
# GroupConfig.CONFIG_DEF of Kafka 4.4.0, in its definition order, without its internal configs
# (DescribeConfigs lists those only where the group sets them).
ALL_CONFIGS = [
    SESSION,
    HEARTBEAT,
    "consumer.assignment.interval.ms",
    "share.session.timeout.ms",
    "share.heartbeat.interval.ms",
    "share.record.lock.duration.ms",
    "share.delivery.count.limit",
    "share.partition.max.record.locks",
    "share.auto.offset.reset",
    "share.isolation.level",
    "share.renew.acknowledge.enable",
    "share.assignment.interval.ms",
    "streams.session.timeout.ms",
    "streams.heartbeat.interval.ms",
    "streams.num.standby.replicas",
    "streams.initial.rebalance.delay.ms",
    "streams.assignment.interval.ms",
    "streams.rack.aware.assignment.tags",
    "streams.assignor.name",
    "errors.deadletterqueue.topic.name",
    "errors.deadletterqueue.copy.record.enable",
]
INTERNAL = [
    "consumer.assignor.offload.enable",
    "share.assignor.offload.enable",
    "streams.assignor.offload.enable",
    "streams.task.offset.interval.ms",
    "streams.num.warmup.replicas",
    "streams.acceptable.recovery.lag",
]
INT_CONFIGS = [k.name for k in CONFIG_KEYS if k.type == "INT"]


def set_op(name, value):
    return {"name": name, "configOperation": 0, "value": value}


def delete_op(name):
    return {"name": name, "configOperation": 1, "value": None}


class Client(ConsumerGroupTestClient):
    def alter(self, *ops, group_id=None, resource_type=GROUP, validate_only=False, version=1) -> dict:
        resp = self.send(
            "IncrementalAlterConfigs",
            version,
            {
                "resources": [
                    {
                        "resourceType": resource_type,
                        "resourceName": self.group_id if group_id is None else group_id,
                        "configs": list(ops),
                    }
                ],
                "validateOnly": validate_only,
            },
        )
        return resp["responses"][0]

    def describe_configs(self, *names, group_id=None, version=4, synonyms=False, documentation=False) -> dict:
        body = {
            "resources": [
                {
                    "resourceType": GROUP,
                    "resourceName": self.group_id if group_id is None else group_id,
                    "configurationKeys": list(names) or None,
                }
            ],
            "includeSynonyms": synonyms,
        }
        if version >= 3:
            body["includeDocumentation"] = documentation
        return self.send("DescribeConfigs", version, body)["results"][0]

    def values(self) -> dict:
        return {c["name"]: (c["value"], c["configSource"]) for c in self.describe_configs()["configs"]}


def message(overrides: dict) -> str:
    with pytest.raises(ApiError) as e:
        validate(overrides, CFG)
    assert e.value.error.code == Errors.INVALID_CONFIG.code
    return e.value.message


# ====================================================================== GroupConfigTest
@pytest.mark.parametrize("name", INT_CONFIGS)
@pytest.mark.parametrize("value", ["not_a_number", "-0.1", "1.2", "", "2147483648", "1_000", "0x10"])
def test_from_props_invalid(name, value):
    assert message({name: value}) == f"Invalid value {value} for configuration {name}: Not a number of type INT"


def test_from_props_invalid_long_boolean_and_list():
    """GroupConfigTest.testFromPropsInvalid for the LONG, BOOLEAN and LIST configs of 4.3/4.4."""
    lag = "streams.acceptable.recovery.lag"
    assert message({lag: "9223372036854775808"}) == (
        f"Invalid value 9223372036854775808 for configuration {lag}: Not a number of type LONG"
    )
    assert message({lag: "-1"}) == f"Invalid value -1 for configuration {lag}: Value must be at least 0"
    assert validate({lag: " 9223372036854775807"}, CFG)[lag] == 2**63 - 1  # beyond INT: a LONG
    for name in (
        "consumer.assignor.offload.enable",
        "share.renew.acknowledge.enable",
        "errors.deadletterqueue.copy.record.enable",
    ):
        assert message({name: "yes"}) == (
            f"Invalid value yes for configuration {name}: Expected value to be either true or false"
        )
        assert validate({name: " FALSE "}, CFG)[name] is False  # equalsIgnoreCase after trim
    tags = "streams.rack.aware.assignment.tags"
    assert validate({tags: " zone , rack "}, CFG)[tags] == ["zone", "rack"]
    assert validate({tags: ""}, CFG)[tags] == []
    assert message({tags: "zone, zone"}) == f"{tags} must not contain duplicate tag keys."
    assert message({tags: "zone,,rack"}) == f"Configuration '{tags}' values must not be empty."


def test_at_least_bounds_and_java_parsing():
    assert message({SESSION: "0"}) == f"Invalid value 0 for configuration {SESSION}: Value must be at least 1"
    assert message({"share.record.lock.duration.ms": "999"}) == (
        "Invalid value 999 for configuration share.record.lock.duration.ms: Value must be at least 1000"
    )
    # Integer.parseInt after String.trim: a sign and surrounding blanks are accepted.
    assert validate({SESSION: " +50000\t"}, CFG)[SESSION] == 50000


def test_invalid_props():
    """GroupConfig.validateValues of Kafka 4.4.0: a config the group sets against the coordinator's
    bounds, with the bounds' values in the message."""
    cases = {
        (SESSION, "1"): f"{SESSION} must be in the range 45000 to 60000 inclusive.",
        (SESSION, "70000"): f"{SESSION} must be in the range 45000 to 60000 inclusive.",
        (HEARTBEAT, "1"): f"{HEARTBEAT} must be in the range 5000 to 15000 inclusive.",
        (HEARTBEAT, "70000"): f"{HEARTBEAT} must be in the range 5000 to 15000 inclusive.",
        ("consumer.assignment.interval.ms", "15001"): "consumer.assignment.interval.ms must be in the range 0 to "
        "15000 inclusive.",
        ("share.session.timeout.ms", "1"): "share.session.timeout.ms must be in the range 45000 to 60000 inclusive.",
        ("share.heartbeat.interval.ms", "70000"): "share.heartbeat.interval.ms must be in the range 5000 to 15000 "
        "inclusive.",
        ("share.record.lock.duration.ms", "10000"): "share.record.lock.duration.ms must be in the range 15000 to "
        "60000 inclusive.",
        ("share.delivery.count.limit", "11"): "share.delivery.count.limit must be in the range 2 to 10 inclusive.",
        ("share.delivery.count.limit", "1"): "Invalid value 1 for configuration share.delivery.count.limit: Value "
        "must be at least 2",
        ("share.partition.max.record.locks", "4001"): "share.partition.max.record.locks must be in the range 100 to "
        "4000 inclusive.",
        ("share.partition.max.record.locks", "99"): "Invalid value 99 for configuration "
        "share.partition.max.record.locks: Value must be at least 100",
        ("share.assignment.interval.ms", "-1"): "Invalid value -1 for configuration share.assignment.interval.ms: "
        "Value must be at least 0",
        ("streams.session.timeout.ms", "70000"): "streams.session.timeout.ms must be in the range 45000 to 60000 "
        "inclusive.",
        ("streams.heartbeat.interval.ms", "1000"): "streams.heartbeat.interval.ms must be in the range 5000 to 15000 "
        "inclusive.",
        ("streams.num.standby.replicas", "3"): "streams.num.standby.replicas must be less than or equal to 2",
        (
            "streams.num.standby.replicas",
            "-1",
        ): "Invalid value -1 for configuration streams.num.standby.replicas: Value must be at least 0",
        ("streams.assignment.interval.ms", "20000"): "streams.assignment.interval.ms must be in the range 0 to 15000 "
        "inclusive.",
        ("streams.task.offset.interval.ms", "14999"): "streams.task.offset.interval.ms must be greater than or equal "
        "to 15000",
        ("streams.num.warmup.replicas", "21"): "streams.num.warmup.replicas must be less than or equal to 20",
        ("streams.initial.rebalance.delay.ms", "-1"): "Invalid value -1 for configuration "
        "streams.initial.rebalance.delay.ms: Value must be at least 0",
        ("streams.assignor.name", "greedy"): "streams.assignor.name 'greedy' is not a registered task assignor. "
        "Registered assignors are: [sticky].",
        ("errors.deadletterqueue.topic.name", "__dlq"): "errors.deadletterqueue.topic.name: DLQ topic name must not "
        "start with '__'",
        ("share.isolation.level", "read_commit"): "Invalid value read_commit for configuration "
        "share.isolation.level: String must be one of: read_committed, read_uncommitted",
        ("share.isolation.level", "READ_COMMITTED"): "Invalid value READ_COMMITTED for configuration "
        "share.isolation.level: String must be one of: read_committed, read_uncommitted",
    }
    for (name, value), expected in cases.items():
        assert message({name: value}) == expected, name
    for value in (
        "hello",
        "by_duration",
        "by_duration:-PT10S",
        "by_duration:invalid",
        "none",
        "LATEST",
        "by_duration:PT",
        "by_duration:P",
        "by_duration:PT-1S",
        "by_duration:P106751991167301D",
    ):
        assert message({"share.auto.offset.reset": value}) == (
            f"Invalid value {value} for configuration share.auto.offset.reset: Invalid value `{value}` for "
            f"configuration share.auto.offset.reset. The value must be either 'earliest', 'latest' or of the "
            f"format 'by_duration:<PnDTnHnMn.nS>'."
        )


def test_valid_share_auto_offset_reset_and_isolation_level_values():
    """GroupConfigTest.testValidShareAutoOffsetResetValues / testValidShareIsolationLevelValues (the
    by_duration part is java.time.Duration.parse: case-insensitive letters, signs, a fraction)."""
    for value in (
        "latest",
        "earliest",
        "by_duration:PT10S",
        "by_duration:P1DT2H3M4.5S",
        "by_duration:pt0s",
        "by_duration:-PT-10S",
        "by_duration:PT1,5S",
        "by_duration:P0D",
        " latest ",
    ):
        assert validate({"share.auto.offset.reset": value}, CFG)["share.auto.offset.reset"] == value.strip()
    for value in ("read_committed", "read_uncommitted"):
        assert validate({"share.isolation.level": value}, CFG)["share.isolation.level"] == value


def test_validation_checks_only_the_configs_the_group_sets():
    """GroupConfig.validate of Kafka 4.4.0 keeps only the group's own configs after parsing
    (`parsed.keySet().retainAll(...)`): the coordinator's own values are not checked again, so a
    group config is accepted whatever the coordinator's other settings."""
    cfg = CoordinatorConfig(
        {
            "group.share.min.session.timeout.ms": 50000,
            "group.share.session.timeout.ms": 55000,
            "group.share.max.session.timeout.ms": 60000,
        }
    )
    assert validate({SESSION: "50000"}, cfg) == {SESSION: 50000}
    # A group's GroupConfig (what DescribeConfigs shows) starts from extractGroupConfigMap: every
    # config's coordinator setting (4.4: the streams.* ones too), GroupConfig's default for the others.
    cfg = CoordinatorConfig({"group.streams.session.timeout.ms": 50000, "group.share.session.timeout.ms": 50000})
    values = parse({SESSION: "50000"}, cfg)
    assert (values["share.session.timeout.ms"], values["streams.session.timeout.ms"]) == (50000, 50000)


def test_session_must_be_greater_than_heartbeat():
    cfg = CFG.with_overrides(
        **{"group_consumer_min_session_timeout_ms": 1000, "group_consumer_min_heartbeat_interval_ms": 1000}
    )
    with pytest.raises(ApiError) as e:
        validate({SESSION: "5000", HEARTBEAT: "5000"}, cfg)
    assert e.value.message == f"{SESSION} must be greater than {HEARTBEAT}"
    assert validate({SESSION: "5001", HEARTBEAT: "5000"}, cfg)[SESSION] == 5001
    # The one the group leaves out is the coordinator's (45000 session, 5000 heartbeat here).
    with pytest.raises(ApiError) as e:
        validate({SESSION: "5000"}, cfg)
    assert e.value.message == f"{SESSION} must be greater than {HEARTBEAT}"
    assert validate({HEARTBEAT: "15000"}, cfg) == {HEARTBEAT: 15000}


def test_from_props_with_default_value():
    values = parse({SESSION: "50000"}, CFG)
    assert values == {
        SESSION: 50000,
        HEARTBEAT: 5000,
        "consumer.assignment.interval.ms": 1000,
        "consumer.assignor.offload.enable": True,
        "share.session.timeout.ms": 45000,
        "share.heartbeat.interval.ms": 5000,
        "share.record.lock.duration.ms": 30000,
        "share.delivery.count.limit": 5,
        "share.partition.max.record.locks": 2000,
        "share.auto.offset.reset": "latest",
        "share.isolation.level": "read_uncommitted",
        "share.renew.acknowledge.enable": True,
        "share.assignment.interval.ms": 1000,
        "share.assignor.offload.enable": True,
        "streams.session.timeout.ms": 45000,
        "streams.heartbeat.interval.ms": 5000,
        "streams.num.standby.replicas": 0,
        "streams.initial.rebalance.delay.ms": 3000,
        "streams.assignment.interval.ms": 1000,
        "streams.assignor.offload.enable": True,
        "streams.task.offset.interval.ms": 60000,
        "streams.num.warmup.replicas": 2,
        "streams.rack.aware.assignment.tags": [],
        "streams.acceptable.recovery.lag": 10000,
        "streams.assignor.name": "sticky",  # the first of group.streams.assignors
        "errors.deadletterqueue.topic.name": "",
        "errors.deadletterqueue.copy.record.enable": False,
    }


def test_invalid_config_name():
    assert message({SESSION: "50000", "invalid.config.name": "10"}) == "Unknown group config name: invalid.config.name"


# ====================================================================== IncrementalAlterConfigs
def test_set_then_delete_writes_the_record_and_its_tombstone():
    c = Client()
    assert c.values()[SESSION] == ("45000", 5)
    r = c.alter(set_op(SESSION, "50000"), set_op(HEARTBEAT, "6000"))
    assert r == {"errorCode": 0, "errorMessage": None, "resourceType": GROUP, "resourceName": c.group_id}
    assert c.records() == [
        (f'["GroupConfig","{c.group_id}"]', {"type": "GroupConfig", "configs": {SESSION: "50000", HEARTBEAT: "6000"}})
    ]
    assert c.values()[SESSION] == ("50000", 8) and c.values()[HEARTBEAT] == ("6000", 8)
    assert c.events("GroupConfigChanged")[-1]["configs"] == {SESSION: "50000", HEARTBEAT: "6000"}

    assert c.alter(delete_op(SESSION))["errorCode"] == 0
    assert c.records(1) == [
        (f'["GroupConfig","{c.group_id}"]', {"type": "GroupConfig", "configs": {HEARTBEAT: "6000"}})
    ]
    assert c.values()[SESSION] == ("45000", 5)
    assert c.alter(delete_op(HEARTBEAT), delete_op("share.session.timeout.ms"))["errorCode"] == 0
    assert c.records(2) == [(f'["GroupConfig","{c.group_id}"]', None)]
    # Back to the coordinator's settings: DEFAULT_CONFIG, but STATIC_BROKER_CONFIG for the ones the
    # core driver's configuration names (its "server.properties": the assignment intervals and the
    # streams initial rebalance delay).
    static = {n for n, (_, source) in c.values().items() if source == 4}
    assert static == {f"{t}.assignment.interval.ms" for t in ("consumer", "share", "streams")} | {
        "streams.initial.rebalance.delay.ms"
    }
    assert all(source in (4, 5) for _, source in c.values().values())
    # Deleting what is not set changes nothing: no record.
    assert c.alter(delete_op(SESSION))["errorCode"] == 0
    assert len(c.records()) == 3


def test_validate_only_writes_nothing():
    c = Client()
    assert c.alter(set_op(SESSION, "50000"), validate_only=True)["errorCode"] == 0
    r = c.alter(set_op(SESSION, "1"), validate_only=True)
    assert (r["errorCode"], r["errorMessage"]) == (
        Errors.INVALID_CONFIG.code,
        f"{SESSION} must be in the range 45000 to 60000 inclusive.",
    )
    assert c.records() == [] and c.values()[SESSION] == ("45000", 5)


def test_invalid_alterations_change_nothing():
    c = Client()
    c.alter(set_op(SESSION, "50000"))
    cases = [
        ((set_op("foo", "1"),), Errors.INVALID_CONFIG.code, "Unknown group config name: foo"),
        (
            (set_op(SESSION, "55000"), set_op(HEARTBEAT, "x")),
            Errors.INVALID_CONFIG.code,
            f"Invalid value x for configuration {HEARTBEAT}: Not a number of type INT",
        ),
        (
            ({"name": SESSION, "configOperation": 2, "value": "1"},),
            Errors.INVALID_CONFIG.code,
            f"Can't APPEND to key {SESSION} because its type is not LIST.",
        ),
        (
            ({"name": SESSION, "configOperation": 3, "value": "1"},),
            Errors.INVALID_CONFIG.code,
            f"Can't SUBTRACT to key {SESSION} because its type is not LIST.",
        ),
        (
            ({"name": SESSION, "configOperation": 7, "value": "1"},),
            Errors.INVALID_REQUEST.code,
            "Unknown operation type 7",
        ),
        (
            (set_op(SESSION, "55000"), delete_op(SESSION)),
            Errors.INVALID_REQUEST.code,
            "Error due to duplicate config keys",
        ),
        (
            (set_op(SESSION, None), set_op(HEARTBEAT, None)),
            Errors.INVALID_REQUEST.code,
            f"Null value not supported for : {SESSION}, {HEARTBEAT}",
        ),
    ]
    for ops, code, text in cases:
        r = c.alter(*ops)
        assert (r["errorCode"], r["errorMessage"]) == (code, text), ops
    assert len(c.records()) == 1 and c.values()[SESSION] == ("50000", 8)


def test_resources_answered_one_by_one():
    c = Client()
    elsewhere = key_for_partition((c.d.partition_id + 1) % 50)
    resources = [
        {"resourceType": GROUP, "resourceName": c.group_id, "configs": [set_op(SESSION, "50000")]},
        {"resourceType": GROUP, "resourceName": elsewhere, "configs": [set_op(SESSION, "50000")]},
        {"resourceType": 2, "resourceName": "orders", "configs": [set_op("retention.ms", "1")]},
        {"resourceType": GROUP, "resourceName": "", "configs": [set_op(SESSION, "50000")]},
    ]
    r = c.send("IncrementalAlterConfigs", 0, {"resources": resources, "validateOnly": False})
    assert [(x["resourceName"], x["errorCode"]) for x in r["responses"]] == [
        (c.group_id, 0),
        (elsewhere, Errors.NOT_COORDINATOR.code),
        ("orders", Errors.INVALID_REQUEST.code),
        ("", Errors.INVALID_REQUEST.code),
    ]
    assert "only GROUP (32)" in r["responses"][2]["errorMessage"]
    assert r["responses"][3]["errorMessage"] == "Default group resources are not allowed."
    assert len(c.records()) == 1

    d = c.send(
        "DescribeConfigs",
        4,
        {
            "resources": [
                {"resourceType": GROUP, "resourceName": elsewhere, "configurationKeys": None},
                {"resourceType": GROUP, "resourceName": "", "configurationKeys": None},
                {"resourceType": 4, "resourceName": "1", "configurationKeys": None},
            ],
            "includeSynonyms": False,
            "includeDocumentation": False,
        },
    )
    assert [(x["errorCode"], x["configs"]) for x in d["results"]] == [
        (Errors.NOT_COORDINATOR.code, []),
        (Errors.INVALID_REQUEST.code, []),
        (Errors.INVALID_REQUEST.code, []),
    ]
    assert d["results"][1]["errorMessage"] == "Group name must not be empty"


def test_a_malformed_request_is_answered_per_resource():
    c = Client()
    r = c.send(
        "IncrementalAlterConfigs",
        1,
        {
            "resources": [
                {
                    "resourceType": GROUP,
                    "resourceName": c.group_id,
                    "configs": [{"name": SESSION, "configOperation": 300}],
                }
            ],
            "validateOnly": False,
        },
    )
    assert (r["responses"], r["errorCode"]) == ([], Errors.INVALID_REQUEST.code) and "configOperation" in r[
        "errorMessage"
    ]
    assert c.records() == []


# ====================================================================== DescribeConfigs
def test_describe_shows_every_config_with_its_source_type_and_documentation():
    c = Client()
    c.alter(set_op(HEARTBEAT, "6000"))
    result = c.describe_configs(synonyms=True, documentation=True)
    assert (result["errorCode"], result["errorMessage"]) == (0, "")
    by_name = {e["name"]: e for e in result["configs"]}
    assert list(by_name) == ALL_CONFIGS
    assert by_name[HEARTBEAT] == {
        "name": HEARTBEAT,
        "value": "6000",
        "readOnly": False,
        "configSource": 8,
        "isSensitive": False,
        # Kafka 4.4's ConfigHelper: the group's value, then the broker setting it falls back to
        "synonyms": [
            {"name": HEARTBEAT, "value": "6000", "source": 8},
            {"name": "group.consumer.heartbeat.interval.ms", "value": "5000", "source": 5},
        ],
        "configType": 3,
        "documentation": "The heartbeat interval given to the members of a consumer group.",
    }
    assert by_name[SESSION]["configSource"] == 5 and by_name[SESSION]["synonyms"] == [
        {"name": "group.consumer.session.timeout.ms", "value": "45000", "source": 5}
    ]
    # No broker synonym: GroupConfig's default; BOOLEAN, LIST and the assignor name.
    assert by_name["share.renew.acknowledge.enable"]["synonyms"] == [
        {"name": "share.renew.acknowledge.enable", "value": "true", "source": 5}
    ]
    assert [
        (by_name[n]["value"], by_name[n]["configType"])
        for n in (
            "share.renew.acknowledge.enable",
            "streams.rack.aware.assignment.tags",
            "streams.assignor.name",
            "errors.deadletterqueue.topic.name",
        )
    ] == [("true", 1), ("", 7), ("sticky", 2), ("", 2)]
    assert by_name["streams.assignor.name"]["synonyms"] == [
        {"name": "group.streams.assignors", "value": "sticky", "source": 5}
    ]
    # Requested keys only (unknown ones are left out); no synonyms / documentation unless asked;
    # v1-2 have no configType / documentation.
    only = c.describe_configs(SESSION, "nope")["configs"]
    assert [(e["name"], e["synonyms"], e["documentation"]) for e in only] == [(SESSION, [], None)]
    v1 = c.describe_configs(HEARTBEAT, version=1)["configs"][0]
    assert "configType" not in v1 and "documentation" not in v1 and v1["value"] == "6000"


def test_describe_follows_the_coordinator_settings_for_unset_configs():
    """Kafka 4.4's ConfigHelper.createGroupConfigEntry: an unset group config shows the broker
    setting it falls back to, STATIC_BROKER_CONFIG (4) when the broker's file sets it (here: the
    service's configuration), else DEFAULT_CONFIG (5)."""
    c = Client(**{"group_consumer_session_timeout_ms": 50000})
    assert c.values()[SESSION] == ("50000", 4)
    assert c.values()[HEARTBEAT] == ("5000", 5)
    assert c.describe_configs(SESSION, synonyms=True)["configs"][0]["synonyms"] == [
        {"name": "group.consumer.session.timeout.ms", "value": "50000", "source": 4},
        {"name": "group.consumer.session.timeout.ms", "value": "45000", "source": 5},
    ]
    # A setting the configuration names is static even at its default value.
    c = Client(**{"group_consumer_heartbeat_interval_ms": 5000})
    assert c.values()[HEARTBEAT] == ("5000", 4)


def test_the_configured_names_survive_the_configs_json_round_trip():
    """The job hands its settings to the Spark workers as JSON (to_json): which names its file set
    must survive it, as the defaults it did not set must stay defaults."""
    cfg = CoordinatorConfig({"group.consumer.session.timeout.ms": 50000})
    assert cfg.static_configs == {"group.consumer.session.timeout.ms"}
    again = CoordinatorConfig(cfg.to_json())
    assert again.static_configs == cfg.static_configs and again.to_json() == cfg.to_json()
    assert CoordinatorConfig(CoordinatorConfig().to_json()).static_configs == frozenset()
    more = cfg.with_overrides(group_share_heartbeat_interval_ms=6000)
    assert more.static_configs == {"group.consumer.session.timeout.ms", "group.share.heartbeat.interval.ms"}


def test_describe_share_and_streams_configs():
    """ConfigHelper.createGroupConfigEntry for the STRING configs (configType STRING) and the
    streams.* configs; the accessors the share and streams group types read."""
    c = Client(**{"group_streams_session_timeout_ms": 50000, "group_share_heartbeat_interval_ms": 6000})
    accessors = c.d.component("groups").configs  # the partition is reloaded after each batch
    assert (
        accessors.share_auto_offset_reset(c.group_id),
        accessors.share_isolation_level(c.group_id),
        accessors.streams_session_timeout_ms(c.group_id),
        accessors.share_heartbeat_interval_ms(c.group_id),
        accessors.streams_num_standby_replicas(c.group_id),
    ) == ("latest", "read_uncommitted", 50000, 6000, 0)
    # Kafka 4.4: every group config with a broker setting falls back to it (extractGroupConfigMap;
    # 4.1.1 passed only the consumer.* and share.* ones and showed GroupConfig's 45000 here).
    assert c.values()["streams.session.timeout.ms"] == ("50000", 4)
    assert (
        c.alter(
            set_op("share.auto.offset.reset", " by_duration:PT1H "),
            set_op("streams.num.standby.replicas", "2"),
            set_op("share.isolation.level", "read_committed"),
        )["errorCode"]
        == 0
    )
    entries = {e["name"]: e for e in c.describe_configs(synonyms=True)["configs"]}
    assert entries["share.auto.offset.reset"] == {
        "name": "share.auto.offset.reset",
        "value": "by_duration:PT1H",
        "readOnly": False,
        "configSource": 8,
        "isSensitive": False,
        "synonyms": [
            {"name": "share.auto.offset.reset", "value": "by_duration:PT1H", "source": 8},
            {"name": "share.auto.offset.reset", "value": "latest", "source": 5},
        ],
        "configType": 2,
        "documentation": None,
    }
    assert (
        entries["streams.num.standby.replicas"]["value"],
        entries["streams.num.standby.replicas"]["configType"],
    ) == ("2", 3)
    accessors = c.d.component("groups").configs
    assert (
        accessors.share_auto_offset_reset(c.group_id),
        accessors.share_isolation_level(c.group_id),
        accessors.streams_num_standby_replicas(c.group_id),
        accessors.streams_session_timeout_ms(c.group_id),
        accessors.share_heartbeat_interval_ms(c.group_id),
    ) == ("by_duration:PT1H", "read_committed", 2, 50000, 6000)
    # Kafka 4.2+ (KAFKA-20337): a config the group does not set falls back to the coordinator's
    # setting (50000 here) even once the group sets others; 4.1.1 took GroupConfig's default, 45000.


# ====================================================================== the heartbeat uses them
def test_consumer_group_dynamic_configs():
    """GroupMetadataManagerTest.testConsumerGroupDynamicConfigs."""
    c = Client(topics={"foo": 6})
    r = c.join("m1", ["foo"], rebalance_timeout=90000)
    assert r["memberEpoch"] == 2 and r["heartbeatIntervalMs"] == 5000
    assert c.timers()[f'["consumer-session","{c.group_id}","m1"]'][0] == c.now + 45000
    c.sleep(5000)

    assert c.alter(set_op(SESSION, "50000"), set_op(HEARTBEAT, "10000"))["errorCode"] == 0
    # The session timer is rescheduled on the next heartbeat, with the group's values.
    r = c.heartbeat("m1", 2)
    assert r["memberEpoch"] == 2 and r["heartbeatIntervalMs"] == 10000
    assert c.timers()[f'["consumer-session","{c.group_id}","m1"]'][0] == c.now + 50000

    # The session expires after the group's timeout, not the coordinator's.
    c.sleep(45000)
    assert c.group().members.keys() == {"m1"}
    c.sleep(5000)
    assert "m1" not in c.group().members


def test_other_groups_keep_the_coordinator_settings():
    c = Client(topics={"foo": 2})
    other = key_for_partition(c.d.partition_id, prefix="other-")
    assert coordinator_partition(other, 50) == c.d.partition_id
    c.alter(set_op(HEARTBEAT, "10000"))
    assert c.join("m1", ["foo"])["heartbeatIntervalMs"] == 10000
    assert c.join("m2", ["foo"], group_id=other)["heartbeatIntervalMs"] == 5000


def test_delete_groups_keeps_the_group_configs():
    """Kafka (through 4.0) keeps a group's configs in the metadata log when the group is deleted."""
    c = Client(topics={"foo": 2})
    c.join("m1", ["foo"])
    c.alter(set_op(HEARTBEAT, "10000"))
    c.heartbeat("m1", -1)
    r = c.send("DeleteGroups", 2, {"groupsNames": [c.group_id]})
    assert r["results"][0]["errorCode"] == 0
    assert c.values()[HEARTBEAT] == ("10000", 8)
    assert c.join("m2", ["foo"])["heartbeatIntervalMs"] == 10000


# ====================================================================== state log and state
def test_rebuild_from_the_state_log_keeps_the_configs():
    c = Client(topics={"foo": 2})
    c.join("m1", ["foo"])
    c.alter(set_op(SESSION, "50000"), set_op(HEARTBEAT, "6000"))
    c.alter(delete_op(HEARTBEAT))
    records = [StateRecord(k, v) for k, v in c.records()]
    rebuilt = CoordinatorPartition.from_records(c.d.partition_id, records, CFG, now_ms=c.now)
    groups = rebuilt.component("groups")
    assert dict(groups.group_configs) == {c.group_id: {SESSION: "50000"}}
    # onLoaded: the member's session uses the group's timeout.
    assert rebuilt.timers.schedule_view()[f'["consumer-session","{c.group_id}","m1"]'][0] == c.now + 50000
    # Replaying the same log twice gives the same state.
    again = CoordinatorPartition.from_records(c.d.partition_id, records, CFG, now_ms=c.now)
    assert again.to_json() == rebuilt.to_json()
    assert dict(c.groups().group_configs) == dict(groups.group_configs)


def test_a_state_without_group_configs_loads():
    """A snapshot written before group configs (no "groupConfigs", no GroupConfig chunks) loads."""
    c = Client(topics={"foo": 2})
    c.join("m1", ["foo"])
    snapshot = c.d.partition.to_json()
    assert snapshot["components"]["groups"].pop("groupConfigs") == {}
    loaded = state.StoredState(*state.encode(snapshot)).load(c.d.partition_id, CFG)
    groups = loaded.component("groups")
    assert dict(groups.group_configs) == {} and "m1" in groups.groups[c.group_id].members


def test_classic_members_keep_their_own_session_timeout():
    """A classic member inside a consumer group keeps its JoinGroup sessionTimeoutMs whatever the
    group's consumer.session.timeout.ms; consumer-protocol members use the group's."""
    from tests.consumer.test_consumer_group_migration import SESSION as CLASSIC_SESSION
    from tests.consumer.test_consumer_group_migration import (
        classic_join_new,
        classic_view,
        consumer_group_with_one_member,
        sync,
        timer_deadline,
    )

    c = Client(topics={"foo": 6, "bar": 3})
    assert c.alter(set_op(SESSION, "55000"))["errorCode"] == 0
    consumer_group_with_one_member(c)
    assert timer_deadline(c, "consumer-session", "m1") == c.now + 55000
    joined = classic_join_new(c)
    mid = joined["memberId"]
    assert timer_deadline(c, "consumer-session", mid) == c.now + CLASSIC_SESSION
    sync(c, mid, joined["generationId"])
    assert classic_view(c).heartbeat(mid, joined["generationId"])["errorCode"] == 0
    assert timer_deadline(c, "consumer-session", mid) == c.now + CLASSIC_SESSION


def test_share_settings_are_checked_at_start_up():
    with pytest.raises(
        ValueError,
        match="group.share.heartbeat.interval.ms must be less than or equal to group.share.max.heartbeat.interval.ms",
    ):
        CoordinatorConfig({"group.share.heartbeat.interval.ms": 20000})
    with pytest.raises(
        ValueError,
        match="group.share.record.lock.duration.ms must be greater than or equal to "
        "group.share.min.record.lock.duration.ms",
    ):
        CoordinatorConfig({"group.share.record.lock.duration.ms": 10000})
    # The coordinator's values are the group configs' defaults, and bound them.
    cfg = CoordinatorConfig({"group.share.max.session.timeout.ms": 90000, "group.share.session.timeout.ms": 80000})
    assert parse({}, cfg)["share.session.timeout.ms"] == 80000
    assert validate({"share.session.timeout.ms": "90000"}, cfg)["share.session.timeout.ms"] == 90000


def test_checks_follow_kafkas_order():
    """The broker's checks (duplicate keys, null values) come before the controller's (operation,
    group name, values), and ownership is checked once the request is well formed."""
    c = Client()
    elsewhere = key_for_partition((c.d.partition_id + 1) % 50)
    assert c.alter(set_op(SESSION, "1"), set_op(SESSION, "2"), group_id="")["errorMessage"] == (
        "Error due to duplicate config keys"
    )
    assert (
        c.alter({"name": SESSION, "configOperation": 2, "value": "1"}, group_id="")["errorCode"]
        == Errors.INVALID_CONFIG.code
    )
    assert c.alter(set_op(SESSION, "1"), group_id="")["errorMessage"] == "Default group resources are not allowed."
    assert c.alter(set_op(SESSION, "1"), group_id=elsewhere)["errorCode"] == Errors.NOT_COORDINATOR.code


# ====================================================================== Kafka 4.3/4.4's configs
def test_internal_configs_are_described_only_where_the_group_sets_them():
    """ConfigHelperUtils.createResponseConfig (4.4): GroupConfig's internal configs (defineInternal)
    are left out of DescribeConfigs unless explicitly set, then listed first with the value as set."""
    c = Client()
    assert [e["name"] for e in c.describe_configs()["configs"]] == ALL_CONFIGS
    assert c.describe_configs("streams.num.warmup.replicas")["configs"] == []
    r = c.alter(set_op("streams.num.warmup.replicas", " 3"), set_op("consumer.assignor.offload.enable", "FALSE"))
    assert r["errorCode"] == 0
    described = c.describe_configs(synonyms=True)["configs"]
    assert [e["name"] for e in described] == [
        "consumer.assignor.offload.enable",
        "streams.num.warmup.replicas",
        *ALL_CONFIGS,
    ]
    assert (described[0]["value"], described[0]["configType"], described[0]["synonyms"]) == (
        "FALSE",
        1,
        [
            {"name": "consumer.assignor.offload.enable", "value": "FALSE", "source": 8},
            {"name": "group.consumer.assignor.offload.enable", "value": "true", "source": 5},
        ],
    )
    assert (described[1]["value"], described[1]["configSource"]) == (" 3", 8)
    accessors = c.d.component("groups").configs
    assert accessors.streams_num_warmup_replicas(c.group_id) == 3
    assert accessors.consumer_assignor_offload_enable(c.group_id) is False


def test_every_new_config_is_settable_with_its_accessor_and_fallback():
    """Each Kafka 4.3/4.4 group config: the coordinator's setting while unset (the broker synonym of
    GroupConfig.ALL_GROUP_CONFIG_SYNONYMS), the group's value once set."""
    settings = {
        "group_consumer_assignment_interval_ms": 2000,
        "group_share_delivery_count_limit": 7,
        "group_share_partition_max_record_locks": 3000,
        "group_streams_initial_rebalance_delay_ms": 0,
        "group_streams_acceptable_recovery_lag": 500,
        "group_streams_rack_aware_assignment_tags": ["zone"],
        "group_streams_assignors": ["sticky"],
    }
    c = Client(**settings)
    a = c.d.component("groups").configs
    g = c.group_id
    unset = {
        "consumer_assignment_interval_ms": 2000,
        "consumer_assignor_offload_enable": True,
        "share_delivery_count_limit": 7,
        "share_partition_max_record_locks": 3000,
        "share_renew_acknowledge_enable": True,
        "share_assignment_interval_ms": 0,  # the core driver's setting (tests/core_driver.py)
        "share_assignor_offload_enable": True,
        "streams_initial_rebalance_delay_ms": 0,
        "streams_assignment_interval_ms": 0,
        "streams_assignor_offload_enable": True,
        "streams_task_offset_interval_ms": 60000,
        "streams_num_warmup_replicas": 2,
        "streams_rack_aware_assignment_tags": ["zone"],
        "streams_acceptable_recovery_lag": 500,
        "streams_assignor_name": "sticky",
        "errors_dlq_topic_name": "",
        "errors_dlq_copy_record_enable": False,
    }
    assert {name: getattr(a, name)(g) for name in unset} == unset
    ops = {
        "consumer.assignment.interval.ms": "0",
        "consumer.assignor.offload.enable": "false",
        "share.delivery.count.limit": "10",
        "share.partition.max.record.locks": "100",
        "share.renew.acknowledge.enable": "false",
        "share.assignment.interval.ms": "15000",
        "share.assignor.offload.enable": "false",
        "streams.initial.rebalance.delay.ms": "100",
        "streams.assignment.interval.ms": "5",
        "streams.assignor.offload.enable": "false",
        "streams.task.offset.interval.ms": "15000",
        "streams.num.warmup.replicas": "0",
        "streams.rack.aware.assignment.tags": "zone,rack",
        "streams.acceptable.recovery.lag": "0",
        "streams.assignor.name": "sticky",
        "errors.deadletterqueue.topic.name": "dlq",
        "errors.deadletterqueue.copy.record.enable": "true",
    }
    assert c.alter(*(set_op(n, v) for n, v in ops.items()))["errorCode"] == 0
    a = c.d.component("groups").configs
    assert {name: getattr(a, name)(g) for name in unset} == {
        "consumer_assignment_interval_ms": 0,
        "consumer_assignor_offload_enable": False,
        "share_delivery_count_limit": 10,
        "share_partition_max_record_locks": 100,
        "share_renew_acknowledge_enable": False,
        "share_assignment_interval_ms": 15000,
        "share_assignor_offload_enable": False,
        "streams_initial_rebalance_delay_ms": 100,
        "streams_assignment_interval_ms": 5,
        "streams_assignor_offload_enable": False,
        "streams_task_offset_interval_ms": 15000,
        "streams_num_warmup_replicas": 0,
        "streams_rack_aware_assignment_tags": ["zone", "rack"],
        "streams_acceptable_recovery_lag": 0,
        "streams_assignor_name": "sticky",
        "errors_dlq_topic_name": "dlq",
        "errors_dlq_copy_record_enable": True,
    }


def test_a_group_value_beyond_the_coordinators_current_bounds_is_capped():
    """GroupConfig.evaluate (GroupConfigManager.updateGroupConfig, 4.4): bounds lowered after the
    group set its value cap it where it is used; DescribeConfigs shows the value as set."""
    c = Client()
    assert c.alter(set_op("share.delivery.count.limit", "9"), set_op(HEARTBEAT, "12000"))["errorCode"] == 0
    records = [StateRecord(k, v) for k, v in c.records()]
    lowered = CFG.with_overrides(group_share_max_delivery_count_limit=6, group_consumer_max_heartbeat_interval_ms=10000)
    rebuilt = CoordinatorPartition.from_records(c.d.partition_id, records, lowered, now_ms=c.now)
    configs = rebuilt.component("groups").configs
    assert configs.share_delivery_count_limit(c.group_id) == 6
    assert configs.consumer_heartbeat_interval_ms(c.group_id) == 10000


def test_append_and_subtract_are_refused_even_on_the_list_config():
    """ConfigurationControlManager.incrementalAlterConfigResource asks KafkaConfigSchema.isSplittable,
    whose schema (KafkaRaftServer.configSchema, Kafka 4.4.0) has only BROKER and TOPIC configs: a
    GROUP resource's APPEND / SUBTRACT is refused even for the LIST streams.rack.aware.assignment.tags."""
    c = Client()
    for kind, op in ((2, "APPEND"), (3, "SUBTRACT")):
        r = c.alter({"name": "streams.rack.aware.assignment.tags", "configOperation": kind, "value": "zone"})
        assert (r["errorCode"], r["errorMessage"]) == (
            Errors.INVALID_CONFIG.code,
            f"Can't {op} to key streams.rack.aware.assignment.tags because its type is not LIST.",
        )
    assert c.alter(set_op("streams.rack.aware.assignment.tags", "zone, rack"))["errorCode"] == 0
    assert c.values()["streams.rack.aware.assignment.tags"] == ("zone,rack", 8)


def test_kafka_44_settings_are_checked_at_start_up():
    """GroupCoordinatorConfig / ShareGroupConfig (4.4): each new setting within its bounds."""
    cases = {
        "group.consumer.assignment.interval.ms": (
            20000,
            "group.consumer.assignment.interval.ms must be less than or equal to "
            "group.consumer.max.assignment.interval.ms",
        ),
        "group.share.delivery.count.limit": (
            1,
            "group.share.delivery.count.limit must be greater than or equal to group.share.min.delivery.count.limit",
        ),
        "group.share.partition.max.record.locks": (
            5000,
            "group.share.max.partition.max.record.locks must be greater than or equal to "
            "group.share.partition.max.record.locks",
        ),
        "group.streams.task.offset.interval.ms": (
            1000,
            "group.streams.task.offset.interval.ms must be greater than or equal to "
            "group.streams.min.task.offset.interval.ms",
        ),
        "group.streams.num.warmup.replicas": (
            21,
            "group.streams.num.warmup.replicas must be less than or equal to group.streams.max.warmup.replicas",
        ),
        "group.streams.rack.aware.assignment.tags": (
            ["zone", "zone"],
            "group.streams.rack.aware.assignment.tags must not contain duplicate tag keys.",
        ),
    }
    for name, (value, expected) in cases.items():
        with pytest.raises(ValueError) as e:
            CoordinatorConfig({name: value})
        assert str(e.value) == expected, name
