"""The job's periodic progress line (run_stream.ProgressLog) across idle triggers' reports."""

from __future__ import annotations

from run_stream import ProgressLog

from .test_status import FakeQuery, progress


class Lines:
    def __init__(self):
        self.lines: list[str] = []

    def info(self, fmt, *args):
        self.lines.append(fmt % args)


def idle(batch_id: int, second: int) -> dict:
    """An idle trigger's report: filed under the id of the batch that runs next, no batch ran."""
    p = progress(batch_id, at=f"2026-11-29T23:00:{second:02d}.000Z")
    p["numInputRows"], p["durationMs"] = 0, {"latestOffset": 5, "triggerExecution": 6}
    return p


class CountingQuery(FakeQuery):
    """Counts how often the retained reports are read."""

    reads = 0

    @property
    def recentProgress(self):
        self.reads += 1
        return self._reports

    @recentProgress.setter
    def recentProgress(self, reports):
        self._reports = reports

    @property
    def lastProgress(self):
        return self._reports[-1] if self._reports else None


def test_idle_reports_are_not_logged_and_the_batch_that_runs_under_their_id_is():
    log = Lines()
    plog = ProgressLog(log, every_s=0)
    q = CountingQuery([progress(6), progress(7)])
    plog.maybe_log(q)
    assert log.lines == ["progress: batches 6-7, 6 input rows, batch ms p50 300 max 300"]
    q.recentProgress = [progress(6), progress(7), idle(8, 10), idle(8, 20)]
    plog.maybe_log(q)
    assert len(log.lines) == 1  # no batch ran: nothing to say
    reads = q.reads
    plog.maybe_log(q)
    assert q.reads == reads  # the same newest report: the retained ones are not read again
    ran = progress(8, ms=900)
    q.recentProgress = [progress(6), progress(7), idle(8, 10), idle(8, 20), ran, idle(9, 40)]
    plog.maybe_log(q)
    assert log.lines[-1] == "progress: batches 8-8, 3 input rows, batch ms p50 900 max 900"
    q.recentProgress = [progress(6), progress(7), idle(8, 10), idle(8, 20), ran, idle(9, 40), progress(9)]
    plog.maybe_log(q)
    assert log.lines[-1] == "progress: batches 9-9, 3 input rows, batch ms p50 300 max 300"
    assert len(log.lines) == 3
