"""The gateway's broker connections (gateway/upstream.py), over real sockets with a stand-in broker
that serves each connection's requests one at a time and in order, as Kafka's broker does: many
clients share a few broker connections with their correlation ids renumbered and given back, a
client's requests reach the broker in its order (also when it moves between a shared connection
and its own for Fetch), and a broker connection that fails fails only the requests that were on it."""

from __future__ import annotations

import asyncio
import struct

from gateway.config import GatewayConfig
from gateway.frames import read_frame, request_header
from gateway.server import Gateway

from .test_gateway_server import StandInBridge, until

DESCRIBE_CONFIGS, FETCH = 32, 1  # passed through; Fetch on the client's own connection


class StandInBroker:
    """Answers each request with its correlation id and `re:<body>`, one at a time per connection.
    A request whose body starts with `hold` is answered once `release` is set; `log` records what
    arrived and what was answered, in order, with the connection's number."""

    def __init__(self):
        self.release = asyncio.Event()
        self.log: list[tuple[str, int, int, int, bytes]] = []  # (event, connection, api key, cid, body)
        self.writers: list[asyncio.StreamWriter] = []

    async def start(self) -> StandInBroker:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self.server.sockets[0].getsockname()[1]
        return self

    async def _serve(self, reader, writer):
        conn = len(self.writers)
        self.writers.append(writer)
        try:
            while (frame := await read_frame(reader, 1 << 20)) is not None:
                api_key, _, cid, _, end = request_header(frame)
                body = frame[end:]
                self.log.append(("request", conn, api_key, cid, body))
                if body.startswith(b"hold"):
                    await self.release.wait()
                answer = struct.pack(">i", cid) + b"re:" + body
                writer.write(len(answer).to_bytes(4, "big") + answer)
                await writer.drain()
                self.log.append(("answer", conn, api_key, cid, body))
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()

    def requests(self, conn: int | None = None) -> list[tuple[int, int, bytes]]:
        return [(k, cid, body) for ev, c, k, cid, body in self.log if ev == "request" and conn in (None, c)]

    def close(self):
        self.server.close()
        for w in self.writers:
            w.close()


def request(api_key: int, cid: int, body: bytes, client_id: str = "c") -> bytes:
    payload = struct.pack(">hhih", api_key, 0, cid, len(client_id)) + client_id.encode() + body
    return len(payload).to_bytes(4, "big") + payload


async def answer(reader) -> tuple[int, bytes]:
    size = int.from_bytes(await reader.readexactly(4), "big")
    frame = await reader.readexactly(size)
    return int.from_bytes(frame[:4], "big", signed=True), frame[4:]


def run(test, **cfg):
    async def main():
        broker = await StandInBroker().start()
        gw = Gateway(
            GatewayConfig(bootstrap_servers=f"127.0.0.1:{broker.port}", base_port=0, **cfg), bridge=StandInBridge()
        )
        port = await gw.ensure_listener(1, "127.0.0.1", broker.port)
        try:
            await asyncio.wait_for(test(gw, broker, port), 30)
        finally:
            await gw.close()
            broker.close()

    asyncio.run(main())


def test_many_clients_share_a_few_broker_connections_with_their_correlation_ids_renumbered_and_given_back():
    async def test(gw, broker, port):
        clients = [await asyncio.open_connection("127.0.0.1", port) for _ in range(20)]
        for n, (_, w) in enumerate(clients):  # every client uses correlation ids 0..2
            w.write(b"".join(request(DESCRIBE_CONFIGS, cid, f"client{n}-{cid}".encode()) for cid in range(3)))
            await w.drain()
        for n, (r, _) in enumerate(clients):
            assert [await answer(r) for _ in range(3)] == [(cid, f"re:client{n}-{cid}".encode()) for cid in range(3)]
        assert len(broker.writers) == 3  # three shared connections for twenty clients
        for conn in range(3):
            cids = [cid for _, cid, _ in broker.requests(conn)]
            assert len(cids) == len(set(cids)) > 0  # the connection's own ids: no two alike
        for _, w in clients:
            w.close()

    run(test, upstream_connections=3)


def test_a_clients_requests_reach_the_broker_in_its_order_also_across_its_own_fetch_connection():
    async def test(gw, broker, port):
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(request(DESCRIBE_CONFIGS, 1, b"hold-1"))  # the broker holds this one
        writer.write(request(FETCH, 2, b"fetch-2"))
        writer.write(request(DESCRIBE_CONFIGS, 3, b"after-3"))
        await writer.drain()
        await until(lambda: len(broker.requests()) == 1)
        await asyncio.sleep(0.2)  # (a Fetch sent ahead of the held request would arrive meanwhile)
        assert [body for _, _, body in broker.requests()] == [b"hold-1"]
        broker.release.set()
        assert [await answer(reader) for _ in range(3)] == [(1, b"re:hold-1"), (2, b"re:fetch-2"), (3, b"re:after-3")]
        events = [(ev, body) for ev, _, _, _, body in broker.log]
        # each request reached the broker only after the one before it, on another connection, was answered
        assert events.index(("answer", b"hold-1")) < events.index(("request", b"fetch-2"))
        assert events.index(("answer", b"fetch-2")) < events.index(("request", b"after-3"))
        fetch_conn = next(c for ev, c, k, _, _ in broker.log if k == FETCH)
        shared_conn = next(c for ev, c, k, _, _ in broker.log if k == DESCRIBE_CONFIGS)
        assert fetch_conn != shared_conn
        assert broker.requests(fetch_conn) == [(FETCH, 2, b"fetch-2")]  # its own connection keeps its ids
        writer.close()

    run(test, upstream_connections=1)


def test_a_broker_connection_that_fails_closes_only_the_clients_with_requests_on_it():
    async def test(gw, broker, port):
        # Clients 0 and 2 share broker connection 0, client 1 has connection 1.
        clients = [await asyncio.open_connection("127.0.0.1", port) for _ in range(3)]
        for n, (_, w) in enumerate(clients[:2]):
            w.write(request(DESCRIBE_CONFIGS, 7, f"hold-{n}".encode()))
            await w.drain()
        await until(lambda: len(broker.requests()) == 2)
        failing = next(c for _, c, _, _, body in broker.log if body == b"hold-0")
        broker.writers[failing].transport.abort()  # connection reset
        assert await clients[0][0].read() == b""  # its request failed: the gateway closes it
        broker.release.set()
        assert await answer(clients[1][0]) == (7, b"re:hold-1")
        # Client 2 had nothing in flight on the failed connection: it goes on, on a new one.
        clients[2][1].write(request(DESCRIBE_CONFIGS, 9, b"later"))
        assert await answer(clients[2][0]) == (9, b"re:later")
        assert len(broker.writers) == 3 and gw.shared[1].opened == 3
        for _, w in clients:
            w.close()

    run(test, upstream_connections=2)


def test_a_burst_of_clients_opens_at_most_upstream_connects_broker_connections_at_once(monkeypatch):
    import gateway.upstream

    opening, most = 0, 0
    real_open = asyncio.open_connection

    async def counted_open(host, port):  # the real connect, counted while under way
        nonlocal opening, most
        opening += 1
        most = max(most, opening)
        try:
            await asyncio.sleep(0.01)
            return await real_open(host, port)
        finally:
            opening -= 1

    monkeypatch.setattr(gateway.upstream.asyncio, "open_connection", counted_open)

    async def test(gw, broker, port):
        clients = [await real_open("127.0.0.1", port) for _ in range(30)]
        for n, (_, w) in enumerate(clients):
            w.write(request(FETCH, n, b"f"))  # each client opens a connection of its own, all at once
        for n, (r, _) in enumerate(clients):
            assert await answer(r) == (n, b"re:f")
        assert len(broker.writers) == 30 and most == 4
        for _, w in clients:
            w.close()

    run(test, upstream_connects=4)


def test_a_kept_rewritten_answer_goes_to_each_client_with_its_own_correlation_id():
    from .test_gateway_server import TwoBrokerCluster, _request, read_response

    async def main():
        cluster = await TwoBrokerCluster().start()
        gw = Gateway(
            GatewayConfig(bootstrap_servers=f"127.0.0.1:{cluster.ports[0]}", base_port=0), bridge=StandInBridge()
        )
        try:
            port = await gw.ensure_listener(1, "127.0.0.1", cluster.ports[0])
            answers = []
            for cid in (5, 6, 7):  # three clients; the second and third get the kept rewrite
                reader, writer = await asyncio.open_connection("127.0.0.1", port)
                writer.write(_request(18, 3, cid, {"clientSoftwareName": "t", "clientSoftwareVersion": "1"}))
                header, body = await read_response(reader, 18, 3)
                answers.append((header["correlationId"], {k["apiKey"] for k in body["apiKeys"]}))
                writer.close()
            narrowed = {0, 3, 11, 10, 18, 60, 68}  # 76 (ShareGroupHeartbeat) left out
            assert answers == [(5, narrowed), (6, narrowed), (7, narrowed)]
            assert len(gw.rewritten) == 1
        finally:
            await gw.close()
            cluster.close()
            assert cluster.error is None

    asyncio.run(main())
