"""The message JSON files (coordinator/protocol): the validator and the response shaper built from
them, the API table, and the one error-response builder (Kafka's getErrorResponse) for every API
and version."""

from __future__ import annotations

from importlib import resources

import pytest

from coordinator.api import all_apis, lookup
from coordinator.errors import Errors
from coordinator.protocol import hooks
from coordinator.protocol.loader import load, parse_message, shape, shape_message, validator
from coordinator.protocol.table import APIS
from coordinator.schema import Array, SchemaError, Struct
from tests import kafka_messages

ALL = [
    pytest.param(spec, v, id=f"{spec.name}-v{v}")
    for spec in all_apis()
    for v in range(spec.min_version, spec.max_version + 1)
]


def sample(struct: Struct, version: int, i: int = 0) -> dict:
    """A body with every field of the version set, and two items in every array."""
    return {f.name: _value(f.type, version, i + k) for k, f in enumerate(struct.fields) if f.in_version(version)}


def _value(t, version, i):
    if isinstance(t, Struct):
        return sample(t, version, i)
    if isinstance(t, Array):
        return [_value(t.item, version, i), _value(t.item, version, i + 1)]
    return {
        "string": f"s{i}",
        "bytes": "AAEC",
        "bool": True,
        "uuid": "AAAAAAAAAAAAAAAAAAAAAQ",
        "uint16": 9,
        "int8": 1,
        "int16": 2,
        "int32": 3 + i,
        "int64": 4 + i,
    }[t]


# ====================================================================== the API table


def test_the_table_lists_each_api_once_with_its_message_files():
    names = [a.name for a in APIS]
    keys = [a.key for a in APIS]
    assert len(set(names)) == len(names) and len(set(keys)) == len(keys)
    assert [s.name for s in all_apis()] == sorted(names, key=lambda n: keys[names.index(n)])
    for api in APIS:
        request, response = load(api.name + "Request"), load(api.name + "Response")
        assert request.api_key == response.api_key == api.key
        lo, hi = request.valid_versions
        # The service accepts a subset of the file's versions.
        assert lo <= api.min_version <= api.max_version and (hi is None or api.max_version <= hi), api.name


def test_the_services_own_apis_are_marked_internal_and_their_files_as_ours():
    ours = {a.name for a in APIS if load(a.name + "Request").ours}
    assert {
        "UpdateMetadata",
        "TxnVerification",
        "TxnVerificationResult",
        "TxnOffsetsAdded",
        "ShareStateSummaryQuery",
        "ShareStateSummaryAnswer",
        "ShareEndOffsetsAnswer",
    } <= ours
    for name in ours - {"WriteTxnMarkers"}:  # (WriteTxnMarkers: Kafka's file plus v2, KIP-1228)
        assert lookup(name).internal, name
    assert lookup("WriteTxnMarkers").internal and "transactionVersion" in {
        f.name for f in lookup("WriteTxnMarkers").request.fields[0].type.item.fields
    }


# ====================================================================== the request validator


def test_a_field_absent_from_the_version_is_dropped_and_defaults_filled():
    join = lookup("JoinGroup").request
    body = {
        "groupId": "g",
        "sessionTimeoutMs": 10,
        "memberId": "",
        "protocolType": "consumer",
        "protocols": [],
        "reason": "r",
        "groupInstanceId": "i",
    }
    assert join.validate(body, 0) == {
        "groupId": "g",
        "sessionTimeoutMs": 10,
        "memberId": "",
        "protocolType": "consumer",
        "protocols": [],
    }
    v8 = join.validate({k: v for k, v in body.items() if k not in ("reason", "groupInstanceId")}, 8)
    assert v8["rebalanceTimeoutMs"] == -1 and v8["groupInstanceId"] is None and v8["reason"] is None
    assert list(v8) == [
        "groupId",
        "sessionTimeoutMs",
        "rebalanceTimeoutMs",
        "memberId",
        "groupInstanceId",
        "protocolType",
        "protocols",
        "reason",
    ]


def test_mandatory_fields_nullability_and_ranges_keep_kafkas_texts():
    commit = lookup("OffsetCommit").request
    with pytest.raises(
        SchemaError, match="unable to locate field 'topics\\[0\\].partitions', which is mandatory in version 8"
    ):
        commit.validate({"groupId": "g", "memberId": "m", "topics": [{"name": "t"}]}, 8)
    with pytest.raises(SchemaError, match="field 'groupId' must not be null in version 8"):
        commit.validate({"groupId": None, "memberId": "m", "topics": []}, 8)
    with pytest.raises(SchemaError, match="out of range for int32"):
        commit.validate({"groupId": "g", "memberId": "m", "generationIdOrMemberEpoch": 2**31, "topics": []}, 8)
    fetch = lookup("OffsetFetch").request
    assert fetch.validate({"groupId": "g", "topics": None}, 2)["topics"] is None  # nullable from v2
    with pytest.raises(SchemaError, match="must not be null in version 1"):
        fetch.validate({"groupId": "g", "topics": None}, 1)


def test_the_services_leniencies_are_declared_in_the_table():
    """DescribeGroups' includeAuthorizedOperations has no default in Kafka's file; the service lets a
    request omit it (table.REQUEST_DEFAULTS)."""
    assert lookup("DescribeGroups").request.validate({"groups": ["g"]}, 3) == {
        "groups": ["g"],
        "includeAuthorizedOperations": False,
    }


def test_our_own_files_defaults():
    query = lookup("ShareStateSummaryQuery").request.validate(
        {"queryId": 1, "fromPartition": 0, "groupId": "g", "topics": []}, 0
    )
    assert (query["op"], query["stateEpoch"], query["startOffsets"]) == ("summary", 0, [])
    query["startOffsets"].append(1)  # a fresh list each time
    again = lookup("ShareStateSummaryQuery").request.validate(
        {"queryId": 1, "fromPartition": 0, "groupId": "g", "topics": []}, 0
    )
    assert again["startOffsets"] == []
    meta = lookup("UpdateMetadata").request.validate({"topicStates": [{"topicName": "t", "numPartitions": 3}]}, 0)
    assert meta["topicStates"] == [
        {
            "topicName": "t",
            "topicId": "AAAAAAAAAAAAAAAAAAAAAA",
            "numPartitions": 3,
            "maxMessageBytes": -1,
            "partitionRacks": None,
        }
    ]


# ====================================================================== tagged fields

_TAGGED = parse_message(
    {
        "apiKey": 9999,
        "type": "response",
        "name": "ProbeResponse",
        "validVersions": "0-3",
        "flexibleVersions": "2+",
        "fields": [
            {"name": "ErrorCode", "type": "int16", "versions": "0+"},
            {
                "name": "Hint",
                "type": "string",
                "versions": "2+",
                "taggedVersions": "2+",
                "tag": 0,
                "nullableVersions": "2+",
                "default": "null",
            },
            {"name": "Count", "type": "int32", "versions": "3+", "taggedVersions": "3+", "tag": 1},
            {
                "name": "Items",
                "type": "[]Item",
                "versions": "0+",
                "fields": [
                    {"name": "Id", "type": "int32", "versions": "0+"},
                    {"name": "Extra", "type": "int64", "versions": "1+", "default": "-1"},
                ],
            },
        ],
    }
)


def test_tagged_fields_are_optional_in_requests_and_printed_in_their_versions():
    struct = validator(_TAGGED)
    assert struct.validate({"errorCode": 1, "items": []}, 3) == {"errorCode": 1, "hint": None, "count": 0, "items": []}
    assert struct.validate({"errorCode": 1, "items": [], "count": 5}, 1) == {"errorCode": 1, "items": []}
    assert shape_message(_TAGGED, 1, {"count": 5, "errorCode": 0}) == {"errorCode": 0, "items": []}
    assert shape_message(_TAGGED, 3, {"count": 5}) == {"errorCode": 0, "hint": None, "count": 5, "items": []}


# ====================================================================== the response shaper


def test_the_shaper_keeps_exactly_the_versions_fields_in_schema_order():
    data = {
        "members": [],
        "memberId": "m",
        "leader": "m",
        "skipAssignment": False,
        "protocolName": "range",
        "protocolType": "consumer",
        "generationId": 3,
        "errorCode": 0,
        "throttleTimeMs": 0,
        "unknown": 1,
    }
    assert list(shape("JoinGroupResponse", 1, data)) == [
        "errorCode",
        "generationId",
        "protocolName",
        "leader",
        "memberId",
        "members",
    ]
    assert list(shape("JoinGroupResponse", 9, data)) == [
        "throttleTimeMs",
        "errorCode",
        "generationId",
        "protocolType",
        "protocolName",
        "leader",
        "skipAssignment",
        "memberId",
        "members",
    ]


def test_the_shaper_fills_defaults():
    assert shape("JoinGroupResponse", 9, {}) == {
        "throttleTimeMs": 0,
        "errorCode": 0,
        "generationId": -1,
        "protocolType": None,
        "protocolName": "",
        "leader": "",
        "skipAssignment": False,
        "memberId": "",
        "members": [],
    }
    assert shape("ConsumerGroupHeartbeatResponse", 1, {"errorCode": 16})["memberId"] is None
    assert shape("DescribeGroupsResponse", 5, {"groupId": "g"}, ("groups",))["authorizedOperations"] == -(2**31)


def test_the_shaper_shapes_nested_arrays_and_structs():
    partition = {"partitionIndex": 0, "errorCode": 0, "bogus": True}
    out = shape(
        "OffsetCommitResponse",
        10,
        {"topics": [{"name": "t", "topicId": "AAAAAAAAAAAAAAAAAAAAAQ", "partitions": [partition]}]},
    )
    assert out == {
        "throttleTimeMs": 0,
        "topics": [{"topicId": "AAAAAAAAAAAAAAAAAAAAAQ", "partitions": [{"partitionIndex": 0, "errorCode": 0}]}],
    }
    assert shape("OffsetCommitResponse", 9, {"topics": [{"name": "t", "partitions": []}]})["topics"] == [
        {"name": "t", "partitions": []}
    ]
    heartbeat = shape(
        "ConsumerGroupHeartbeatResponse",
        1,
        {"assignment": {"topicPartitions": [{"topicId": "AAAAAAAAAAAAAAAAAAAAAQ", "partitions": [1], "x": 0}]}},
    )
    assert heartbeat["assignment"] == {"topicPartitions": [{"topicId": "AAAAAAAAAAAAAAAAAAAAAQ", "partitions": [1]}]}
    assert shape("ConsumerGroupHeartbeatResponse", 1, {})["assignment"] is None  # nullable, default null


def test_kafkas_constructor_rules_are_named_hooks():
    # JoinGroupResponse(data, version): "" before v7 for a null protocol name, null from v7 for "".
    assert hooks.respond("JoinGroupResponse", 6, {"protocolName": None})["protocolName"] == ""
    assert hooks.respond("JoinGroupResponse", 7, {"protocolName": ""})["protocolName"] is None
    # LeaveGroupResponse(data, version): v0-2 fold the single member's error into the top level.
    members = [{"memberId": "m", "groupInstanceId": None, "errorCode": 25}]
    assert hooks.respond("LeaveGroupResponse", 2, {"errorCode": 0, "members": members}) == {
        "throttleTimeMs": 0,
        "errorCode": 25,
    }
    assert hooks.respond("LeaveGroupResponse", 3, {"errorCode": 0, "members": members})["errorCode"] == 0


# ====================================================================== error responses


@pytest.mark.parametrize("spec,version", ALL)
def test_an_error_response_has_exactly_the_fields_of_its_version(spec, version):
    body = spec.request.validate(sample(spec.request, version), version)
    answer = spec.error_response(version, body, Errors.COORDINATOR_NOT_AVAILABLE, "no coordinator")
    if spec.error_response.__name__.startswith("error_response["):
        assert answer == shape(spec.name + "Response", version, answer)
        assert list(answer) == list(shape(spec.name + "Response", version, {}))
    codes = _error_codes(answer)
    assert codes and set(codes) == {Errors.COORDINATOR_NOT_AVAILABLE.code}, codes
    # Without a validated body (a request rejected before validation) it still has the API's shape.
    assert _error_codes(spec.error_response(version, None, Errors.INVALID_REQUEST, "bad")) in (
        [],
        [Errors.INVALID_REQUEST.code],
    )


def _error_codes(value) -> list[int]:
    if isinstance(value, dict):
        out = [v for k, v in value.items() if k in ("errorCode", "partitionErrorCode") and v != 0]
        for v in value.values():
            out += _error_codes(v)
        return out
    if isinstance(value, list):
        return [c for v in value for c in _error_codes(v)]
    return []


@pytest.mark.parametrize("version", range(2, 11))
def test_offset_commit_errors_echo_every_partition(version):
    field = "topicId" if version >= 10 else "name"
    topic = "AAAAAAAAAAAAAAAAAAAAAQ" if version >= 10 else "t"
    body = {
        "groupId": "g",
        "memberId": "m",
        "topics": [
            {
                field: topic,
                "partitions": [
                    {"partitionIndex": 0, "committedOffset": 1, "committedMetadata": None},
                    {"partitionIndex": 1, "committedOffset": 1, "committedMetadata": None},
                ],
            }
        ],
    }
    spec = lookup("OffsetCommit")
    answer = spec.error_response(version, spec.request.validate(body, version), Errors.NOT_COORDINATOR, None)
    assert answer["topics"] == [
        {field: topic, "partitions": [{"partitionIndex": 0, "errorCode": 16}, {"partitionIndex": 1, "errorCode": 16}]}
    ]
    assert ("throttleTimeMs" in answer) == (version >= 3)


@pytest.mark.parametrize("version", range(0, 7))
def test_describe_groups_errors_echo_every_group(version):
    answer = lookup("DescribeGroups").error_response(version, {"groups": ["a", "b"]}, Errors.NOT_COORDINATOR, "m")
    assert [(g["groupId"], g["errorCode"]) for g in answer["groups"]] == [("a", 16), ("b", 16)]
    # Kafka's DescribeGroupsResponse.groupError carries no message.
    assert all(g.get("errorMessage") is None for g in answer["groups"])
    assert ("errorMessage" in answer["groups"][0]) == (version >= 6)


@pytest.mark.parametrize("version", range(0, 3))
def test_delete_groups_errors_echo_every_group(version):
    answer = lookup("DeleteGroups").error_response(version, {"groupsNames": ["a", "b"]}, Errors.NOT_COORDINATOR, None)
    assert answer == {
        "throttleTimeMs": 0,
        "results": [{"groupId": "a", "errorCode": 16}, {"groupId": "b", "errorCode": 16}],
    }


def test_offset_fetch_errors_by_version():
    spec = lookup("OffsetFetch")
    v1 = spec.error_response(
        1, {"groupId": "g", "topics": [{"name": "t", "partitionIndexes": [0]}]}, Errors.NOT_COORDINATOR, None
    )
    assert v1 == {
        "topics": [
            {"name": "t", "partitions": [{"partitionIndex": 0, "committedOffset": -1, "metadata": "", "errorCode": 16}]}
        ]
    }
    v7 = spec.error_response(7, {"groupId": "g", "topics": None, "requireStable": False}, Errors.NOT_COORDINATOR, None)
    assert v7 == {"throttleTimeMs": 0, "topics": [], "errorCode": 16}
    v8 = spec.error_response(
        8, {"groups": [{"groupId": "g", "topics": None}], "requireStable": False}, Errors.NOT_COORDINATOR, None
    )
    assert v8 == {"throttleTimeMs": 0, "groups": [{"groupId": "g", "topics": [], "errorCode": 16}]}


@pytest.mark.parametrize(
    "version,expected",
    [
        (0, Errors.INVALID_PRODUCER_EPOCH),
        (3, Errors.INVALID_PRODUCER_EPOCH),
        (4, Errors.PRODUCER_FENCED),
        (5, Errors.PRODUCER_FENCED),
    ],
)
def test_init_producer_id_maps_producer_fenced_for_old_versions(version, expected):
    answer = lookup("InitProducerId").error_response(version, None, Errors.PRODUCER_FENCED, None)
    assert answer == {"throttleTimeMs": 0, "errorCode": expected.code, "producerId": -1, "producerEpoch": -1}


def test_add_partitions_to_txn_v3_answers_each_partition_once():
    body = {
        "v3AndBelowTransactionalId": "t",
        "v3AndBelowProducerId": 1,
        "v3AndBelowProducerEpoch": 0,
        "v3AndBelowTopics": [
            {"name": "a", "partitions": [0, 1]},
            {"name": "b", "partitions": [0]},
            {"name": "a", "partitions": [1, 2]},
        ],
    }
    answer = lookup("AddPartitionsToTxn").error_response(3, body, Errors.NOT_COORDINATOR, None)
    assert answer["resultsByTopicV3AndBelow"] == [
        {"name": "a", "resultsByPartition": [{"partitionIndex": p, "partitionErrorCode": 16} for p in (0, 1, 2)]},
        {"name": "b", "resultsByPartition": [{"partitionIndex": 0, "partitionErrorCode": 16}]},
    ]


def test_find_coordinator_errors_by_version():
    spec = lookup("FindCoordinator")
    assert spec.error_response(0, {"key": "g"}, Errors.NOT_COORDINATOR, None) == {
        "errorCode": 16,
        "nodeId": -1,
        "host": "",
        "port": -1,
    }
    assert (
        spec.error_response(1, {"key": "g", "keyType": 0}, Errors.NOT_COORDINATOR, None)["errorMessage"]
        == Errors.NOT_COORDINATOR.message
    )
    assert spec.error_response(4, {"keyType": 0, "coordinatorKeys": ["a"]}, Errors.NOT_COORDINATOR, "x") == {
        "throttleTimeMs": 0,
        "coordinators": [{"key": "a", "nodeId": -1, "host": "", "port": -1, "errorCode": 16, "errorMessage": "x"}],
    }


def test_join_group_echoes_the_member_id_for_the_services_own_checks():
    spec = lookup("JoinGroup")
    body = {"memberId": "m-1"}
    assert spec.error_response(5, body, Errors.INVALID_SESSION_TIMEOUT, None)["memberId"] == "m-1"
    assert spec.error_response(5, body, Errors.UNKNOWN_MEMBER_ID, None)["memberId"] == ""
    assert spec.error_response(6, body, Errors.UNKNOWN_MEMBER_ID, None)["protocolName"] == ""
    assert spec.error_response(7, body, Errors.UNKNOWN_MEMBER_ID, None)["protocolName"] is None


@pytest.mark.skipif(not kafka_messages.available(), reason="kafka-clients is not resolved: run deploy/setup.sh")
def test_the_vendored_files_are_kafkas_unchanged():
    vendored = sorted((resources.files("coordinator.protocol") / "messages" / "kafka").iterdir(), key=str)
    assert len(vendored) == 2 * sum(1 for a in APIS if not load(a.name + "Request").ours)
    for path in vendored:
        assert path.read_bytes() == kafka_messages.message_bytes(path.name), path.name
