"""The trust boundary between clients and the service, on the stream's side.

Clients may write anything to the request topic; on a broker without ACLs they can write to any
topic. So the service's own inputs (topic metadata broadcasts, requests between coordinator
partitions) travel on a topic of their own, `[topics] internal`, and every record there carries an
HMAC-SHA256 of its key and value in the header `coordinator-mac`, under a key only the service
holds (`internal_key`, kept beside the checkpoint). The query verifies it in the JVM, before the
broadcast explode, so a forged record is never taken as the service's own: it reaches the state
function flagged `forged`, which drops it and reports it on the events topic.

The MAC covers len(key) (4 bytes, big-endian), the key and the value, so that bytes cannot be moved
between key and value. Spark SQL has no HMAC, but it has SHA-256, and HMAC is two SHA-256s over the
key padded to the block size and xored with fixed pads.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
import struct
from pathlib import Path
from typing import overload

MAC_HEADER = "coordinator-mac"
KEY_FILE = "coordinator-internal.key"
_BLOCK = 64  # SHA-256's block size


def load_or_create_key(checkpoint: Path) -> bytes:
    """The internal channel's key, created on first start. It lives in the checkpoint directory, so
    a restarted job verifies what it wrote before, and a new checkpoint starts a new key."""
    path = Path(checkpoint) / KEY_FILE
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(secrets.token_hex(32))
        os.chmod(tmp, 0o600)
        os.replace(tmp, path)
    key = bytes.fromhex(path.read_text().strip())
    if not 16 <= len(key) <= _BLOCK:
        raise ValueError(f"{path}: the internal key must be 16 to {_BLOCK} bytes of hex")
    return key


def sign(key: bytes, record_key: bytes | None, value: bytes | None) -> bytes:
    """The `coordinator-mac` header value (lowercase hex, as Spark's sha2 prints it)."""
    k, v = record_key or b"", value or b""
    return hmac.new(key, struct.pack(">I", len(k)) + k + v, hashlib.sha256).hexdigest().encode()


def mac_sql(key: bytes, key_col: str = "key", value_col: str = "value") -> str:
    """A Spark SQL expression of `sign(key, key_col, value_col)` over binary columns."""
    padded = key.ljust(_BLOCK, b"\0")
    inner = bytes(b ^ 0x36 for b in padded).hex()
    outer = bytes(b ^ 0x5C for b in padded).hex()
    k, v = f"coalesce({key_col}, X'')", f"coalesce({value_col}, X'')"
    message = f"concat(unhex(lpad(hex(octet_length({k})), 8, '0')), {k}, {v})"
    return f"sha2(concat(unhex('{outer}'), unhex(sha2(concat(unhex('{inner}'), {message}), 256))), 256)"


def header_sql(name: str = MAC_HEADER, headers_col: str = "headers") -> str:
    """The value of header `name` as a string, or null."""
    return f"cast(element_at(filter({headers_col}, h -> h.key = '{name}'), 1).value as string)"


@overload
def safe_text(s: str) -> str: ...


@overload
def safe_text(s: str | None) -> str | None: ...


def safe_text(s: str | None) -> str | None:
    """`s` as valid Unicode for a sink column: a lone surrogate (which UTF-8 cannot carry, and
    Arrow refuses) becomes U+FFFD. Strings the core accepted are valid already."""
    if s is None:
        return None
    try:
        s.encode("utf-8")
        return s
    except UnicodeEncodeError:
        return s.encode("utf-8", "replace").decode("utf-8")
