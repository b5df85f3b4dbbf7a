"""The recovery drill: SIGKILL the job while requests flow, restart on the same checkpoint; every
request is answered and the coordinator state equals that of an uninterrupted run."""
from __future__ import annotations

import time

import pytest

from streaming.inspect_state import read_states

from .drill import Load, client_requests, logical, reference_states, request_log

pytestmark = pytest.mark.integration


def make_request(i: int):
    key = f"drill-group-{i % 37}"
    if i % 2:
        return "FindCoordinator", 3, {"key": key, "keyType": i % 3 % 2}, key
    return "FindCoordinator", 4, {"keyType": 0, "coordinatorKeys": [key, f"tx-{i}"]}, key


def test_sigkill_mid_flow_loses_nothing(job_factory):
    job = job_factory("drill")
    client = job.client("drill-client")
    load = Load(client, make_request, rate_per_s=25)
    load.start()
    try:
        for pause in (4.0, 6.0):  # two kills, at different points of the flow
            time.sleep(pause)
            job.kill()
            time.sleep(2.0)  # requests keep arriving while the job is down
            job.start()
        time.sleep(3.0)
    finally:
        load.stop()
    assert load.error is None
    sent = dict(load.sent)
    assert len(sent) > 100

    # Every request sent before, during and after the kills gets its response.
    missing = []
    for cid in sent:
        try:
            client.wait(cid, timeout=90 if not missing else 5)
        except TimeoutError:
            missing.append(cid)
    assert not missing, f"{len(missing)} of {len(sent)} requests unanswered: {missing[:10]}"
    answers = client.responses()
    for cid, (api, version, body, key) in sent.items():
        r = answers[cid]["response"]
        if version >= 4:
            assert [c["key"] for c in r["coordinators"]] == body["coordinatorKeys"]
            assert all(c["errorCode"] == 0 for c in r["coordinators"])
        else:
            assert r["errorCode"] == 0
    client.close()

    # The state after the kills equals the state of an uninterrupted run over the same requests.
    batch_time = job.wait_caught_up()
    job.stop()
    actual = {p: logical(s) for p, s in read_states(str(job.cfg.checkpoint)).items()}
    records = request_log(job.bootstrap, job.topics["requests"])
    assert len(client_requests(records)) == len(sent)
    expected = reference_states(records, job.cfg.coordinator_config(), batch_time)
    assert set(actual) == set(expected)
    assert actual == expected
