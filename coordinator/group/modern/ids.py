"""Server-generated ids, derived from the request rather than random, so that a re-run batch
produces the same ones."""

from __future__ import annotations

import base64
import hashlib
import uuid


def kafka_uuid(seed: str) -> str:
    """A Kafka Uuid string (22 characters of url-safe base64) derived from `seed`; like
    Uuid.randomUuid it never starts with '-'."""
    n = 0
    while True:
        raw = hashlib.sha256(f"{seed}\x00{n}".encode("utf-8", "surrogatepass")).digest()[:16]
        raw = uuid.UUID(bytes=raw, version=4).bytes
        text = base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")
        if not text.startswith("-"):
            return text
        n += 1
