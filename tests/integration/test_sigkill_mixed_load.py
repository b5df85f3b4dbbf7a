"""Fault drill: repeated SIGKILLs under a mixed load. While a classic group (two members: join,
sync, heartbeats, offset commits), a transactional producer (InitProducerId, AddPartitionsToTxn,
AddOffsetsToTxn, TxnOffsetCommit, EndTxn) and a stream of simple offset commits run, the job is
SIGKILLed three times, each time once every part of the load has made progress since the last
restart (wherever in a micro-batch that lands). Afterwards every request is answered, every commit
and every committed transaction is there (its records exactly once), the transaction is complete
at the producer's last epoch, and the group coordinator state equals that of an uninterrupted
run over the same requests."""

from __future__ import annotations

import threading
import time

import pytest
from kafka import KafkaAdminClient
from kafka.admin import NewTopic

from client import ClassicGroupMember, ReadCommittedConsumer, TransactionalProducer
from coordinator import coordinator_partition
from streaming.inspect_state import read_states

from .drill import Load, client_requests, logical, reference_states, request_log

pytestmark = pytest.mark.integration

KILLS = 3
WAIT = 180
TOPICS = {"sigkill-in": 4, "sigkill-txn-out": 2}
CLASSIC_GROUP, TXN_GROUP, TID = "sigkill-classic", "sigkill-txn-group", "sigkill-tid"
SIMPLE_GROUPS = [f"sigkill-simple-{g}" for g in range(4)]


def simple_commit(i: int):
    group = SIMPLE_GROUPS[i % len(SIMPLE_GROUPS)]
    return (
        "OffsetCommit",
        9,
        {
            "groupId": group,
            "generationIdOrMemberEpoch": -1,
            "memberId": "",
            "groupInstanceId": None,
            "topics": [
                {
                    "name": "sigkill-in",
                    "partitions": [
                        {
                            "partitionIndex": 0,
                            "committedOffset": i,
                            "committedLeaderEpoch": -1,
                            "committedMetadata": None,
                        }
                    ],
                }
            ],
        },
        group,
    )


class Transactions(threading.Thread):
    """Commits transactions in a loop: two records and the input offset k, then EndTxn."""

    def __init__(self, job):
        super().__init__(daemon=True)
        self.producer = TransactionalProducer(
            job.bootstrap,
            TID,
            requests_topic=job.topics["requests"],
            responses_topic=job.topics["responses"],
            max_block_ms=WAIT * 1000,
        )
        self.committed: list[int] = []
        self.error: BaseException | None = None
        self._halt = threading.Event()

    def run(self) -> None:
        try:
            self.producer.init_transactions()
            k = 0
            while not self._halt.is_set():
                k += 1
                self.producer.begin_transaction()
                self.producer.send("sigkill-txn-out", b"txn-%d-a" % k, partition=0)
                self.producer.send("sigkill-txn-out", b"txn-%d-b" % k, partition=1)
                self.producer.send_offsets_to_transaction({("sigkill-in", 1): k}, TXN_GROUP)
                self.producer.commit_transaction()
                self.committed.append(k)
        except BaseException as e:  # noqa: BLE001 - reported by the test
            self.error = e

    def stop(self) -> None:
        self._halt.set()
        self.join(timeout=WAIT)
        self.producer.close()


class GroupCommits(threading.Thread):
    """Each Stable member commits its partitions' offsets every 0.5 s; remembers the last commit
    answered without error per partition."""

    def __init__(self, members: list[ClassicGroupMember]):
        super().__init__(daemon=True)
        self.members, self.last = members, {}
        self.error: BaseException | None = None
        self._halt = threading.Event()

    def run(self) -> None:
        n = 0
        try:
            while not self._halt.wait(0.5):
                for m in self.members:
                    assignment = m.assignment
                    if not assignment:
                        continue
                    n += 1
                    offsets = {("sigkill-in", p): n for p in assignment.get("sigkill-in", [])}
                    for tp, error in m.commit(offsets, timeout=WAIT).items():
                        if error == "NONE":
                            self.last[tp] = offsets[tp]
        except BaseException as e:  # noqa: BLE001 - reported by the test
            self.error = e

    def stop(self) -> None:
        self._halt.set()
        self.join(timeout=WAIT)


def differences(actual, expected, path: str = "") -> list[str]:
    """Where two JSON-like values differ, one line per leaf."""
    if isinstance(actual, dict) and isinstance(expected, dict):
        out = []
        for k in sorted(set(actual) | set(expected), key=str):
            if k not in actual or k not in expected:
                out.append(
                    f"{path}/{k}: only in {'actual' if k in actual else 'expected'}: "
                    f"{actual.get(k, expected.get(k))!r}"[:400]
                )
            else:
                out += differences(actual[k], expected[k], f"{path}/{k}")
        return out
    return [] if actual == expected else [f"{path}: actual {actual!r} != expected {expected!r}"[:400]]


def wait_until(condition, what, timeout: float = WAIT) -> None:
    """`what()` describes the situation if `condition()` does not hold in time."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError(what())
        time.sleep(0.2)


def test_repeated_sigkills_under_group_and_transaction_load(kafka, job_factory):
    admin = KafkaAdminClient(bootstrap_servers=kafka.bootstrap)
    try:
        admin.create_topics([NewTopic(t, n, 1) for t, n in TOPICS.items()])
    finally:
        admin.close()
    job = job_factory("sigkill", coordinator={"coordinator.partitions": 10})
    client = job.client("sigkill-client")
    members = [
        ClassicGroupMember(
            job.bootstrap,
            CLASSIC_GROUP,
            ["sigkill-in"],
            requests_topic=job.topics["requests"],
            responses_topic=job.topics["responses"],
            session_timeout_ms=30000,
            heartbeat_interval_ms=1000,
            rebalance_timeout_ms=60000,
        )
        for _ in range(2)
    ]
    load = Load(client, simple_commit, rate_per_s=5)
    txns = Transactions(job)
    for m in members:
        m.start()
    load.start()
    txns.start()
    for m in members:
        m.wait_stable(timeout=WAIT)
    commits = GroupCommits(members)
    commits.start()
    try:
        for kill in range(KILLS):
            # Each part of the load has made progress since the last restart, then SIGKILL.
            txn_mark, load_mark, commit_mark = len(txns.committed), len(client.responses()), dict(commits.last)

            def status(kill=kill, txn_mark=txn_mark, load_mark=load_mark, commit_mark=commit_mark):
                return (
                    f"no progress before kill {kill + 1}: transactions {txn_mark} -> {len(txns.committed)} "
                    f"(error {txns.error!r}), answers {load_mark} -> {len(client.responses())} (error "
                    f"{load.error!r}), group commits {commit_mark} -> {commits.last} (error {commits.error!r}), "
                    f"members {[(m.state, m.generation.generation_id, m.assignment) for m in members]}"
                )

            wait_until(
                lambda txn_mark=txn_mark, load_mark=load_mark, commit_mark=commit_mark: (
                    len(txns.committed) > txn_mark
                    and len(client.responses()) > load_mark + 5
                    and commits.last != commit_mark
                    and all(m.assignment for m in members)
                    or any(p.error for p in (txns, load, commits))
                ),
                status,
            )
            assert not any(p.error for p in (txns, load, commits)), status()
            job.kill()
            job.start()
        txn_mark = len(txns.committed)
        wait_until(
            lambda: len(txns.committed) > txn_mark + 1 or txns.error,
            lambda: f"no transaction after the last restart (error {txns.error!r})",
        )
        for m in members:
            m.wait_stable(timeout=WAIT)
    finally:
        commits.stop()
        load.stop()
        txns.stop()
        for m in members:
            m.close()
    for part in (load, txns, commits):
        assert part.error is None, repr(part.error)
    assert len(txns.committed) >= KILLS + 2

    # Every simple request is answered, without error, and the last commit of each group is fetched.
    for cid in load.sent:
        r = client.wait(cid, timeout=WAIT)["response"]
        assert r["topics"][0]["partitions"][0]["errorCode"] == 0, r
    last: dict[str, int] = {}
    for _, _, body, group in load.sent.values():
        last[group] = max(last.get(group, -1), body["topics"][0]["partitions"][0]["committedOffset"])

    def fetch(group: str, partitions: list[int]) -> dict[int, int]:
        r = client.request(
            "OffsetFetch",
            9,
            {
                "groups": [{"groupId": group, "topics": [{"name": "sigkill-in", "partitionIndexes": partitions}]}],
                "requireStable": True,
            },
            key=group,
            timeout=WAIT,
        )
        return {p["partitionIndex"]: p["committedOffset"] for p in r["groups"][0]["topics"][0]["partitions"]}

    for group, offset in last.items():
        assert fetch(group, [0]) == {0: offset}
    # The classic group's last answered commits and the last transaction's offset are committed.
    assert commits.last and fetch(CLASSIC_GROUP, sorted(p for _, p in commits.last)) == {
        p: o for (_, p), o in commits.last.items()
    }
    assert fetch(TXN_GROUP, [1]) == {1: txns.committed[-1]}
    # A read_committed reader sees every committed transaction's records exactly once.
    reader = ReadCommittedConsumer(job.bootstrap, ["sigkill-txn-out"])
    try:
        got: list[bytes] = []
        deadline = time.monotonic() + 60
        while len(got) < 2 * len(txns.committed) and time.monotonic() < deadline:
            got += [r.value for r in reader.poll(timeout_ms=200)]
    finally:
        reader.close()
    assert sorted(got) == sorted(b"txn-%d-%s" % (k, s) for k in txns.committed for s in (b"a", b"b"))
    described = client.request("DescribeTransactions", 0, {"transactionalIds": [TID]}, key=TID, timeout=WAIT)
    assert described["transactionStates"][0]["transactionState"] == "CompleteCommit"
    client.close()

    # The state after the kills equals that of an uninterrupted run over the same requests.
    batch_time = job.wait_caught_up()
    job.kill()  # the checkpoint is what matters here, and a kill is faster than a clean stop
    actual = {p: logical(s) for p, s in read_states(str(job.cfg.checkpoint)).items()}
    records = request_log(job.bootstrap, job.topics["requests"], job.topics["internal"])
    assert len(client_requests(records)) > len(load.sent)
    expected = reference_states(records, job.cfg.coordinator_config(), batch_time)
    # The transaction coordinator completes a commit in the micro-batch after its PrepareCommit
    # (deferred work, once the markers are durable): a one-batch reference never does, so its
    # transactions are not comparable; the invariants below and the checks above stand for them.
    txn_cp = coordinator_partition(TID, 10)
    txn = actual[txn_cp].pop("transactions")["transactions"][TID]
    del expected[txn_cp]["transactions"]
    assert actual == expected, "\n".join(differences(actual, expected))
    assert (txn["state"], txn["topicPartitions"], txn["pendingState"]) == ("CompleteCommit", [], None)
    assert (txn["producerId"], txn["producerEpoch"]) == (txns.producer.producer_id, txns.producer.producer_epoch)
    print(
        f"\n{KILLS} SIGKILLs: {len(client_requests(records))} requests, {len(txns.committed)} transactions "
        f"committed, {len(commits.last)} group partitions committed; group state equals the uninterrupted run"
    )
