"""The driver's end-offsets responder (streaming/end_offsets.py) without a broker: the query as the
state function writes it (signed, stamped) is read and verified, answered in the core's format and
signed so that the group's partition computes the lag from it; forged queries are ignored; the end
offsets follow NetworkPartitionMetadataClient's rules (errors, retries). The e2e test
(tests/integration/test_share_groups_e2e.py) and the differential test run it against a broker."""

from __future__ import annotations

import json

import pytest
from kafka.protocol.consumer.offsets import ListOffsetsResponse

from coordinator.errors import Errors
from coordinator.group.share.offsets_admin import END_OFFSETS_QUERY
from coordinator.routing import coordinator_partition
from streaming import end_offsets
from streaming.end_offsets import (
    LEADER_NOT_AVAILABLE,
    MAX_ATTEMPTS,
    NETWORK_EXCEPTION,
    REQUEST_TIMED_OUT,
    UNKNOWN_TOPIC_OR_PARTITION,
    ListOffsetsFailed,
    answer_record,
    latest_offsets,
    query_of,
)
from streaming.step import StepSettings, output_rows
from streaming.trust import STAMP_HEADER, parse_stamp, sign
from tests.core_driver import CoreDriver
from tests.share.test_share_group_offsets import GROUP, TOPIC, describe, metadata, write_complete

KEY = bytes(range(32))

_Topic = ListOffsetsResponse.ListOffsetsTopicResponse
_Partition = _Topic.ListOffsetsPartitionResponse


def _response(*partitions: tuple[str, int, int, int]) -> ListOffsetsResponse:
    """A ListOffsets answer: (topic, partition, offset, error code) each."""
    topics: dict[str, list] = {}
    for t, p, offset, code in partitions:
        topics.setdefault(t, []).append(_Partition(partition_index=p, error_code=code, offset=offset, timestamp=-1))
    return ListOffsetsResponse(
        version=7, throttle_time_ms=0, topics=[_Topic(name=t, partitions=ps) for t, ps in topics.items()]
    )


def _sink_rows(d: CoreDriver, key_file) -> list[tuple]:
    """The internal-channel rows the state function writes for the driver's outputs so far."""
    from coordinator.messages import InternalRequest, Outputs

    out = Outputs()
    for k, envelope in d.internal_requests:
        r = InternalRequest(k, envelope)
        r.stamp = (f"partition-{d.partition_id}", 7, len(out.requests))
        out.requests.append(r)
    settings = StepSettings(
        coordinator={},
        responses_topic="r",
        events_topic="e",
        state_log_topic="s",
        requests_topic="q",
        internal_key_file=str(key_file),
    )
    return [row for row in output_rows(out, d.partition_id, settings) if row[0] == settings.internal_topic]


@pytest.fixture
def key_file(tmp_path):
    path = tmp_path / "coordinator-internal.key"
    path.write_text(KEY.hex())
    return path


def test_a_query_written_by_the_state_function_is_answered_and_the_core_computes_the_lag(key_file):
    d = CoreDriver(GROUP, coordinator_partitions=1)
    metadata(d)
    write_complete(d, 0, start=5, complete=2)
    assert describe(d, [{"topicName": TOPIC, "partitions": [0, 1]}], version=1) is None
    cid = d.last_cid
    [(_, key, value, _, headers)] = _sink_rows(d, key_file)
    headers = [(h["key"], h["value"]) for h in headers]
    query = query_of(KEY, key.encode(), value, headers)
    assert query == {"queryId": 0, "fromPartition": d.partition_id, "topics": [{"topicName": TOPIC, "partitions": [0]}]}
    key, value, headers = answer_record(query, {(TOPIC, 0): (30, 0)}, 1, KEY, b"end-offsets-responder/3/0")
    assert coordinator_partition(key.decode(), 1) == d.partition_id
    stamp = parse_stamp(dict(headers)[STAMP_HEADER])
    assert stamp == ("end-offsets-responder", 3, 0)
    d.send_raw(value, key=key.decode(), internal=True, stamp=stamp)
    parts = d.response(cid)["groups"][0]["topics"][0]["partitions"]
    assert [(p["startOffset"], p["lag"]) for p in parts] == [(5, 30 - 5 - 2), (-1, -1)]


def test_forged_or_foreign_records_are_not_queries(key_file):
    d = CoreDriver(GROUP, coordinator_partitions=1)
    metadata(d)
    write_complete(d, 0, start=5, complete=2)
    describe(d, [{"topicName": TOPIC, "partitions": [0]}], version=1)
    [(_, key, value, _, headers)] = _sink_rows(d, key_file)
    headers = [(h["key"], h["value"]) for h in headers]
    assert query_of(KEY, key.encode(), value, headers) is not None
    # Another key signs it, its value was changed, its stamp was changed, or it has no MAC.
    assert query_of(bytes(32), key.encode(), value, headers) is None
    assert query_of(KEY, key.encode(), value.replace(b'"partitions":[0]', b'"partitions":[1]'), headers) is None
    restamped = [(k, b"partition-0/8/0" if k == STAMP_HEADER else v) for k, v in headers]
    assert query_of(KEY, key.encode(), value, restamped) is None
    assert query_of(KEY, key.encode(), value, []) is None
    # Signed, but not an end-offsets query: another key, or another API under the query's key.
    other = json.dumps({"apiKey": "ShareStateSummaryQuery", "request": {}}).encode()
    assert query_of(KEY, key.encode(), other, [("coordinator-mac", sign(KEY, key.encode(), other))]) is None
    assert query_of(KEY, b"g", value, headers) is None
    assert json.loads(value)["apiKey"] == END_OFFSETS_QUERY


def test_every_partition_asked_is_answered():
    query = {"queryId": 9, "fromPartition": 4, "topics": [{"topicName": "a", "partitions": [0, 1]}]}
    _, value, _ = answer_record(query, {("a", 0): (12, 0)}, 50, KEY, b"end-offsets-responder/1/5")
    envelope = json.loads(value)
    assert envelope["apiKey"] == "ShareEndOffsetsAnswer" and envelope["request"]["queryId"] == 9
    assert envelope["request"]["topics"][0]["partitions"] == [
        {"partitionIndex": 0, "offset": 12, "errorCode": 0},
        {"partitionIndex": 1, "offset": -1, "errorCode": UNKNOWN_TOPIC_OR_PARTITION},
    ]


def test_latest_offsets_as_network_partition_metadata_client():
    """One ListOffsets per leader; no leader: LEADER_NOT_AVAILABLE; a partition's error as answered;
    one the answer leaves out: UNKNOWN_TOPIC_OR_PARTITION."""
    sent = []

    def send(node, tps):
        sent.append((node, tps))
        if node == 1:
            return _response(("a", 0, 40, 0), ("b", 0, -1, Errors.NOT_LEADER_OR_FOLLOWER.code))
        return _response()

    tps = {("a", 0), ("b", 0), ("a", 1), ("c", 0)}
    out = latest_offsets(tps, {("a", 0): 1, ("b", 0): 1, ("a", 1): 2, ("c", 0): None}, send)
    assert sorted(sent) == [(1, [("a", 0), ("b", 0)]), (2, [("a", 1)])]
    assert out == {
        ("a", 0): (40, 0),
        ("b", 0): (-1, Errors.NOT_LEADER_OR_FOLLOWER.code),
        ("a", 1): (-1, UNKNOWN_TOPIC_OR_PARTITION),
        ("c", 0): (-1, LEADER_NOT_AVAILABLE),
    }


@pytest.mark.parametrize("error", [REQUEST_TIMED_OUT, NETWORK_EXCEPTION])
def test_a_timed_out_or_disconnected_list_offsets_is_retried_then_its_error(error):
    attempts = []

    def failing(node, tps):
        attempts.append(node)
        raise ListOffsetsFailed(error, "no answer")

    out = latest_offsets({("a", 0)}, {("a", 0): 1}, failing, backoff_s=lambda _: 0)
    assert out == {("a", 0): (-1, error)} and len(attempts) == MAX_ATTEMPTS

    def recovers(node, tps):
        attempts.append(node)
        if len(attempts) < MAX_ATTEMPTS + 2:
            raise ListOffsetsFailed(error, "no answer")
        return _response(("a", 0, 7, 0))

    assert latest_offsets({("a", 0)}, {("a", 0): 1}, recovers, backoff_s=lambda _: 0) == {("a", 0): (7, 0)}


def test_other_failures_are_not_retried():
    calls = []

    def broken(node, tps):
        calls.append(node)
        raise ListOffsetsFailed(end_offsets.UNKNOWN_SERVER_ERROR, "version mismatch")

    assert latest_offsets({("a", 0)}, {("a", 0): 3}, broken) == {("a", 0): (-1, -1)} and calls == [3]
