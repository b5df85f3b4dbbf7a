"""The gateway's connection handling over real sockets (asyncio), with a stand-in for the bridge:
answers in request order whatever order the service answers in, a malformed frame closes only its
own connection, reading stops while a connection's in-flight queue is full, and a service that does
not answer in time gets the client a retriable error."""

from __future__ import annotations

import asyncio

import pytest

from coordinator.errors import Errors
from gateway.bridge import BridgeTimeout
from gateway.codec import decode_response, encode_request, encode_response
from gateway.config import GatewayConfig
from gateway.server import Gateway


class StandInBridge:
    """Holds every bridged request until the test answers it (or times it out)."""

    def __init__(self):
        self.ready = asyncio.Event()
        self.ready.set()
        self.calls: list[tuple[dict, asyncio.Future]] = []
        self.changed = asyncio.Event()

    async def start(self):
        pass

    def close(self):
        pass

    async def call(self, api, version, body, *, key, client_id, client_host, timeout_s, wait_ready=True):
        future = asyncio.get_running_loop().create_future()
        self.calls.append(
            ({"api": api, "key": key, "clientId": client_id, "clientHost": client_host, "body": body}, future)
        )
        self.changed.set()
        return await future


def heartbeat(cid: int, group: str = "g") -> bytes:
    body = {"groupId": group, "generationId": 1, "memberId": "m", "groupInstanceId": None}
    return encode_request(12, 4, cid, "c1", body)


def frame(payload: bytes) -> bytes:
    return len(payload).to_bytes(4, "big") + payload


async def read_response(reader, api_key=12, version=4):
    size = int.from_bytes(await reader.readexactly(4), "big")
    return decode_response(await reader.readexactly(size), api_key, version)


async def until(condition, timeout=10.0):
    deadline = asyncio.get_running_loop().time() + timeout
    while not condition():
        assert asyncio.get_running_loop().time() < deadline, "condition not reached"
        await asyncio.sleep(0.01)


@pytest.fixture
def run():
    def runner(test, **cfg):
        async def main():
            bridge = StandInBridge()
            gw = Gateway(GatewayConfig(bootstrap_servers="127.0.0.1:1", base_port=0, **cfg), bridge=bridge)
            port = await gw.ensure_listener(1, "127.0.0.1", 1)  # no broker: nothing is passed through
            try:
                await asyncio.wait_for(test(gw, bridge, port), 30)
            finally:
                await gw.close()

        asyncio.run(main())

    return runner


def test_answers_go_out_in_request_order_whatever_order_the_service_answers_in(run):
    async def test(gw, bridge, port):
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        for cid in range(5):
            writer.write(frame(heartbeat(cid, f"group-{cid}")))
        await writer.drain()
        await until(lambda: len(bridge.calls) == 5)
        assert [c["key"] for c, _ in bridge.calls] == [f"group-{i}" for i in range(5)]
        assert {c["clientHost"] for c, _ in bridge.calls} == {"/127.0.0.1"}
        assert {c["clientId"] for c, _ in bridge.calls} == {"c1"}
        for i, (_, future) in reversed(list(enumerate(bridge.calls))):
            future.set_result({"throttleTimeMs": 0, "errorCode": 27 if i == 2 else 0})
        answers = [await read_response(reader) for _ in range(5)]
        assert [h["correlationId"] for h, _ in answers] == [0, 1, 2, 3, 4]
        assert [b["errorCode"] for _, b in answers] == [0, 0, 27, 0, 0]
        writer.close()

    run(test)


def test_answers_ready_together_go_out_in_one_write_and_in_request_order(run):
    """The bridge hands over a micro-batch of answers at once: the answers there when one is
    written go with it in one write (a send per answer was the event loop's largest cost), never
    ahead of an earlier request's answer that is not there yet."""

    async def test(gw, bridge, port):
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"".join(frame(heartbeat(cid, f"group-{cid}")) for cid in range(5)))
        await writer.drain()
        await until(lambda: len(bridge.calls) == 5)
        (conn,) = gw.connections
        writes: list[int] = []
        write = conn.writer.write
        conn.writer.write = lambda data: (writes.append(len(data)), write(data))[1]
        for i in (4, 3, 1, 0):  # request 2's answer is not there yet
            bridge.calls[i][1].set_result({"throttleTimeMs": 0, "errorCode": i})
        first = [await read_response(reader) for _ in range(2)]
        assert [h["correlationId"] for h, _ in first] == [0, 1] and len(writes) == 1
        bridge.calls[2][1].set_result({"throttleTimeMs": 0, "errorCode": 2})
        rest = [await read_response(reader) for _ in range(3)]
        assert [(h["correlationId"], b["errorCode"]) for h, b in rest] == [(2, 2), (3, 3), (4, 4)]
        assert len(writes) == 2
        writer.close()

    run(test)


def test_a_malformed_frame_closes_only_its_connection(run):
    async def test(gw, bridge, port):
        good_r, good_w = await asyncio.open_connection("127.0.0.1", port)
        for bad in (
            frame(b"\0\x0c"),  # shorter than any request header
            (2**30).to_bytes(4, "big"),  # over max_frame_bytes
            frame(heartbeat(1)[:-3]),  # a Heartbeat cut short
            frame(heartbeat(1) + b"junk"),
        ):  # bytes after the body
            r, w = await asyncio.open_connection("127.0.0.1", port)
            w.write(bad)
            await w.drain()
            assert await r.read() == b""  # closed by the gateway, nothing answered
            w.close()
        assert bridge.calls == []
        # The gateway lives on: the other connection is served.
        good_w.write(frame(encode_request(10, 4, 9, "c2", {"keyType": 0, "coordinatorKeys": ["g"]})))
        header, body = await read_response(good_r, 10, 4)
        assert header["correlationId"] == 9
        assert [(c["key"], c["nodeId"], c["port"]) for c in body["coordinators"]] == [("g", 1, port)]
        # KafkaApis (v4+) leaves errorMessage unset: "" on the wire (bench/differential.py found it)
        assert [c["errorMessage"] for c in body["coordinators"]] == [""]
        good_w.close()

    run(test, max_frame_bytes=1 << 20)


def test_reading_stops_while_the_in_flight_queue_is_full(run):
    async def test(gw, bridge, port):
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        frames = [frame(heartbeat(cid)) for cid in range(12)]
        writer.write(b"".join(frames))
        await writer.drain()
        (conn,) = gw.connections
        # 3 queued + 1 the writer awaits are dispatched; one more frame is read and waits for room;
        # the rest stays in the socket's buffer, unread.
        unread = sum(len(f) for f in frames[5:])
        await until(lambda: len(bridge.calls) == 4 and len(conn.reader._buffer) == unread)
        assert conn.slots.full() and len(bridge.calls) == 4
        bridge.calls[0][1].set_result({"throttleTimeMs": 0, "errorCode": 0})
        await until(lambda: len(bridge.calls) == 5)
        for i in range(12):
            await until(lambda i=i: len(bridge.calls) > i)
            bridge.calls[i][1].done() or bridge.calls[i][1].set_result({"throttleTimeMs": 0, "errorCode": 0})
        answers = [await read_response(reader) for _ in range(12)]
        assert [h["correlationId"] for h, _ in answers] == list(range(12))
        writer.close()

    run(test, max_in_flight=3)


def test_a_service_that_does_not_answer_in_time_gets_a_retriable_error(run):
    async def test(gw, bridge, port):
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(frame(heartbeat(5)))
        await writer.drain()
        await until(lambda: len(bridge.calls) == 1)
        bridge.calls[0][1].set_exception(BridgeTimeout("no answer to Heartbeat in 30.0s"))
        header, body = await read_response(reader)
        assert header["correlationId"] == 5
        assert body["errorCode"] == Errors.COORDINATOR_NOT_AVAILABLE.code
        writer.close()

    run(test)


def test_a_request_about_groups_of_several_coordinators_is_split_and_merged_in_request_order(run):
    from coordinator.routing import coordinator_partition

    groups = ["test-group", "groupId", "my-group", "tx-1"]  # partitions 12, 18, 12, 20 of 50
    assert len({coordinator_partition(g, 50) for g in groups}) == 3

    async def test(gw, bridge, port):
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        body = {"groups": groups, "includeAuthorizedOperations": False}
        writer.write(frame(encode_request(15, 5, 3, "admin", body)))
        await writer.drain()
        await until(lambda: len(bridge.calls) == 3)
        for call, future in reversed(bridge.calls):
            asked = call["body"]["groups"]
            assert {coordinator_partition(g, 50) for g in asked} == {coordinator_partition(call["key"], 50)}
            future.set_result(
                {
                    "throttleTimeMs": 0,
                    "groups": [
                        {
                            "errorCode": 0,
                            "groupId": g,
                            "groupState": "Empty",
                            "protocolType": "",
                            "protocolData": "",
                            "members": [],
                            "authorizedOperations": -2147483648,
                        }
                        for g in asked
                    ],
                }
            )
        _, body = await read_response(reader, 15, 5)
        assert [g["groupId"] for g in body["groups"]] == groups
        writer.close()

    run(test)


def test_list_groups_asks_every_coordinator_partition(run):
    async def test(gw, bridge, port):
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(frame(encode_request(16, 5, 4, "admin", {"statesFilter": [], "typesFilter": []})))
        await writer.drain()
        await until(lambda: len(bridge.calls) == 3)
        for i, (_, future) in enumerate(bridge.calls):
            future.set_result(
                {
                    "throttleTimeMs": 0,
                    "errorCode": 0,
                    "groups": [
                        {"groupId": f"g{i}", "protocolType": "consumer", "groupState": "Stable", "groupType": "classic"}
                    ],
                }
            )
        _, body = await read_response(reader, 16, 5)
        assert sorted(g["groupId"] for g in body["groups"]) == ["g0", "g1", "g2"]
        writer.close()

    run(test, coordinator_partitions=3)


class TwoBrokerCluster:
    """Two stand-in brokers on local sockets that answer ApiVersions, Metadata and DescribeCluster
    (as Kafka encodes them), to check what the gateway rewrites."""

    API_KEYS = [(0, 3, 12), (3, 0, 13), (11, 0, 9), (10, 0, 6), (18, 0, 4), (60, 0, 2), (68, 0, 1), (76, 1, 1)]

    error: Exception | None = None

    async def start(self):
        self.servers = [await asyncio.start_server(self._serve, "127.0.0.1", 0) for _ in range(2)]
        self.ports = [s.sockets[0].getsockname()[1] for s in self.servers]
        return self

    def brokers(self, id_field="nodeId"):
        return [{id_field: n + 1, "host": "127.0.0.1", "port": p, "rack": None} for n, p in enumerate(self.ports)]

    async def _serve(self, reader, writer):
        from gateway.codec import decode_request
        from gateway.frames import read_frame, request_header

        try:
            while (f := await read_frame(reader, 1 << 20)) is not None:
                api_key, version, cid, _, _ = request_header(f)
                decode_request(f, api_key, version)
                body = {
                    18: {
                        "errorCode": 0,
                        "apiKeys": [{"apiKey": k, "minVersion": lo, "maxVersion": hi} for k, lo, hi in self.API_KEYS],
                    },
                    3: {"brokers": self.brokers(), "clusterId": "c", "controllerId": 1, "topics": []},
                    60: {"errorCode": 0, "brokers": self.brokers("brokerId"), "clusterId": "c", "controllerId": 1},
                }[api_key]
                out = encode_response(cid, api_key, version, body)
                writer.write(len(out).to_bytes(4, "big") + out)
                await writer.drain()
        except Exception as e:  # noqa: BLE001 - shown by the test's failure
            self.error = e
            raise
        finally:
            writer.close()

    def close(self):
        for s in self.servers:
            s.close()


def _request(api_key, version, cid, body):
    return frame(encode_request(api_key, version, cid, "c1", body))


def test_broker_addresses_are_rewritten_to_one_gateway_port_per_broker_and_api_versions_narrowed():
    async def main():
        cluster = await TwoBrokerCluster().start()
        gw = Gateway(
            GatewayConfig(bootstrap_servers=f"127.0.0.1:{cluster.ports[0]}", base_port=0), bridge=StandInBridge()
        )
        try:
            port = await gw.ensure_listener(1, "127.0.0.1", cluster.ports[0])
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(_request(18, 3, 1, {"clientSoftwareName": "t", "clientSoftwareVersion": "1"}))
            writer.write(
                _request(
                    3,
                    12,
                    2,
                    {"topics": None, "allowAutoTopicCreation": False, "includeTopicAuthorizedOperations": False},
                )
            )
            writer.write(_request(60, 1, 3, {"includeClusterAuthorizedOperations": False, "endpointType": 1}))
            await writer.drain()
            _, versions = await read_response(reader, 18, 3)
            offered = {k["apiKey"]: (k["minVersion"], k["maxVersion"]) for k in versions["apiKeys"]}
            assert offered == {0: (3, 12), 3: (0, 13), 11: (0, 9), 10: (0, 6), 18: (0, 4), 60: (0, 2), 68: (0, 1)}
            _, metadata = await read_response(reader, 3, 12)
            assert set(gw.ports) == {1, 2} and gw.ports[1] == port and gw.ports[2] != port
            assert [(b["nodeId"], b["host"], b["port"]) for b in metadata["brokers"]] == [
                (1, "127.0.0.1", port),
                (2, "127.0.0.1", gw.ports[2]),
            ]
            _, cluster_info = await read_response(reader, 60, 1)
            assert [(b["brokerId"], b["port"]) for b in cluster_info["brokers"]] == [(1, port), (2, gw.ports[2])]
            # The second broker's gateway port leads to the second broker.
            r2, w2 = await asyncio.open_connection("127.0.0.1", gw.ports[2])
            w2.write(
                _request(
                    3,
                    12,
                    9,
                    {"topics": None, "allowAutoTopicCreation": False, "includeTopicAuthorizedOperations": False},
                )
            )
            header, _ = await read_response(r2, 3, 12)
            assert header["correlationId"] == 9 and gw.brokers[2] == ("127.0.0.1", cluster.ports[1])
            writer.close()
            w2.close()
        finally:
            await gw.close()
            cluster.close()
            assert cluster.error is None

    asyncio.run(main())


def test_a_taken_port_moves_a_brokers_listener_to_the_next_free_one():
    import socket

    async def main():
        with socket.socket() as taken:
            taken.bind(("127.0.0.1", 0))
            taken.listen()
            base = taken.getsockname()[1]
            gw = Gateway(GatewayConfig(bootstrap_servers="127.0.0.1:1", base_port=base), bridge=StandInBridge())
            try:
                port = await gw.ensure_listener(1, "127.0.0.1", 1)
                assert base < port <= base + 101
                _, w = await asyncio.open_connection("127.0.0.1", port)
                w.close()
            finally:
                await gw.close()

    asyncio.run(main())


# ------------------------------------------------------------------ requests the service cannot carry
def join_group(cid: int, metadata: bytes) -> bytes:
    body = {
        "groupId": "big",
        "sessionTimeoutMs": 10_000,
        "rebalanceTimeoutMs": 10_000,
        "memberId": "",
        "groupInstanceId": None,
        "protocolType": "consumer",
        "protocols": [{"name": "range", "metadata": metadata}],  # (bytes as they are: the codec takes both)
        "reason": None,
    }
    return encode_request(11, 9, cid, "c1", body)


def test_the_error_answer_of_an_oversized_request_has_its_apis_shape():
    from coordinator.api import lookup
    from gateway.bridge import BridgeRequestTooLarge
    from gateway.server import _error_body

    message = str(BridgeRequestTooLarge(1_398_577, 1_048_576))
    assert message == "request of 1398577 bytes exceeds the limit of 1048576 bytes"  # the JSON path's words
    join = _error_body(lookup("JoinGroup"), 9, {"groupId": "g"}, message, Errors.INVALID_REQUEST)
    assert join["errorCode"] == Errors.INVALID_REQUEST.code and join["memberId"] == "" and join["members"] == []
    commit = {
        "groupId": "g",
        "generationIdOrMemberEpoch": -1,
        "memberId": "",
        "groupInstanceId": None,
        "topics": [
            {"name": "t", "partitions": [{"partitionIndex": 0, "committedOffset": 1, "committedMetadata": "x"}]}
        ],
    }
    answer = _error_body(lookup("OffsetCommit"), 9, commit, message, Errors.INVALID_REQUEST)
    assert [p["errorCode"] for t in answer["topics"] for p in t["partitions"]] == [Errors.INVALID_REQUEST.code]
    for api_key, version, body in ((11, 9, join), (8, 9, answer)):
        encode_response(1, api_key, version, body)  # encodable as Kafka's


def test_an_oversized_bridged_request_is_refused_before_it_is_sent():
    from gateway.bridge import BridgeRequestTooLarge, CoordinatorBridge

    class Producer:
        sent: list = []

        def produce(self, *a, **kw):
            self.sent.append(kw)
            raise AssertionError("an oversized request must not be sent")

    async def main():
        bridge = CoordinatorBridge(GatewayConfig(bootstrap_servers="127.0.0.1:1", request_max_bytes=1000))
        bridge._loop, bridge._producer = asyncio.get_running_loop(), Producer()
        bridge.ready.set()
        with pytest.raises(BridgeRequestTooLarge, match="exceeds the limit of 1000 bytes"):
            await bridge.call("JoinGroup", 9, {"x": "y" * 1000}, key="g", client_id="c", client_host=None, timeout_s=1)
        assert Producer.sent == [] and bridge._pending == {}

    asyncio.run(main())


def test_an_oversized_join_group_gets_its_error_answer_and_the_connection_stays_usable(run, caplog):
    from gateway.bridge import BridgeRequestTooLarge

    async def test(gw, bridge, port):
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(frame(join_group(7, b"m" * (1 << 20))))
        await writer.drain()
        await until(lambda: len(bridge.calls) == 1)
        bridge.calls[0][1].set_exception(BridgeRequestTooLarge(1_398_577, 1_048_576))
        header, body = await read_response(reader, 11, 9)
        assert header["correlationId"] == 7 and body["errorCode"] == Errors.INVALID_REQUEST.code
        writer.write(frame(heartbeat(8)))  # the same connection goes on
        await writer.drain()
        await until(lambda: len(bridge.calls) == 2)
        bridge.calls[1][1].set_result({"throttleTimeMs": 0, "errorCode": 0})
        header, body = await read_response(reader)
        assert header["correlationId"] == 8 and body["errorCode"] == 0
        writer.close()

    run(test)
    assert "Traceback" not in caplog.text and not [r for r in caplog.records if r.exc_info]
