"""The Spark SQL routing expression equals Kafka's (the Python reference) on random keys, including
astral characters, empty and maximal-length keys (bench/routing_keys.py measures its cost); and the
coordinator query's plan holds no secret (the internal channel's key, or the HMAC pads made of it)."""

from __future__ import annotations

import random

import pytest

from coordinator.routing import coordinator_partition

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def spark():
    from streaming.session import local_session

    # With the Kafka connector (the coordinator query's source), as every in-process session of
    # the project's: a process's first session fixes its JVM's classpath for the later ones.
    session = local_session("routing-test")
    yield session
    session.stop()


def random_key(rng: random.Random) -> str:
    alphabet = [(0x20, 0x7E), (0xA0, 0x7FF), (0x4E00, 0x9FFF), (0x1F600, 0x1F64F), (0x10000, 0x10FFFF)]
    n = rng.choice([0, 1, 2, 5, 17, 64, 300])
    return "".join(chr(rng.randint(*rng.choice(alphabet))) for _ in range(n))


@pytest.mark.parametrize("use_java", [True, False], ids=["java-function", "sql-expression"])
def test_sql_routing_equals_kafkas_on_random_keys(spark, use_java):
    """Both expressions: the service's Java function (deploy/setup.sh builds its jar, so it must be
    there) and the SQL one used without the jar."""
    from streaming.routing import with_coordinator_partition

    rng = random.Random(848)
    keys = [random_key(rng) for _ in range(2000)] + ["k" * 32767, "😀" * 16383, "my-group", "test-group"]
    # A key whose Java hash is Integer.MIN_VALUE (Kafka's Utils.abs makes it 0), and a null key (as "").
    keys += ["polygenelubricants"]
    assert coordinator_partition("polygenelubricants", 50) == 0
    for partitions in (50, 7):
        df = spark.createDataFrame([(k,) for k in keys] + [(None,)], "key string")
        got = {r.key: r.cp for r in with_coordinator_partition(df, "key", partitions, use_java=use_java).collect()}
        assert got == {**{k: coordinator_partition(k, partitions) for k in keys}, None: 0}


def test_the_coordinator_query_routes_with_the_java_function(spark, tmp_path):
    """The query uses the Java function whenever the jar is built (it always is by deploy/setup.sh):
    a missing jar would fall back to the SQL expression silently, at several times the JVM's cost."""
    from streaming.config import StreamConfig
    from streaming.query import coordinator_outputs, step_settings

    cfg = StreamConfig.load(overrides={"stream": {"checkpoint": str(tmp_path / "cp")}})
    plan = coordinator_outputs(spark, cfg, step_settings(cfg))._jdf.queryExecution().toString()
    assert "coordinator_partition(" in plan and "regexp_extract_all" not in plan


def test_the_internal_key_is_in_no_plan_of_the_coordinator_query(spark, tmp_path):
    """The HMAC key was once inlined into the plan as SQL literals (the key xored with HMAC's pads):
    whoever reads a plan (explain, the UI, a log) could sign internal records. Now only the path
    of its file is there; the state function's workers read it."""
    from streaming.config import StreamConfig
    from streaming.query import coordinator_outputs, step_settings
    from streaming.trust import load_or_create_key

    cfg = StreamConfig.load(overrides={"stream": {"checkpoint": str(tmp_path / "cp")}})
    key = load_or_create_key(cfg.checkpoint)
    df = coordinator_outputs(spark, cfg, step_settings(cfg))
    plan = df._jdf.queryExecution().toString() + df._jdf.queryExecution().logical().toJSON()
    padded = key.ljust(64, b"\0")
    secrets = [key.hex(), bytes(b ^ 0x36 for b in padded).hex(), bytes(b ^ 0x5C for b in padded).hex()]
    assert "FlatMapGroupsInPandasWithState" in plan and "kafka" in plan  # the whole query
    for secret in secrets:
        assert secret not in plan.lower() and secret.upper() not in plan


def test_header_values_of_records_with_and_without_the_header(spark):
    """A wake record has a MAC and no stamp, a client's record on the internal topic may have no
    headers at all: reading a missing header is null, never an error that stops the query."""
    from streaming.trust import MAC_HEADER, STAMP_HEADER, header_sql

    rows = [
        (None,),
        ([],),
        ([(MAC_HEADER, b"m1")],),
        ([(MAC_HEADER, b"m2"), (STAMP_HEADER, b"p/1/2")],),
    ]
    df = spark.createDataFrame(rows, "headers array<struct<key:string,value:binary>>")
    got = [tuple(r) for r in df.selectExpr(header_sql(MAC_HEADER), header_sql(STAMP_HEADER)).collect()]
    assert got == [(None, None), (None, None), ("m1", None), ("m2", "p/1/2")]


def test_the_end_offsets_queries_are_dropped_before_the_state_function(spark):
    """Only the internal channel's records with the responder's key prefix (streaming/end_offsets.py):
    a client's record with that key, an internal record without a key or with another key go on."""
    from coordinator.group.share.offsets_admin import end_offsets_key
    from streaming.query import without_responder_queries

    rows = [(end_offsets_key(3), True), (end_offsets_key(3), False), (None, True), ("my-group", True)]
    df = spark.createDataFrame(rows, "key string, internal boolean")
    assert sorted(without_responder_queries(df).collect(), key=str) == sorted(
        [(end_offsets_key(3), False), (None, True), ("my-group", True)], key=str
    )
