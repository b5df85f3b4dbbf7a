"""The gateway's wire codec (gateway/codec.py): Kafka's bytes as Kafka 4.4.0's own classes write
them (golden bytes, tests/gateway/golden/), the JSON the service validates, the service's answers
encodable in every version the gateway offers, and damaged frames refused with `DecodeError` only."""

from __future__ import annotations

import base64
import json
import random
import struct
from functools import cache
from importlib import resources
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from coordinator.errors import Errors
from coordinator.protocol.loader import in_range
from gateway import apis, schema
from gateway.codec import (
    ZERO_UUID,
    DecodeError,
    body_codec,
    decode_request,
    decode_response,
    default_json,
    encode_request,
    encode_response,
    known_versions,
)
from gateway.schema import ArrayOf, Struct
from tests import kafka_messages
from tests.gateway.golden.samples import api_keys, sample

GOLDEN = Path(__file__).resolve().parent / "golden" / "kafka-4.4.0.json"


@cache
def golden() -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for case in json.loads(GOLDEN.read_text(encoding="utf-8")):
        out.setdefault(case["message"], []).append(case)
    return out


def _codec(message: str, version: int):
    from gateway.codec import _header_codec

    m = schema.load(message)
    if m.kind == "header":
        return _header_codec(message, version)
    return body_codec(m.api_key, version, m.kind)


def _with_defaults(kafka: dict, s: Struct, version: int) -> dict:
    """Kafka's JSON of a message, with the fields its converter leaves out (tagged fields at their
    default) at their default, nested too."""
    out = {}
    for f in s.fields:
        if not in_range(f.versions, version):
            continue
        value = kafka.get(f.name, default_json(f, version))
        t = f.type
        if isinstance(t, Struct) and value is not None:
            value = _with_defaults(value, t, version)
        elif isinstance(t, ArrayOf) and isinstance(t.item, Struct) and value is not None:
            value = [_with_defaults(x, t.item, version) for x in value]
        out[f.name] = value
    return out


def test_the_golden_bytes_cover_every_message_the_gateway_reads_or_writes():
    wanted = {"RequestHeader", "ResponseHeader"} | {
        schema.by_key()[(k, kind)].name for k in api_keys() for kind in ("request", "response")
    }
    assert set(golden()) == wanted
    for name, cases in golden().items():
        lo, hi = schema.load(name).valid
        assert {c["version"] for c in cases} == set(range(lo, hi + 1)), name


@pytest.mark.parametrize("message", sorted(golden()))
def test_bytes_are_kafkas_own_both_ways(message):
    """Kafka 4.4.0's generated classes wrote these bytes from the same JSON (GoldenBytes.java): the
    codec writes the same bytes, and reads them back to the JSON Kafka's converter prints."""
    m = schema.load(message)
    for case in golden()[message]:
        version = case["version"]
        reader, writer = _codec(message, version)
        raw = bytes.fromhex(case["hex"])
        out = bytearray()
        writer(out, case["json"])
        assert out.hex() == case["hex"], f"{message} v{version}"
        decoded, end = reader(raw, 0)
        assert end == len(raw)
        assert decoded == _with_defaults(case.get("kafkaJson", case["json"]), m.body, version), f"{message} v{version}"


def _served():
    for key, spec in sorted(apis._BY_KEY.items()):
        lo, hi = apis.service_versions(key)
        for v in range(lo, hi + 1):
            yield pytest.param(spec, v, id=f"{spec.name}-v{v}")


SERVED = list(_served())


def test_the_codec_knows_every_version_the_service_serves():
    for key, spec in apis._BY_KEY.items():
        lo, hi = apis.service_versions(key)
        klo, khi = known_versions(key)
        assert klo <= lo and hi <= khi, spec.name
    assert known_versions(apis.FIND_COORDINATOR) == apis.service_versions(apis.FIND_COORDINATOR)


@pytest.mark.parametrize("spec,version", SERVED)
def test_a_request_decodes_to_the_json_the_service_validates(spec, version):
    m = schema.by_key()[(spec.api_key, "request")]
    body = sample(m.body, version, 1, False)
    header, decoded = decode_request(encode_request(spec.api_key, version, 42, "client-1", body), spec.api_key, version)
    assert header["correlationId"] == 42 and header["clientId"] == "client-1"
    assert decoded == body
    validated = spec.request.validate(json.loads(json.dumps(decoded)), version)
    assert set(validated) == set(decoded)


@pytest.mark.parametrize("spec,version", SERVED)
def test_the_services_error_answer_encodes_in_the_clients_version(spec, version):
    """The service's own answer (its error shape for the API) uses the message's names: its values
    come back unchanged from the bytes."""
    request = sample(schema.by_key()[(spec.api_key, "request")].body, version, 1, False)
    answer = spec.error_response(
        version, spec.request.validate(request, version), Errors.COORDINATOR_NOT_AVAILABLE, "no coordinator"
    )
    header, decoded = decode_response(encode_response(7, spec.api_key, version, answer), spec.api_key, version)
    assert header == {"correlationId": 7}
    _assert_contained(answer, decoded, spec.name)


def _assert_contained(service: dict, wire: dict, path: str) -> None:
    for k, v in service.items():
        if k == "errorMessage" and k not in wire:
            continue  # the service adds it to every rejection; versions without it drop it
        assert k in wire, f"{path}.{k} is not a field of the message"
        if isinstance(v, dict):
            _assert_contained(v, wire[k], f"{path}.{k}")
        elif isinstance(v, list) and v and isinstance(v[0], dict):
            for a, b in zip(v, wire[k], strict=True):
                _assert_contained(a, b, f"{path}.{k}[]")
        else:
            assert wire[k] == v, f"{path}.{k}: {wire[k]!r} != {v!r}"


def test_kafka_4_4_versions_unknown_to_4_1_are_served():
    """DeleteGroups v3 (4.4.0's errorMessage) and TxnOffsetCommit's 4.4.0 field name."""
    answer = {"throttleTimeMs": 0, "results": [{"groupId": "g", "errorCode": 69, "errorMessage": "not empty"}]}
    _, decoded = decode_response(encode_response(1, 42, 3, answer), 42, 3)
    assert decoded["results"][0]["errorMessage"] == "not empty"
    body = sample(schema.by_key()[(28, "request")].body, 5, 1, False)
    assert "generationIdOrMemberEpoch" in decode_request(encode_request(28, 5, 1, "c", body), 28, 5)[1]


def test_special_values_use_kafkas_json_forms():
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
    frame = encode_response(3, 68, 1, body)
    assert bytes(15) + b"\x01" in frame  # the Uuid 0...01, as 16 bytes
    _, decoded = decode_response(frame, 68, 1)
    assert decoded == body
    # An error code newer than any table travels as an int16.
    assert encode_response(3, 12, 4, {"errorCode": 133})[-3:-1] == (133).to_bytes(2, "big")
    # Absent fields take the file's defaults (JoinGroupResponse v9: generationId -1).
    _, join = decode_response(encode_response(1, 11, 9, {"errorCode": 25}), 11, 9)
    assert join["generationId"] == -1 and join["memberId"] == "" and join["members"] == []


def test_tagged_fields_are_written_only_when_not_their_default_and_unknown_tags_are_skipped():
    """ApiVersionsResponse v3: SupportedFeatures (tag 0), FinalizedFeaturesEpoch (tag 1, -1),
    FinalizedFeatures (tag 2), ZkMigrationReady (tag 3, false)."""
    plain = {"errorCode": 0, "apiKeys": [], "throttleTimeMs": 0}
    frame = encode_response(1, 18, 3, plain)
    assert frame == struct.pack(">ihbib", 1, 0, 1, 0, 0)  # header v0, no tagged field
    _, decoded = decode_response(frame, 18, 3)
    assert decoded == {
        **plain,
        "supportedFeatures": [],
        "finalizedFeaturesEpoch": -1,
        "finalizedFeatures": [],
        "zkMigrationReady": False,
    }
    frame = encode_response(1, 18, 3, {**plain, "finalizedFeaturesEpoch": 7, "zkMigrationReady": True})
    assert frame.endswith(b"\x02\x01\x08" + (7).to_bytes(8, "big") + b"\x03\x01\x01")  # ascending tags
    # A tag this version does not know (9): skipped, as Kafka keeps it unread.
    unknown = frame[:-14] + b"\x03\x01\x08" + (7).to_bytes(8, "big") + b"\x09\x02ab\x03\x01\x01"
    assert decode_response(unknown, 18, 3)[1]["finalizedFeaturesEpoch"] == 7


def test_the_gateways_own_message_files_are_kafkas_unchanged():
    files = sorted((resources.files("gateway") / "messages").iterdir(), key=str)
    assert {f.name for f in files} == {
        f"{n}.json"
        for n in (
            "RequestHeader",
            "ResponseHeader",
            *(
                f"{a}{k}"
                for a in ("ApiVersions", "Metadata", "DescribeCluster", "SaslHandshake", "SaslAuthenticate")
                for k in ("Request", "Response")
            ),
        )
    }
    if not kafka_messages.available():
        pytest.skip("kafka-clients is not resolved: run deploy/setup.sh")
    for path in files:
        assert path.read_bytes() == kafka_messages.message_bytes(path.name), path.name


# ------------------------------------------------------------------ damaged frames
def _frames():
    """A valid request frame of every bridged API in its newest and oldest version."""
    for key in sorted(apis._BY_KEY):
        lo, hi = apis.service_versions(key)
        for v in sorted({lo, hi}):
            body = sample(schema.by_key()[(key, "request")].body, v, 1, False)
            yield key, v, encode_request(key, v, 1, "c", body)


FRAMES = list(_frames())


def test_a_frame_cut_anywhere_or_with_bytes_after_it_is_refused():
    for key, v, frame in FRAMES:
        for cut in range(len(frame)):
            with pytest.raises(DecodeError):
                decode_request(frame[:cut], key, v)
        with pytest.raises(DecodeError, match="bytes after the request body"):
            decode_request(frame + b"\0", key, v)


def test_damaged_bytes_decode_or_raise_decode_error_only():
    rng = random.Random(7)
    for key, v, frame in FRAMES:
        for _ in range(200):
            damaged = bytearray(frame)
            for _ in range(rng.randint(1, 4)):
                damaged[rng.randrange(len(damaged))] = rng.randrange(256)
            try:
                decode_request(bytes(damaged), key, v)
            except DecodeError:
                pass


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(FRAMES), st.binary(max_size=64), st.integers(min_value=0))
def test_random_bytes_after_a_header_decode_or_raise_decode_error_only(case, tail, cut):
    key, v, frame = case
    head = frame[: cut % (len(frame) + 1)]
    try:
        decode_request(head + tail, key, v)
    except DecodeError:
        pass


def test_lengths_kafka_refuses():
    # OffsetCommit v8 (flexible): groupId is a compact string; v2 (not): an int16 length.
    good = encode_request(8, 8, 1, "c", {"groupId": "g", "topics": []})
    header_end = 4 + 4 + 2 + 1 + 1  # key, version, correlation id, client id "c", no tags
    with pytest.raises(DecodeError, match="non-nullable field groupId was serialized as null"):
        decode_request(good[:header_end] + b"\x00" + good[header_end + 2 :], 8, 8)
    with pytest.raises(DecodeError, match="varint is too long"):
        decode_request(good[:header_end] + b"\xff" * 6, 8, 8)
    # An array count larger than the bytes left (Kafka's check before it allocates).
    v2 = encode_request(8, 2, 1, "c", {"groupId": "g", "topics": []})
    with pytest.raises(DecodeError, match="an array of 1000000"):
        decode_request(v2[:-4] + (1_000_000).to_bytes(4, "big"), 8, 2)
    with pytest.raises(DecodeError, match="has no version 99"):
        decode_request(v2, 8, 99)
    with pytest.raises(DecodeError, match="unknown api key"):
        decode_request(v2, 999, 0)


def test_malformed_utf8_reads_as_java_reads_it():
    frame = encode_request(12, 4, 1, "c", {"groupId": "gé", "generationId": 1, "memberId": "m"})
    damaged = frame.replace("gé".encode(), b"g\xff\xfe")
    assert decode_request(damaged, 12, 4)[1]["groupId"] == "g\ufffd\ufffd"


def test_bytes_fields_are_base64_both_ways():
    frame = encode_request(36, 2, 1, "c", {"authBytes": b"\0alice\0secret"})  # bytes as they are, or base64
    assert decode_request(frame, 36, 2)[1]["authBytes"] == base64.b64encode(b"\0alice\0secret").decode()
    assert encode_request(36, 2, 1, "c", {"authBytes": base64.b64encode(b"\0alice\0secret").decode()}) == frame
