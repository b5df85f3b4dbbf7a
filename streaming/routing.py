"""Kafka's coordinator routing as a Spark SQL expression.

Spark's own hash() is Murmur3, not Java's String.hashCode, and a Python UDF would cost a Python
round trip per batch before the shuffle. This computes Java's hash in the JVM: over the key's
UTF-16 code units (hex of its UTF-16BE bytes, 4 hex digits per unit), h = 31·h + unit mod 2^32,
then signed, then Kafka's Utils.abs (Integer.MIN_VALUE → 0), then % partitions. A null key routes
like "" (partition 0). `coordinator/routing.py` is the reference; the tests compare the two.
"""
from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

_HEX, _UNSIGNED, _SIGNED = "_cp_hex", "_cp_unsigned", "_cp_signed"


def with_coordinator_partition(df: DataFrame, key_col: str, partitions: int,
                               out_col: str = "cp") -> DataFrame:
    units = f"(length({_HEX}) DIV 4)"
    return (
        df.withColumn(_HEX, F.hex(F.encode(F.coalesce(F.col(key_col), F.lit("")), "UTF-16BE")))
        # sequence(0, -1) counts down in Spark, so the empty key is a case of its own.
        .withColumn(_UNSIGNED, F.expr(
            f"CASE WHEN {units} = 0 THEN CAST(0 AS BIGINT) ELSE "
            f"aggregate(sequence(0, {units} - 1), CAST(0 AS BIGINT), (acc, i) -> "
            f"(acc * 31 + CAST(conv(substring({_HEX}, i * 4 + 1, 4), 16, 10) AS BIGINT)) % 4294967296) END"))
        .withColumn(_SIGNED, F.expr(
            f"IF({_UNSIGNED} >= 2147483648, {_UNSIGNED} - 4294967296, {_UNSIGNED})"))
        .withColumn(out_col, F.expr(
            f"CAST(IF({_SIGNED} = -2147483648, 0, abs({_SIGNED})) % {int(partitions)} AS INT)"))
        .drop(_HEX, _UNSIGNED, _SIGNED)
    )
