"""The driver JVM's options (`[spark] driver_java_options`, streaming/session.py): the job's own come
first, the configured ones after them, and the installed JVM accepts them all (a JVM refuses to start
on an option it does not know, which would only show when the job starts)."""

from __future__ import annotations

import shlex
import shutil
import subprocess

import pytest

from streaming.config import StreamConfig
from streaming.session import LOG4J_CONFIG, driver_java_options


def test_configured_options_follow_the_job_s_own():
    options = driver_java_options(None, " -XX:-UsePerfData -Xss2m ")
    assert options.startswith(f"-Dlog4j2.configurationFile=file:{LOG4J_CONFIG} ")
    assert options.endswith(" -XX:-UsePerfData -Xss2m")
    assert driver_java_options(None, "") == driver_java_options(None)


@pytest.mark.skipif(shutil.which("java") is None, reason="no JVM installed")
def test_the_installed_jvm_accepts_the_default_options():
    extra = StreamConfig.load(None, environ={}).spark["driver_java_options"]
    assert extra, "conf/defaults.toml sets the driver's extra JVM options"
    java = subprocess.run(["java", *shlex.split(extra), "-version"], capture_output=True, text=True, timeout=60)
    assert java.returncode == 0, java.stderr


# HotSpot's own values, which the defaults multiply by ten (conf/defaults.toml: the idle trigger
# loop's methods stay out of C2; docs/operations.md, *What an idle service costs*).
HOTSPOT_TIER4 = {
    "Tier4InvocationThreshold": 5000,
    "Tier4MinInvocationThreshold": 600,
    "Tier4CompileThreshold": 15000,
    "Tier4BackEdgeThreshold": 40000,
}


@pytest.mark.skipif(shutil.which("java") is None, reason="no JVM installed")
def test_the_default_options_raise_c2_s_thresholds_in_the_jvm():
    extra = StreamConfig.load(None, environ={}).spark["driver_java_options"]
    java = subprocess.run(
        ["java", *shlex.split(extra), "-XX:+PrintFlagsFinal", "-version"], capture_output=True, text=True, timeout=60
    )
    assert java.returncode == 0, java.stderr
    final = {}
    for line in java.stdout.splitlines():
        fields = line.split()
        if len(fields) >= 4 and fields[1] in HOTSPOT_TIER4:
            final[fields[1]] = int(fields[3])
    assert final == {name: 10 * hotspot for name, hotspot in HOTSPOT_TIER4.items()}
