"""The same job on a Spark standalone cluster (a master and a worker started from the pyspark
installation, as deploy/run-cluster.sh does): requests are answered by executors of the cluster."""

from __future__ import annotations

import pytest

from deploy import standalone
from deploy.kafka_local import free_port

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("standalone")
    master = standalone.start_master("127.0.0.1", free_port(), free_port(), run_dir=run_dir)
    standalone.start_worker(master, cores=2, memory="1g", webui_port=free_port(), run_dir=run_dir)
    yield master, run_dir
    standalone.stop(run_dir)


def test_find_coordinator_through_a_standalone_cluster(cluster, job_factory):
    master, run_dir = cluster
    job = job_factory("cluster", spark={"master": master})
    with job.client("cluster-client") as client:
        r = client.request("FindCoordinator", 4, {"keyType": 1, "coordinatorKeys": ["tx-1", "groupId"]}, timeout=120)
    assert [(c["key"], c["nodeId"]) for c in r["coordinators"]] == [("tx-1", 20), ("groupId", 18)]
    # The work ran in an executor the worker launched, not in the driver.
    assert "Asked to launch executor" in (run_dir / "worker.log").read_text()
