"""The gateway's limits over real sockets (asyncio), with the bridge stand-in of
test_gateway_server: request memory across connections (back-pressure, then refusal), idle
connections closed, connections per client address."""

from __future__ import annotations

import asyncio

import pytest

from coordinator.errors import Errors
from gateway.limits import ConnectionQuotas, RequestMemory, parse_overrides

from .test_gateway_server import frame, heartbeat, join_group, read_response, until
from .test_gateway_server import run as run  # noqa: F401 - the fixture

MiB = 1 << 20


def buffered(gw) -> int:
    """Request bytes the gateway holds in its connections' read buffers now."""
    return sum(len(c.reader._buffer) for c in gw.connections)


def test_request_memory_bounds_what_many_connections_sending_partial_frames_buffer(run):
    """Ten clients each send 3 MiB of a 4 MiB JoinGroup: without a bound the gateway buffered all
    30 MiB (a hundred such clients, with 100 MiB frames, ~10 GB). Under an 8 MiB bound two frames
    are read; the other connections are not read (their clients' sends back up) until memory is
    given back, in order."""

    async def test(gw, bridge, port):
        frames = [frame(join_group(cid, b"m" * (4 * MiB - 200))) for cid in range(10)]
        size = len(frames[0]) - 4
        clients = [await asyncio.open_connection("127.0.0.1", port) for _ in frames]
        for (_, w), f in zip(clients, frames, strict=True):
            w.write(f[: 3 * MiB])
        await until(lambda: gw.memory.used == 2 * size and gw.memory.waiting == 8 and buffered(gw) >= 6 * MiB)
        # What is held: the two granted frames' bytes, plus what asyncio reads ahead on each waiting
        # connection before it pauses its socket (2 x 64 KiB, a read or so more).
        assert buffered(gw) <= 2 * 3 * MiB + 8 * 256 * 1024 < gw.cfg.queued_max_request_bytes + 2 * MiB
        assert gw.memory.peak <= gw.cfg.queued_max_request_bytes
        for (_, w), f in zip(clients, frames, strict=True):
            w.write(f[3 * MiB :])  # every frame complete: granted two at a time, in order
        for i in range(10):
            await until(lambda i=i: len(bridge.calls) > i)
            assert gw.memory.peak <= gw.cfg.queued_max_request_bytes
            bridge.calls[i][1].set_result({"throttleTimeMs": 0, "errorCode": Errors.UNKNOWN_MEMBER_ID.code})
        for cid, (r, w) in enumerate(clients):
            header, body = await read_response(r, 11, 9)
            assert header["correlationId"] == cid and body["errorCode"] == Errors.UNKNOWN_MEMBER_ID.code
            w.close()
        await until(lambda: gw.memory.used == 0)

    run(test, queued_max_request_bytes=8 * MiB, max_frame_bytes=100 * MiB)


def test_a_frame_larger_than_the_whole_request_memory_closes_its_connection(run):
    async def test(gw, bridge, port):
        r, w = await asyncio.open_connection("127.0.0.1", port)
        w.write((2 * MiB).to_bytes(4, "big") + b"\0" * 1000)
        await w.drain()
        assert await r.read() == b""  # closed, nothing answered
        assert gw.memory.used == 0
        r, w = await asyncio.open_connection("127.0.0.1", port)  # the gateway serves on
        w.write(frame(heartbeat(1)))
        await until(lambda: len(bridge.calls) == 1)
        bridge.calls[0][1].set_result({"throttleTimeMs": 0, "errorCode": 0})
        assert (await read_response(r))[0]["correlationId"] == 1

    run(test, queued_max_request_bytes=MiB, max_frame_bytes=100 * MiB)


def test_idle_connections_are_closed_busy_ones_and_ones_awaiting_an_answer_are_not(run):
    async def test(gw, bridge, port):
        idle_r, _ = await asyncio.open_connection("127.0.0.1", port)
        waiting_r, waiting_w = await asyncio.open_connection("127.0.0.1", port)
        waiting_w.write(frame(heartbeat(1)))  # its answer takes longer than the idle time
        await until(lambda: len(bridge.calls) == 1)
        busy_r, busy_w = await asyncio.open_connection("127.0.0.1", port)
        cid = 100
        closed = asyncio.ensure_future(idle_r.read())
        while not closed.done():  # the busy client sends a request every 50 ms until the idle one is closed
            busy_w.write(frame(heartbeat(cid)))
            await until(lambda n=cid - 98: len(bridge.calls) == n)
            bridge.calls[-1][1].set_result({"throttleTimeMs": 0, "errorCode": 0})
            assert (await read_response(busy_r))[0]["correlationId"] == cid
            cid += 1
            await asyncio.wait([closed], timeout=0.05)
        assert closed.result() == b"" and gw.idle_closed == 1
        bridge.calls[0][1].set_result({"throttleTimeMs": 0, "errorCode": 0})
        assert (await read_response(waiting_r))[0]["correlationId"] == 1  # kept while it awaited its answer
        assert await waiting_r.read() == b""  # and closed once idle after it
        assert cid > 100 + 2  # the busy one was served across more than one idle time

    run(test, connections_max_idle_ms=300)


def test_an_idle_connection_waiting_for_request_memory_is_closed_and_gives_up_its_place(run):
    async def test(gw, bridge, port):
        clients = [await asyncio.open_connection("127.0.0.1", port) for _ in range(2)]
        for _, w in clients:  # the first is granted its frame's bytes, the second waits
            w.write((800_000).to_bytes(4, "big") + b"\0" * 1000)
        await until(lambda: gw.memory.used == 800_000 and gw.memory.waiting == 1)
        for r, _ in clients:  # neither sends more: both idle
            assert await r.read() == b""
        await until(lambda: gw.memory.used == 0 and gw.memory.waiting == 0 and not gw.connections)

    run(test, queued_max_request_bytes=MiB, connections_max_idle_ms=300)


def test_connections_past_the_per_address_limit_are_closed_at_once(run):
    async def test(gw, bridge, port):
        first = [await asyncio.open_connection("127.0.0.1", port) for _ in range(2)]
        await until(lambda: len(gw.connections) == 2)
        r, _ = await asyncio.open_connection("127.0.0.1", port)
        assert await r.read() == b"" and gw.quotas.refused == 1
        for i, (fr, fw) in enumerate(first):  # the admitted ones are served
            fw.write(frame(heartbeat(i)))
            await until(lambda i=i: len(bridge.calls) == i + 1)
            bridge.calls[i][1].set_result({"throttleTimeMs": 0, "errorCode": 0})
            assert (await read_response(fr))[0]["correlationId"] == i
        first[0][1].close()
        await until(lambda: len(gw.connections) == 1)
        r, w = await asyncio.open_connection("127.0.0.1", port)  # room again
        w.write(frame(heartbeat(9)))
        await until(lambda: len(bridge.calls) == 3)
        bridge.calls[2][1].set_result({"throttleTimeMs": 0, "errorCode": 0})
        assert (await read_response(r))[0]["correlationId"] == 9

    run(test, max_connections_per_ip=2)


def test_an_override_raises_one_addresses_limit():
    quotas = ConnectionQuotas(1, parse_overrides("127.0.0.1:3,10.0.0.1:0"))
    assert [quotas.admit("127.0.0.1") for _ in range(4)] == [True, True, True, False]
    assert quotas.admit("10.0.0.2") and not quotas.admit("10.0.0.2") and not quotas.admit("10.0.0.1")
    quotas.closed("127.0.0.1")
    assert quotas.admit("127.0.0.1")
    assert parse_overrides({"127.0.0.1": 5}) == {"127.0.0.1": 5} and parse_overrides("") == {}


def test_request_memory_grants_in_order_and_takes_back_a_cancelled_wait():
    async def main():
        memory = RequestMemory(100)
        await memory.acquire(60)
        big = asyncio.ensure_future(memory.acquire(80))
        small = asyncio.ensure_future(memory.acquire(10))  # fits now, but waits behind the big one
        await asyncio.sleep(0)
        assert not big.done() and not small.done() and memory.waiting == 2
        memory.release(60)
        await asyncio.wait([big, small])
        assert memory.used == 90
        late = asyncio.ensure_future(memory.acquire(50))
        await asyncio.sleep(0)
        late.cancel()
        with pytest.raises(asyncio.CancelledError):
            await late
        memory.release(80)
        memory.release(10)
        assert memory.used == 0 and memory.waiting == 0 and memory.peak == 90

    asyncio.run(main())
