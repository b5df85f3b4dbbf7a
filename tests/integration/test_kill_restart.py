"""The recovery drill: SIGKILL the job while requests flow, restart on the same checkpoint; every
request is answered and the coordinator state equals that of an uninterrupted run."""

from __future__ import annotations

import time

import pytest

from streaming.inspect_state import read_states

from .drill import Load, client_requests, logical, reference_states, request_log
from .harness import create_data_topics

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module", autouse=True)
def orders_topic(kafka):
    """The data topic the commits name, before the job starts (its first metadata knows it)."""
    create_data_topics(kafka.bootstrap, {"orders": 4})


GROUPS = [f"drill-group-{g}" for g in range(7)]


def make_request(i: int):
    """A mix of stateless and stateful requests: simple-group offset commits (generation -1, as an
    admin client or a standalone consumer commits) spread over several coordinator partitions, and
    FindCoordinator in both forms."""
    group = GROUPS[i % len(GROUPS)]
    if i % 3 == 0:
        return "FindCoordinator", 4, {"keyType": 0, "coordinatorKeys": [group, f"tx-{i}"]}, group
    if i % 3 == 1:
        return "FindCoordinator", 3, {"key": group, "keyType": 1}, group
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
                    "name": "orders",
                    "partitions": [
                        {
                            "partitionIndex": i % 4,
                            "committedOffset": i,
                            "committedLeaderEpoch": -1,
                            "committedMetadata": f"commit-{i}",
                        }
                    ],
                }
            ],
        },
        group,
    )


def last_commits(sent: dict) -> dict:
    """(group, partition) -> the offset of the last commit sent (commits carry increasing offsets)."""
    last: dict = {}
    for api, _, body, _ in sent.values():
        if api == "OffsetCommit":
            p = body["topics"][0]["partitions"][0]
            key = (body["groupId"], p["partitionIndex"])
            last[key] = max(last.get(key, -1), p["committedOffset"])
    return last


def test_sigkill_mid_flow_loses_nothing(job_factory):
    job = job_factory("drill")
    client = job.client("drill-client")
    load = Load(client, make_request, rate_per_s=12)
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
    assert sum(api == "OffsetCommit" for api, *_ in sent.values()) > 30

    # Every request sent before, during and after the kills gets its response.
    missing = []
    for cid in sent:
        try:
            client.wait(cid, timeout=90 if not missing else 5)
        except TimeoutError:
            missing.append(cid)
    assert not missing, f"{len(missing)} of {len(sent)} requests unanswered: {missing[:10]}"
    answers = client.responses()
    for cid, (api, version, body, _key) in sent.items():
        r = answers[cid]["response"]
        if api == "OffsetCommit":
            assert r["topics"][0]["partitions"][0]["errorCode"] == 0, r
        elif version >= 4:
            assert [c["key"] for c in r["coordinators"]] == body["coordinatorKeys"]
            assert all(c["errorCode"] == 0 for c in r["coordinators"])
        else:
            assert r["errorCode"] == 0
    # Every commit sent before, during and after the kills is the committed offset it should be.
    expected_commits = last_commits(sent)
    for (group, partition), offset in expected_commits.items():
        fetched = client.request(
            "OffsetFetch",
            8,
            {
                "groups": [{"groupId": group, "topics": [{"name": "orders", "partitionIndexes": [partition]}]}],
                "requireStable": False,
            },
            key=group,
        )
        part = fetched["groups"][0]["topics"][0]["partitions"][0]
        assert (part["committedOffset"], part["metadata"]) == (offset, f"commit-{offset}")
    client.close()

    # The state after the kills equals the state of an uninterrupted run over the same requests.
    batch_time = job.wait_caught_up()
    job.stop()
    actual = {p: logical(s) for p, s in read_states(str(job.cfg.checkpoint)).items()}
    records = request_log(job.bootstrap, job.topics["requests"], job.topics["internal"])
    assert len(client_requests(records)) == len(sent) + len(expected_commits)  # + the fetches
    expected = reference_states(records, job.cfg.coordinator_config(), batch_time)
    assert set(actual) == set(expected)
    assert actual == expected
