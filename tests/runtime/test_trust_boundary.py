"""The trust boundary in the core: what a client record may not do (internal APIs, the broadcast
key, replyTo into the service's own or missing topics) and that no input makes a batch raise."""

from __future__ import annotations

import json

import pytest

import state
from coordinator import CoordinatorConfig, CoordinatorPartition, Errors, coordinator_partition
from coordinator.batch import InputRecord, run_batch
from coordinator.envelope import BROADCAST_KEY
from coordinator.group.classic.manager import ClassicGroupManager
from tests.core_driver import CoreDriver
from tests.group.group_helpers import GroupTestClient, protocols

CONFIG = CoordinatorConfig().with_overrides(
    coordinator_internal_topics=["svc-requests", "svc-responses", "svc-events", "svc-state-log", "svc-internal"],
    coordinator_reply_to_pattern=r"svc-responses(\.[A-Za-z0-9._-]{1,200})?|svc-state-log|__consumer_offsets",
)


def envelope(api, version, body, cid=1, client_id="c", **extra) -> bytes:
    return json.dumps(
        {"apiKey": api, "apiVersion": version, "correlationId": cid, "clientId": client_id, "request": body, **extra}
    ).encode()


def run(records, config=CONFIG, pid=0, blob=None):
    blob = blob or state.encode(CoordinatorPartition(pid, config).to_json())
    return run_batch(lambda: CoordinatorPartition(pid, config, state.decode(*blob)), records, 10_000)


METADATA = envelope(
    "UpdateMetadata",
    0,
    {
        "topicStates": [
            {"topicName": "svc-responses.team-a", "numPartitions": 1},
            {"topicName": "orders", "numPartitions": 4},
        ]
    },
    client_id="coordinator-metadata-publisher",
)


def test_client_records_cannot_send_internal_apis_or_use_the_broadcast_key():
    part, out = run(
        [
            InputRecord(BROADCAST_KEY, METADATA, 1, 0, 0),  # forged broadcast
            InputRecord("g", envelope("UpdateMetadata", 0, {"topicStates": []}, cid=2), 1, 0, 1),
            InputRecord("g", envelope("WriteTxnMarkers", 1, {"markers": []}, cid=3), 1, 0, 2),
            InputRecord(BROADCAST_KEY, envelope("FindCoordinator", 3, {"key": "g", "keyType": 0}, cid=4), 1, 0, 3),
        ]
    )
    codes = {r.reply.correlation_id: r.body["errorCode"] for r in out.responses}
    assert codes == {
        1: Errors.INVALID_REQUEST.code,
        2: Errors.CLUSTER_AUTHORIZATION_FAILED.code,
        3: Errors.CLUSTER_AUTHORIZATION_FAILED.code,
        4: Errors.INVALID_REQUEST.code,
    }
    assert part.component("metadata").available is False  # nothing forged was applied


def test_the_internal_channel_is_trusted():
    part, out = run([InputRecord(BROADCAST_KEY, METADATA, 1, 0, 0, internal=True)])
    assert part.component("metadata").topics == {"svc-responses.team-a": 1, "orders": 4}
    assert out.responses == []


def test_a_record_key_that_was_not_utf8_is_rejected():
    _, out = run(
        [InputRecord("\ufffd\ufffd", envelope("FindCoordinator", 3, {"key": "g", "keyType": 0}), 1, key_valid=False)]
    )
    [r] = out.responses
    assert r.body["errorCode"] == Errors.INVALID_REQUEST.code and "UTF-8" in r.body["errorMessage"]


@pytest.mark.parametrize(
    "reply_to, reason",
    [
        ("svc-state-log", "internal topic"),  # matches the (careless) pattern, still refused
        ("__consumer_offsets", "internal topic"),
        ("bad topic!", "matching"),
        ("svc-responses.nowhere", "does not exist"),
    ],
)
def test_reply_to_is_checked_for_every_answer_rejections_included(reply_to, reason):
    records = [InputRecord(BROADCAST_KEY, METADATA, 1, 0, 0, internal=True)]
    for i, (api, version) in enumerate([("NoSuchApi", 0), ("FindCoordinator", 99), ("FindCoordinator", 3)]):
        records.append(
            InputRecord(
                "g", envelope(api, version, {"key": "g", "keyType": 0}, cid=10 + i, replyTo=reply_to), 2, 0, 1 + i
            )
        )
    _, out = run(records)
    assert [r.reply.correlation_id for r in out.responses] == [10, 11, 12]
    for r in out.responses:
        assert r.reply.reply_to is None  # answered on the service's response topic, nowhere else
        assert r.body["errorCode"] == Errors.INVALID_REQUEST.code and reason in r.body["errorMessage"]


def test_an_existing_reply_topic_gets_the_answer():
    _, out = run(
        [
            InputRecord(BROADCAST_KEY, METADATA, 1, 0, 0, internal=True),
            InputRecord(
                "g", envelope("FindCoordinator", 3, {"key": "g", "keyType": 0}, replyTo="svc-responses.team-a"), 2, 0, 1
            ),
        ]
    )
    [r] = out.responses
    assert r.body["errorCode"] == 0 and r.reply.reply_to == "svc-responses.team-a"


def test_damaged_json_with_a_lone_surrogate_client_id_is_answered_with_an_empty_one():
    raw = b'{"correlationId": 5, "clientId": "\\ud800", "apiKey": "FindCoordinator", "request": {'
    _, out = run([InputRecord("g", raw, 1)])
    [r] = out.responses
    assert r.reply.client_id == "" and r.body["errorCode"] == Errors.INVALID_REQUEST.code


def test_join_group_listing_a_protocol_twice_is_refused_up_front():
    c = GroupTestClient(group_min_session_timeout_ms=1)
    _, r = c.join("", version=3, protos=protocols("range", "range"))
    assert r["errorCode"] == Errors.INCONSISTENT_GROUP_PROTOCOL.code
    assert c.group() is None and not c.d.events  # nothing joined, no timer armed


def test_many_hostile_joins_in_one_batch_never_fail_the_batch():
    """The drill of the issue: 150 JoinGroups listing a protocol twice, for 150 groups of one
    partition, in one batch; then their initial-join timers. Nothing fails, nothing raises."""
    pid = 3
    groups = [g for g in (f"hostile-{i}" for i in range(20_000)) if coordinator_partition(g) == pid][:150]
    records = [
        InputRecord(
            g,
            envelope(
                "JoinGroup",
                3,
                {
                    "groupId": g,
                    "sessionTimeoutMs": 10_000,
                    "rebalanceTimeoutMs": 5_000,
                    "memberId": "",
                    "protocolType": "consumer",
                    "protocols": protocols("range", "range"),
                },
                cid=i,
            ),
            1,
            0,
            i,
        )
        for i, g in enumerate(groups)
    ]
    part, out = run(records, CoordinatorConfig(), pid)
    assert len(out.responses) == 150
    assert {r.body["errorCode"] for r in out.responses} == {Errors.INCONSISTENT_GROUP_PROTOCOL.code}
    assert not [e for e in out.events if e.body["event"] in ("RequestFailed", "TimerFailed")]


def test_any_number_of_crashing_items_is_skipped_and_the_rest_applied(monkeypatch):
    """200 requests whose handler raises (a bug), interleaved with 200 good ones: one batch, no
    exception, every good one applied, every bad one answered UNKNOWN_SERVER_ERROR and reported."""
    real = ClassicGroupManager.join_group

    def buggy(self, request):
        if request.body["groupId"].startswith("bug-"):
            raise RuntimeError("a bug")
        return real(self, request)

    monkeypatch.setattr(ClassicGroupManager, "join_group", buggy)
    records = []
    for i in range(400):
        g = f"bug-{i}" if i % 2 else f"ok-{i}"
        records.append(
            InputRecord(
                g,
                envelope(
                    "JoinGroup",
                    3,
                    {
                        "groupId": g,
                        "sessionTimeoutMs": 10_000,
                        "rebalanceTimeoutMs": 5_000,
                        "memberId": "",
                        "protocolType": "consumer",
                        "protocols": protocols("range"),
                    },
                    cid=i,
                ),
                1,
                0,
                i,
            )
        )
    config = CoordinatorConfig().with_overrides(coordinator_partitions=1)
    part, out = run(records, config)
    codes = {r.reply.correlation_id: r.body["errorCode"] for r in out.responses if r.reply.api_key == "JoinGroup"}
    assert len(codes) == 400
    assert all(codes[i] == Errors.UNKNOWN_SERVER_ERROR.code for i in range(1, 400, 2))
    assert sorted(part.component("groups").groups) == sorted(f"ok-{i}" for i in range(0, 400, 2))
    assert sum(e.body["event"] == "RequestFailed" for e in out.events) == 200


def test_driver_rejects_a_forged_update_metadata_sent_as_a_client():
    d = CoreDriver("g")
    d.send_raw(envelope("UpdateMetadata", 0, {"topicStates": []}, cid=77), key=BROADCAST_KEY, internal=False)
    assert d.responses[77]["errorCode"] == Errors.INVALID_REQUEST.code
    assert d.component("metadata").available is False


def test_ten_thousand_members_joining_one_group_are_bounded_by_the_services_group_max_size():
    """The service's config (conf/defaults.toml) bounds groups as Kafka's group.max.size does: of
    10,000 members joining a classic group, 1,000 get in, the rest GROUP_MAX_SIZE_REACHED, and the
    group's state stays that size (bench/large_group.py measures time and memory)."""
    from streaming.config import StreamConfig

    config = CoordinatorConfig(StreamConfig.load(environ={}).coordinator_config().to_json())
    limit = config["group.max.size"]
    assert limit == 1000
    pid = coordinator_partition("crowd")
    blob = state.encode(CoordinatorPartition(pid, config).to_json())
    codes: dict[int, int] = {}
    for b in range(10):
        records = [
            InputRecord(
                "crowd",
                envelope(
                    "JoinGroup",
                    3,
                    {
                        "groupId": "crowd",
                        "sessionTimeoutMs": 45_000,
                        "rebalanceTimeoutMs": 60_000,
                        "memberId": "",
                        "protocolType": "consumer",
                        "protocols": protocols("range"),
                    },
                    cid=b * 1000 + i,
                    client_id=f"m{b}-{i}",
                ),
                1_000 + b,
                0,
                b * 1000 + i,
            )
            for i in range(1000)
        ]
        part, out = run_batch(
            lambda blob=blob: CoordinatorPartition(pid, config, state.decode(*blob)), records, 1_000 + b
        )
        blob = state.encode(part.to_json())
        codes.update({r.reply.correlation_id: r.body["errorCode"] for r in out.responses})
    assert len(codes) == 9000  # the admitted 1,000 wait in the join phase
    assert set(codes.values()) == {Errors.GROUP_MAX_SIZE_REACHED.code}
    assert len(part.component("groups").groups["crowd"].members) == limit
