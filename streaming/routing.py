"""Kafka's coordinator routing in Spark SQL.

Spark's own hash() is Murmur3, not Java's String.hashCode, and a Python UDF would cost a Python
round trip per batch before the shuffle. So the hash is computed in the JVM, by one of two
equivalent expressions:

- `coordinator_partition(key, partitions)`, a Java UDF of the service's own jar
  (deploy/java/coordinator/spark/CoordinatorPartition.java, built by deploy/setup.sh): Kafka's own
  `Utils.abs(key.hashCode()) % partitions`. It is used whenever the jar is on the JVM's class path.
- Without the jar, the same in SQL: over the key's UTF-16 code units (hex of its UTF-16BE bytes,
  4 hex digits per unit), h = 31·h + unit mod 2^32, then signed, then Kafka's Utils.abs
  (Integer.MIN_VALUE → 0), then % partitions. JFR put this expression at a fifth to two fifths of
  the JVM's samples in a burst (bench/jvm_profile.py); the Java function costs the job ~10% less CPU
  per request (docs/operations.md, *Throughput*).

A null key routes like "" (partition 0). `coordinator/routing.py` is the reference; the tests compare
both expressions with it.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

_HEX, _UNSIGNED, _SIGNED = "_cp_hex", "_cp_unsigned", "_cp_signed"


JAVA_FUNCTION = "coordinator_partition"
JAVA_CLASS = "coordinator.spark.CoordinatorPartition"


def java_routing(spark) -> bool:
    """Registers `coordinator_partition` in the session; False when its class is not on the JVM's class
    path (no jar built: the SQL expression is used)."""
    from pyspark.sql.types import IntegerType

    try:
        spark.udf.registerJavaFunction(JAVA_FUNCTION, JAVA_CLASS, IntegerType())
    except Exception:  # noqa: BLE001 - py4j's error for a missing class: fall back to SQL
        return False
    return True


def with_coordinator_partition(
    df: DataFrame, key_col: str, partitions: int, out_col: str = "cp", use_java: bool | None = None
) -> DataFrame:
    """`df` with `out_col`, the coordinator partition of `key_col`; `use_java` None: the Java function
    when the jar is there."""
    if use_java is None:
        use_java = java_routing(df.sparkSession)
    elif use_java and not java_routing(df.sparkSession):
        raise RuntimeError(f"{JAVA_CLASS} is not on the JVM's class path (run deploy/setup.sh)")
    if use_java:
        return df.withColumn(out_col, F.call_udf(JAVA_FUNCTION, F.col(key_col), F.lit(int(partitions))))
    return sql_coordinator_partition(df, key_col, partitions, out_col)


def sql_coordinator_partition(df: DataFrame, key_col: str, partitions: int, out_col: str = "cp") -> DataFrame:
    # The code units are cut out of the hex string by one regex pass: linear in the key's length.
    # (Indexing the string per code unit with substring() is quadratic, because a UTF8String is
    # walked from its start: a 32767-unit hostile key then costs about a minute.)
    return (
        df.withColumn(_HEX, F.hex(F.encode(F.coalesce(F.col(key_col), F.lit("")), "UTF-16BE")))
        .withColumn(
            _UNSIGNED,
            F.expr(
                f"aggregate(regexp_extract_all({_HEX}, '([0-9A-F]{{4}})', 1), CAST(0 AS BIGINT), (acc, u) -> "
                f"(acc * 31 + CAST(conv(u, 16, 10) AS BIGINT)) % 4294967296)"
            ),
        )
        .withColumn(_SIGNED, F.expr(f"IF({_UNSIGNED} >= 2147483648, {_UNSIGNED} - 4294967296, {_UNSIGNED})"))
        .withColumn(out_col, F.expr(f"CAST(IF({_SIGNED} = -2147483648, 0, abs({_SIGNED})) % {int(partitions)} AS INT)"))
        .drop(_HEX, _UNSIGNED, _SIGNED)
    )
