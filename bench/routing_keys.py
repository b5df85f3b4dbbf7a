#!/usr/bin/env python3
"""Cost of routing one request by its key in Spark SQL, by key length (a client picks the key, so a
hostile one is as long as a Kafka string allows: 32767 UTF-16 units).

    .venv/bin/python bench/routing_keys.py

Prints the seconds to route a batch of 20 keys of each length with the stream's SQL expression
(streaming/routing.py: used when the service's jar, with its Java function, is not built), and, for
comparison, with the per-unit substring() indexing it replaced.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)

from pyspark.sql import SparkSession  # noqa: E402
from pyspark.sql import functions as F  # noqa: E402

from streaming.routing import sql_coordinator_partition  # noqa: E402


def quadratic(df, partitions: int = 50):
    """The former expression: substring() per code unit walks the hex string from its start."""
    units = "(length(h) DIV 4)"
    return df.withColumn("h", F.hex(F.encode("key", "UTF-16BE"))).withColumn(
        "cp",
        F.expr(
            f"aggregate(sequence(0, {units} - 1), CAST(0 AS BIGINT), (acc, i) -> "
            f"(acc * 31 + CAST(conv(substring(h, i * 4 + 1, 4), 16, 10) AS BIGINT)) % 4294967296) % {partitions}"
        ),
    )


def timed(build, df) -> float:
    build(df.limit(1)).collect()
    started = time.perf_counter()
    build(df).collect()
    return time.perf_counter() - started


def main() -> int:
    spark = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false").getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    print(f"{'key units':>9} {'linear s':>9} {'quadratic s':>12}")
    for n in (16, 1024, 8192, 32767):
        df = spark.createDataFrame([("é" * n,)] * 20, "key string").cache()
        df.count()
        linear = timed(lambda d: sql_coordinator_partition(d, "key", 50), df)
        old = timed(quadratic, df) if n <= 8192 else float("nan")  # 32767 takes minutes
        print(f"{n:>9} {linear:>9.3f} {old:>12.3f}")
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
