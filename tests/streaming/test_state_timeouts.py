"""The checkpoint decides whether the query runs with Spark's processing-time timeouts
(streaming/state_timeouts.py), and the state function sets a timeout only when it does: pyspark's
GroupState refuses one under NoTimeout, which would fail every batch of a new checkpoint."""

from __future__ import annotations

import dataclasses

import pytest
from pyspark.errors import PySparkRuntimeError
from pyspark.sql.streaming.state import GroupStateTimeout

from coordinator.routing import coordinator_partition
from streaming.query import group_state_timeout
from streaming.state_timeouts import SCHEMA_FILE, CheckpointTimeoutMismatch, checkpoint_has_timeouts, spark_timeouts
from streaming.step import make_step
from tests.streaming.test_output_frames import new_state
from tests.streaming.test_step import JOIN, SETTINGS, env, frame, run

KEY = '{"type":"struct","fields":[{"name":"cp","type":"integer","nullable":true,"metadata":{}}]}'
GROUP_STATE = (
    '{"name":"groupState","type":{"type":"struct","fields":[{"name":"format","type":"integer","nullable":true,'
    '"metadata":{}},{"name":"payload","type":"binary","nullable":true,"metadata":{}}]},"nullable":true,"metadata":{}}'
)
# The state schema files Spark 4.2 writes (state/0/0/_metadata/schema: version, then the key's and
# the value's schema, each after its length), with and without the timeout column.
WITH_TIMEOUTS = (
    b"\x00\x02v2\x00\x00\x00\x59"
    + KEY.encode()
    + b"\x00\x00\x01\x3f"
    + (
        '{"type":"struct","fields":[' + GROUP_STATE + ',{"name":"timeoutTimestamp","type":"long",'
        '"nullable":false,"metadata":{}}]}'
    ).encode()
)
WITHOUT_TIMEOUTS = (
    b"\x00\x02v2\x00\x00\x00\x59"
    + KEY.encode()
    + b"\x00\x00\x00\xf0"
    + ('{"type":"struct","fields":[' + GROUP_STATE + "]}").encode()
)


def checkpoint(tmp_path, schema: bytes | None):
    if schema is not None:
        path = tmp_path / SCHEMA_FILE
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(schema)
    return tmp_path


def test_the_schema_file_tells_whether_the_state_has_timeouts(tmp_path):
    assert checkpoint_has_timeouts(checkpoint(tmp_path / "new", None)) is None
    assert checkpoint_has_timeouts(checkpoint(tmp_path / "old", WITH_TIMEOUTS)) is True
    assert checkpoint_has_timeouts(checkpoint(tmp_path / "lean", WITHOUT_TIMEOUTS)) is False


def test_a_new_checkpoint_runs_without_spark_timeouts_when_timers_wake_their_partitions(tmp_path):
    assert spark_timeouts(checkpoint(tmp_path, None), timer_wakeups=True) is False
    assert spark_timeouts(checkpoint(tmp_path, None), timer_wakeups=False) is True


def test_a_checkpoint_written_with_timeouts_keeps_them(tmp_path):
    # Its state schema has the timeout column: Spark's schema check refuses any other.
    assert spark_timeouts(checkpoint(tmp_path, WITH_TIMEOUTS), timer_wakeups=True) is True
    assert spark_timeouts(checkpoint(tmp_path, WITH_TIMEOUTS), timer_wakeups=False) is True


def test_a_checkpoint_without_timeouts_refuses_to_run_without_wake_ups(tmp_path):
    assert spark_timeouts(checkpoint(tmp_path, WITHOUT_TIMEOUTS), timer_wakeups=True) is False
    with pytest.raises(CheckpointTimeoutMismatch, match="timer_wakeups = false"):
        spark_timeouts(checkpoint(tmp_path, WITHOUT_TIMEOUTS), timer_wakeups=False)


GROUP = JOIN["groupId"]
CP = coordinator_partition(GROUP)


def join_request():
    # A new member of a classic group: MEMBER_ID_REQUIRED, and a pending member whose session
    # timer gives the partition a deadline.
    return frame((GROUP, env("JoinGroup", 9, 1, JOIN), 100, 9_000, 0, 0))


@pytest.mark.parametrize("timeouts", [True, False], ids=["spark-timeouts", "wake-ups-only"])
def test_the_state_function_sets_a_timeout_only_with_spark_timeouts(timeouts):
    settings = dataclasses.replace(SETTINGS, spark_timeouts=timeouts)
    conf = group_state_timeout(settings)
    assert conf == (GroupStateTimeout.ProcessingTimeTimeout if timeouts else GroupStateTimeout.NoTimeout)
    state = new_state(CP, conf)
    out = run(make_step(settings), CP, [join_request()], state)
    assert b'"errorCode":79' in out["value"].iloc[0]  # MEMBER_ID_REQUIRED
    assert state.exists
    if timeouts:
        assert state.getCurrentProcessingTimeMs() == 10_000
        assert state._timeout_timestamp > 10_000  # the pending member's session deadline
    else:
        assert state._timeout_timestamp == -1


def test_a_timeout_under_no_timeout_fails_the_batch():
    # Why the guard exists: the state function called with Spark's timeouts expected but planned
    # without them raises (pyspark's GroupState), every batch.
    settings = dataclasses.replace(SETTINGS, spark_timeouts=True)
    with pytest.raises(PySparkRuntimeError):
        run(make_step(settings), CP, [join_request()], new_state(CP, GroupStateTimeout.NoTimeout))
