"""The envelope's optional `clientHost` (set by the gateway to the Kafka client's socket address,
"/<ip>" as Kafka prints it) becomes the member's clientHost in DescribeGroups and
ConsumerGroupDescribe; without it the member's clientHost is "" as before; a bad one is rejected."""

from __future__ import annotations

import json

import pytest

from coordinator.errors import Errors
from tests.core_driver import CoreDriver
from tests.group.group_helpers import join_body


def _join(d: CoreDriver, client_host: str | None) -> str:
    body = join_body()
    first = d.send("JoinGroup", 9, body, client_host=client_host)
    assert first["errorCode"] == Errors.MEMBER_ID_REQUIRED.code
    assert d.send("JoinGroup", 9, {**body, "memberId": first["memberId"]}, client_host=client_host) is None
    d.advance(4000)  # the initial rebalance delay
    member_id = first["memberId"]
    sync = d.send(
        "SyncGroup",
        5,
        {
            "groupId": "g",
            "generationId": 1,
            "memberId": member_id,
            "groupInstanceId": None,
            "protocolType": "consumer",
            "protocolName": "range",
            "assignments": [{"memberId": member_id, "assignment": ""}],
        },
    )
    assert sync["errorCode"] == 0
    return member_id


@pytest.mark.parametrize("client_host,shown", [("/10.0.0.7", "/10.0.0.7"), (None, "")])
def test_a_classic_members_client_host_is_what_the_envelope_says(client_host, shown):
    d = CoreDriver(group_id="g")
    member_id = _join(d, client_host)
    described = d.send("DescribeGroups", 5, {"groups": ["g"], "includeAuthorizedOperations": False})
    (member,) = described["groups"][0]["members"]
    assert (member["memberId"], member["clientHost"]) == (member_id, shown)
    # It is in the state log's group record, which a coordinator loads after a restart.
    (last,) = [v for k, v in d.records if json.loads(k) == ["GroupMetadata", "g"]][-1:]
    assert [m["clientHost"] for m in last["members"]] == [shown]


def test_a_consumer_members_client_host_follows_its_heartbeats():
    d = CoreDriver(group_id="cg")
    body = {
        "groupId": "cg",
        "memberId": "m-1",
        "memberEpoch": 0,
        "instanceId": None,
        "rackId": None,
        "rebalanceTimeoutMs": 30000,
        "subscribedTopicNames": ["orders"],
        "subscribedTopicRegex": None,
        "serverAssignor": None,
        "topicPartitions": [],
    }
    assert d.send("ConsumerGroupHeartbeat", 1, body, client_host="/10.0.0.8")["errorCode"] == 0

    def shown() -> str:
        r = d.send("ConsumerGroupDescribe", 1, {"groupIds": ["cg"], "includeAuthorizedOperations": False})
        (member,) = r["groups"][0]["members"]
        return member["clientHost"]

    assert shown() == "/10.0.0.8"
    # Kafka records the address of every heartbeat (a client that reconnected from elsewhere).
    d.send(
        "ConsumerGroupHeartbeat", 1, {**body, "memberEpoch": 2, "subscribedTopicNames": None}, client_host="/10.0.0.9"
    )
    assert shown() == "/10.0.0.9"


@pytest.mark.parametrize("client_host", [7, ["x"], "/" + "1" * 300])
def test_a_client_host_that_is_not_a_short_string_is_rejected(client_host):
    d = CoreDriver(group_id="g")
    r = d.send(
        "Heartbeat",
        4,
        {"groupId": "g", "generationId": 1, "memberId": "m", "groupInstanceId": None},
        client_host=client_host,
    )
    assert r["errorCode"] == Errors.INVALID_REQUEST.code
    assert "clientHost" in r["errorMessage"]


def test_a_streams_members_client_host_follows_its_heartbeats():
    from tests.streams.helpers import subtopology, topology

    d = CoreDriver(group_id="sg")
    body = {
        "groupId": "sg",
        "memberId": "m-1",
        "memberEpoch": 0,
        "endpointInformationEpoch": 0,
        "rebalanceTimeoutMs": 30000,
        "processId": "p-1",
        "activeTasks": [],
        "standbyTasks": [],
        "warmupTasks": [],
        "topology": topology(0, subtopology("0", source=["in"])),
    }
    first = d.send("StreamsGroupHeartbeat", 0, body, client_host="/10.0.0.8")
    assert first["errorCode"] == 0, first

    def shown() -> str:
        r = d.send("StreamsGroupDescribe", 0, {"groupIds": ["sg"], "includeAuthorizedOperations": False})
        (member,) = r["groups"][0]["members"]
        return member["clientHost"]

    assert shown() == "/10.0.0.8"
    d.send(
        "StreamsGroupHeartbeat",
        0,
        {"groupId": "sg", "memberId": "m-1", "memberEpoch": first["memberEpoch"], "endpointInformationEpoch": 0},
        client_host="/10.0.0.9",
    )
    assert shown() == "/10.0.0.9"


def test_a_share_members_client_host_follows_its_heartbeats():
    d = CoreDriver(group_id="shg")
    body = {"groupId": "shg", "memberId": "m-1", "memberEpoch": 0, "rackId": None, "subscribedTopicNames": ["orders"]}
    first = d.send("ShareGroupHeartbeat", 1, body, client_host="/10.0.0.8")
    assert first["errorCode"] == 0, first

    def shown() -> str:
        r = d.send("ShareGroupDescribe", 1, {"groupIds": ["shg"], "includeAuthorizedOperations": False})
        (member,) = r["groups"][0]["members"]
        return member["clientHost"]

    assert shown() == "/10.0.0.8"
    d.send(
        "ShareGroupHeartbeat",
        1,
        {**body, "memberEpoch": first["memberEpoch"], "subscribedTopicNames": None},
        client_host="/10.0.0.9",
    )
    assert shown() == "/10.0.0.9"


@pytest.mark.parametrize("client_host", ["10.0.0.7", "/not-an-address", "/10.0.0.300", "bad host/10.0.0.7", "/"])
def test_a_client_host_that_is_not_a_socket_address_is_rejected(client_host):
    """The envelope's clientHost is what the gateway sends for its Kafka clients: an InetAddress as
    Java prints it. A JSON client may set its own address, in that form only."""
    d = CoreDriver(group_id="g")
    r = d.send(
        "Heartbeat",
        4,
        {"groupId": "g", "generationId": 1, "memberId": "m", "groupInstanceId": None},
        client_host=client_host,
    )
    assert r["errorCode"] == Errors.INVALID_REQUEST.code
    assert "clientHost" in r["errorMessage"]


@pytest.mark.parametrize(
    "client_host", ["/10.0.0.7", "/127.0.0.1", "/0:0:0:0:0:0:0:1", "/fe80::1%eth0", "localhost/127.0.0.1", ""]
)
def test_a_socket_address_is_accepted_as_client_host(client_host):
    d = CoreDriver(group_id="g")
    member_id = _join(d, client_host)
    described = d.send("DescribeGroups", 5, {"groups": ["g"], "includeAuthorizedOperations": False})
    assert [(m["memberId"], m["clientHost"]) for m in described["groups"][0]["members"]] == [(member_id, client_host)]


def test_the_json_client_sends_its_client_host(monkeypatch):
    """client.CoordinatorClient(client_host=...) puts it in every envelope, and local_client_host
    names this machine's address toward a broker as Kafka prints it."""
    import socket

    from client import request_client
    from coordinator.envelope import is_socket_address

    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        host = request_client.local_client_host(f"127.0.0.1:{server.getsockname()[1]}")
    assert host == "/127.0.0.1" and is_socket_address(host)
    sent = []
    client = request_client.CoordinatorClient.__new__(request_client.CoordinatorClient)
    client.client_id, client.reply_to, client.client_host = "c", None, "/10.1.2.3"
    client._next_cid, client._lock = 1, __import__("threading").Condition()
    monkeypatch.setattr(client, "send_raw", lambda value, key=None, flush=True: sent.append(json.loads(value)))
    client.send("Heartbeat", 4, {"groupId": "g"})
    assert sent[0]["clientHost"] == "/10.1.2.3"
