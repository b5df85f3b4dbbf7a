"""A local three-broker KRaft Kafka cluster on 127.0.0.1, from the same jars as deploy/kafka_local.py.

    python -m deploy.kafka_cluster start  [--dir .run/kafka-cluster] [--port 9192]
    python -m deploy.kafka_cluster stop   [--dir .run/kafka-cluster]
    python -m deploy.kafka_cluster status [--dir .run/kafka-cluster]

Three nodes, each broker and controller (a three-voter controller quorum: one node lost, the
other two keep a majority), brokers on --port, +1, +2 and controllers on --port + 10, +11, +12.
Kafka's replication defaults for three brokers: its own topics (__consumer_offsets,
__transaction_state) and new topics get three replicas, min.insync.replicas 2; the service's
topics get the same from `[topics]` (its defaults). Node i keeps its data, log and pid file in
<dir>/node-i. The service runs against it with
COORD_KAFKA_BOOTSTRAP_SERVERS=127.0.0.1:9192,127.0.0.1:9193,127.0.0.1:9194 (docs/operations.md,
"Running on a Kafka cluster").
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from pathlib import Path

from deploy.kafka_local import ROOT, LocalKafka, new_cluster_id
from deploy.pidfile import server_cli

NODES = 3
CONTROLLER_OFFSET = 10  # controller i listens on broker port i + this


class KafkaCluster:
    def __init__(
        self,
        workdir: str | os.PathLike,
        port: int = 9192,
        heap: str = "384m",
        *,
        ports: list[int] | None = None,
        controller_ports: list[int] | None = None,
        extra_config: dict | None = None,
    ):
        self.dir = Path(workdir).resolve()
        ports = ports or [port + i for i in range(NODES)]
        controller_ports = controller_ports or [p + CONTROLLER_OFFSET for p in ports]
        quorum = ",".join(f"{i + 1}@127.0.0.1:{c}" for i, c in enumerate(controller_ports))
        self.nodes = [
            LocalKafka(
                self.dir / f"node-{i + 1}",
                p,
                c,
                heap,
                extra_config,
                node_id=i + 1,
                quorum=quorum,
                cluster_id=self._cluster_id(),
                replication=NODES,
            )
            for i, (p, c) in enumerate(zip(ports, controller_ports, strict=True))
        ]

    def _cluster_id(self) -> str:
        """One id for every node's storage, kept with the data (formatting happens per node)."""
        path = self.dir / "cluster.id"
        if not path.exists():
            self.dir.mkdir(parents=True, exist_ok=True)
            path.write_text(new_cluster_id())
        return path.read_text().strip()

    @property
    def bootstrap(self) -> str:
        return ",".join(n.bootstrap for n in self.nodes)

    @property
    def service_topics(self) -> dict:
        """The [topics] durability settings for the service (Kafka's defaults, as conf/defaults.toml)."""
        return {"replication_factor": NODES, "min_insync_replicas": NODES - 1}

    @property
    def logfile(self) -> Path:
        return self.nodes[0].logfile

    def node(self, node_id: int) -> LocalKafka:
        return self.nodes[node_id - 1]

    def pid(self) -> int | None:
        """Node 1's pid while every node runs (None otherwise)."""
        pids = [n.pid() for n in self.nodes]
        return pids[0] if all(pids) else None

    def start(self, timeout: float = 120) -> KafkaCluster:
        # Every node first: a node answers only once the quorum (two of three controllers) is there.
        deadline = time.monotonic() + timeout
        for n in self.nodes:
            n.launch()
        for n in self.nodes:
            n.wait_ready(timeout)
        # A node answers metadata before every broker has registered with the controller: until
        # then topics with three replicas cannot be created.
        self.wait_brokers(set(range(1, NODES + 1)), max(1.0, deadline - time.monotonic()))
        return self

    def wait_brokers(self, node_ids: set[int], timeout: float) -> None:
        """Until the controller counts every one of `node_ids` as an unfenced broker."""
        from kafka import KafkaAdminClient

        deadline = time.monotonic() + timeout
        while True:
            try:
                admin = KafkaAdminClient(bootstrap_servers=self.bootstrap, request_timeout_ms=5000)
                try:
                    up = {b["broker_id"] for b in admin.describe_cluster()["brokers"] if not b.get("is_fenced")}
                finally:
                    admin.close()
            except Exception:  # noqa: BLE001 - not answering yet
                up = set()
            if node_ids <= up:
                return
            if time.monotonic() > deadline:
                raise RuntimeError(f"brokers {sorted(node_ids - up)} not registered in {timeout:.0f}s; see {self.dir}")
            time.sleep(0.2)

    def stop(self, timeout: float = 30) -> None:
        # All at once: stopped one by one, the last ones lose the quorum and wait out their timeout.
        threads = [threading.Thread(target=n.stop, args=(timeout,)) for n in self.nodes]
        for t in threads:
            t.start()
        for t in threads:
            t.join()

    def kill(self, node_id: int) -> int:
        """SIGKILL one node (broker and controller at once, as a machine lost); its pid. The
        process is reaped by `LocalKafka.start` / `stop` (deploy/pidfile.py)."""
        node = self.node(node_id)
        pid = node.pid()
        if pid is None:
            raise RuntimeError(f"node {node_id} is not running")
        os.kill(pid, signal.SIGKILL)
        return pid

    def restart(self, node_id: int, timeout: float = 120) -> None:
        """Start a killed node again on its data; returns once it is a broker of the cluster again."""
        self.node(node_id).start(timeout)
        self.wait_brokers({node_id}, timeout)


def partition_leaders(bootstrap: str, topics: list[str]) -> dict[int, int]:
    """Broker node id -> how many partitions of `topics` it leads now."""
    from kafka import KafkaAdminClient

    admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=10000)
    try:
        counts: dict[int, int] = {}
        for m in admin.describe_topics(topics):
            for p in m.get("partitions") or ():
                if p["leader_id"] >= 0:
                    counts[p["leader_id"]] = counts.get(p["leader_id"], 0) + 1
        return counts
    finally:
        admin.close()


def main(argv: list[str] | None = None) -> int:
    return server_cli(
        argv,
        "Run a local three-node KRaft Kafka cluster (each node broker and controller)",
        "Kafka cluster",
        ROOT / ".run" / "kafka-cluster",
        9192,
        KafkaCluster,
        lambda cluster: cluster.bootstrap,
    )


if __name__ == "__main__":
    sys.exit(main())
