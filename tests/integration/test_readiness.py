"""A new user's first minute: the README's worked example, run the moment the service is launched,
gets its answer; the job says when it is ready, on a quiet console; `streaming.status` reports it
up with its batches and lag, and down once stopped."""

from __future__ import annotations

import contextlib
import io
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from client import CoordinatorClient
from coordinator import coordinator_partition
from streaming.config import ROOT

pytestmark = pytest.mark.integration


def readme_example() -> str:
    """The README's first Python block with a CoordinatorClient (the worked example), as written."""
    text = (ROOT / "README.md").read_text()
    blocks = [b for b in re.findall(r"```python\n(.*?)```", text, re.S) if "CoordinatorClient" in b]
    assert blocks, "the README's worked example moved"
    return blocks[0]


def run_example(code: str, job) -> str:
    """Run the example's code as written, pointed at this test's broker and topics (the README's
    address and topic names are the local defaults)."""

    class Client(CoordinatorClient):
        def __init__(self, bootstrap_servers, *args, **kw):
            assert bootstrap_servers == "127.0.0.1:9092"
            super().__init__(
                job.bootstrap,
                *args,
                requests_topic=job.topics["requests"],
                responses_topic=job.topics["responses"],
                **kw,
            )

    code = code.replace("from client import CoordinatorClient\n", "")
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "README.md", "exec"), {"CoordinatorClient": Client})  # noqa: S102
    return out.getvalue()


def status(job, *extra: str) -> tuple[int, dict]:
    proc = subprocess.run(
        [sys.executable, "-m", "streaming.status", "--config", str(job.config_file), "--json", *extra],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    return proc.returncode, json.loads(proc.stdout)


def test_readme_example_is_answered_when_run_right_after_the_service_starts(job_factory):
    job = job_factory("fresh", start=False)
    mark = job.launch()  # no waiting for the stream: the example runs while Spark is starting
    printed = run_example(readme_example(), job)
    answer = eval(printed, {})  # noqa: S307 - the example prints the response dict
    [coordinator] = answer["coordinators"]
    assert coordinator["key"] == "my-group" and coordinator["errorCode"] == 0
    assert coordinator["nodeId"] == coordinator_partition("my-group", 50)

    job.wait_for_line(mark, b"COORDINATOR-READY")
    console = job.log_file.read_text(errors="replace")[mark:]
    ready = [line for line in console.splitlines() if "READY:" in line]
    assert len(ready) == 1 and "answers requests on" in ready[0], console[-2000:]
    # Quiet by default: no library INFO lines, no progress bar, no warning per micro-batch.
    assert not re.search(r" INFO kafka\.", console), console[-2000:]
    assert "[Stage " not in console and "falling behind" not in console, console[-2000:]


def test_status_reports_up_with_batches_and_lag_then_down_after_stop(job_factory):
    job = job_factory("status")  # started: the query runs
    code, up = status(job, "--wait-ready", "180")
    assert code == 0 and up["up"] and up["state"] == "ready", up
    assert up["lastBatchId"] is not None and up["lastBatchMs"] is not None and up["batchesPerS"] > 0
    assert isinstance(up["requestLag"], int) and up["requestLag"] >= 0
    assert up["readyAfterS"] is not None and up["readyAfterS"] > 0

    job.stop()
    code, down = status(job)
    assert code == 1 and not down["up"] and down["state"] == "stopped", down
    assert "not running" in down["reason"]
    assert Path(str(job.cfg.checkpoint) + ".status.json").exists()
