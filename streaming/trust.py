"""The trust boundary between clients and the service, on the stream's side.

Clients may write anything to the request topic; on a broker without ACLs they can write to any
topic. So the service's own inputs (topic metadata broadcasts, requests between coordinator
partitions, timer wake-ups) travel on a topic of their own, `[topics] internal`, and every record
there carries an HMAC-SHA256 in the header `coordinator-mac`, under a key only the service holds
(`coordinator-internal.key`, kept beside the checkpoint, mode 0600).

Who wrote a record is not enough: a genuine record copied and written again later would be
genuine too. So each publisher also stamps its records with `coordinator-seq` =
`publisher/epoch/sequence` (ASCII), which the MAC covers: the driver's publishers take a new epoch
at every start (`next_epoch`, a counter in the checkpoint directory) and number their records from
0; a coordinator partition's epoch is the batch time at which its sequence started (a function of
its state, so a replayed micro-batch stamps the same). Each coordinator partition remembers the
highest (epoch, sequence) it accepted per publisher (coordinator/channel.py) and drops an older
one as a replay. Wake records (streaming/timer_waker.py) are not stamped: a replayed wake costs one
micro-batch, as a forged record does, and is dropped before the core.

The MAC covers len(key) (4 bytes, big-endian), the key, then for a stamped record len(stamp) and
the stamp, then the value: bytes cannot be moved between the parts. It is verified in the state
function, in Python, with the key read from the checkpoint directory by the worker itself: the key
is never a literal of the Spark plan, nor pickled into it, nor logged.
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import os
import secrets
import struct
from pathlib import Path
from typing import overload

MAC_HEADER = "coordinator-mac"
# A gateway's bridged request carries its client's authenticated principal in the envelope, with
# this header: sign_principal under the gateway's key (not the internal channel's: a gateway is not
# the service), which the service also reads. A request without it, or whose MAC does not verify,
# has no principal.
PRINCIPAL_MAC_HEADER = "coordinator-principal-mac"  # = coordinator.envelope.PRINCIPAL_MAC_HEADER
_PRINCIPAL_DOMAIN = b"principal"
STAMP_HEADER = "coordinator-seq"
KEY_FILE = "coordinator-internal.key"
EPOCH_FILE = "coordinator-internal.epoch"
_BLOCK = 64  # SHA-256's block size

# (publisher, epoch, sequence)
Stamp = tuple[str, int, int]


def key_path(checkpoint: Path | str) -> Path:
    return Path(checkpoint) / KEY_FILE


def load_or_create_key(checkpoint: Path) -> bytes:
    """The internal channel's key, created on first start. It lives in the checkpoint directory, so
    a restarted job verifies what it wrote before, and a new checkpoint starts a new key."""
    path = key_path(checkpoint)
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(secrets.token_hex(32))
        os.chmod(tmp, 0o600)
        os.replace(tmp, path)
    return read_key(path)


def read_key(path: Path | str) -> bytes:
    key = bytes.fromhex(Path(path).read_text().strip())
    if not 16 <= len(key) <= _BLOCK:
        raise ValueError(f"{path}: the internal key must be 16 to {_BLOCK} bytes of hex")
    return key


@functools.lru_cache(maxsize=4)
def cached_key(path: str) -> bytes:
    """The key in a Python worker: read once per worker process from the checkpoint directory."""
    return read_key(path)


def next_epoch(checkpoint: Path) -> int:
    """A new epoch for this driver's publishers: one more than the last start's, persisted before
    it is used, so that a restarted driver's records are newer than everything it wrote before."""
    path = Path(checkpoint) / EPOCH_FILE
    try:
        last = int(path.read_text().strip() or 0)
    except FileNotFoundError:
        last = 0
    epoch = last + 1
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(str(epoch))
    os.replace(tmp, path)
    return epoch


def format_stamp(publisher: str, epoch: int, sequence: int) -> bytes:
    return f"{publisher}/{epoch}/{sequence}".encode("ascii")


def parse_stamp(raw: bytes | str | None) -> Stamp | None:
    """(publisher, epoch, sequence) of a `coordinator-seq` header, None if absent or malformed."""
    if raw is None:
        return None
    try:
        text = raw.decode("ascii") if isinstance(raw, bytes | bytearray) else str(raw)
        publisher, epoch, sequence = text.rsplit("/", 2)
        return publisher, int(epoch), int(sequence)
    except (ValueError, UnicodeDecodeError):
        return None


class Stamper:
    """A publisher's stamps: one epoch, sequences from 0."""

    def __init__(self, publisher: str, epoch: int):
        self.publisher, self.epoch, self._next = publisher, epoch, 0

    def next(self) -> bytes:
        stamp = format_stamp(self.publisher, self.epoch, self._next)
        self._next += 1
        return stamp


def _message(record_key: bytes | None, value: bytes | None, stamp: bytes | None) -> bytes:
    k, v = record_key or b"", value or b""
    parts = [struct.pack(">I", len(k)), k]
    if stamp is not None:
        parts += [struct.pack(">I", len(stamp)), stamp]
    parts.append(v)
    return b"".join(parts)


def sign(key: bytes, record_key: bytes | None, value: bytes | None, stamp: bytes | None = None) -> bytes:
    """The `coordinator-mac` header value (lowercase hex)."""
    return hmac.new(key, _message(record_key, value, stamp), hashlib.sha256).hexdigest().encode()


def signed_headers(
    key: bytes, record_key: bytes | None, value: bytes | None, stamp: bytes | None = None
) -> list[tuple[str, bytes]]:
    """The headers of an internal record: its MAC, and its stamp if it has one."""
    headers = [(MAC_HEADER, sign(key, record_key, value, stamp))]
    if stamp is not None:
        headers.append((STAMP_HEADER, stamp))
    return headers


def verify(
    key: bytes, record_key: bytes | None, value: bytes | None, mac: bytes | str | None, stamp: bytes | None = None
) -> bool:
    if mac is None:
        return False
    given = mac.encode("ascii", "replace") if isinstance(mac, str) else bytes(mac)
    return hmac.compare_digest(sign(key, record_key, value, stamp), given)


def header_sql(name: str = MAC_HEADER, headers_col: str = "headers") -> str:
    """The value of header `name` as a string, or null (also when the record has no such header:
    try_element_at, as element_at fails on an empty array under ANSI mode)."""
    return f"cast(try_element_at(filter({headers_col}, h -> h.key = '{name}'), 1).value as string)"


@overload
def safe_text(s: str) -> str: ...


@overload
def safe_text(s: str | None) -> str | None: ...


def safe_text(s: str | None) -> str | None:
    """`s` as valid Unicode for a sink column: a lone surrogate (which UTF-8 cannot carry, and
    Arrow refuses) becomes U+FFFD. Strings the core accepted are valid already."""
    if s is None or s.isascii():
        return s
    try:
        s.encode("utf-8")
        return s
    except UnicodeEncodeError:
        return s.encode("utf-8", "replace").decode("utf-8")


def sign_principal(key: bytes, record_key: bytes | None, value: bytes | None) -> bytes:
    """The MAC of a gateway's request record that carries a principal (its own domain: it can never
    pass for an internal record's MAC, even under the same key)."""
    return sign(key, record_key, value, _PRINCIPAL_DOMAIN)


def verify_principal(key: bytes, record_key: bytes | None, value: bytes | None, given: bytes | str | None) -> bool:
    if not key or given is None:
        return False
    if isinstance(given, str):
        given = given.encode("ascii", "replace")
    return hmac.compare_digest(sign_principal(key, record_key, value), given)
