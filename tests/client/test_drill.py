"""The recovery drill's comparison and report logic (client/drill/), on the real core."""

from __future__ import annotations

import copy
import json

from client.drill.compare import (
    Report,
    compare_partitions,
    durable_view,
    entity,
    first_difference,
    unfinished_transactions,
)
from client.drill.reference import SELF_CHECK_KEY, client_requests, covered, reference_states
from coordinator import CoordinatorConfig, CoordinatorPartition, coordinator_partition
from coordinator.batch import InputRecord, run_batch

CONFIG = CoordinatorConfig().with_overrides(**{"coordinator.partitions": 4})


def commit(i: int, group: str, offset: int, t: int) -> InputRecord:
    body = {
        "groupId": group,
        "generationIdOrMemberEpoch": -1,
        "memberId": "",
        "groupInstanceId": None,
        "topics": [
            {
                "name": "orders",
                "partitions": [
                    {
                        "partitionIndex": 0,
                        "committedOffset": offset,
                        "committedLeaderEpoch": -1,
                        "committedMetadata": f"m{offset}",
                    }
                ],
            }
        ],
    }
    env = {
        "apiKey": "OffsetCommit",
        "apiVersion": 9,
        "correlationId": i,
        "clientId": "c",
        "replyTo": None,
        "request": body,
    }
    return InputRecord(group, json.dumps(env).encode(), t, 0, i)


RECORDS = [commit(i, f"g{i % 3}", 10 + i, 1000 + 10 * i) for i in range(12)]


def live_run(records: list[InputRecord], cut: int) -> dict[int, CoordinatorPartition]:
    """Each partition run in two batches split at `cut` (as a job killed and restarted)."""
    out = {}
    for p in range(4):
        recs = [r for r in records if coordinator_partition(r.key, 4) == p]
        if not recs:
            continue
        # The first batch ends before the later records were appended (as a real batch does).
        first, _ = run_batch(lambda p=p: CoordinatorPartition(p, CONFIG), recs[:cut], recs[cut - 1].time_ms + 1)
        snap = first.to_json()
        second, _ = run_batch(
            lambda p=p, snap=snap: CoordinatorPartition(p, CONFIG, copy.deepcopy(snap)), recs[cut:], 2000
        )
        out[p] = second
    return out


def test_the_self_check_key_is_the_jobs():
    import run_stream

    assert SELF_CHECK_KEY == run_stream.SELF_CHECK_KEY
    assert client_requests(
        [InputRecord(SELF_CHECK_KEY, b"{}", 0), RECORDS[0], InputRecord("x", b"{}", 0, internal=True)]
    ) == [RECORDS[0]]


def test_a_run_in_two_batches_equals_the_one_batch_reference():
    live = {p: part.logical_state() for p, part in live_run(RECORDS, 2).items()}
    expected = reference_states(RECORDS, CONFIG, 2000)
    assert live and compare_partitions(live, expected, "the reference run") == []


def test_a_differing_offset_is_named_by_partition_and_entity():
    live = {p: part.logical_state() for p, part in live_run(RECORDS, 2).items()}
    expected = reference_states(RECORDS[:-1], CONFIG, 2000)  # the last commit of g2 is missing
    p = coordinator_partition("g2", 4)
    [line] = compare_partitions(live, expected, "the reference run")
    assert line.startswith(f"coordinator partition {p}: differs from the reference run: OffsetCommit g2 orders-0: ")
    assert 'checkpoint [21, null, "m21"' in line and 'expected [18, null, "m18"' in line


def test_missing_partitions_and_entities():
    assert compare_partitions({1: {}}, {2: {}}, "ref") == [
        "coordinator partition 1: in the checkpoint, absent from ref",
        "coordinator partition 2: absent from the checkpoint, present in ref",
    ]
    diff = first_difference({"groups": {"groups": {"a": {"generationId": 2}}}}, {"groups": {"groups": {}}})
    assert diff.startswith("GroupMetadata a: groups/groups/a: checkpoint {") and "expected <absent>" in diff
    assert first_difference({"x": [1]}, {"x": [1]}) is None
    assert entity(("transactions", "transactions", "tid-1", "state")) == "TransactionLog tid-1"
    assert entity(("groups", "offsets", "pending", "7", "g", "t", "3")) == "PendingTxnOffsetCommit producerId=7 g t-3"
    assert entity(("metadata", "topics")) == "metadata topics"


def test_the_durable_view_survives_a_state_log_replay_and_sees_a_change():
    p = coordinator_partition("g1", 4)
    recs = [r for r in RECORDS if coordinator_partition(r.key, 4) == p]
    part, out = run_batch(lambda: CoordinatorPartition(p, CONFIG), recs, 2000)
    rebuilt = CoordinatorPartition.from_records(p, out.records, CONFIG, now_ms=part.clock_ms)
    assert durable_view(rebuilt) == durable_view(part) and durable_view(part)["groups"]["offsets"]
    shorter = CoordinatorPartition.from_records(p, out.records[:-1], CONFIG, now_ms=part.clock_ms)
    assert "OffsetCommit" in first_difference(
        durable_view(part), durable_view(shorter)
    ) or "groups/offsets" in first_difference(durable_view(part), durable_view(shorter))


def test_covered_keeps_what_the_checkpoints_batches_read():
    recs = [
        InputRecord("a", b"", 0, 0, 0),
        InputRecord("a", b"", 0, 0, 5),
        InputRecord("a", b"", 0, 1, 0),
        InputRecord("b", b"", 0, 0, 0, internal=True),
        InputRecord("b", b"", 0, 0, 1, internal=True),
    ]
    kept = covered(recs, {"req": {0: 5, 1: 1}, "int": {0: 1}}, "req", "int")
    assert [(r.internal, r.partition, r.offset) for r in kept] == [(False, 0, 0), (False, 1, 0), (True, 0, 0)]


def test_unfinished_transactions_are_listed():
    states = {
        3: {
            "transactions": {
                "transactions": {
                    "done": {"state": "CompleteCommit", "pendingState": None, "topicPartitions": []},
                    "open": {"state": "Ongoing", "pendingState": None, "topicPartitions": [["t", 0]]},
                }
            }
        }
    }
    assert unfinished_transactions(states) == [
        "coordinator partition 3: TransactionLog open is Ongoing (pending None, partitions [['t', 0]])"
    ]


def test_the_report_says_pass_or_fail_with_recovery_times():
    report = Report("drill", seed=5)
    report.kills.append({"kill": 1, "atSeconds": 3.0, "how": "SIGKILL process group 42", "recoverySeconds": 12.5})
    report.add("every request answered", [], "3 of 3 requests answered")
    assert report.passed and report.render().splitlines()[0] == "coordinator drill: PASS"
    assert "recovered (kill -> first answer) in 12.50s" in report.render()
    report.add("checkpoint equals an uninterrupted run", [f"coordinator partition {i}: x" for i in range(12)])
    text = report.render()
    assert not report.passed and text.startswith("coordinator drill: FAIL")
    assert "[FAIL] checkpoint equals an uninterrupted run" in text and "... and 2 more" in text
    doc = json.loads(json.dumps(report.to_json()))
    assert doc["passed"] is False and doc["seed"] == 5 and doc["kills"][0]["recoverySeconds"] == 12.5
    assert not Report("verify").passed  # no check, no pass


def test_the_cli_refuses_a_hook_drill_without_a_kill_hook(capsys):
    import pytest

    from client.drill.cli import main

    with pytest.raises(SystemExit) as exited:
        main(["run", "--kill", "hook"])
    assert exited.value.code == 2 and "--kill hook needs --kill-hook" in capsys.readouterr().err


def test_a_checkpoint_and_a_live_partition_leave_out_the_same_components():
    """The drill compares a checkpointed snapshot (`reference.logical`) with a partition's
    `logical_state`: both leave out what batch boundaries change (the metrics, the internal
    channel's replay guard), or a killed run would differ from an uninterrupted one."""
    from client.drill.reference import logical

    part = CoordinatorPartition(0, CoordinatorConfig())
    assert {"metrics", "channel"} <= set(part.to_json()["components"])
    assert logical(part.to_json()) == part.logical_state()
    assert not {"metrics", "channel"} & set(part.logical_state())
