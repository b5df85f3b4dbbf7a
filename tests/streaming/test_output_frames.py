"""The state functions' output frames go through PySpark's own applyInPandasWithState serializer
(the code the Python workers run) without a warning, and arrive in Arrow as the output schema.

The serializer pads a batch's output with an all-None frame when it has fewer output rows than
states (most batches) and concatenates it with the step's frames; a typed `partition` column
(Int32) made pandas print `FutureWarning: The behavior of DataFrame concatenation with empty or
all-NA entries is deprecated` on the console every few batches."""

from __future__ import annotations

import inspect
import io
import json
import warnings

import pandas as pd
import pyarrow as pa
import pytest
from pyspark.sql.pandas.serializers import ApplyInPandasWithStateSerializer
from pyspark.sql.streaming.state import GroupState, GroupStateTimeout
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    IntegerType,
    StringType,
    StructField,
    StructType,
)
from pyspark.worker import wrap_grouped_map_pandas_udf_with_state

from streaming.step import OUTPUT_SCHEMA, STATE_SCHEMA, make_identity_step, make_step
from tests.streaming.test_step import SETTINGS, env, frame

# streaming/step.py's schemas as types (pyspark parses DDL strings only with a running Spark).
STATE_TYPE = StructType([StructField("format", IntegerType()), StructField("payload", BinaryType())])
HEADER_TYPE = StructType([StructField("key", StringType()), StructField("value", BinaryType())])
OUTPUT_TYPE = StructType(
    [
        StructField("topic", StringType()),
        StructField("key", StringType()),
        StructField("value", BinaryType()),
        StructField("partition", IntegerType()),
        StructField("headers", ArrayType(HEADER_TYPE)),
    ]
)


def ddl(schema: str) -> str:
    return "struct<" + ",".join(f.replace(" ", ":", 1) for f in schema.split(", ")) + ">"


def test_the_types_are_the_steps_schemas():
    assert STATE_TYPE.simpleString() == ddl(STATE_SCHEMA)
    assert OUTPUT_TYPE.simpleString() == ddl(OUTPUT_SCHEMA)


def serializer() -> ApplyInPandasWithStateSerializer:
    """As pyspark/worker.py builds it, with Spark's default runner settings (keyword arguments
    this pyspark does not know are left out)."""
    wanted = {
        "timezone": "UTC",
        "safecheck": False,
        "assign_cols_by_name": True,
        "prefer_int_ext_dtype": False,
        "state_object_schema": STATE_TYPE,
        "arrow_max_records_per_batch": 10_000,
        "prefers_large_var_types": False,
        "int_to_decimal_coercion_enabled": False,
    }
    known = inspect.signature(ApplyInPandasWithStateSerializer.__init__).parameters
    return ApplyInPandasWithStateSerializer(**{k: v for k, v in wanted.items() if k in known})


def new_state(cp: int, timeout_conf: str = GroupStateTimeout.ProcessingTimeTimeout) -> GroupState:
    return GroupState(
        optionalValue=None,
        batchProcessingTimeMs=10_000,
        eventTimeWatermarkMs=-1,
        timeoutConf=timeout_conf,
        hasTimedOut=False,
        watermarkPresent=False,
        defined=False,
        updated=False,
        removed=False,
        timeoutTimestamp=-1,
        keyAsUnsafe=str(cp).encode(),
        valueSchema=STATE_TYPE,
    )


def serialize(step, calls: list[tuple[int, list]]) -> pa.Table:
    """What a Python worker writes back for one task: the step called once per state (coordinator
    partition) with its frames through PySpark's own wrapper, all serialized by PySpark into Arrow."""
    wrapped = wrap_grouped_map_pandas_udf_with_state(step, OUTPUT_TYPE, {})
    results = []
    for cp, frames in calls:
        key_series = [pd.Series([cp], dtype="int32")]
        values = ([f[c] for c in f.columns] for f in frames)
        results.append(wrapped(key_series, values, new_state(cp)))
    out = io.BytesIO()
    serializer().dump_stream(iter(results), out)
    out.seek(0)
    out.read(4)  # the worker's start marker (an int) before the Arrow stream
    return pa.ipc.open_stream(out).read_all()


def output_rows(table: pa.Table) -> list[dict]:
    counts = table.column(0).to_pylist()
    n = counts[0]["dataCount"] if counts else 0
    return table.column(1).to_pylist()[:n]


@pytest.mark.parametrize("make", [make_step, make_identity_step], ids=["coordinator", "identity"])
def test_output_frames_serialize_without_a_warning_and_as_the_output_schema(make):
    step = make(SETTINGS)
    commit = {
        "groupId": "my-group",
        "generationIdOrMemberEpoch": -1,
        "memberId": "",
        "groupInstanceId": None,
        "topics": [{"name": "t", "partitions": [{"partitionIndex": 0, "committedOffset": 5, "committedMetadata": ""}]}],
    }
    request = frame(("my-group", env("OffsetCommit", 9, 1, commit), 100, 9_000, 0, 0))
    # Three states, one request: fewer output rows than states for the identity step, so the
    # serializer pads; a state with no frames at all (a timeout call's shape) too.
    calls = [(12, [request]), (13, []), (14, [frame()])]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # any warning, pandas' FutureWarning included, fails the test
        table = serialize(step, calls)
    rows = output_rows(table)
    assert rows, "the request's response"
    assert table.schema.field(1).type.field("partition").type == pa.int32()
    responses = [r for r in rows if r["topic"] == "resp"]
    assert [json.loads(r["value"])["correlationId"] for r in responses] == [1]
    assert responses[0]["partition"] is None  # the sink's own partitioner picks it (by key)
    logged = [r for r in rows if r["topic"] == "log"]
    assert all(r["partition"] == 12 for r in logged)  # the state log: the coordinator partition
    assert (make is make_identity_step) or logged  # the commit, in the state log
    if make is make_step:
        assert json.loads(responses[0]["value"])["response"]["topics"][0]["partitions"][0]["errorCode"] == 0
