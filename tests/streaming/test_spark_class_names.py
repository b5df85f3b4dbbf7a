"""Every Spark class the job names by string (its session settings, the log configuration) exists in
the installed pyspark: Spark 4.2 moved the streaming runtime's classes to new packages, and a stale
name fails silently in the log configuration (a warning per micro-batch back on the console) or
only when a query starts (the checkpoint file manager)."""

from __future__ import annotations

import re
import zipfile
from functools import cache
from pathlib import Path

import pyspark
import pytest

from streaming import session
from streaming.config import ROOT

JARS = Path(pyspark.__file__).parent / "jars"


@cache
def spark_classes() -> frozenset[str]:
    names: set[str] = set()
    for jar in JARS.glob("spark-*.jar"):
        with zipfile.ZipFile(jar) as z:
            names.update(n[: -len(".class")].replace("/", ".") for n in z.namelist() if n.endswith(".class"))
    return frozenset(names)


def named_in_log_config() -> list[str]:
    text = (ROOT / "conf" / "log4j2.properties").read_text()
    return re.findall(r"^logger\.[\w.]+\.name\s*=\s*(org\.apache\.spark\.\S+)\s*$", text, re.M)


def named_in_session() -> list[str]:
    source = Path(session.__file__).read_text()
    return sorted(set(re.findall(r'"(org\.apache\.spark\.sql\.[\w.]+)"', source))) + [
        session.ROCKSDB_PROVIDER,
        session.HDFS_PROVIDER,
    ]


@pytest.mark.parametrize("name", named_in_log_config() + named_in_session())
def test_the_class_exists_in_the_installed_spark(name):
    assert name in spark_classes(), f"{name} is not a class of pyspark {pyspark.__version__}"


def test_the_names_are_found():
    assert "org.apache.spark.sql.execution.streaming.runtime.ProcessingTimeExecutor" in named_in_log_config()
    assert any(n.endswith("FileSystemBasedCheckpointFileManager") for n in named_in_session())
