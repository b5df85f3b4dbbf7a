"""Kafka's framing: a 4-byte big-endian size, then the request or response."""

from __future__ import annotations

import asyncio
import struct


class FrameError(ValueError):
    """A frame the gateway cannot accept: the connection is closed, as a broker closes it."""


async def read_frame(reader: asyncio.StreamReader, max_bytes: int, memory=None) -> bytes | None:
    """The next frame without its size prefix; None at a clean end of stream. With `memory` (a
    gateway.limits.RequestMemory) the frame's bytes are taken from it before the frame is read
    (waiting, and so reading nothing, until they fit); the caller gives them back."""
    try:
        prefix = await reader.readexactly(4)
    except asyncio.IncompleteReadError as e:
        if not e.partial:
            return None
        raise FrameError("the connection closed inside a frame's size") from None
    size = int.from_bytes(prefix, "big", signed=True)
    if size < 10:  # api key, version, correlation id, client id length
        raise FrameError(f"frame of {size} bytes is too short for a request header")
    if size > max_bytes:
        raise FrameError(f"frame of {size} bytes exceeds the limit of {max_bytes} bytes")
    if memory is not None:
        if not memory.fits_ever(size):
            raise FrameError(f"frame of {size} bytes exceeds the gateway's request memory of {memory.limit} bytes")
        await memory.acquire(size)
    try:
        return await reader.readexactly(size)
    except BaseException as e:
        if memory is not None:
            memory.release(size)
        if isinstance(e, asyncio.IncompleteReadError):
            raise FrameError("the connection closed inside a frame") from None
        raise


def request_header(frame: bytes) -> tuple[int, int, int, str | None, int]:
    """(api key, api version, correlation id, client id, end of the client id) of a request frame;
    every request header version starts this way."""
    api_key, version, correlation_id, n = struct.unpack_from(">hhih", frame, 0)
    if n < 0:
        return api_key, version, correlation_id, None, 10
    if 10 + n > len(frame):
        raise FrameError("the client id runs past the frame")
    try:
        client_id = frame[10 : 10 + n].decode("utf-8")
    except UnicodeDecodeError:
        raise FrameError("the client id is not valid UTF-8") from None
    return api_key, version, correlation_id, client_id, 10 + n


def _uvarint(frame: bytes, offset: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if offset >= len(frame) or shift > 28:
            raise FrameError("bad varint")
        b = frame[offset]
        offset += 1
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            return value, offset
        shift += 7


def produce_expects_response(frame: bytes, version: int, offset: int) -> bool:
    """Whether a Produce request gets a response: not with acks=0. `offset` is the end of the
    header's client id."""
    flexible = version >= 9
    if flexible:  # the header's tagged fields
        count, offset = _uvarint(frame, offset)
        for _ in range(count):
            _, offset = _uvarint(frame, offset)
            size, offset = _uvarint(frame, offset)
            offset += size
        n, offset = _uvarint(frame, offset)  # transactional id, compact nullable
        offset += max(n - 1, 0)
    else:
        (n,) = struct.unpack_from(">h", frame, offset)
        offset += 2 + max(n, 0)
    (acks,) = struct.unpack_from(">h", frame, offset)
    return acks != 0
