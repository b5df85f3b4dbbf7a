"""`coordinator-drill` against the real broker and job: three SIGKILLs under the mixed load pass,
and a checkpoint whose state was altered in one coordinator partition fails, naming the partition
and the first differing entity."""

from __future__ import annotations

import copy
import json

import pytest

from client.drill.cli import main as drill_main
from client.drill.verify import CheckpointStates, verify
from coordinator import coordinator_partition

# Three restarts of Spark on a shared 2-core machine take minutes; every wait inside is bounded.
pytestmark = [pytest.mark.integration, pytest.mark.timeout(1800)]

PARTITIONS = 10


@pytest.fixture(scope="module")
def drilled(job_factory, tmp_path_factory):
    """One drill run (it starts, kills and stops the job itself); its exit code and JSON report."""
    job = job_factory("drill", start=False, coordinator={"coordinator.partitions": PARTITIONS})
    report_file = tmp_path_factory.mktemp("drill-report") / "report.json"
    code = drill_main(
        [
            "run",
            "--config",
            str(job.config_file),
            "--kill",
            "local",
            "--kills",
            "3",
            "--seed",
            "11",
            "--rate",
            "8",
            "--prefix",
            "e2e",
            "--report-json",
            str(report_file),
            "--job-log",
            str(job.log_file),
        ]
    )
    return job, code, json.loads(report_file.read_text()) if report_file.exists() else None


def test_a_drill_with_three_kills_passes(drilled, capsys):
    job, code, report = drilled
    assert report is not None, job.tail()
    failed = [c for c in report["checks"] if not c["ok"]]
    assert code == 0 and report["passed"], json.dumps(failed, indent=1)
    assert report["seed"] == 11 and [k["kill"] for k in report["kills"]] == [1, 2, 3]
    assert all(k["recoverySeconds"] > 0 for k in report["kills"])
    names = {c["name"] for c in report["checks"]}
    assert {
        "every request answered",
        "checkpoint equals an uninterrupted run",
        "every transaction in a final state",
        "state-log replay equals the checkpoint",
        "every acknowledged offset commit fetchable with its value",
        "committed transactions' records read exactly once (markers written)",
    } <= names
    assert report["info"]["requests"] > 50


class OneGroupAltered(CheckpointStates):
    """The checkpoint as read, with one group's generation changed in one coordinator partition."""

    def __init__(self, inner: CheckpointStates, group: str):
        super().__init__(inner.checkpoint, inner.state_store)
        self.group = group

    def read(self, batch_id: int) -> dict[int, dict]:
        states = copy.deepcopy(super().read(batch_id))
        p = coordinator_partition(self.group, PARTITIONS)
        states[p]["components"]["groups"]["groups"][self.group]["generationId"] += 7
        return states


def test_an_altered_partition_fails_naming_the_partition_and_the_entity(drilled):
    job, _, report = drilled
    assert report is not None
    group = "e2e-classic"
    p = coordinator_partition(group, PARTITIONS)
    altered = verify(job.cfg, states=OneGroupAltered(CheckpointStates(str(job.cfg.checkpoint)), group))
    rendered = altered.render()
    assert not altered.passed, rendered
    failed = {c.name: c.failures for c in altered.checks if not c.ok}
    assert set(failed) == {"checkpoint equals an uninterrupted run", "state-log replay equals the checkpoint"}, rendered
    [line] = failed["checkpoint equals an uninterrupted run"]
    assert line.startswith(f"coordinator partition {p}: ") and f"GroupMetadata {group}: " in line, line
    assert "generationId" in line
    assert f"GroupMetadata {group}" in failed["state-log replay equals the checkpoint"][0]
    assert "FAIL" in rendered and f"coordinator partition {p}" in rendered
    # The same checkpoint, read as it is, passes.
    assert verify(job.cfg).passed
