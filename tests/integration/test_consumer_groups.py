"""KIP-848 consumer groups end to end: ConsumerGroupMember clients heartbeat through the real broker and the
real Spark job. Members join, one leaves, one is killed, the topic gains partitions, one more joins;
after each step every member converges to the assignment the coordinator describes, and at no
moment do two members own the same partition.

The module runs on the test run's shared job (tests/integration/conftest.py); its group's session
timeout (8 s) is the group's own config, set before its members join."""

from __future__ import annotations

import pytest
from kafka import KafkaAdminClient

from client import ConsumerGroupMember, TopicNames

from .flows import Ownership, describe_consumer_group, wait_converged
from .harness import wait_topics_known

pytestmark = [pytest.mark.integration, pytest.mark.shared_job("plain")]

TOPIC = "cg-e2e-orders"
GROUP = "cg-e2e-group"
SESSION_MS = 8000  # the group's consumer.session.timeout.ms (the shared job's default is 30 s)
GROUP_RESOURCE = 32  # ConfigResource.Type.GROUP


def set_session_timeout(cc, group: str, session_ms: int) -> None:
    """The group's KIP-848 session timeout, as a Kafka admin sets it (IncrementalAlterConfigs, SET)."""
    resp = cc.request(
        "IncrementalAlterConfigs",
        1,
        {
            "resources": [
                {
                    "resourceType": GROUP_RESOURCE,
                    "resourceName": group,
                    "configs": [
                        {"name": "consumer.session.timeout.ms", "configOperation": 0, "value": str(session_ms)}
                    ],
                }
            ],
            "validateOnly": False,
        },
        key=group,
        timeout=60,
    )
    [result] = resp["responses"]
    assert (result["errorCode"], result["errorMessage"]) == (0, None), result


def test_members_converge_through_joins_leaves_kills_and_growth(job):
    wait_topics_known(job, {TOPIC: 6})
    admin = KafkaAdminClient(bootstrap_servers=job.bootstrap)
    names = TopicNames(job.bootstrap)
    cc = job.client("cg-e2e-client")
    ownership = Ownership()
    live: dict[str, ConsumerGroupMember] = {}
    timings: dict[str, float] = {}

    def join(name: str) -> ConsumerGroupMember:
        m = ConsumerGroupMember(cc, GROUP, [TOPIC], response_timeout_s=4, **ownership.callbacks(name))
        live[name] = m
        return m.start()

    try:
        set_session_timeout(cc, GROUP, SESSION_MS)  # before the first member joins
        for name in ("a", "b", "c"):
            join(name)
        timings["3 members join"] = wait_converged(cc, names, GROUP, TOPIC, live, 6)

        left = live.pop("b")
        assert left.stop()["memberEpoch"] == -1
        timings["one leaves"] = wait_converged(cc, names, GROUP, TOPIC, live, 6)

        join("d")
        crashed = live.pop("c")
        crashed.kill()
        ownership.crashed("c", crashed)
        timings["one joins, one is killed (session timeout 8 s)"] = wait_converged(cc, names, GROUP, TOPIC, live, 6)

        admin.create_partitions({TOPIC: 9})
        timings["the topic grows to 9 partitions"] = wait_converged(cc, names, GROUP, TOPIC, live, 9)

        join("e")
        timings["a member joins (9 partitions, 4 members)"] = wait_converged(cc, names, GROUP, TOPIC, live, 9)

        g = describe_consumer_group(cc, GROUP)
        assert g["groupState"] == "Stable" and g["assignorName"] == "uniform"
        assert all(m.fatal is None for m in live.values())
        assert ownership.events > 0 and not ownership.violations, ownership.violations
        print("\nconvergence:", {k: round(v, 1) for k, v in timings.items()})
    finally:
        for m in live.values():
            m.stop()
        names.close()
        cc.close()
        admin.close()
