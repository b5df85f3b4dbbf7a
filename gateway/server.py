"""The gateway's listeners and client connections (asyncio).

Each broker of the cluster gets one gateway port; a client connection on that port passes its
requests through to that broker on one of the broker's few shared connections, or, for Produce and
Fetch, on a connection of its own (gateway/upstream.py); it moves from one to the other only once
its requests on the first are answered, so the broker serves a client's requests in the client's
order. Requests in flight on a connection are answered in the order they arrived, as
Kafka requires, whatever order their answers come in: each request takes a slot in the
connection's bounded queue, and the writer sends the slots' answers in order. When the queue is
full the connection is not read any further (a slow client costs at most `max_in_flight`
answers of memory).
"""

from __future__ import annotations

import asyncio
import base64
import itertools
import logging
from typing import Any

from coordinator.errors import Errors

from . import apis
from .bridge import BridgeRequestTooLarge, BridgeTimeout, CoordinatorBridge
from .codec import DecodeError, decode_request, decode_response, encode_request, encode_response, known_versions
from .config import GatewayConfig
from .frames import FrameError, produce_expects_response, read_frame, request_header
from .limits import ConnectionQuotas, RequestMemory
from .sasl import SASL_AUTHENTICATE, SASL_HANDSHAKE, SaslSession, Verdict
from .security import UpstreamSecurity, server_context, uses_sasl, validate
from .upstream import SharedUpstreams, Upstream, UpstreamClosed

log = logging.getLogger("gateway")
REWRITTEN = (apis.API_VERSIONS, apis.METADATA, apis.DESCRIBE_CLUSTER)
# Rewritten answers kept by the broker's answer (bytes after the correlation id): every client asks
# the same ApiVersions and mostly the same Metadata, and decoding, rewriting and encoding them was
# most of the gateway's time in a burst of connecting clients.
REWRITE_CACHE_ENTRIES = 64
REWRITE_CACHE_MAX_BYTES = 1 << 20  # per answer


async def fetch_brokers(
    bootstrap_servers: str, client_id: str, security: UpstreamSecurity | None = None
) -> dict[int, tuple[str, int]]:
    """The cluster's brokers (node id -> host, port), from a Metadata request to a bootstrap server."""
    last: Exception | None = None
    for server in bootstrap_servers.split(","):
        host, _, port = server.strip().rpartition(":")
        try:
            upstream = await Upstream.open(host, int(port), security=security)
        except OSError as e:
            last = e
            continue
        try:
            body = {"topics": [], "allowAutoTopicCreation": False, "includeTopicAuthorizedOperations": False}
            frame = await upstream.send(encode_request(apis.METADATA, 12, 1, client_id, body), 1, True)
            _, response = decode_response(frame, apis.METADATA, 12)
            return {b["nodeId"]: (b["host"], b["port"]) for b in response["brokers"]}
        finally:
            upstream.close()
    raise ConnectionError(f"no broker answers at {bootstrap_servers}: {last}")


class Gateway:
    def __init__(self, cfg: GatewayConfig, bridge: CoordinatorBridge | None = None):
        validate(cfg)
        self.cfg = cfg
        self.upstream_security = UpstreamSecurity.from_config(cfg)
        self.sasl = uses_sasl(cfg.security_protocol)  # clients authenticate (with the broker)
        self._tls = server_context(cfg)
        self.bridge = bridge if bridge is not None else CoordinatorBridge(cfg)
        self.brokers: dict[int, tuple[str, int]] = {}  # node id -> the broker's own address
        self.ports: dict[int, int] = {}  # node id -> the gateway's port for it
        self.servers: dict[int, asyncio.base_events.Server] = {}
        self.connections: set[ClientConnection] = set()
        self.shared: dict[int, SharedUpstreams] = {}  # node id -> its shared connections
        self.connects = asyncio.Semaphore(cfg.upstream_connects)  # broker connections being opened
        self._clients = itertools.count()
        self.rewritten: dict[tuple[int, int, bytes], bytes] = {}  # (api key, version, answer) -> rewritten
        self._listen_lock = asyncio.Lock()
        self._explicit_ports = dict(cfg.broker_ports)
        self.memory = RequestMemory(cfg.queued_max_request_bytes)  # request bytes being read, all connections
        self.quotas = ConnectionQuotas(cfg.max_connections_per_ip, dict(cfg.max_connections_per_ip_overrides))
        self._reaper: asyncio.Task | None = None
        self.idle_closed = 0

    async def start(self) -> None:
        if self.sasl and not self.cfg.principal_key_file:
            log.warning(
                "SASL listener without [gateway] principal_key_file: bridged requests carry no principal "
                "(the broker still authorises every passed-through request as its client)"
            )
        await self.bridge.start()
        brokers = await fetch_brokers(self.cfg.bootstrap_servers, self.cfg.client_id, self.upstream_security)
        for node_id, (host, port) in sorted(brokers.items()):
            await self.ensure_listener(node_id, host, port)
        log.info(
            "gateway listening: %s",
            ", ".join(
                f"{self.cfg.advertised_host}:{p} -> broker {n} at {self.brokers[n][0]}:{self.brokers[n][1]}"
                for n, p in sorted(self.ports.items())
            ),
        )

    @property
    def bootstrap(self) -> str:
        """The bootstrap address clients use (the first broker's gateway port)."""
        return f"{self.cfg.advertised_host}:{self.ports[min(self.ports)]}"

    async def ensure_listener(self, node_id: int, host: str, port: int) -> int:
        """The gateway port for a broker, opening a listener the first time it is seen."""
        self.brokers[node_id] = (host, port)
        if node_id in self.ports:
            return self.ports[node_id]
        async with self._listen_lock:
            if node_id in self.ports:
                return self.ports[node_id]
            explicit = self._explicit_ports.get(node_id)
            derived = explicit is None and self.cfg.base_port != 0
            # base_port 0 (and no explicit port): an ephemeral one
            wanted = self.cfg.base_port if explicit is None else explicit
            taken = set(self.ports.values()) | set(self._explicit_ports.values())
            while True:
                if derived and wanted in taken:
                    wanted += 1
                    continue
                try:
                    server = await asyncio.start_server(
                        lambda r, w: self._serve(node_id, r, w),
                        self.cfg.listen_host,
                        wanted,
                        limit=1 << 16,
                        ssl=self._tls,
                    )
                    break
                except OSError:
                    if not derived or wanted - self.cfg.base_port > 100:
                        raise
                    log.warning("port %d is taken; broker %d gets the next one", wanted, node_id)
                    taken.add(wanted)
            self.servers[node_id] = server
            self.ports[node_id] = server.sockets[0].getsockname()[1]
            return self.ports[node_id]

    def shared_upstreams(self, node_id: int) -> SharedUpstreams:
        shared = self.shared.get(node_id)
        if shared is None:
            shared = self.shared[node_id] = SharedUpstreams(
                lambda: self.brokers[node_id], self.cfg.upstream_connections, self.connects, self.upstream_security
            )
        return shared

    async def _serve(self, node_id: int, reader, writer) -> None:
        peer = writer.get_extra_info("peername")
        address = str(peer[0]) if peer else ""
        if not self.quotas.admit(address):
            # Kafka's acceptor closes a connection past max.connections.per.ip at once.
            log.info(
                "refused a connection from %s: it has %d open (max_connections_per_ip)",
                address,
                self.quotas.limit(address),
            )
            writer.close()
            return
        if self._reaper is None and self.cfg.connections_max_idle_ms > 0:
            self._reaper = asyncio.create_task(self._close_idle())
        conn = ClientConnection(self, node_id, reader, writer, next(self._clients))
        self.connections.add(conn)
        try:
            await conn.serve()
        finally:
            self.connections.discard(conn)
            self.quotas.closed(address)

    async def _close_idle(self) -> None:
        """Close connections idle longer than connections_max_idle_ms (Kafka's Selector does the
        same): no request read, no answer written, and nothing in flight."""
        idle_s = self.cfg.connections_max_idle_ms / 1000
        loop = asyncio.get_running_loop()
        while True:
            await asyncio.sleep(min(max(idle_s / 4, 0.01), 5.0))
            now = loop.time()
            for conn in list(self.connections):
                if conn.in_flight == 0 and now - conn.last_active > idle_s:
                    log.info(
                        "closing the connection from %s: idle for %.1f s", conn.client_host, now - conn.last_active
                    )
                    self.idle_closed += 1
                    conn.abort()

    def advertised_versions(self, entries: list[dict]) -> list[dict]:
        """The broker's ApiVersions entries, narrowed to what the gateway can serve: the service's
        versions for the APIs it answers, the codec's (Kafka 4.4.0's) for the answers it rewrites."""
        out = []
        for e in entries:
            key = e["apiKey"]
            if key in apis.HIDDEN_API_KEYS:
                continue
            lo, hi = e["minVersion"], e["maxVersion"]
            if key == SASL_HANDSHAKE:  # v0 (unframed SASL tokens after it) is not served (gateway/sasl.py)
                lo = max(lo, 1)
            own = apis.service_versions(key)
            if own is None and key in REWRITTEN:
                own = known_versions(key)
            if own is not None:
                lo, hi = max(lo, own[0]), min(hi, own[1])
            if lo <= hi:
                out.append({**e, "minVersion": lo, "maxVersion": hi})
        return out

    async def close(self) -> None:
        for server in self.servers.values():
            server.close()
        for conn in list(self.connections):
            conn.abort()
        for shared in self.shared.values():
            shared.close()
        if self._reaper is not None:
            self._reaper.cancel()
        await asyncio.get_running_loop().run_in_executor(None, self.bridge.close)


class ClientConnection:
    def __init__(self, gateway: Gateway, node_id: int, reader, writer, serial: int = 0):
        self.gw, self.node_id, self.serial = gateway, node_id, serial
        self.reader, self.writer = reader, writer
        peer = writer.get_extra_info("peername")
        self.client_host = f"/{peer[0]}" if peer else "/"
        self.slots: asyncio.Queue[asyncio.Future] = asyncio.Queue(gateway.cfg.max_in_flight)
        self.upstream: Upstream | None = None  # its own, for OWN_UPSTREAM_APIS
        # the connection the latest passed-through request went to and its answer (None: acks=0)
        self._last_sent: tuple[Upstream, asyncio.Future | None] | None = None
        self.tasks: set[asyncio.Task] = set()
        self._writer_task: asyncio.Task | None = None
        self._serve_task: asyncio.Task | None = None
        self.last_active = asyncio.get_running_loop().time()  # a request read or an answer written
        self.in_flight = 0  # requests read whose answers are not written yet
        # SASL listener: the client authenticates with the broker through its own connection
        self.sasl = SaslSession(gateway.cfg.sasl_enabled_mechanisms) if gateway.sasl else None
        self._close_after: asyncio.Future | None = None  # the slot whose answer is the last one

    async def serve(self) -> None:
        self._serve_task = asyncio.current_task()
        self._writer_task = asyncio.create_task(self._write_loop())
        loop = asyncio.get_running_loop()
        try:
            while not self._writer_task.done():
                frame = await read_frame(self.reader, self.gw.cfg.max_frame_bytes, self.gw.memory)
                if frame is None:
                    break
                self.last_active = loop.time()
                try:
                    slot = loop.create_future()
                    self.in_flight += 1
                    await self.slots.put(slot)  # blocks while max_in_flight answers are pending
                    await self._dispatch(frame, slot)
                finally:
                    self.gw.memory.release(len(frame))  # passed on (or failed)
        except FrameError as e:
            log.info("closing the connection from %s: %s", self.client_host, e)
        except (OSError, UpstreamClosed) as e:
            log.info("connection from %s ends: %s", self.client_host, e)
        except asyncio.CancelledError:
            pass  # the writer ended the connection
        finally:
            self.abort()

    def abort(self) -> None:
        if self._writer_task is not None and not self._writer_task.done():
            self._writer_task.cancel()
        for task in list(self.tasks):
            task.cancel()
        while not self.slots.empty():  # answers nobody will write
            slot = self.slots.get_nowait()
            if not slot.done():
                slot.cancel()
            elif not slot.cancelled():
                slot.exception()
        if self.upstream is not None:
            self.upstream.close()
        self.writer.close()
        serve = self._serve_task
        if serve is not None and serve is not asyncio.current_task() and not serve.done():
            serve.cancel()  # e.g. waiting for request memory: closed from outside (idle, shutdown)

    async def _write_loop(self) -> None:
        """Writes the answers in the order their requests came. The answers already there when
        one is written go with it, in one write: the bridge hands over a whole micro-batch of
        answers at once, and a send per answer was the event loop's largest cost (a loopback send
        is a system call that also wakes the reader)."""
        loop = asyncio.get_running_loop()
        waiting: asyncio.Future | None = None  # a slot taken off the queue, its answer not there yet
        try:
            while True:
                slot = waiting if waiting is not None else await self.slots.get()
                waiting = None
                frame = await slot
                out: list[bytes] = []
                while True:
                    self.in_flight -= 1
                    if frame is not None:
                        out.append(len(frame).to_bytes(4, "big"))
                        out.append(frame)
                    last = slot is self._close_after  # e.g. a failed authentication: answered, then closed
                    if last or self.slots.empty():
                        break
                    slot = self.slots.get_nowait()
                    if not slot.done():
                        waiting = slot
                        break
                    frame = slot.result()
                if out:
                    self._send(out)
                    await self.writer.drain()
                self.last_active = loop.time()
                if last:
                    break
        except asyncio.CancelledError:
            if waiting is not None:  # as a cancelled task cancels the future it awaits
                waiting.cancel()
            raise
        except (FrameError, UpstreamClosed, ConnectionError) as e:
            log.info("closing the connection from %s: %s", self.client_host, e)
        except Exception:  # noqa: BLE001 - a bug answering one request closes only its connection
            log.exception("closing the connection from %s", self.client_host)
        self.writer.close()
        if self._serve_task is not None:
            self._serve_task.cancel()

    def _send(self, parts: list[bytes]) -> None:
        """One write for the small frames (length prefixes and answers); a large one (a Fetch
        answer) is written on its own, not copied."""
        small: list[bytes] = []
        for part in parts:
            if len(part) < 1 << 16:
                small.append(part)
                continue
            if small:
                self.writer.write(b"".join(small))
                small = []
            self.writer.write(part)
        if small:
            self.writer.write(b"".join(small))

    def _spawn(self, coro) -> None:
        task = asyncio.create_task(coro)
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def _dispatch(self, frame: bytes, slot: asyncio.Future) -> None:
        api_key, version, cid, client_id, end = request_header(frame)
        if self._close_after is not None:  # the connection closes after an earlier answer
            slot.set_result(None)
            return
        if self.sasl is not None and not await self._admit(frame, slot, api_key, version, cid):
            return
        if api_key == apis.FIND_COORDINATOR:
            asked = None
            if self.sasl is not None:
                # Kafka's FindCoordinator authorises DESCRIBE on each group / transactional id: the
                # broker makes that check as the client, on the client's own connection.
                upstream = await self._upstream_for(api_key)
                asked = upstream.send(frame, cid, True)
                # (retrieved even when the client is gone before the answer: no "never retrieved")
                asked.add_done_callback(lambda f: f.cancelled() or f.exception())
                self._last_sent = (upstream, asked)
                await upstream.writer.drain()
            self._spawn(self._answer(slot, self._find_coordinator, frame, version, cid, asked))
            return
        spec = apis.bridged_spec(api_key)
        if spec is not None:
            self._spawn(self._answer(slot, self._bridge, spec, frame, version, cid, client_id))
            return
        expects = True
        if api_key == apis.PRODUCE:
            try:
                expects = produce_expects_response(frame, version, end)
            except (FrameError, ValueError, IndexError) as e:
                raise FrameError(f"malformed Produce request: {e}") from None
        upstream = await self._upstream_for(api_key)
        if self.sasl is not None and api_key in (SASL_HANDSHAKE, SASL_AUTHENTICATE):
            # (its own connection: nothing else of this client's is in flight there but in order)
            answer = upstream.send(frame, cid, True)
            self._last_sent = (upstream, answer)
            await upstream.writer.drain()
            self._spawn(self._answer(slot, self._sasl_answer, answer, api_key, version, slot))
            return
        if self._last_sent is not None and self._last_sent[0] is not upstream:
            # Moving to another broker connection: the broker must have answered this client's
            # requests on the other one first, or it might serve them out of the client's order.
            last = self._last_sent[1]
            if last is not None and not last.done():
                await asyncio.wait([last])
        future = upstream.send(frame, cid, expects)
        self._last_sent = (upstream, future)
        await upstream.writer.drain()
        if future is None:
            slot.set_result(None)
        elif api_key in REWRITTEN:
            self._spawn(self._answer(slot, self._rewrite, future, api_key, version, cid))
        else:
            future.add_done_callback(lambda f: _copy_outcome(f, slot))

    async def _upstream_for(self, api_key: int) -> Upstream:
        # A SASL client's requests all go on its own connection, which it authenticates itself, so
        # the broker authorises them as the client's principal; the shared connections are the
        # gateway's identity.
        if self.sasl is None and api_key not in apis.OWN_UPSTREAM_APIS:
            return await self.gw.shared_upstreams(self.node_id).get(self.serial)
        if self.upstream is None or self.upstream.closed:
            if self.upstream is not None:  # the broker closed it: the requests on it failed already
                raise UpstreamClosed("the broker closed the connection")
            host, port = self.gw.brokers[self.node_id]
            self.upstream = await Upstream.open(
                host,
                port,
                connects=self.gw.connects,
                security=self.gw.upstream_security,
                authenticate=self.sasl is None,
            )
        return self.upstream

    # ------------------------------------------------------------ SASL
    async def _admit(self, frame: bytes, slot: asyncio.Future, api_key: int, version: int, cid: int) -> bool:
        """Kafka's rules for a request on a SASL listener (gateway/sasl.py); False: answered or refused."""
        session = self.sasl
        assert session is not None
        mechanism = auth_bytes = None
        if api_key == SASL_HANDSHAKE:
            mechanism = _decode(frame, api_key, version)[1]["mechanism"]
        elif api_key == SASL_AUTHENTICATE:
            auth_bytes = base64.b64decode(_decode(frame, api_key, version)[1]["authBytes"])
        now = asyncio.get_running_loop().time()
        admission = session.admit(api_key, version, now, mechanism=mechanism, auth_bytes=auth_bytes)
        if admission.verdict is Verdict.FORWARD:
            return True
        if admission.verdict is Verdict.UNSUPPORTED_MECHANISM:
            log.info("closing the connection from %s: %s", self.client_host, admission.reason)
            answer = {"errorCode": Errors.UNSUPPORTED_SASL_MECHANISM.code, "mechanisms": list(session.enabled)}
            self._close_after = slot
            slot.set_result(encode_response(cid, api_key, version, answer))
            return False
        # Closed without an answer, as Kafka closes it, once the answers to the requests before
        # this one are written (Kafka answers them before it reads the next request).
        log.info("closing the connection from %s: %s", self.client_host, admission.reason)
        self._close_after = slot
        slot.set_result(None)
        return False

    async def _sasl_answer(self, future: asyncio.Future, api_key: int, version: int, slot: asyncio.Future) -> bytes:
        """The broker's answer to the client's SaslHandshake/SaslAuthenticate, passed on unchanged;
        it tells the session whether the client is authenticated, and as whom."""
        frame = await future
        session = self.sasl
        assert session is not None
        _, answer = decode_response(frame, api_key, version)
        if api_key == SASL_HANDSHAKE:
            keep, why = session.handshake_answered(answer["errorCode"]), "the broker refused the mechanism"
        else:
            keep, why = session.authenticate_answered(
                answer["errorCode"], answer.get("sessionLifetimeMs", 0), asyncio.get_running_loop().time()
            )
            if keep and session.authenticated:
                log.debug("%s authenticated as %s (%s)", self.client_host, session.principal, session.mechanism)
        if not keep:
            log.info("closing the connection from %s after its answer: %s", self.client_host, why)
            self._close_after = slot
        return frame

    async def _answer(self, slot: asyncio.Future, handler, *args) -> None:
        try:
            result = await handler(*args)
        except asyncio.CancelledError:
            slot.cancel()
            raise
        except Exception as e:  # noqa: BLE001 - the writer closes the connection
            if not isinstance(e, (FrameError, UpstreamClosed)):
                log.exception("answering a request from %s", self.client_host)
            if not slot.done():
                slot.set_exception(e)
        else:
            if not slot.done():
                slot.set_result(result)

    # ------------------------------------------------------------ handlers
    async def _rewrite(self, future: asyncio.Future, api_key: int, version: int, cid: int) -> bytes:
        frame = await future
        key = (api_key, version, frame[4:])
        cached = self.gw.rewritten.get(key)
        if cached is not None:
            return frame[:4] + cached
        answer = await self._rewrite_answer(frame, api_key, version, cid)
        if len(answer) <= REWRITE_CACHE_MAX_BYTES:
            if len(self.gw.rewritten) >= REWRITE_CACHE_ENTRIES:
                del self.gw.rewritten[next(iter(self.gw.rewritten))]  # the oldest
            self.gw.rewritten[key] = answer[4:]
        return answer

    async def _rewrite_answer(self, frame: bytes, api_key: int, version: int, cid: int) -> bytes:
        try:
            _, body = decode_response(frame, api_key, version)
        except DecodeError:  # e.g. ApiVersions answered in v0 for a version the broker does not know
            return frame
        if api_key == apis.API_VERSIONS:
            body["apiKeys"] = self.gw.advertised_versions(body["apiKeys"])
        else:
            for b in body["brokers"]:
                node = b["nodeId"] if "nodeId" in b else b["brokerId"]
                b["port"] = await self.gw.ensure_listener(node, b["host"], b["port"])
                b["host"] = self.gw.cfg.advertised_host
        return encode_response(cid, api_key, version, body)

    async def _find_coordinator(
        self, frame: bytes, version: int, cid: int, asked: asyncio.Future | None = None
    ) -> bytes:
        """Any gateway port serves the coordinator APIs: the coordinator is the node the client
        is connected to. `asked`: the broker's answer to the same request (a SASL client's, on its
        own connection), whose authorisation errors are the answer for their keys (Kafka's DESCRIBE
        check on the group or transactional id; the broker's other answers are not the service's)."""
        _, body = _decode(frame, apis.FIND_COORDINATOR, version)
        host, port = self.gw.cfg.advertised_host, self.gw.ports[self.node_id]
        denied = await _denied_keys(asked, version, body.get("key", "")) if asked is not None else {}

        def one(key: str) -> dict:
            if key in denied:
                return {"key": key, "nodeId": -1, "host": "", "port": -1, **denied[key]}
            if body.get("keyType", 0) not in (0, 1):
                return {
                    "key": key,
                    "nodeId": -1,
                    "host": "",
                    "port": -1,
                    "errorCode": Errors.INVALID_REQUEST.code,
                    # KafkaApis answers getErrorResponse: the error's default message
                    "errorMessage": Errors.INVALID_REQUEST.message,
                }
            return {
                "key": key,
                "nodeId": self.node_id,
                "host": host,
                "port": port,
                "errorCode": 0,
                "errorMessage": "",  # KafkaApis (v4+) leaves it unset: the generated field's default
            }

        if version < 4:
            answer = one(body.get("key", ""))
            answer.pop("key")
            if answer["errorCode"] == 0:
                answer["errorMessage"] = "NONE"
            response = {"throttleTimeMs": 0, **answer}
        else:
            response = {"throttleTimeMs": 0, "coordinators": [one(k) for k in body.get("coordinatorKeys", [])]}
        return encode_response(cid, apis.FIND_COORDINATOR, version, response)

    async def _bridge(self, spec, frame: bytes, version: int, cid: int, client_id: str | None) -> bytes:
        _, body = _decode(frame, spec.api_key, version)
        timeout_s = self.gw.cfg.request_timeout_ms / 1000
        if spec.name == "JoinGroup":  # answered when the rebalance's join phase completes
            # (v0 has no rebalance timeout: the session timeout is used, as JoinGroupRequest does)
            rebalance = body.get("sessionTimeoutMs") if version == 0 else body.get("rebalanceTimeoutMs")
            timeout_s += max(rebalance or 0, 0) / 1000
        subs = apis.plan(spec, version, body, self.gw.cfg.coordinator_partitions)
        # the authenticated principal (SASL listener), signed by the bridge
        extra: dict[str, Any] = (
            {"principal": self.sasl.principal} if self.sasl is not None and self.sasl.principal else {}
        )
        try:
            calls = [
                self.gw.bridge.call(
                    spec.name,
                    version,
                    sub.body,
                    key=sub.key,
                    client_id=client_id or "",
                    client_host=self.client_host,
                    timeout_s=timeout_s,
                    **extra,
                )
                for sub in subs
            ]
            # (one coordinator partition, the usual case: no task per call)
            answers = [await calls[0]] if len(calls) == 1 else await asyncio.gather(*calls)
            response = apis.merge(spec, subs, list(answers))
        except BridgeTimeout as e:
            response = _error_body(spec, version, body, str(e))
        except BridgeRequestTooLarge as e:  # as the service answers an oversized request
            response = _error_body(spec, version, body, str(e), Errors.INVALID_REQUEST)
        return encode_response(cid, spec.api_key, version, response)


# FindCoordinator's authorisation errors (KafkaApis: DESCRIBE on the GROUP / TRANSACTIONAL_ID)
_FIND_COORDINATOR_DENIED = frozenset(
    {Errors.GROUP_AUTHORIZATION_FAILED.code, Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED.code}
)


async def _denied_keys(asked: asyncio.Future, version: int, v0_key: str) -> dict[str, dict]:
    """key -> {errorCode, errorMessage} of the keys the broker's FindCoordinator answer denies."""
    _, answer = decode_response(await asked, apis.FIND_COORDINATOR, version)
    if version < 4:
        entries = [(v0_key, answer["errorCode"], answer.get("errorMessage"))]  # (v0 has none)
    else:
        entries = [(c["key"], c["errorCode"], c["errorMessage"]) for c in answer["coordinators"]]
    return {
        key: {"errorCode": code, "errorMessage": message}
        for key, code, message in entries
        if code in _FIND_COORDINATOR_DENIED
    }


def _decode(frame: bytes, api_key: int, version: int) -> tuple[dict, dict]:
    try:
        return decode_request(frame, api_key, version)
    except DecodeError as e:
        raise FrameError(f"malformed request (api key {api_key} v{version}): {e}") from None


def _error_body(spec, version: int, body: dict, message: str, error: Errors = Errors.COORDINATOR_NOT_AVAILABLE) -> dict:
    """The API's own error shape (as the service builds it), by default with a retriable error (the
    client looks for its coordinator again and retries)."""
    try:
        validated = spec.request.validate(body, version)
    except Exception:  # noqa: BLE001
        validated = None
    response = spec.error_response(version, validated, error, message)
    response.setdefault("throttleTimeMs", 0)
    return response


def _copy_outcome(source: asyncio.Future, target: asyncio.Future) -> None:
    if source.cancelled():
        if not target.done():
            target.cancel()
        return
    error = source.exception()  # retrieved even when nobody waits any more
    if target.done():
        return
    if error is not None:
        target.set_exception(error)
    else:
        target.set_result(source.result())
