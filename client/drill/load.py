"""The drill's load: simple offset commits (and FindCoordinator) at a steady rate, a classic group
committing its partitions' offsets, a KIP-848 consumer group heartbeating, and a transactional
producer committing transactions, all through the real topics. Each part remembers what it sent and
what was acknowledged, for the checks after the kills."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from client import ClassicGroupMember, ConsumerGroupMember, CoordinatorClient, TransactionalProducer


class Load(threading.Thread):
    """Sends `make(i) -> (api, version, body, key)` requests at a steady rate until stopped, and
    remembers what it sent and when."""

    def __init__(self, client: CoordinatorClient, make: Callable[[int], tuple], rate_per_s: float = 20):
        super().__init__(daemon=True)
        self.client, self.make, self.interval = client, make, 1.0 / rate_per_s
        self.sent: dict[int, tuple] = {}
        self.sent_at: dict[int, float] = {}  # correlation id -> time.monotonic() when handed to send
        self._halt = threading.Event()
        self.error: BaseException | None = None

    def run(self) -> None:
        i = 0
        try:
            while not self._halt.is_set():
                api, version, body, key = self.make(i)
                at = time.monotonic()
                cid = self.client.send(api, version, body, key=key)
                self.sent[cid] = (api, version, body, key)
                self.sent_at[cid] = at
                i += 1
                self._halt.wait(self.interval)
        except BaseException as e:  # noqa: BLE001 - reported by the drill
            self.error = e

    def stop(self) -> None:
        self._halt.set()
        self.join(timeout=30)


@dataclass
class LoadSpec:
    """How much of each kind of traffic the drill drives."""

    rate_per_s: float = 10  # simple requests (every other one an offset commit)
    simple_groups: int = 4
    classic_members: int = 2
    consumer_members: int = 2  # KIP-848 (ConsumerGroupHeartbeat)
    transactions: bool = True
    prefix: str = "drill"  # names of groups, topics and the transactional id
    wait_s: float = 180  # bound for every wait on the service
    probe_only: bool = False  # only FindCoordinator (no state changes): watch the existing traffic
    run_id: str = ""  # marks this run's transactional records (a deployment keeps earlier drills')

    @property
    def input_topic(self) -> str:
        return f"{self.prefix}-in"

    @property
    def txn_topic(self) -> str:
        return f"{self.prefix}-txn-out"

    @property
    def topics(self) -> dict[str, int]:
        return {self.input_topic: 4, self.txn_topic: 2}


def ensure_data_topics(bootstrap: str, partitions: dict[str, int], replication: int = 1) -> None:
    from kafka import KafkaAdminClient
    from kafka.admin import NewTopic
    from kafka.errors import TopicAlreadyExistsError

    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        for name, count in partitions.items():
            try:
                admin.create_topics([NewTopic(name, count, replication)])
            except TopicAlreadyExistsError:
                pass
    finally:
        admin.close()


class _Worker(threading.Thread):
    def __init__(self):
        super().__init__(daemon=True)
        self.error: BaseException | None = None
        self._halt = threading.Event()

    def run(self) -> None:
        try:
            self.loop()
        except BaseException as e:  # noqa: BLE001 - reported by the drill
            self.error = e

    def loop(self) -> None:
        raise NotImplementedError

    def stop(self, timeout: float) -> None:
        self._halt.set()
        self.join(timeout=timeout)


class Transactions(_Worker):
    """Commits transactions in a loop: two records and an input offset k, then EndTxn."""

    def __init__(self, bootstrap: str, topics: dict, spec: LoadSpec):
        super().__init__()
        self.spec = spec
        self.tid, self.group = f"{spec.prefix}-tid", f"{spec.prefix}-txn-group"
        # A transaction open across a kill must outlive the restart, or the coordinator aborts it
        # on its timeout and fences the producer (Kafka's transaction.max.timeout.ms: 15 minutes).
        timeout_ms = min(900_000, max(60_000, int(2 * spec.wait_s * 1000)))
        self.producer = TransactionalProducer(
            bootstrap,
            self.tid,
            requests_topic=topics["requests"],
            responses_topic=topics["responses"],
            max_block_ms=int(spec.wait_s * 1000),
            transaction_timeout_ms=timeout_ms,
        )
        self.committed: list[int] = []

    def loop(self) -> None:
        self.producer.init_transactions()
        k = 0
        while not self._halt.is_set():
            k += 1
            self.producer.begin_transaction()
            self.producer.send(self.spec.txn_topic, self.value(k, "a"), partition=0)
            self.producer.send(self.spec.txn_topic, self.value(k, "b"), partition=1)
            self.producer.send_offsets_to_transaction({(self.spec.input_topic, 1): k}, self.group)
            self.producer.commit_transaction()
            self.committed.append(k)
            self._halt.wait(0.2)

    def value(self, k: int, part: str) -> bytes:
        return f"{self.spec.run_id}-txn-{k}-{part}".encode()

    def stop(self, timeout: float) -> None:
        super().stop(timeout)
        self.producer.close()


class GroupCommits(_Worker):
    """Each classic member with an assignment commits its partitions' offsets every 0.5 s; the last
    commit answered without error per partition is remembered."""

    def __init__(self, members: list[ClassicGroupMember], spec: LoadSpec):
        super().__init__()
        self.members, self.spec = members, spec
        self.last: dict[tuple[str, int], int] = {}  # (topic, partition) -> offset

    def loop(self) -> None:
        n = 0
        while not self._halt.wait(0.5):
            for m in self.members:
                assignment = m.assignment
                if not assignment:
                    continue
                n += 1
                offsets = {(self.spec.input_topic, p): n for p in assignment.get(self.spec.input_topic, [])}
                for tp, error in m.commit(offsets, timeout=self.spec.wait_s).items():
                    if error == "NONE":
                        self.last[tp] = offsets[tp]


class MixedLoad:
    """Every part of the load; `progress()` is a mark that moves as each part gets answers."""

    def __init__(self, bootstrap: str, topics: dict, spec: LoadSpec):
        self.spec, self.bootstrap, self.topics = spec, bootstrap, topics
        self.client = CoordinatorClient(
            bootstrap,
            f"{spec.prefix}-client",
            requests_topic=topics["requests"],
            responses_topic=topics["responses"],
            startup_timeout=spec.wait_s,
        )
        self.simple_groups = [f"{spec.prefix}-simple-{g}" for g in range(spec.simple_groups)]
        self.classic_group, self.consumer_group = f"{spec.prefix}-classic", f"{spec.prefix}-consumer"
        self.simple = Load(self.client, self._simple_request, spec.rate_per_s)
        self.classic = [
            ClassicGroupMember(
                bootstrap,
                self.classic_group,
                [spec.input_topic],
                requests_topic=topics["requests"],
                responses_topic=topics["responses"],
                session_timeout_ms=45000,
                heartbeat_interval_ms=1000,
                rebalance_timeout_ms=60000,
            )
            for _ in range(spec.classic_members)
        ]
        self.consumers = [
            ConsumerGroupMember(
                CoordinatorClient(
                    bootstrap,
                    f"{spec.prefix}-consumer-{i}",
                    requests_topic=topics["requests"],
                    responses_topic=topics["responses"],
                    startup_timeout=spec.wait_s,
                ),
                self.consumer_group,
                [spec.input_topic],
            )
            for i in range(spec.consumer_members)
        ]
        self.txns = Transactions(bootstrap, topics, spec) if spec.transactions else None
        self.commits = GroupCommits(self.classic, spec)

    def _simple_request(self, i: int):
        group = self.simple_groups[i % len(self.simple_groups)]
        if i % 2 or self.spec.probe_only:
            return "FindCoordinator", 4, {"keyType": 0, "coordinatorKeys": [group]}, group
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
                        "name": self.spec.input_topic,
                        "partitions": [
                            {
                                "partitionIndex": i % 4,
                                "committedOffset": i,
                                "committedLeaderEpoch": -1,
                                "committedMetadata": f"drill-{i}",
                            }
                        ],
                    }
                ],
            },
            group,
        )

    def wait_ready(self) -> None:
        """Wait (bounded) until the service answers and stores offsets of the drill's input topic:
        a topic created just now is unknown (UNKNOWN_TOPIC_OR_PARTITION) until the job's next
        metadata refresh."""
        group = f"{self.spec.prefix}-probe"
        deadline = time.monotonic() + self.spec.wait_s
        while True:
            r = self.client.request(
                "OffsetCommit",
                9,
                {
                    "groupId": group,
                    "generationIdOrMemberEpoch": -1,
                    "memberId": "",
                    "groupInstanceId": None,
                    "topics": [
                        {
                            "name": self.spec.input_topic,
                            "partitions": [
                                {
                                    "partitionIndex": 0,
                                    "committedOffset": 0,
                                    "committedLeaderEpoch": -1,
                                    "committedMetadata": None,
                                }
                            ],
                        }
                    ],
                },
                key=group,
                timeout=self.spec.wait_s,
            )
            code = r["topics"][0]["partitions"][0]["errorCode"]
            if code == 0:
                return
            if time.monotonic() > deadline:
                raise TimeoutError(
                    f"the service does not store offsets of {self.spec.input_topic} "
                    f"(error code {code}) after {self.spec.wait_s:.0f}s"
                )
            time.sleep(1)

    def start(self) -> None:
        self.wait_ready()
        self.simple.start()
        for m in self.classic:
            m.start()
        for member in self.consumers:
            member.start()
        if self.txns:
            self.txns.start()
        self.commits.start()

    @property
    def parts(self) -> list:
        return [p for p in (self.simple, self.txns, self.commits) if p is not None]

    def errors(self) -> list[str]:
        out = [f"{type(p).__name__}: {p.error!r}" for p in self.parts if p.error is not None]
        out += [f"consumer member {m.member_id}: {m.fatal}" for m in self.consumers if m.fatal]
        return out

    def progress(self) -> tuple:
        return (
            len(self.client.responses()),
            len(self.txns.committed) if self.txns else 0,
            dict(self.commits.last),
            tuple(m.heartbeats for m in self.consumers),
        )

    def progressed_since(self, mark: tuple) -> bool:
        """Every part got answers since `mark` (so a kill lands in the middle of all of them)."""
        now = self.progress()
        return (
            now[0] > mark[0] + 3
            and (not self.txns or now[1] > mark[1])
            and (not self.classic or now[2] != mark[2])
            and all(a > b for a, b in zip(now[3], mark[3], strict=True))
        )

    def stop(self) -> None:
        """Stop every part; group members leave their groups, the last transaction ends."""
        self.commits.stop(self.spec.wait_s)
        self.simple.stop()
        if self.txns:
            self.txns.stop(self.spec.wait_s)
        for m in self.classic:
            m.close()
        for member in self.consumers:
            member.stop()
            member.client.close()

    def close(self) -> None:
        self.client.close()
