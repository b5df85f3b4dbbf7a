"""Spark's progress reports, read cheaply from the driver.

pyspark's `query.recentProgress` and `query.lastProgress` build every report field by field over
py4j: about 140 round trips per report. Measured here, reading a buffer of 59 reports that way took
8.4 s; as one JSON string per report it took 79 ms, and the newest report alone 1.2 ms. The job's
status, its progress log and its clean stop read progress once a second or more often, so they read
it here: one `json()` call per report, and only the reports newer than a batch already seen.
"""

from __future__ import annotations

import json


def ran_a_batch(report: dict) -> bool:
    """Whether a progress report (or its compact form) is a batch's: while idle, Spark files a report
    every 10 s (`noDataProgressEventInterval`) under the id of the batch that runs next, with no
    batch run, so no `addBatch`."""
    return "addBatch" in report["durationMs"]


def _java(query):
    """The JVM StreamingQuery behind a pyspark query, or None (a query stand-in in tests)."""
    return getattr(query, "_jsq", None)


def last_progress(query) -> dict | None:
    """The newest progress report as a dict (the JSON Spark prints), or None before the first."""
    jsq = _java(query)
    if jsq is None:
        return query.lastProgress
    report = jsq.lastProgress()
    return None if report is None else json.loads(report.json())


def last_batch_id(query) -> int | None:
    """The id of the newest reported batch: two round trips, no report built."""
    jsq = _java(query)
    if jsq is None:
        report = query.lastProgress
        return None if report is None else report["batchId"]
    report = jsq.lastProgress()
    return None if report is None else int(report.batchId())


def newest_report(query) -> tuple[int, str] | None:
    """Which report is the newest, as (batchId, timestamp), or None before the first: three round
    trips, no report built. A new report (a batch's, or an idle trigger's) changes it."""
    jsq = _java(query)
    if jsq is None:
        report = query.lastProgress
        return None if report is None else (report["batchId"], report["timestamp"])
    report = jsq.lastProgress()
    return None if report is None else (int(report.batchId()), str(report.timestamp()))


def progress_since(
    query, after_batch_id: int, limit: int | None = None, after_report: tuple[int, str] | None = None
) -> list[dict]:
    """The retained reports of batches after `after_batch_id` (at most the `limit` newest), oldest
    first; with `after_report` (a report's `newest_report` key), only those newer than that report.
    While idle, Spark adds a report under the next batch's id every 10 s
    (`noDataProgressEventInterval`), up to the 100 it retains: `after_report` keeps those already
    read from being read again."""
    jsq = _java(query)
    newer: list[dict] = []
    if jsq is None:
        for p in reversed(query.recentProgress):
            if p["batchId"] <= after_batch_id or (limit is not None and len(newer) >= limit):
                break
            if after_report is not None and (p["batchId"], p["timestamp"]) == tuple(after_report):
                break
            newer.append(p)
        newer.reverse()
        return newer
    reports = jsq.recentProgress()
    for i in range(len(reports) - 1, -1, -1):  # newest first: stop at the first one already seen
        report = reports[i]
        batch_id = int(report.batchId())
        if batch_id <= after_batch_id or (limit is not None and len(newer) >= limit):
            break
        if after_report is not None and batch_id == after_report[0] and str(report.timestamp()) == after_report[1]:
            break
        newer.append(json.loads(report.json()))
    newer.reverse()
    return newer
