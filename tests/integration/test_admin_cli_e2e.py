"""The admin CLI (`python -m client.admin_cli`, the `coordinator-admin` script) as a subprocess
against a live service: the real broker, the test run's shared `observed` job (with the Redis read
model's projector) and Redis. Other modules' groups and transactions are on the same job: listings
are checked for this module's own ids (all `adm-`).

Groups: list, describe (offsets with the broker's log-end offsets, members, state) from Redis, from
the coordinators (--no-redis) and with Redis down (the fallback message, the same output); a reset
refused on a Stable group; dry runs, then --execute on the empty group, and a consumer that starts
from the reset offsets; delete-offsets; delete. Transactions: list, describe, find-hanging (a
transaction left open with a long timeout) and abort, after which a read_committed reader does not
see its records. And a service that does not answer."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from datetime import UTC, datetime

import pytest
from kafka import KafkaAdminClient, KafkaProducer
from kafka.admin import NewTopic

from client import ClassicGroupMember, ConsumerGroupMember, ReadCommittedConsumer, TransactionalProducer
from coordinator.routing import coordinator_partition
from deploy.kafka_local import free_port
from streaming.config import ROOT

from .harness import wait_topics_known

pytestmark = [pytest.mark.integration, pytest.mark.shared_job("observed")]

ORDERS, TXN_TOPIC = "adm-orders", "adm-txn"
GROUP, GROUP_848 = "adm-app", "adm-848"
HANGING_TID = "adm-hanging"
# The orders' record timestamps: BASE_TS + i s for the i-th record of a partition (within the topic's
# retention, or the broker deletes them).
BASE_TS = (int(time.time()) - 3600) * 1000
RECORDS = 10


@pytest.fixture(scope="module", autouse=True)
def topics(job):
    """The module's topics, known to the running job's coordinators, and the orders' records."""
    wait_topics_known(job, {ORDERS: 2, TXN_TOPIC: 1})
    producer = KafkaProducer(bootstrap_servers=job.bootstrap, acks="all")
    for p in (0, 1):
        for i in range(RECORDS):
            producer.send(ORDERS, f"order-{p}-{i}".encode(), partition=p, timestamp_ms=BASE_TS + i * 1000)
    producer.flush()
    producer.close()


def cli(job, *args: str, redis: str | None = None, timeout_ms: int = 30000) -> subprocess.CompletedProcess:
    """One CLI run. `redis`: None = the job's config ([redis] of job.toml), "off" = --no-redis,
    else a URL for --redis."""
    tool, rest = args[0], list(args[1:])
    common = ["--bootstrap-server", job.bootstrap, "--config", str(job.config_file), "--timeout", str(timeout_ms)]
    if redis == "off":
        common.append("--no-redis")
    elif redis is not None:
        common += ["--redis", redis]
    argv = [tool, *common, *rest]  # as kafka-transactions.sh, the options come before the command
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run(
        [sys.executable, "-m", "client.admin_cli", *argv],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )


def until(run, check, timeout: float = 60.0) -> subprocess.CompletedProcess:
    """Run the CLI until its result passes `check` (the read model trails the coordinators by the
    projector's lag); bounded."""
    deadline = time.monotonic() + timeout
    while True:
        result = run()
        if check(result):
            return result
        if time.monotonic() > deadline:
            raise AssertionError(
                f"no expected output in {timeout}s; last: rc={result.returncode}\n"
                f"stdout:\n{result.stdout}\nstderr:\n{result.stderr}"
            )
        time.sleep(0.5)


def rows(out: str) -> list[list[str]]:
    """The data rows of a ConsumerGroupCommand table (the header dropped), split on blanks."""
    lines = [line for line in out.split("\n") if line.strip()]
    return [line.split() for line in lines[1:]]


@pytest.fixture(scope="module")
def members(job):
    made = []

    def classic(group_id: str) -> ClassicGroupMember:
        m = ClassicGroupMember(
            job.bootstrap,
            group_id,
            [ORDERS],
            requests_topic=job.topics["requests"],
            responses_topic=job.topics["responses"],
            session_timeout_ms=30000,
            heartbeat_interval_ms=1000,
        )
        made.append(m)
        return m.start().wait_stable(timeout=120)

    yield classic
    for m in made:
        m.abandon()


@pytest.fixture(scope="module")
def consumer_group_member(job):
    client = job.client("adm-848-member")
    m = ConsumerGroupMember(client, GROUP_848, [ORDERS]).start()
    deadline = time.monotonic() + 120
    while sum(len(p) for p in m.owned().values()) < 2:
        assert time.monotonic() < deadline, f"no assignment: {m.error}"
        time.sleep(0.2)
    yield m
    m.stop()
    client.close()


@pytest.fixture(scope="module")
def app(members):
    m = members(GROUP)
    assert m.commit({(ORDERS, 0): 4, (ORDERS, 1): 6}) == {(ORDERS, 0): "NONE", (ORDERS, 1): "NONE"}
    return m


def test_list_and_describe_from_redis_the_coordinators_and_with_redis_down(job, app, consumer_group_member):
    listed = until(
        lambda: cli(job, "groups", "--list", "--state", "--type"),
        lambda r: (
            ["adm-848", "consumer", "Stable"] in rows(r.stdout) and [GROUP, "classic", "Stable"] in rows(r.stdout)
        ),
    )
    assert listed.returncode == 0 and listed.stderr == ""
    plain = cli(job, "groups", "--list", "--state", "stable", redis="off")
    assert plain.returncode == 0 and plain.stdout.split("\n")[0].split() == ["GROUP", "STATE"]
    assert [GROUP, "Stable"] in rows(plain.stdout) and ["adm-848", "Stable"] in rows(plain.stdout)

    member = app.member_id
    expected = [[GROUP, ORDERS, "0", "4", "10", "6", member], [GROUP, ORDERS, "1", "6", "10", "4", member]]
    described = until(
        lambda: cli(job, "groups", "--describe", "--group", GROUP),
        lambda r: [x[:7] for x in rows(r.stdout)] == expected,
    )
    header = described.stdout.strip("\n").split("\n")[0].split()
    assert header == [
        "GROUP",
        "TOPIC",
        "PARTITION",
        "CURRENT-OFFSET",
        "LOG-END-OFFSET",
        "LAG",
        "CONSUMER-ID",
        "HOST",
        "CLIENT-ID",
    ]
    from_coordinators = cli(job, "groups", "--describe", "--group", GROUP, "--offsets", redis="off")
    assert from_coordinators.returncode == 0 and from_coordinators.stderr == ""
    assert from_coordinators.stdout == described.stdout

    down = f"redis://127.0.0.1:{free_port()}/0"  # nothing listens there
    fallback = cli(job, "groups", "--describe", "--group", GROUP, redis=down)
    assert fallback.returncode == 0
    assert f"Redis at {down} is not reachable: " in fallback.stderr
    assert "; reading from the coordinators instead" in fallback.stderr
    assert fallback.stdout == described.stdout

    for source in (None, "off"):
        verbose = until(
            lambda source=source: cli(
                job, "groups", "--describe", "--group", GROUP, "--members", "--verbose", redis=source
            ),
            lambda r: len(rows(r.stdout)) == 1,
        )
        assert verbose.stdout.strip("\n").split("\n")[0].split() == [
            "GROUP",
            "CONSUMER-ID",
            "HOST",
            "CLIENT-ID",
            "#PARTITIONS",
            "ASSIGNMENT",
        ]
        [row] = rows(verbose.stdout)
        assert row[0:2] == [GROUP, member] and row[-2:] == ["2", f"{ORDERS}(0,1)"]
        state = cli(job, "groups", "--describe", "--group", GROUP, "--state", redis=source)
        assert rows(state.stdout) == [
            [
                GROUP,
                job.bootstrap,
                f"({coordinator_partition(GROUP, job.cfg.coordinator_partitions)})",
                "range",
                "Stable",
                "1",
            ]
        ]
        kip848 = until(
            lambda source=source: cli(job, "groups", "--describe", "--group", GROUP_848, "--members", redis=source),
            lambda r: len(rows(r.stdout)) == 1,
        )
        assert rows(kip848.stdout)[0][0:2] == [GROUP_848, consumer_group_member.member_id]
        assert rows(kip848.stdout)[0][-1] == "2"

    missing = cli(job, "groups", "--describe", "--group", "adm-nobody", redis="off")
    assert missing.returncode == 1 and "Error: Consumer group 'adm-nobody' does not exist." in missing.stderr


def test_reset_refused_on_a_stable_group(job, app):
    refused = cli(job, "groups", "--reset-offsets", "--group", GROUP, "--all-topics", "--to-earliest", "--execute")
    assert refused.returncode == 1
    assert (
        f"Assignments can only be reset if the group '{GROUP}' is inactive, but the current state is Stable."
        in refused.stderr
    )
    assert "Traceback" not in refused.stderr
    assert app.committed([(ORDERS, 0), (ORDERS, 1)]) == {(ORDERS, 0): 4, (ORDERS, 1): 6}


def test_reset_offsets_then_a_consumer_starts_from_them(job, app, members):
    app.close()
    until(
        lambda: cli(job, "groups", "--describe", "--group", GROUP, "--state", redis="off"),
        lambda r: r.returncode == 0 and rows(r.stdout) and rows(r.stdout)[0][-2] == "Empty",
    )

    dry = cli(job, "groups", "--reset-offsets", "--group", GROUP, "--topic", ORDERS, "--to-offset", "3")
    assert dry.returncode == 0
    assert dry.stderr.startswith("WARN: No action will be performed as the --execute option is missing.")
    assert dry.stdout.split("\n")[1].split() == ["GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"]
    assert rows(dry.stdout) == [[GROUP, ORDERS, "0", "3"], [GROUP, ORDERS, "1", "3"]]
    when = datetime.fromtimestamp((BASE_TS + 5000) / 1000, UTC).strftime("%Y-%m-%dT%H:%M:%S.000Z")
    by_time = cli(
        job, "groups", "--reset-offsets", "--group", GROUP, "--topic", f"{ORDERS}:1", "--to-datetime", when, "--dry-run"
    )
    assert by_time.returncode == 0 and by_time.stderr == ""
    assert rows(by_time.stdout) == [[GROUP, ORDERS, "1", "5"]]
    shifted = cli(job, "groups", "--reset-offsets", "--group", GROUP, "--all-topics", "--shift-by", "-5", "--dry-run")
    assert rows(shifted.stdout) == [[GROUP, ORDERS, "0", "0"], [GROUP, ORDERS, "1", "1"]]
    assert "New offset (-1) is lower than earliest offset for topic partition adm-orders-0" in shifted.stderr
    latest = cli(job, "groups", "--reset-offsets", "--group", GROUP, "--all-topics", "--to-latest", "--dry-run")
    assert rows(latest.stdout) == [[GROUP, ORDERS, "0", "10"], [GROUP, ORDERS, "1", "10"]]
    unchanged = cli(job, "groups", "--describe", "--group", GROUP, redis="off")
    assert [r[3] for r in rows(unchanged.stdout)] == ["4", "6"]  # dry runs commit nothing

    executed = cli(
        job, "groups", "--reset-offsets", "--group", GROUP, "--topic", ORDERS, "--to-offset", "3", "--execute"
    )
    assert executed.returncode == 0 and executed.stderr == ""
    assert rows(executed.stdout) == [[GROUP, ORDERS, "0", "3"], [GROUP, ORDERS, "1", "3"]]
    until(
        lambda: cli(job, "groups", "--describe", "--group", GROUP),
        lambda r: [x[3:6] for x in rows(r.stdout)] == [["3", "10", "7"], ["3", "10", "7"]],
    )

    # A consumer of the group starts from the reset offsets (it fetches them from the coordinator).
    consumer = members(GROUP)
    assert consumer.committed() == {(ORDERS, 0): 3, (ORDERS, 1): 3}
    consumer.close()


def test_delete_offsets_and_delete(job):
    until(
        lambda: cli(job, "groups", "--describe", "--group", GROUP, "--state", redis="off"),
        lambda r: r.returncode == 0 and rows(r.stdout) and rows(r.stdout)[0][-2] == "Empty",
    )
    deleted = cli(job, "groups", "--delete-offsets", "--group", GROUP, "--topic", f"{ORDERS}:0")
    assert deleted.returncode == 0, deleted.stderr
    assert deleted.stdout.startswith(f"Request succeed for deleting offsets with topic {ORDERS}:0 group {GROUP}")
    assert rows(deleted.stdout.split("\n", 1)[1]) == [[ORDERS, "0", "Successful"]]
    left = until(
        lambda: cli(job, "groups", "--describe", "--group", GROUP),
        lambda r: [x[1:4] for x in rows(r.stdout)] == [[ORDERS, "1", "3"]],
    )
    assert left.returncode == 0

    subscribed = cli(job, "groups", "--delete-offsets", "--group", GROUP_848, "--topic", ORDERS)
    assert subscribed.returncode == 1
    assert "Error: Encounter some partition level error, see the follow-up details:" in subscribed.stderr
    assert [ORDERS, "0", "Error:", ":Deleting", "offsets"] == rows(subscribed.stdout)[0][:5]

    gone = cli(job, "groups", "--delete", "--group", GROUP)
    assert (
        gone.returncode == 0
        and gone.stdout.strip() == f"Deletion of requested consumer groups ('{GROUP}') was successful."
    )
    until(
        lambda: cli(job, "groups", "--describe", "--group", GROUP),
        lambda r: r.returncode == 1 and f"Error: Consumer group '{GROUP}' does not exist." in r.stderr,
    )
    again = cli(job, "groups", "--delete", "--group", GROUP, redis="off")
    assert again.returncode == 1
    assert f"* Group '{GROUP}' could not be deleted due to: GROUP_ID_NOT_FOUND" in again.stdout
    busy = cli(job, "groups", "--delete", "--group", GROUP_848)
    assert busy.returncode == 1 and "NON_EMPTY_GROUP" in busy.stdout


def table(out: str) -> list[list[str]]:
    """A prettyPrintTable (kafka-transactions.sh): cells separated by tabs, padded."""
    return [[c.strip() for c in line.split("\t")[:-1]] for line in out.split("\n") if line.strip()]


def own_rows(rows: list[list[str]]) -> list[list[str]]:
    """The rows of a find-hanging table (header dropped) for this module's transactional ids."""
    return [r for r in rows[1:] if r and r[-1].startswith("adm-")]


def producer(job, tid: str, **kw) -> TransactionalProducer:
    return TransactionalProducer(
        job.bootstrap, tid, requests_topic=job.topics["requests"], responses_topic=job.topics["responses"], **kw
    )


def test_transactions_list_describe_find_hanging_and_abort(job):
    hanging = producer(job, HANGING_TID, transaction_timeout_ms=900000)
    hanging.init_transactions()
    hanging.begin_transaction()
    for i in range(3):
        hanging.send(TXN_TOPIC, f"hanging-{i}")
    hanging.flush()  # the partition is in the transaction and the records are written
    coordinator = str(coordinator_partition(HANGING_TID, job.cfg.coordinator_partitions))
    pid = str(hanging.producer_id)

    listed = until(
        lambda: cli(job, "transactions", "list"),
        lambda r: [HANGING_TID, coordinator, pid, "Ongoing"] in table(r.stdout),
    )
    assert table(listed.stdout)[0] == ["TransactionalId", "Coordinator", "ProducerId", "TransactionState"]
    for source in (None, "off"):
        described = until(
            lambda source=source: cli(job, "transactions", "describe", "--transactional-id", HANGING_TID, redis=source),
            lambda r: r.returncode == 0 and table(r.stdout)[1][4] == "Ongoing",
        )
        head, row = table(described.stdout)
        assert head[0] == "CoordinatorId" and head[-1] == "TopicPartitions"
        assert row[:6] == [coordinator, HANGING_TID, pid, str(hanging.producer_epoch), "Ongoing", "900000"]
        assert row[8] == f"{TXN_TOPIC}-0"

        # Other modules' transactions may be open on the shared job: only this module's row counts.
        found = until(
            lambda source=source: cli(
                job, "transactions", "find-hanging", "--max-transaction-timeout", "0.02", redis=source
            ),
            lambda r: len(own_rows(table(r.stdout))) == 1,
        )
        head = table(found.stdout)[0]
        [row] = own_rows(table(found.stdout))
        assert head == [
            "Topic",
            "Partition",
            "ProducerId",
            "ProducerEpoch",
            "CoordinatorEpoch",
            "StartOffset",
            "LastTimestamp",
            "Duration(min)",
            "TransactionalId",
        ]
        assert row[:4] == [TXN_TOPIC, "0", pid, str(hanging.producer_epoch)] and row[-1] == HANGING_TID
        default = cli(job, "transactions", "find-hanging", redis=source)  # 15 minutes: not hanging yet
        assert default.returncode == 0 and table(default.stdout)[0] == head and own_rows(table(default.stdout)) == []

    aborted = cli(job, "transactions", "abort", "--transactional-id", HANGING_TID)
    assert aborted.returncode == 0, aborted.stderr
    assert f"Transaction of transactional-id `{HANGING_TID}`" in aborted.stdout and " aborted;" in aborted.stdout
    after = cli(job, "transactions", "describe", "--transactional-id", HANGING_TID, redis="off")
    head, row = table(after.stdout)
    assert row[4] == "Empty" and int(row[3]) > hanging.producer_epoch and row[8] == ""
    until(
        lambda: cli(job, "transactions", "describe", "--transactional-id", HANGING_TID),
        lambda r: r.returncode == 0 and table(r.stdout)[1][4] == "Empty",
    )
    none_left = cli(job, "transactions", "find-hanging", "--max-transaction-timeout", "0", redis="off")
    assert HANGING_TID not in none_left.stdout
    again = cli(job, "transactions", "abort", "--transactional-id", HANGING_TID)
    assert again.returncode == 1 and "has no open transaction to abort (state Empty)" in again.stderr
    hanging.close()

    # A committed transaction after the abort: a read_committed reader gets it and none of the aborted records.
    with producer(job, "adm-after") as after_producer:
        after_producer.init_transactions()
        after_producer.begin_transaction()
        after_producer.send(TXN_TOPIC, "after-1")
        after_producer.commit_transaction()
    reader = ReadCommittedConsumer(job.bootstrap, [TXN_TOPIC])
    try:
        delivered: list[bytes] = []
        deadline = time.monotonic() + 60
        while b"after-1" not in delivered:
            assert time.monotonic() < deadline, f"the committed record never came: {delivered}"
            delivered += [r.value for r in reader.poll(timeout_ms=200)]
        assert delivered == [b"after-1"]
    finally:
        reader.close()

    unknown = cli(job, "transactions", "describe", "--transactional-id", "adm-nobody")
    assert unknown.returncode == 1
    assert (
        "Failed to describe transaction state of transactional-id `adm-nobody`: TRANSACTIONAL_ID_NOT_FOUND"
        in unknown.stderr
    )


def test_a_service_that_does_not_answer(job, tmp_path):
    """Request and response topics no job reads: the CLI gives up after --timeout with a message."""
    admin = KafkaAdminClient(bootstrap_servers=job.bootstrap)
    try:
        admin.create_topics([NewTopic("adm-nobody-requests", 1, 1), NewTopic("adm-nobody-responses", 1, 1)])
    finally:
        admin.close()
    config = tmp_path / "nobody.toml"
    config.write_text(
        job.config_file.read_text()
        .replace(job.topics["requests"], "adm-nobody-requests")
        .replace(job.topics["responses"], "adm-nobody-responses")
    )
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "client.admin_cli",
            "groups",
            "--bootstrap-server",
            job.bootstrap,
            "--config",
            str(config),
            "--no-redis",
            "--timeout",
            "3000",
            "--list",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 1
    assert result.stderr.startswith("Error: the coordinator service did not answer: ")
    assert "Traceback" not in result.stderr
