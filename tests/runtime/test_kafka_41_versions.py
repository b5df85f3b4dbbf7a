"""Versions Kafka 4.1.1 still serves that the service once refused (KIP-896 kept them): JoinGroup
v0-1 and FindCoordinator v0 (KafkaApisTest.testHandleJoinGroupRequest / testOldFindCoordinator*)."""

from __future__ import annotations

import pytest

from coordinator.errors import Errors
from coordinator.routing import coordinator_partition
from tests.group.group_helpers import GroupTestClient, protocols


@pytest.mark.parametrize("version", range(0, 10))
def test_handle_join_group_request(version):
    """KafkaApisTest.testHandleJoinGroupRequest: v0 has no rebalance timeout, the session timeout is
    used; the response has the fields of its version (throttleTimeMs from v2)."""
    c = GroupTestClient()
    body = {
        "groupId": c.group_id,
        "sessionTimeoutMs": 20000,
        "rebalanceTimeoutMs": 10000,
        "memberId": "",
        "protocolType": "consumer",
        "protocols": protocols("range"),
    }
    if version == 0:
        del body["rebalanceTimeoutMs"]
    cid, resp = c.send("JoinGroup", version, body)
    if version >= 4:
        assert resp["errorCode"] == Errors.MEMBER_ID_REQUIRED.code
        body["memberId"] = resp["memberId"]
        cid, resp = c.send("JoinGroup", version, body)
    assert resp is None  # parked until the initial rebalance delay
    c.sleep(3000)
    resp = c.response(cid)
    assert resp["errorCode"] == 0 and resp["generationId"] == 1 and resp["leader"] == resp["memberId"]
    assert ("throttleTimeMs" in resp) == (version >= 2)
    [member] = c.group().members.values()
    assert (member.rebalance_timeout_ms, member.session_timeout_ms) == (20000 if version == 0 else 10000, 20000)


def test_old_find_coordinator():
    """KafkaApisTest.testOldFindCoordinator*: version 0 (a group id) is answered with errorCode,
    nodeId, host and port only."""
    c = GroupTestClient()
    cid, raw = c.d.envelope("FindCoordinator", 0, {"key": "some-group"})
    c.d.send_raw(raw, key="some-group")
    assert c.d.response(cid) == {
        "errorCode": 0,
        "nodeId": coordinator_partition("some-group", 50),
        "host": "127.0.0.1",
        "port": 9092,
    }
    cid, raw = c.d.envelope("FindCoordinator", 1, {"key": "some-group", "keyType": 0})
    c.d.send_raw(raw, key="some-group")
    assert c.d.response(cid)["errorMessage"] == "NONE"


def test_find_coordinator_v4_leaves_the_error_message_unset():
    """KafkaApis.handleFindCoordinatorRequestV4AndAbove sets no errorMessage on success: the
    generated field's default "" goes on the wire (a 4.1.1 broker in bench/differential.py)."""
    c = GroupTestClient()
    cid, raw = c.d.envelope("FindCoordinator", 4, {"keyType": 0, "coordinatorKeys": ["some-group"]})
    c.d.send_raw(raw, key="some-group")
    assert [(k["errorCode"], k["errorMessage"]) for k in c.d.response(cid)["coordinators"]] == [(0, "")]


@pytest.mark.parametrize("version", [1, 3, 4, 6])
def test_find_coordinator_unknown_key_type(version):
    """KafkaApis: CoordinatorType.forId's InvalidRequestException becomes FindCoordinatorRequest's
    getErrorResponse, INVALID_REQUEST with the error's default message and no node (v4+: on every
    key); the message of the exception is not sent (a 4.4.0 broker in bench/differential.py)."""
    c = GroupTestClient()
    body = {"key": "some-group", "keyType": 9} if version < 4 else {"keyType": 9, "coordinatorKeys": ["a", "b"]}
    cid, raw = c.d.envelope("FindCoordinator", version, body)
    c.d.send_raw(raw, key="some-group")
    resp = c.d.response(cid)
    answers = resp["coordinators"] if version >= 4 else [resp]
    assert len(answers) == (2 if version >= 4 else 1)
    for a in answers:
        assert (a["errorCode"], a["errorMessage"]) == (Errors.INVALID_REQUEST.code, Errors.INVALID_REQUEST.message)
        assert (a["nodeId"], a["host"], a["port"]) == (-1, "", -1)
