"""The gateway's connections to the brokers.

A Kafka broker serves one request of a connection at a time and answers a connection's requests in
order, so many clients' requests can share one connection: each gets a correlation id of that
connection's own (clients' ids collide) and its answer gets the client's id back. Opening one
broker connection per client connection made a burst of clients a burst of connects the broker's
accept backlog (`socket.listen.backlog.size`, 50) could not take: the broker reset some of them.

- `SharedUpstreams`: per broker, a few connections shared by every client connection of that
  broker's gateway port (a client sticks to one of them, so its requests keep their order).
- A client's own connection (`Upstream` without remapping) for the APIs a broker may hold for long
  or throttle by bytes (Produce, Fetch: `apis.OWN_UPSTREAM_APIS`): on a shared connection, one
  client's long-polling Fetch would hold every other client's requests behind it.
- Every connect takes a slot of a gateway-wide semaphore, so a burst never exceeds the backlog.
"""

from __future__ import annotations

import asyncio
import ssl
import struct
from collections import deque
from collections.abc import Callable
from typing import Literal, Protocol, overload

UPSTREAM_MAX_FRAME = 2**31 - 1
INT32_MAX = 2**31 - 1


class UpstreamClosed(ConnectionError):
    pass


class ConnectionSecurity(Protocol):
    """How a broker connection is secured (gateway/security.py's UpstreamSecurity)."""

    @property
    def tls(self) -> ssl.SSLContext | None: ...

    async def authenticate(self, upstream: Upstream) -> None: ...


async def _connect(host: str, port: int, tls: ssl.SSLContext | None):
    if tls is None:
        return await asyncio.open_connection(host, port)
    return await asyncio.open_connection(host, port, ssl=tls, server_hostname=host)


class Upstream:
    """One connection to a broker; its answers come back in request order. With `remap`, requests
    are renumbered with the connection's own correlation ids (for a shared connection) and each
    answer carries its client's id again."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, remap: bool = False):
        self.reader, self.writer, self.remap = reader, writer, remap
        # (the correlation id the broker answers with, the client's, the waiting future)
        self.pending: deque[tuple[int, int, asyncio.Future]] = deque()
        self._next_cid = 0
        self.task = asyncio.create_task(self._read_loop())

    @classmethod
    async def open(
        cls,
        host: str,
        port: int,
        remap: bool = False,
        connects: asyncio.Semaphore | None = None,
        security: ConnectionSecurity | None = None,
        authenticate: bool = True,
    ) -> Upstream:
        """A connection to a broker: over TLS if `security` says so, and authenticated as the
        gateway unless `authenticate` is False (a SASL client's own connection: the client
        authenticates it)."""
        tls = security.tls if security is not None else None
        if connects is None:
            reader, writer = await _connect(host, port, tls)
        else:
            async with connects:
                reader, writer = await _connect(host, port, tls)
        upstream = cls(reader, writer, remap)
        if security is not None and authenticate:
            try:
                await security.authenticate(upstream)
            except BaseException:
                upstream.close()
                raise
        return upstream

    @property
    def closed(self) -> bool:
        return self.task.done()

    @overload
    def send(self, frame: bytes, correlation_id: int, expects_response: Literal[True]) -> asyncio.Future: ...

    @overload
    def send(self, frame: bytes, correlation_id: int, expects_response: bool) -> asyncio.Future | None: ...

    def send(self, frame: bytes, correlation_id: int, expects_response: bool) -> asyncio.Future | None:
        """Write one request frame (no await between the writes: frames of concurrent senders never
        interleave); the future gets the answer frame, with the client's correlation id."""
        if self.task.done():
            raise UpstreamClosed("the broker closed the connection")
        wire_cid = correlation_id
        if self.remap:  # one write (one send call) for the small requests shared connections carry
            wire_cid = self._next_cid
            self._next_cid = wire_cid + 1 if wire_cid < INT32_MAX else 0
            view = memoryview(frame)
            self.writer.write(
                b"".join((len(frame).to_bytes(4, "big"), view[:4], struct.pack(">i", wire_cid), view[8:]))
            )
        else:
            self.writer.write(len(frame).to_bytes(4, "big"))
            self.writer.write(frame)
        if not expects_response:
            return None
        future = asyncio.get_running_loop().create_future()
        self.pending.append((wire_cid, correlation_id, future))
        return future

    async def _read_loop(self) -> None:
        error: Exception = UpstreamClosed("the broker closed the connection")
        try:
            while True:
                prefix = await self.reader.readexactly(4)
                size = int.from_bytes(prefix, "big", signed=True)
                if not 4 <= size <= UPSTREAM_MAX_FRAME:
                    raise UpstreamClosed(f"the broker sent a frame of {size} bytes")
                frame = await self.reader.readexactly(size)
                cid = int.from_bytes(frame[:4], "big", signed=True)
                if not self.pending or self.pending[0][0] != cid:
                    raise UpstreamClosed(f"the broker answered correlation id {cid} out of order")
                _, client_cid, future = self.pending.popleft()
                if self.remap:
                    frame = struct.pack(">i", client_cid) + frame[4:]
                if not future.done():
                    future.set_result(frame)
        except (asyncio.IncompleteReadError, ConnectionError, UpstreamClosed) as e:
            error = e if isinstance(e, UpstreamClosed) else UpstreamClosed(f"broker connection lost: {e}")
        finally:
            # Only the requests in flight on this connection fail: their clients' connections are
            # closed (as a broker's failure closes them); other clients go on.
            while self.pending:
                _, _, future = self.pending.popleft()
                if not future.done():
                    future.set_exception(error)
            self.writer.close()

    def close(self) -> None:
        self.task.cancel()
        self.writer.close()


class SharedUpstreams:
    """A broker's shared connections, opened on first use and again after one fails."""

    def __init__(
        self,
        address: Callable[[], tuple[str, int]],
        size: int,
        connects: asyncio.Semaphore,
        security: ConnectionSecurity | None = None,
    ):
        self.address, self.connects, self.security = address, connects, security
        self.connections: list[Upstream | None] = [None] * max(size, 1)
        self._locks = [asyncio.Lock() for _ in self.connections]
        self.opened = 0  # connections opened so far (a replaced one counts again)

    def __len__(self) -> int:
        return len(self.connections)

    async def get(self, index: int) -> Upstream:
        index %= len(self.connections)
        upstream = self.connections[index]
        if upstream is not None and not upstream.closed:
            return upstream
        async with self._locks[index]:  # many clients waiting for the same connection open it once
            upstream = self.connections[index]
            if upstream is None or upstream.closed:
                host, port = self.address()
                upstream = await Upstream.open(host, port, remap=True, connects=self.connects, security=self.security)
                self.connections[index] = upstream
                self.opened += 1
            return upstream

    def close(self) -> None:
        for upstream in self.connections:
            if upstream is not None:
                upstream.close()
