"""The supervisor's restart policy, with stand-in queries (the real query is exercised by
tests/integration/test_faults.py)."""

from __future__ import annotations

import threading

from streaming.supervisor import Decision, PermanentFailure, RestartPolicy, Supervisor, classify

FAST = RestartPolicy(initial_backoff_s=0.001, max_backoff_s=0.004, healthy_after_s=60, max_attempts=5)


class FailedQuery:
    """A query that has already terminated with `text`."""

    def __init__(self, text: str):
        self.text = text
        self.isActive = False

    def exception(self):
        return RuntimeError(self.text)

    def stop(self) -> None:
        pass


class RunningQuery:
    def __init__(self):
        self.isActive = True
        self.stopped = False

    def exception(self):
        return None

    def stop(self) -> None:
        self.stopped, self.isActive = True, False


def test_backoff_doubles_up_to_the_maximum():
    policy = RestartPolicy(initial_backoff_s=1, max_backoff_s=30)
    assert [policy.backoff(n) for n in range(1, 8)] == [1, 2, 4, 8, 16, 30, 30]


def test_policy_from_config():
    policy = RestartPolicy.from_config(
        {
            "restart_backoff_initial_ms": 500,
            "restart_backoff_max_ms": 8000,
            "restart_healthy_after_ms": 10000,
            "restart_max_attempts": 3,
        }
    )
    assert policy == RestartPolicy(0.5, 8.0, 10.0, 3)


def test_a_failed_query_is_started_again_until_it_runs_then_stops_cleanly():
    stopping = threading.Event()
    running = RunningQuery()
    built = [
        FailedQuery("org.apache.kafka.common.errors.TimeoutException: Topic t not present in metadata after 60000 ms."),
        FailedQuery("boom"),
        running,
    ]

    def start_query():
        query = built.pop(0)
        if query is running:
            stopping.set()  # as SIGTERM would, once the healthy query runs
        return query

    sup = Supervisor(start_query, FAST, stopping=stopping, poll_s=0.001)
    assert sup.run() == 0
    assert sup.restarts == 2 and running.stopped
    assert [category for _, category, _ in sup.failures] == ["broker-unavailable", "other"]


def test_gives_up_after_max_attempts_consecutive_failures():
    starts = []

    def start_query():
        starts.append(1)
        return FailedQuery("java.net.ConnectException: Connection refused")

    sup = Supervisor(start_query, FAST, stopping=threading.Event(), poll_s=0.001)
    assert sup.run() == 1
    assert len(starts) == FAST.max_attempts


def test_a_permanent_failure_is_not_retried():
    starts = []

    def start_query():
        starts.append(1)
        if len(starts) == 1:
            return FailedQuery("[STATE_STORE_VALUE_SCHEMA_NOT_COMPATIBLE] Provided value schema ...")
        raise AssertionError("restarted")

    assert Supervisor(start_query, FAST, stopping=threading.Event(), poll_s=0.001).run() == 1
    assert (
        Supervisor(
            lambda: (_ for _ in ()).throw(PermanentFailure("checkpoint damaged")), FAST, stopping=threading.Event()
        ).run()
        == 1
    )


def test_failure_handlers_decide_first_and_can_change_the_next_query():
    quarantined: set[str] = set()
    stopping = threading.Event()

    def quarantine_bad_topic(text: str):
        if "InvalidTopicException" in text:
            quarantined.add("bad.topic")
            return Decision.restart("sink topic quarantined: bad.topic", immediately=True)
        return None

    def broken_handler(text: str):
        raise ValueError("a bug in a handler")

    def start_query():
        if "bad.topic" in quarantined:
            stopping.set()
            return RunningQuery()
        return FailedQuery("org.apache.kafka.common.errors.InvalidTopicException: bad.topic")

    sup = Supervisor(
        start_query,
        RestartPolicy(initial_backoff_s=3600, max_attempts=5),
        stopping=stopping,
        failure_handlers=[broken_handler, quarantine_bad_topic],
        poll_s=0.001,
    )
    assert sup.run() == 0  # immediately: no 3600 s backoff
    assert sup.failures[0][1] == "sink topic quarantined: bad.topic"


def test_a_handler_can_give_up():
    sup = Supervisor(
        lambda: FailedQuery("fatal thing"),
        FAST,
        stopping=threading.Event(),
        failure_handlers=[lambda text: Decision.give_up("operator must act")],
    )
    assert sup.run() == 1 and sup.restarts == 0


def test_stop_during_backoff_returns_promptly():
    stopping = threading.Event()
    policy = RestartPolicy(initial_backoff_s=3600, max_attempts=0)

    def start_query():
        threading.Timer(0.05, stopping.set).start()
        return FailedQuery("boom")

    assert Supervisor(start_query, policy, stopping=stopping, poll_s=0.001).run() == 0


def test_classification():
    assert classify("Log file was malformed: failed to read correct log version") == ("damaged-checkpoint", False)
    assert classify("org.apache.kafka.common.errors.TimeoutException: Timed out") == ("broker-unavailable", False)
    assert classify("org.apache.kafka.common.errors.InvalidTopicException: x") == ("sink-rejected-record", False)
    assert classify("something new") == ("other", False)


def test_failure_text_keeps_the_jvm_cause_chain_and_the_log_summary_shows_it():
    from streaming.supervisor import failure_text, summary

    class Captured(Exception):  # the shape of pyspark's CapturedException
        _stackTrace = (
            "org.apache.spark.SparkException: Job aborted\n\tat a.b(C.scala:1)\n"
            "Caused by: org.apache.kafka.common.errors.InvalidTopicException: bad topic\n\tat x"
        )

    text = failure_text(Captured("[STREAM_FAILED] Query terminated with exception"))
    assert "InvalidTopicException" in text
    assert summary(text) == (
        "[STREAM_FAILED] Query terminated with exception\n"
        "  Caused by: org.apache.kafka.common.errors.InvalidTopicException: bad topic"
    )
