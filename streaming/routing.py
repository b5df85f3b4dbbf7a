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


def with_coordinator_partition(df: DataFrame, key_col: str, partitions: int, out_col: str = "cp") -> DataFrame:
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
