"""The gateway's translation between Kafka's binary messages (kio) and the service's JSON bodies,
for every bridged API and every version the gateway offers, both ways."""

from __future__ import annotations

import dataclasses
import datetime
import json
import re
import uuid

import pytest
from kio.schema.errors import ErrorCode
from kio.serial._introspect import EntityField, EntityTupleField, PrimitiveTupleField, classify_field

from coordinator.errors import Errors
from coordinator.schema import Array, Struct
from gateway import apis
from gateway.codec import (
    RENAMED,
    ZERO_UUID,
    decode_request,
    decode_response,
    encode_request,
    encode_response,
    from_json,
    json_name,
    request_class,
    response_class,
    to_json,
)
from gateway.server import kio_versions
from tests import kafka_messages


def _cases():
    for key, spec in sorted(apis._BY_KEY.items()):
        lo, hi = apis.service_versions(key)
        klo, khi = kio_versions(key)
        for v in range(max(lo, klo), min(hi, khi) + 1):
            yield pytest.param(spec, v, id=f"{spec.name}-v{v}")


CASES = list(_cases())


def sample(cls, depth: int = 0):
    """An entity of `cls` with a non-default value in every field."""
    kwargs = {}
    for i, f in enumerate(dataclasses.fields(cls)):
        kind = classify_field(f)
        if isinstance(kind, (EntityField, EntityTupleField)):
            value = sample(kind.type_, depth + 1)
            kwargs[f.name] = (value,) if isinstance(kind, EntityTupleField) else value
            continue
        value = _scalar(f.metadata["kafka_type"], f.name, i + depth)
        kwargs[f.name] = (value,) if isinstance(kind, PrimitiveTupleField) else value
    return cls(**kwargs)


def _scalar(kafka_type: str, name: str, i: int):
    return {
        "string": f"{name}-{i}",
        "bool": True,
        "int8": 1,
        "int16": 2 + i,
        "uint16": 9000 + i,
        "int32": 1000 + i,
        "int64": 2**40 + i,
        "bytes": bytes([0, 1, 255, i % 256]),
        "records": b"",
        "uuid": uuid.UUID(int=(i + 1) << 64 | 7),
        "timedelta_i32": datetime.timedelta(milliseconds=1500 + i),
        "timedelta_i64": datetime.timedelta(milliseconds=1500 + i),
        "datetime_i64": datetime.datetime(2026, 1, 2, tzinfo=datetime.UTC),
        "error_code": ErrorCode.coordinator_not_available,
    }[kafka_type]


def _names(struct: Struct, body: dict, version: int, path: str = "") -> list[str]:
    """Keys of `body` the service's request schema does not have in `version` (recursively)."""
    fields = {f.name: f for f in struct.fields if f.in_version(version)}
    unknown = [path + k for k in body if k not in fields]
    for k, v in body.items():
        f = fields.get(k)
        if f is None or v is None:
            continue
        t = f.type
        if isinstance(t, Struct):
            unknown += _names(t, v, version, f"{path}{k}.")
        elif isinstance(t, Array) and isinstance(t.item, Struct):
            for item in v:
                unknown += _names(t.item, item, version, f"{path}{k}[].")
    return unknown


@pytest.mark.parametrize("spec,version", CASES)
def test_a_request_decodes_to_the_json_the_service_validates_and_back(spec, version):
    cls = request_class(spec.api_key, version)
    entity = sample(cls)
    header = cls.__header_schema__(
        request_api_key=spec.api_key, request_api_version=version, correlation_id=42, client_id="client-1"
    )
    _, decoded = decode_request(encode_request(header, entity), spec.api_key, version)
    assert decoded == entity
    body = to_json(decoded)
    # Every field the gateway sends is one the service knows in this version, and the service
    # accepts the body (names, types, encodings).
    assert _names(spec.request, body, version) == []
    validated = spec.request.validate(json.loads(json.dumps(body)), version)
    assert set(validated) == set(body)
    assert from_json(cls, body) == entity


@pytest.mark.parametrize("spec,version", CASES)
def test_a_response_from_json_encodes_in_the_clients_version_and_back(spec, version):
    cls = response_class(spec.api_key, version)
    entity = sample(cls)
    body = to_json(entity)
    assert from_json(cls, json.loads(json.dumps(body))) == entity
    header, decoded = decode_response(encode_response(7, entity), spec.api_key, version)
    assert header.correlation_id == 7 and decoded == entity


@pytest.mark.parametrize("spec,version", CASES)
def test_the_services_error_shape_maps_onto_kios_fields(spec, version):
    """The service's own response JSON (its error shape for the API) uses names kio knows, and
    its values come back unchanged after a trip through the binary form."""
    request = to_json(sample(request_class(spec.api_key, version)))
    answer = spec.error_response(
        version, spec.request.validate(request, version), Errors.COORDINATOR_NOT_AVAILABLE, "no coordinator"
    )
    cls = response_class(spec.api_key, version)
    _, decoded = decode_response(encode_response(1, from_json(cls, answer)), spec.api_key, version)
    again = to_json(decoded)
    _assert_contained(answer, again, spec.name)


def _assert_contained(service: dict, kio: dict, path: str) -> None:
    for k, v in service.items():
        if k == "errorMessage" and k not in kio:
            continue  # the service adds it to every rejection; versions without it drop it
        assert k in kio, f"{path}.{k} has no kio field"
        if isinstance(v, dict):
            _assert_contained(v, kio[k], f"{path}.{k}")
        elif isinstance(v, list) and v and isinstance(v[0], dict):
            for a, b in zip(v, kio[k], strict=True):
                _assert_contained(a, b, f"{path}.{k}[]")
        else:
            assert kio[k] == v, f"{path}.{k}: {kio[k]!r} != {v!r}"


def test_special_values_use_kafkas_json_forms():
    from kio.schema.consumer_group_heartbeat.v1.response import ConsumerGroupHeartbeatResponse

    body = {
        "throttleTimeMs": 0,
        "errorCode": 0,
        "errorMessage": None,
        "memberId": "m",
        "memberEpoch": 3,
        "heartbeatIntervalMs": 5000,
        "assignment": {
            "topicPartitions": [
                {"topicId": ZERO_UUID, "partitions": [0, 2]},
                {"topicId": "AAAAAAAAAAAAAAAAAAAAAQ", "partitions": [1]},
            ]
        },
    }
    entity = from_json(ConsumerGroupHeartbeatResponse, body)
    assert entity.heartbeat_interval == datetime.timedelta(seconds=5)
    assert entity.assignment.topic_partitions[0].topic_id is None  # kio's zero Uuid
    assert entity.assignment.topic_partitions[1].topic_id == uuid.UUID(int=1)
    assert to_json(entity) == body
    # An error code newer than kio's table still travels.
    from kio.schema.heartbeat.v4.response import HeartbeatResponse

    frame = encode_response(3, from_json(HeartbeatResponse, {"errorCode": 133}))
    assert frame[-3:-1] == (133).to_bytes(2, "big")


@pytest.mark.skipif(not kafka_messages.available(), reason="kafka-clients is not resolved: run deploy/setup.sh")
@pytest.mark.parametrize("spec,version", CASES)
def test_json_names_are_kafkas_schema_names(spec, version):
    for kind, cls in (
        ("Request", request_class(spec.api_key, version)),
        ("Response", response_class(spec.api_key, version)),
    ):
        text = kafka_messages.message_bytes(f"{spec.name}{kind}.json").decode("utf-8")
        schema = json.loads(re.sub(r"^\s*//.*$", "", text, flags=re.M))
        _compare(cls, schema["fields"], schema.get("commonStructs", []), version, f"{spec.name}{kind}")


def _in(versions: str, v: int) -> bool:
    if versions == "none":
        return False
    if versions.endswith("+"):
        return v >= int(versions[:-1])
    lo, _, hi = versions.partition("-")
    return int(lo) <= v <= int(hi or lo)


def _compare(cls, fields, commons, version, path) -> None:
    mine = dataclasses.fields(cls)
    theirs = [f for f in fields if _in(f["versions"], version)]
    # The codec's names: kio's (Kafka 4.1's schemas), with Kafka's later renames (codec.RENAMED).
    names = [RENAMED.get((cls.__name__, json_name(f)), json_name(f)) for f in mine]
    assert names == [f["name"][0].lower() + f["name"][1:] for f in theirs], path
    for a, b in zip(mine, theirs, strict=True):
        kind = classify_field(a)
        if isinstance(kind, (EntityField, EntityTupleField)):
            sub = b.get("fields") or next(c["fields"] for c in commons if c["name"] == b["type"].strip("[]"))
            _compare(kind.type_, sub, commons, version, f"{path}.{b['name']}")
