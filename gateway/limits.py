"""The gateway's limits on what clients may hold of it: request memory, idle connections, and
connections per client address (Kafka's `queued.max.request.bytes`, `connections.max.idle.ms`,
`max.connections.per.ip` / `max.connections.per.ip.overrides`).

- `RequestMemory` is Kafka's memory pool for requests: a connection that has read a frame's size
  takes that many bytes from the pool before it reads the frame, and gives them back once the
  request has been passed on. While the pool cannot grant them the connection reads nothing more
  (its client's sends back up into its socket): back-pressure, so the bytes buffered for requests
  across every connection stay under the bound. A frame larger than the whole pool could never be
  read: the connection is closed, as one above `max_frame_bytes` is.
- `ConnectionQuotas` counts open connections per client address and refuses one past its limit:
  the new connection is closed at once, as Kafka's acceptor does (TooManyConnectionsException).
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
from collections import Counter, deque

log = logging.getLogger("gateway")


class RequestMemory:
    """Bytes granted to requests being read, under `limit`; waiting requests are granted in the
    order they asked (a large frame is not starved by small ones)."""

    def __init__(self, limit: int):
        self.limit = limit
        self.used = 0
        self.peak = 0  # the most ever granted at once (for tests and the log)
        self._waiting: deque[tuple[int, asyncio.Future]] = deque()

    def fits_ever(self, size: int) -> bool:
        return size <= self.limit

    @property
    def waiting(self) -> int:
        return sum(1 for _, f in self._waiting if not f.done())

    async def acquire(self, size: int) -> None:
        """Wait until `size` bytes fit under the limit, then take them."""
        if not self._waiting and self.used + size <= self.limit:
            self._take(size)
            return
        if not self.waiting:  # once per episode: the pool just filled up
            log.info(
                "request memory full: %d of %d bytes granted, a frame of %d bytes waits; connections "
                "are not read until requests are passed on (queued_max_request_bytes)",
                self.used,
                self.limit,
                size,
            )
        future = asyncio.get_running_loop().create_future()
        self._waiting.append((size, future))
        try:
            await future
        except asyncio.CancelledError:
            if future.done() and not future.cancelled():
                self.release(size)  # granted, but its connection is gone
            else:
                future.cancel()
                self._grant()  # a waiter ahead of others left
            raise

    def release(self, size: int) -> None:
        self.used -= size
        self._grant()

    def _take(self, size: int) -> None:
        self.used += size
        self.peak = max(self.peak, self.used)

    def _grant(self) -> None:
        while self._waiting:
            size, future = self._waiting[0]
            if future.done():
                self._waiting.popleft()
                continue
            if self.used + size > self.limit:
                return
            self._waiting.popleft()
            self._take(size)
            future.set_result(None)


def parse_overrides(text: str | dict | None) -> dict[str, int]:
    """`max.connections.per.ip.overrides`: "host:count,host:count" (Kafka's form) or a TOML table
    {host = count}; hosts are IP addresses (Kafka also takes host names: resolved once, here too)."""
    if not text:
        return {}
    items = text.items() if isinstance(text, dict) else (part.rsplit(":", 1) for part in text.split(",") if part)
    out: dict[str, int] = {}
    for host, count in items:
        host = str(host).strip()
        try:
            address = str(ipaddress.ip_address(host))
        except ValueError:
            import socket

            address = socket.gethostbyname(host)
        out[address] = int(count)
    return out


class ConnectionQuotas:
    def __init__(self, per_ip: int, overrides: dict[str, int] | None = None):
        self.per_ip = per_ip
        self.overrides = dict(overrides or {})
        self.open: Counter[str] = Counter()
        self.refused = 0

    def limit(self, address: str) -> int:
        return self.overrides.get(address, self.per_ip)

    def admit(self, address: str) -> bool:
        """Count a new connection from `address`, or refuse it (False) if it is one too many."""
        if self.open[address] >= self.limit(address):
            self.refused += 1
            return False
        self.open[address] += 1
        return True

    def closed(self, address: str) -> None:
        self.open[address] -= 1
        if self.open[address] <= 0:
            del self.open[address]
