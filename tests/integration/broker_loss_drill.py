"""The broker-loss drill: a three-broker cluster (deploy/kafka_cluster.py) loses, by SIGKILL, the
broker leading the most partitions of the service's topics, under a mixed load through the JSON
path (client/drill's MixedLoad: simple commits, a classic group, a KIP-848 group, transactions)
and through the gateway (a confluent-kafka consumer group committing offsets in a loop). The broker
stays down `down_s`, then comes back on its data. Shared by tests/integration/test_broker_loss_e2e.py
(a short outage) and bench/broker_loss.py (a minute).

The checks are the recovery drill's (client/drill): every request answered, every acknowledged
commit fetched back, every committed transaction's records read exactly once by a read_committed
reader, the checkpoint equal to an uninterrupted run and to the state-log replay; plus the gateway
group's acknowledged commits. The figure is the answer gap: the longest time without an answer
while the broker fails over, for the service (JSON path and gateway) and, side by side, for the
brokers' own group coordinator under the same kill (a confluent-kafka group of the same loop,
committing straight to the brokers, whose coordinator partition the killed broker led).
"""

from __future__ import annotations

import threading
import time
import uuid
from dataclasses import dataclass, field

from client.drill.cli import load_checks, wait_until
from client.drill.compare import Report
from client.drill.load import LoadSpec, MixedLoad, ensure_data_topics
from client.drill.verify import CheckpointStates, verify
from deploy.kafka_cluster import KafkaCluster, partition_leaders


class AnswerTimes(threading.Thread):
    """Samples a count of answers every 10 ms and keeps the times it grew: the gaps between
    answers, whatever client produced them."""

    def __init__(self, count):
        super().__init__(daemon=True)
        self.count, self.times = count, []
        self._halt = threading.Event()

    def run(self) -> None:
        last = self.count()
        while not self._halt.wait(0.01):
            now = self.count()
            if now > last:
                self.times.append(time.monotonic())
                last = now

    def stop(self) -> None:
        self._halt.set()
        self.join(timeout=5)

    def largest_gap(self, since: float, until: float) -> float:
        """The longest time without an answer in [since, until] (its ends count as answers: a
        stream that never answered again shows the whole window)."""
        times = [since] + [t for t in self.times if since < t < until] + [until]
        return max(b - a for a, b in zip(times, times[1:], strict=False))

    def usual_gap(self, until: float) -> float:
        """The median time between answers before `until` (what a gap compares with)."""
        times = [t for t in self.times if t < until]
        gaps = sorted(b - a for a, b in zip(times, times[1:], strict=False))
        return gaps[len(gaps) // 2] if gaps else float("nan")

    def first_after(self, t: float) -> float | None:
        return next((x - t for x in self.times if x > t), None)


class CommitLoop(threading.Thread):
    """A confluent-kafka consumer in a classic group committing its partitions' offsets
    synchronously, one commit after the other (n = 1, 2, ...); remembers the last acknowledged
    offset per partition. Against the gateway it exercises the service; against the brokers, their
    own group coordinator."""

    def __init__(self, bootstrap: str, group: str, topic: str):
        super().__init__(daemon=True)
        self.bootstrap, self.group, self.topic = bootstrap, group, topic
        self.acked: dict[int, int] = {}
        self.commits = 0
        self.failures: list[str] = []
        self.error: BaseException | None = None
        self._halt = threading.Event()

    def run(self) -> None:
        from confluent_kafka import Consumer, KafkaException, TopicPartition

        consumer = Consumer(
            {
                "bootstrap.servers": self.bootstrap,
                "group.id": self.group,
                "group.protocol": "classic",
                "enable.auto.commit": False,
                "session.timeout.ms": 45000,
                "client.id": f"{self.group}-member",
                "broker.address.family": "v4",
                "log_level": 2,  # not librdkafka's line per refused connection to the killed broker
            }
        )
        try:
            consumer.subscribe([self.topic])
            n = 0
            while not self._halt.is_set():
                consumer.poll(0.05)
                assignment = [tp.partition for tp in consumer.assignment()]
                if not assignment:
                    continue
                n += 1
                try:
                    result = consumer.commit(
                        offsets=[TopicPartition(self.topic, p, n) for p in assignment], asynchronous=False
                    )
                except KafkaException as e:
                    self.failures.append(f"commit {n}: {e}")
                    continue
                for tp in result or ():
                    if tp.error is None:
                        self.acked[tp.partition] = tp.offset
                self.commits += 1
        except BaseException as e:  # noqa: BLE001 - reported by the drill
            self.error = e
        finally:
            consumer.close()

    def stop(self) -> None:
        self._halt.set()
        self.join(timeout=60)

    def fetched(self) -> dict[int, int]:
        """The group's committed offsets, fetched through the same bootstrap by a new member."""
        from confluent_kafka import Consumer, TopicPartition

        consumer = Consumer(
            {"bootstrap.servers": self.bootstrap, "group.id": self.group, "broker.address.family": "v4", "log_level": 2}
        )
        try:
            got = consumer.committed([TopicPartition(self.topic, p) for p in self.acked], timeout=60)
            return {tp.partition: tp.offset for tp in got}
        finally:
            consumer.close()


def kafka_partition_for(group: str, partitions: int) -> int:
    """Kafka's __consumer_offsets partition of a group: Utils.abs(groupId.hashCode()) % partitions."""
    h = 0
    for ch in group:  # Java's String.hashCode over UTF-16 units; group ids here are ASCII
        h = (31 * h + ord(ch)) & 0xFFFFFFFF
    h = h - (1 << 32) if h >= 1 << 31 else h
    return (0 if h == -(1 << 31) else abs(h)) % partitions


def group_led_by(bootstrap: str, broker: int, prefix: str) -> str:
    """A group id whose __consumer_offsets partition `broker` leads (Kafka: abs(hashCode) % n)."""
    from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition
    from kafka import KafkaAdminClient

    # The brokers create __consumer_offsets at a group's first FindCoordinator.
    probe = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": f"{prefix}-probe", "broker.address.family": "v4", "log_level": 2}
    )
    try:
        # A just-started cluster may still be loading the topic's coordinator: NOT_COORDINATOR and
        # the like are retriable, as Kafka's clients treat them; try again until it answers.
        deadline = time.monotonic() + 60
        while True:
            try:
                probe.committed([TopicPartition("__consumer_offsets", 0)], timeout=60)
                break
            except KafkaException as e:
                error = e.args[0]
                loading = error.code() in (
                    KafkaError.NOT_COORDINATOR,
                    KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
                    KafkaError.COORDINATOR_NOT_AVAILABLE,
                )
                if not (loading or error.retriable()) or time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
    finally:
        probe.close()
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        (meta,) = admin.describe_topics(["__consumer_offsets"])
        led = {p["partition_index"] for p in meta["partitions"] if p["leader_id"] == broker}
        n = len(meta["partitions"])
    finally:
        admin.close()
    if not led:
        raise RuntimeError(f"broker {broker} leads no __consumer_offsets partition")
    for i in range(10_000):
        group = f"{prefix}-{i}"
        if kafka_partition_for(group, n) in led:
            return group
    raise RuntimeError("no group id found")


@dataclass
class Figures:
    victim: int = 0
    leaders_before: dict = field(default_factory=dict)
    down_s: float = 0.0
    restart_s: float = 0.0
    usual_json_s: float = 0.0
    usual_gateway_s: float = 0.0
    usual_broker_s: float = 0.0
    gap_json_s: float = 0.0
    gap_gateway_s: float = 0.0
    gap_broker_s: float = 0.0
    json_requests: int = 0
    gateway_commits: int = 0
    broker_commits: int = 0
    transactions: int = 0
    query_restarts: int = 0
    restarted_node_in_sync_s: float = 0.0
    phases: dict = field(default_factory=dict)  # seconds from the drill's start to each phase's end

    def lines(self) -> list[str]:
        return [
            f"killed broker {self.victim} (partition leaders of the service's topics before: "
            f"{dict(sorted(self.leaders_before.items()))}), down {self.down_s:.0f} s, answering again "
            f"{self.restart_s:.0f} s after its start",
            "longest time without an answer from the kill on (before the kill: median time between answers):",
            f"  service, JSON path (simple requests)      {self.gap_json_s:6.1f} s   ({self.usual_json_s:.2f} s)",
            f"  service, through the gateway (commits)    {self.gap_gateway_s:6.1f} s   ({self.usual_gateway_s:.2f} s)",
            f"  the brokers' own group coordinator        {self.gap_broker_s:6.1f} s   ({self.usual_broker_s:.2f} s)"
            "  same client, same loop",
            f"load: {self.json_requests} JSON-path requests, {self.gateway_commits} gateway commits, "
            f"{self.broker_commits} direct commits, {self.transactions} transactions committed",
            f"the job restarted its query {self.query_restarts} time(s)"
            + (
                f"; the restarted broker was back in every ISR {self.restarted_node_in_sync_s:.1f} s after its start began"
                if self.restarted_node_in_sync_s
                else ""
            ),
            "drill phases (s from its start): " + ", ".join(f"{k} {v:.0f}" for k, v in self.phases.items()),
        ]


def service_topics(job, gateway_reply_to: str | None = None) -> list[str]:
    names = [job.topics[k] for k in ("requests", "internal", "responses", "state_log", "events", "timers")]
    return names + ([gateway_reply_to] if gateway_reply_to else [])


def wait_in_sync(bootstrap: str, topics: list[str], timeout: float) -> None:
    from kafka import KafkaAdminClient

    def all_in_sync() -> bool:
        admin = KafkaAdminClient(bootstrap_servers=bootstrap)
        try:
            return all(
                len(p["isr_nodes"]) == len(p["replica_nodes"])
                for m in admin.describe_topics(topics)
                for p in m["partitions"]
            )
        finally:
            admin.close()

    wait_until(all_in_sync, f"replicas of {topics} not back in sync in {timeout:.0f}s", timeout, every=0.5)


def run_broker_loss(
    cluster: KafkaCluster,
    job,
    gateway_bootstrap: str,
    gateway_reply_to: str,
    *,
    down_s: float,
    wait_s: float = 180,
    prefix: str = "bl",
    rate_per_s: float = 10,
    members: int = 2,
    settle: bool = True,
) -> tuple[Report, Figures]:
    """Run the drill once; the report holds every check (report.passed), the figures the gaps.
    `members`: of the classic and of the KIP-848 group. `settle`: the restarted broker is back in
    every ISR before the load's last round (else it starts while the checks run, and is waited for
    after them)."""
    started = time.monotonic()
    spec = LoadSpec(
        rate_per_s=rate_per_s,
        prefix=prefix,
        wait_s=wait_s,
        run_id=uuid.uuid4().hex[:8],
        classic_members=members,
        consumer_members=members,
    )
    gw_topic = f"{prefix}-gw-in"
    ensure_data_topics(cluster.bootstrap, {**spec.topics, gw_topic: 2}, replication=3)
    report = Report("broker-loss")
    figures = Figures()
    # Leadership stays where topic creation put it until a broker fails: the victim is known now.
    leaders = partition_leaders(cluster.bootstrap, service_topics(job, gateway_reply_to))
    victim = max(sorted(leaders), key=lambda b: leaders[b])
    figures.victim, figures.leaders_before = victim, leaders
    load = MixedLoad(cluster.bootstrap, job.topics, spec)
    gateway_group = CommitLoop(gateway_bootstrap, f"{prefix}-gw-group", gw_topic)
    # The brokers' own coordinator: a group on a __consumer_offsets partition the victim leads.
    broker_group = CommitLoop(cluster.bootstrap, group_led_by(cluster.bootstrap, victim, f"{prefix}-direct"), gw_topic)
    loops = [gateway_group, broker_group]
    json_times = AnswerTimes(lambda: len(load.client.responses()))
    gw_times = AnswerTimes(lambda: gateway_group.commits)
    broker_times = AnswerTimes(lambda: broker_group.commits)
    samplers = [json_times, gw_times, broker_times]
    log_mark = len(job.log_file.read_text(errors="replace"))
    states = CheckpointStates(str(job.cfg.checkpoint))
    # The checks' Spark session starts (slowly, a JVM) while the cluster fails over.
    opener = threading.Thread(target=states.open, daemon=True)
    restarting = False
    try:
        for part in [*loops, *samplers]:
            part.start()
        load.start()
        wait_until(
            lambda: (
                load.progressed_since((0, 0, {}, tuple(-1 for _ in load.consumers)))
                and gateway_group.commits > 1
                and broker_group.commits > 3
            ),
            lambda: (
                f"the load did not get going: {load.progress()}, {gateway_group.commits} gateway commits "
                f"{gateway_group.failures[-3:]}, {broker_group.commits} direct commits, {load.errors()}"
            ),
            wait_s,
        )
        figures.phases["load going"] = time.monotonic() - started

        t_kill = time.monotonic()
        cluster.kill(victim)
        opener.start()
        # Answers resume on the survivors (the leadership moved): wait for it, on every path.
        wait_until(
            lambda: all(s.first_after(t_kill + 0.5) is not None for s in samplers),
            lambda: (
                f"answers did not resume with broker {victim} down: json {json_times.first_after(t_kill)}, "
                f"gateway {gw_times.first_after(t_kill)}, direct {broker_times.first_after(t_kill)}"
            ),
            wait_s,
        )
        figures.phases["answers resumed"] = time.monotonic() - started
        left = down_s - (time.monotonic() - t_kill)
        if left > 0:
            time.sleep(left)  # the outage being drilled, not a wait for a result
        restart_at = time.monotonic()
        figures.down_s = restart_at - t_kill
        cluster.node(victim).launch()
        restarting = True
        if settle:
            cluster.node(victim).wait_ready(wait_s)
            cluster.wait_brokers({victim}, wait_s)
            restarting = False
            figures.restart_s = time.monotonic() - restart_at
            wait_in_sync(cluster.bootstrap, service_topics(job, gateway_reply_to), wait_s)
            figures.restarted_node_in_sync_s = time.monotonic() - restart_at
        # Every part of the load still progresses.
        mark = load.progress()
        commits = gateway_group.commits
        wait_until(
            lambda: (load.progressed_since(mark) and gateway_group.commits > commits) or load.errors(),
            lambda: f"no progress after the broker's return: {load.progress()} {load.errors()}",
            wait_s,
        )
        end = time.monotonic()
        figures.phases["load stopped"] = end - started
        figures.gap_json_s = json_times.largest_gap(t_kill - 1, end)
        figures.gap_gateway_s = gw_times.largest_gap(t_kill - 1, end)
        figures.gap_broker_s = broker_times.largest_gap(t_kill - 1, end)
        figures.usual_json_s = json_times.usual_gap(t_kill)
        figures.usual_gateway_s = gw_times.usual_gap(t_kill)
        figures.usual_broker_s = broker_times.usual_gap(t_kill)
    finally:
        load.stop()
        for loop in loops:
            loop.stop()
        for s in samplers:
            s.stop()
    figures.json_requests = len(load.simple.sent)
    figures.gateway_commits = gateway_group.commits
    figures.broker_commits = broker_group.commits
    figures.transactions = len(load.txns.committed) if load.txns else 0

    report.add("the job kept running", [] if job.proc.poll() is None else [f"the job exited:\n{job.tail()}"])
    report.add(
        "the gateway group committed without a client error",
        [f"{gateway_group.error!r}"] if gateway_group.error else [],
        f"{gateway_group.commits} commits, {len(gateway_group.failures)} retried "
        f"({'; '.join(gateway_group.failures[:3])})",
    )
    fetched = gateway_group.fetched()
    report.add(
        "every acknowledged gateway commit fetched back",
        [
            f"partition {p}: fetched {fetched.get(p)}, acknowledged {o}"
            for p, o in gateway_group.acked.items()
            if fetched.get(p) != o
        ],
        f"{len(gateway_group.acked)} partitions",
    )
    try:
        load_checks(load, report, wait_s)
    finally:
        load.close()
    if opener.is_alive() or opener.ident is not None:
        opener.join()
    verify(job.cfg, report, states=states, strict_transactions=True, timeout_s=wait_s)
    figures.phases["checked"] = time.monotonic() - started
    if restarting:  # started while the checks ran: back by now, or soon
        cluster.node(victim).wait_ready(wait_s)
        cluster.wait_brokers({victim}, wait_s)
        figures.restart_s = time.monotonic() - restart_at
    figures.query_restarts = job.log_file.read_text(errors="replace")[log_mark:].count("restarting the query")
    return report, figures
