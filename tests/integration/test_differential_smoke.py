"""A smoke of the differential test (bench/differential.py): a few classic, streams and share steps
sent to a Kafka 4.4.0 broker of this module's own (streams and share groups enabled, the shared
job's group timings) and to the shared job through the gateway (the JSON envelope for the share
APIs, which the gateway hides); any difference docs/protocol.md does not document fails it. The
full run is `python -m bench.differential`."""

from __future__ import annotations

import time

import pytest

from bench.diff_scenarios import smoke
from bench.differential import reference_broker, run, sides, summary

from .conftest import PLAIN
from .gateway_process import gateway_fixture  # noqa: F401 - the gateway fixture

pytestmark = [pytest.mark.integration, pytest.mark.shared_job("plain")]


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    broker = reference_broker(tmp_path_factory.mktemp("reference"), PLAIN["coordinator"]).launch()
    yield broker
    broker.stop(timeout=3)


def test_the_broker_and_the_service_answer_alike(reference, job, gateway):
    reference.wait_ready()
    ref, svc = sides(reference.bootstrap, gateway.bootstrap, job, "differential-smoke")
    lines: list[str] = []
    try:
        outcomes = run(smoke(f"smoke-{int(time.time() * 1000) % 10**8}"), ref, svc, lines.append)
    finally:
        for side in (ref, svc):
            side.close()
    print("\n".join(lines), f"\n{summary(outcomes)}")
    assert {o.scenario.split("-")[0] for o in outcomes} == {"classic", "streams", "share"}
    assert not [o for o in outcomes if o.kind == "DIFFERENCE"], "\n".join(lines)
