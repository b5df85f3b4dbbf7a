"""A SASL listener over real sockets, in front of a stand-in SASL broker (PLAIN): Kafka's order
(only ApiVersions and SaslHandshake before authentication, other requests close the connection
unanswered), an unsupported mechanism answered with the enabled list then closed, a wrong password
answered as the broker answers it then closed, the client's pass-through requests carried on its own
connection which the broker authenticated as the client, the principal on its bridged requests, and
a session that expires unless re-authenticated (KIP-368)."""

from __future__ import annotations

import asyncio
import base64

from gateway.codec import decode_request, decode_response, encode_request, encode_response
from gateway.config import GatewayConfig
from gateway.frames import read_frame, request_header
from gateway.server import Gateway

USERS = {"alice": "alice-secret", "gateway": "gateway-secret"}
LIFETIME_MS = 1000
METADATA_BODY = {"topics": None, "allowAutoTopicCreation": False, "includeTopicAuthorizedOperations": False}


class SaslBroker:
    """Answers ApiVersions, SaslHandshake (PLAIN), SaslAuthenticate, Metadata; remembers who sent
    what on which connection. Like Kafka, it closes a connection after a failed authentication and
    refuses anything but ApiVersions/SaslHandshake before one."""

    def __init__(self, lifetime_ms: int = 0):
        self.lifetime_ms = lifetime_ms
        self.seen: list[tuple[int, str | None, int]] = []  # (connection, authenticated user, api key)
        self.error: Exception | None = None
        self._connections = 0

    async def start(self):
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self.server.sockets[0].getsockname()[1]
        return self

    async def _serve(self, reader, writer):
        self._connections += 1
        conn, user = self._connections, None
        try:
            while (f := await read_frame(reader, 1 << 20)) is not None:
                api_key, version, cid, _, _ = request_header(f)
                _, request = decode_request(f, api_key, version)
                self.seen.append((conn, user, api_key))
                close = False
                if api_key == 18:
                    keys = [(17, 0, 1), (36, 0, 2), (3, 0, 12), (12, 0, 4), (18, 0, 3)]
                    body = {
                        "errorCode": 0,
                        "apiKeys": [{"apiKey": k, "minVersion": a, "maxVersion": b} for k, a, b in keys],
                    }
                elif api_key == 17:
                    body = {"errorCode": 0 if request["mechanism"] == "PLAIN" else 33, "mechanisms": ["PLAIN"]}
                elif api_key == 36:
                    _, name, password = base64.b64decode(request["authBytes"]).decode().split("\0")
                    if USERS.get(name) == password:
                        user = name
                        body = {
                            "errorCode": 0,
                            "errorMessage": None,
                            "authBytes": "",
                            "sessionLifetimeMs": self.lifetime_ms,
                        }
                    else:
                        close = True
                        body = {
                            "errorCode": 58,
                            "errorMessage": "Authentication failed: Invalid username or password",
                            "authBytes": "",
                            "sessionLifetimeMs": 0,
                        }
                elif api_key == 3 and user is not None:
                    body = {"brokers": [], "clusterId": "c", "controllerId": 1, "topics": []}
                elif api_key == 10 and user is not None:  # DESCRIBE denied on names starting "secret"
                    body = find_coordinator_answer(request, version)
                else:
                    return  # Kafka: an unexpected request before authentication closes the connection
                out = encode_response(cid, api_key, version, body)
                writer.write(len(out).to_bytes(4, "big") + out)
                await writer.drain()
                if close:
                    return
        except Exception as e:  # noqa: BLE001 - shown by the test's failure
            self.error = e
            raise
        finally:
            writer.close()

    def close(self):
        self.server.close()


def find_coordinator_answer(request, version: int) -> dict:
    """Kafka's FindCoordinator answer of a broker that denies DESCRIBE on names starting "secret"."""
    code = 30 if request.get("keyType", 0) == 0 else 53  # GROUP_ / TRANSACTIONAL_ID_AUTHORIZATION_FAILED

    def one(key: str) -> dict:
        if key.startswith("secret"):
            return {
                "key": key,
                "nodeId": -1,
                "host": "",
                "port": -1,
                "errorCode": code,
                "errorMessage": f"denied {key}",
            }
        return {"key": key, "nodeId": 1, "host": "broker", "port": 9092, "errorCode": 0, "errorMessage": None}

    if version < 4:
        answer = one(request["key"])
        answer.pop("key")
        if version == 0:
            return {k: v for k, v in answer.items() if k != "errorMessage"}
        return {"throttleTimeMs": 0, **answer}
    return {"throttleTimeMs": 0, "coordinators": [one(k) for k in request["coordinatorKeys"]]}


class PrincipalBridge:
    def __init__(self):
        self.ready = asyncio.Event()
        self.ready.set()
        self.calls: list[dict] = []

    async def start(self):
        pass

    def close(self):
        pass

    async def call(self, api, version, body, *, key, client_id, client_host, timeout_s, wait_ready=True, **kw):
        self.calls.append({"api": api, "principal": kw.get("principal")})
        return {"errorCode": 0, "throttleTimeMs": 0}


def request(api_key, version, cid, body):
    payload = encode_request(api_key, version, cid, "c1", body)
    return len(payload).to_bytes(4, "big") + payload


async def answer(reader, api_key, version):
    size = int.from_bytes(await reader.readexactly(4), "big")
    return decode_response(await reader.readexactly(size), api_key, version)[1]


async def closed(reader) -> bool:
    """True once the gateway closed the connection (with nothing more to read)."""
    return await asyncio.wait_for(reader.read(), 10) == b""


def heartbeat(cid):
    return request(12, 4, cid, {"groupId": "g", "generationId": 1, "memberId": "m", "groupInstanceId": None})


def plain(user, password):
    return {"authBytes": base64.b64encode(f"\0{user}\0{password}".encode()).decode()}


def run(test, lifetime_ms: int = 0):
    async def main():
        broker = await SaslBroker(lifetime_ms).start()
        bridge = PrincipalBridge()
        cfg = GatewayConfig(
            bootstrap_servers=f"127.0.0.1:{broker.port}",
            base_port=0,
            security_protocol="SASL_PLAINTEXT",
            sasl_enabled_mechanisms=("PLAIN", "SCRAM-SHA-256"),
            upstream_security_protocol="SASL_PLAINTEXT",
            upstream_sasl_username="gateway",
            upstream_sasl_password=USERS["gateway"],
        )
        gw = Gateway(cfg, bridge=bridge)
        port = await gw.ensure_listener(1, "127.0.0.1", broker.port)
        try:
            await asyncio.wait_for(test(gw, broker, bridge, port), 30)
        finally:
            await gw.close()
            broker.close()
            assert broker.error is None

    asyncio.run(main())


async def login(port, user="alice", password=None):
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(request(17, 1, 1, {"mechanism": "PLAIN"}))
    writer.write(request(36, 2, 2, plain(user, password or USERS[user])))
    await writer.drain()
    assert (await answer(reader, 17, 1))["errorCode"] == 0
    return reader, writer, await answer(reader, 36, 2)


def test_only_api_versions_and_handshake_before_authentication():
    async def test(gw, broker, bridge, port):
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(request(18, 3, 1, {"clientSoftwareName": "t", "clientSoftwareVersion": "1"}))
        writer.write(request(3, 12, 2, METADATA_BODY))
        await writer.drain()
        versions = await answer(reader, 18, 3)
        offered = {k["apiKey"]: (k["minVersion"], k["maxVersion"]) for k in versions["apiKeys"]}
        assert offered[17] == (1, 1)  # SaslHandshake v0 (unframed tokens) is not offered
        assert await closed(reader)  # the Metadata: closed, unanswered
        # a bridged request before authentication: closed too, and never reaches the service
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(heartbeat(3))
        await writer.drain()
        assert await closed(reader) and not bridge.calls
        assert not [s for s in broker.seen if s[2] == 3]

    run(test)


def test_an_unsupported_mechanism_gets_the_enabled_list_then_the_connection_closes():
    async def test(gw, broker, bridge, port):
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(request(17, 1, 1, {"mechanism": "GSSAPI"}))
        await writer.drain()
        handshake = await answer(reader, 17, 1)
        assert handshake["errorCode"] == 33 and handshake["mechanisms"] == ["PLAIN", "SCRAM-SHA-256"]
        assert await closed(reader)

    run(test)


def test_an_authenticated_client_passes_through_as_itself_and_bridges_with_its_principal():
    async def test(gw, broker, bridge, port):
        reader, writer, auth = await login(port)
        assert auth["errorCode"] == 0
        writer.write(request(3, 12, 3, METADATA_BODY))
        writer.write(heartbeat(4))
        await writer.drain()
        await answer(reader, 3, 12)
        await answer(reader, 12, 4)
        [(conn, user, _)] = [s for s in broker.seen if s[2] == 3]
        assert user == "alice"  # on the connection the client authenticated, not the gateway's
        assert {c for c, _, k in broker.seen if k in (17, 36)} == {conn}
        assert bridge.calls == [{"api": "Heartbeat", "principal": "User:alice"}]

    run(test)


def test_a_wrong_password_is_answered_as_the_broker_answers_then_closed():
    async def test(gw, broker, bridge, port):
        reader, writer, auth = await login(port, password="wrong")
        assert auth["errorCode"] == 58
        assert auth["errorMessage"] == "Authentication failed: Invalid username or password"
        assert await closed(reader)

    run(test)


def test_a_session_expires_unless_re_authenticated():
    async def test(gw, broker, bridge, port):
        loop = asyncio.get_running_loop()
        reader, writer, auth = await login(port)
        assert auth["sessionLifetimeMs"] == LIFETIME_MS
        [conn] = list(gw.connections)
        expires = conn.sasl.expires_at
        # re-authenticated halfway (as clients do, before it expires): it goes on past the first lifetime
        while loop.time() < expires - LIFETIME_MS / 2000:
            await asyncio.sleep(0.01)
        writer.write(request(17, 1, 5, {"mechanism": "PLAIN"}))
        writer.write(request(36, 2, 6, plain("alice", USERS["alice"])))
        await writer.drain()
        assert (await answer(reader, 17, 1))["errorCode"] == 0
        assert (await answer(reader, 36, 2))["errorCode"] == 0
        assert conn.sasl.expires_at > expires and conn.sasl.authentications == 2
        while loop.time() < expires:  # the first session's end
            await asyncio.sleep(0.01)
        writer.write(request(3, 12, 7, METADATA_BODY))
        await writer.drain()
        await answer(reader, 3, 12)
        while loop.time() < conn.sasl.expires_at:  # the renewed one's end: not re-authenticated
            await asyncio.sleep(0.01)
        writer.write(request(3, 12, 8, METADATA_BODY))
        await writer.drain()
        assert await closed(reader)

    run(test, lifetime_ms=LIFETIME_MS)


def test_find_coordinator_is_denied_where_the_broker_denies_describe():
    """Kafka's FindCoordinator checks DESCRIBE on the group / transactional id: the gateway asks the
    broker on the client's own connection and answers its authorisation errors; the other keys are
    the gateway's (the broker's coordinator is not the service's)."""

    async def test(gw, broker, bridge, port):
        reader, writer, auth = await login(port)
        assert auth["errorCode"] == 0
        writer.write(request(10, 4, 3, {"keyType": 0, "coordinatorKeys": ["g1", "secret-g"]}))
        writer.write(request(10, 3, 4, {"key": "secret-t", "keyType": 1}))
        writer.write(request(10, 3, 5, {"key": "t1", "keyType": 1}))
        writer.write(request(10, 0, 6, {"key": "secret-v0"}))  # v0: a group, no message
        await writer.drain()
        batched = {c["key"]: c for c in (await answer(reader, 10, 4))["coordinators"]}
        g1 = batched["g1"]
        assert (g1["errorCode"], g1["nodeId"], g1["port"]) == (0, 1, port)
        denied = batched["secret-g"]
        assert (denied["errorCode"], denied["errorMessage"], denied["nodeId"], denied["host"], denied["port"]) == (
            30,
            "denied secret-g",
            -1,
            "",
            -1,
        )
        txn = await answer(reader, 10, 3)
        assert (txn["errorCode"], txn["errorMessage"], txn["nodeId"]) == (53, "denied secret-t", -1)
        ok = await answer(reader, 10, 3)
        assert (ok["errorCode"], ok["errorMessage"], ok["port"]) == (0, "NONE", port)
        v0 = await answer(reader, 10, 0)
        assert (v0["errorCode"], v0["nodeId"], v0["port"]) == (30, -1, -1)
        asked = [(c, u) for c, u, k in broker.seen if k == 10]
        assert len(asked) == 4 and {u for _, u in asked} == {"alice"}  # as the client, on its connection
        assert {c for c, _ in asked} == {c for c, _, k in broker.seen if k == 36}

    run(test)
