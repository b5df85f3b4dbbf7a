"""The service topics' durability (deploy/topics.py): replication and min.insync.replicas from
`[topics]`, the start-up check against a cluster's brokers and existing topics, and raising them.
A fake admin client stands in for the cluster (the e2e path: tests/integration/test_broker_loss_e2e.py)."""

from __future__ import annotations

import pytest

import deploy.topics as topics
from deploy.topics import desired_topics, ensure_topics, raise_durability
from gateway.config import GatewayConfig
from streaming.config import StreamConfig


class FakeCluster:
    """Brokers 1..n and topics as a KRaft cluster's admin API reports them."""

    def __init__(self, brokers: int, fenced: tuple[int, ...] = ()):
        self.brokers = [{"broker_id": b, "is_fenced": b in fenced} for b in range(1, brokers + 1)]
        self.topics: dict[str, dict] = {}
        self.created: list[str] = []
        self.reassigned: dict = {}
        self.altered: list = []
        # DescribeConfigs answered by a broker the new topics' metadata has not reached yet, this
        # many times: an error and no configs for them (kafka-python passes that on as {}).
        self.configs_lag = 0

    def add(self, name: str, partitions: int, rf: int, configs: dict | None = None) -> None:
        ids = [b["broker_id"] for b in self.brokers]
        self.topics[name] = {
            "partitions": [
                {
                    "partition_index": p,
                    "leader_id": ids[p % len(ids)],
                    "replica_nodes": [ids[(p + i) % len(ids)] for i in range(rf)],
                    "isr_nodes": [ids[(p + i) % len(ids)] for i in range(rf)],
                }
                for p in range(partitions)
            ],
            "configs": {"message.timestamp.type": "CreateTime", "min.insync.replicas": "1", **(configs or {})},
        }


class FakeAdmin:
    def __init__(self, cluster: FakeCluster):
        self.c = cluster

    def list_topics(self):
        return list(self.c.topics)

    def describe_cluster(self):
        return {"brokers": self.c.brokers}

    def create_topics(self, new_topics):
        for t in new_topics:
            up = [b for b in self.c.brokers if not b["is_fenced"]]
            assert t.replication_factor <= len(up), "Kafka answers INVALID_REPLICATION_FACTOR"
            self.c.add(t.name, t.num_partitions, t.replication_factor, t.topic_configs)
            self.c.created.append(t.name)

    def describe_topics(self, names):
        return [
            {"name": n, "error_code": 0, "partitions": self.c.topics[n]["partitions"]}
            for n in names
            if n in self.c.topics
        ]

    def describe_configs(self, resources, config_filter="modified"):
        assert config_filter == "all", "effective values: a topic without its own setting has the broker's"
        if self.c.configs_lag > 0:
            self.c.configs_lag -= 1
            return {"topic": {r.name: {} for r in resources}}
        return {
            "topic": {
                r.name: {k: {"value": v} for k, v in self.c.topics[r.name]["configs"].items() if k in r.configs}
                for r in resources
            }
        }

    def alter_partition_reassignments(self, plan):
        for tp, replicas in plan.items():
            p = self.c.topics[tp.topic]["partitions"][tp.partition]
            p["replica_nodes"], p["isr_nodes"] = list(replicas), list(replicas)
            self.c.reassigned[(tp.topic, tp.partition)] = list(replicas)
        return dict.fromkeys(plan)

    def alter_configs(self, resources, incremental=None):
        assert incremental, "a plain AlterConfigs would reset the topic's other settings"
        for r in resources:
            self.c.topics[r.name]["configs"].update(r.configs)
            self.c.altered.append((r.name, dict(r.configs)))

    def close(self):
        pass


@pytest.fixture
def cluster(monkeypatch):
    holder: dict = {}
    monkeypatch.setattr(topics, "KafkaAdminClient", lambda **kw: FakeAdmin(holder["cluster"]))

    def make(brokers: int, **kw) -> FakeCluster:
        holder["cluster"] = FakeCluster(brokers, **kw)
        return holder["cluster"]

    return make


def config(**topics_table) -> StreamConfig:
    return StreamConfig.load(
        overrides={"topics": topics_table, "coordinator": {"coordinator.partitions": 5}}, environ={}
    )


def test_every_service_topic_gets_kafkas_coordinator_topic_durability_by_default():
    wanted = desired_topics(config())
    assert len(wanted) == 8
    assert {(t.replication_factor, t.topic_configs["min.insync.replicas"]) for t in wanted} == {(3, "2")}


def test_the_environment_sets_a_single_brokers_durability_and_nonsense_is_refused():
    cfg = StreamConfig.load(environ={"COORD_TOPICS_REPLICATION_FACTOR": "1", "COORD_TOPICS_MIN_INSYNC_REPLICAS": "1"})
    assert {(t.replication_factor, t.topic_configs["min.insync.replicas"]) for t in desired_topics(cfg)} == {(1, "1")}
    assert GatewayConfig.from_stream_config(cfg).reply_to_replication == (1, 1)
    with pytest.raises(ValueError, match="min_insync_replicas"):
        StreamConfig.load(environ={"COORD_TOPICS_REPLICATION_FACTOR": "2", "COORD_TOPICS_MIN_INSYNC_REPLICAS": "3"})


def test_three_brokers_get_replicated_topics_that_pass_the_check(cluster):
    c = cluster(3)
    ensure_topics(config())
    assert len(c.created) == 8
    assert all(len(p["replica_nodes"]) == 3 for t in c.topics.values() for p in t["partitions"])
    ensure_topics(config())  # existing and as durable as configured: accepted, nothing created again
    assert len(c.created) == 8


def test_new_topics_configs_are_asked_again_until_the_answering_broker_knows_them(cluster):
    """A cluster's metadata reaches its brokers in turn: right after the topics were created, the
    broker that answers DescribeConfigs may not know them yet. Their configs were then taken as
    absent (min.insync.replicas 1: "less durable than configured")."""
    c = cluster(3)
    c.configs_lag = 2
    ensure_topics(config())
    assert len(c.created) == 8 and c.configs_lag == 0


def test_a_cluster_with_fewer_brokers_than_replicas_is_refused_saying_what_to_set(cluster):
    c = cluster(3, fenced=(2, 3))
    with pytest.raises(RuntimeError) as e:
        ensure_topics(config())
    message = str(e.value)
    assert "1 broker(s) up" in message and "replication_factor" in message
    assert "COORD_TOPICS_REPLICATION_FACTOR=1 COORD_TOPICS_MIN_INSYNC_REPLICAS=1" in message
    assert c.created == []
    ensure_topics(config(replication_factor=1, min_insync_replicas=1))  # told: it runs
    assert len(c.created) == 8


def test_existing_topics_less_durable_than_configured_are_refused_with_how_to_raise_them(cluster):
    cluster(3)
    ensure_topics(config(replication_factor=1, min_insync_replicas=1))  # as a single broker made them
    cfg = config()
    with pytest.raises(RuntimeError) as e:
        ensure_topics(cfg)
    message = str(e.value)
    state_log = cfg.topics["state_log"]
    assert f"topic {state_log}: 1 replica(s) on partition(s) [0, 1, 2, 3, 4]" in message
    assert f"topic {state_log}: min.insync.replicas = 1, lower than [topics] min_insync_replicas = 2" in message
    assert "python -m deploy.topics --raise-durability" in message and "kafka-configs.sh" in message
    assert "kafka-reassign-partitions.sh" in message

    # Only a lower min.insync.replicas is refused too.
    c2 = cluster(3)
    ensure_topics(cfg)
    c2.topics[cfg.topics["requests"]]["configs"]["min.insync.replicas"] = "1"
    with pytest.raises(RuntimeError, match=rf"topic {cfg.topics['requests']}: min.insync.replicas = 1"):
        ensure_topics(cfg)


def test_more_durable_topics_than_configured_are_accepted(cluster):
    cluster(3)
    ensure_topics(config())
    ensure_topics(config(replication_factor=2, min_insync_replicas=1))


def test_raise_durability_adds_replicas_on_the_least_loaded_brokers_and_sets_min_insync_replicas(cluster):
    c = cluster(3)
    ensure_topics(config(replication_factor=1, min_insync_replicas=1))
    cfg = config()
    changes = raise_durability(cfg)
    assert len(changes) == 2 and "min.insync.replicas = 2" in changes[1]
    partitions = sum(len(t["partitions"]) for t in c.topics.values())
    assert len(c.reassigned) == partitions
    for (name, p), replicas in c.reassigned.items():
        assert len(set(replicas)) == 3  # the existing replica stays, two others join
        assert replicas[0] == c.topics[name]["partitions"][p]["leader_id"]
    assert {name for name, _ in c.altered} == set(c.topics)
    ensure_topics(cfg)  # now accepted
    assert raise_durability(cfg) == []  # nothing left to raise
