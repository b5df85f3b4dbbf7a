"""Read the coordinators' read model in Redis (kept by the projector, streaming/projector.py).

    rm = ReadModel("redis://127.0.0.1:6379/0")      # prefix "coord" ([redis] prefix)
    rm.groups()                  # every group: {"groupId", "type", "state", "members": [...], ...}
    rm.offsets("orders-app")     # {("orders", 0): {"committedOffset": 42, ...}}
    rm.share_offsets("sg")       # a share group's {("orders", 0): {"startOffset": 7, ...}}
    rm.transactions()            # every transactional id: {"state", "producerId", ...}
    rm.freshness()               # {"offsets": {state-log partition: next offset}, "updatedAt", ...}

The keys and fields are documented in docs/operations.md (*The Redis read model*). Every entity
carries `stateLogOffset`, the offset of the newest state-log record folded into it; `freshness()`
says how far the projector got in each state-log partition, to compare with the topic's end offsets.
Fields the projector did not write (a null in the record) read as None. Raises
`ReadModelUnavailable` when Redis cannot be reached.
"""

from __future__ import annotations

import json
from typing import Any

import redis

GROUP_INTS = (
    "generation",
    "assignmentEpoch",
    "topologyEpoch",
    "coordinatorPartition",
    "stateLogPartition",
    "stateLogOffset",
)
GROUP_JSON = ("members", "shareTopics", "subtopologies")
GROUP_FIELDS = ("groupId", "type", "state", "protocolType", "protocol", "leader") + GROUP_INTS + GROUP_JSON
TXN_INTS = (
    "producerId",
    "producerEpoch",
    "timeoutMs",
    "startTimestamp",
    "lastUpdateTimestamp",
    "coordinatorPartition",
    "stateLogPartition",
    "stateLogOffset",
)
TXN_JSON = ("partitions",)
TXN_FIELDS = ("transactionalId", "state") + TXN_INTS + TXN_JSON


class ReadModelUnavailable(RuntimeError):
    """Redis cannot be reached (or answered with an error)."""


def decode_hash(raw: dict, ints: tuple, json_fields: tuple, fields: tuple) -> dict:
    """A Redis hash (str -> str) as the projector wrote it, with ints as ints and JSON parsed;
    every field of `fields` present (None when absent)."""
    out: dict[str, Any] = {f: None for f in fields}
    for k, v in raw.items():
        if k in ints:
            out[k] = int(v)
        elif k in json_fields:
            out[k] = json.loads(v)
        else:
            out[k] = v
    return out


def decode_offsets(raw: dict) -> dict[tuple[str, int], dict]:
    out = {}
    for field, value in raw.items():
        topic, _, partition = field.rpartition(":")
        out[(topic, int(partition))] = json.loads(value)
    return dict(sorted(out.items()))


def decode_projector(raw: dict) -> dict:
    offsets = {int(k.split(":", 1)[1]): int(v) for k, v in raw.items() if k.startswith("offset:")}
    return {
        "offsets": dict(sorted(offsets.items())),
        "updatedAt": int(raw["updatedAt"]) if "updatedAt" in raw else None,
        "rebuiltAt": int(raw["rebuiltAt"]) if "rebuiltAt" in raw else None,
    }


class ReadModel:
    def __init__(self, url: str = "redis://127.0.0.1:6379/0", prefix: str = "coord", timeout: float = 5.0):
        self.prefix = prefix
        self.url = url
        self.redis = redis.Redis.from_url(
            url, decode_responses=True, socket_timeout=timeout, socket_connect_timeout=timeout
        )

    def _call(self, fn, *args):
        try:
            return fn(*args)
        except redis.RedisError as e:
            raise ReadModelUnavailable(f"Redis at {self.url}: {e}") from e

    def _hashes(self, keys: list[str]) -> list[dict]:
        def read():
            pipe = self.redis.pipeline(transaction=False)
            for k in keys:
                pipe.hgetall(k)
            return pipe.execute()

        return self._call(read)

    def ping(self) -> bool:
        try:
            return bool(self.redis.ping())
        except redis.RedisError:
            return False

    # ------------------------------------------------------------------ groups
    def group(self, group_id: str) -> dict | None:
        raw = self._call(self.redis.hgetall, f"{self.prefix}:group:{group_id}")
        return decode_hash(raw, GROUP_INTS, GROUP_JSON, GROUP_FIELDS) if raw else None

    def groups(self) -> list[dict]:
        ids = sorted(self._call(self.redis.smembers, f"{self.prefix}:groups"))
        raws = self._hashes([f"{self.prefix}:group:{g}" for g in ids])
        return [decode_hash(r, GROUP_INTS, GROUP_JSON, GROUP_FIELDS) for r in raws if r]

    def offsets(self, group_id: str) -> dict[tuple[str, int], dict]:
        return decode_offsets(self._call(self.redis.hgetall, f"{self.prefix}:offsets:{group_id}"))

    def offsets_of(self, group_ids: list[str]) -> dict[str, dict[tuple[str, int], dict]]:
        """`offsets` of several groups in one round trip."""
        raws = self._hashes([f"{self.prefix}:offsets:{g}" for g in group_ids])
        return {g: decode_offsets(raw) for g, raw in zip(group_ids, raws, strict=True)}

    def share_offsets(self, group_id: str) -> dict[tuple[str, int], dict]:
        """A share group's share-partitions: {(topic, partition): {"startOffset", "leaderEpoch",
        "topicId"}}; topics by name where the group's ShareGroupStatePartitionMetadata names them,
        else by topic id."""
        key = f"{self.prefix}:shareoffsets:{group_id}"
        raw, names = self._call(
            lambda: (self.redis.hgetall(key), self.redis.hget(f"{self.prefix}:group:{group_id}", "shareTopics"))
        )
        names = json.loads(names) if names else {}
        out = {}
        for field, value in raw.items():
            tid, partition = field.rsplit(":", 1)
            out[(names.get(tid, tid), int(partition))] = {**json.loads(value), "topicId": tid}
        return out

    # ------------------------------------------------------------ transactions
    def transaction(self, transactional_id: str) -> dict | None:
        raw = self._call(self.redis.hgetall, f"{self.prefix}:txn:{transactional_id}")
        return decode_hash(raw, TXN_INTS, TXN_JSON, TXN_FIELDS) if raw else None

    def transactions(self) -> list[dict]:
        ids = sorted(self._call(self.redis.smembers, f"{self.prefix}:txns"))
        raws = self._hashes([f"{self.prefix}:txn:{t}" for t in ids])
        return [decode_hash(r, TXN_INTS, TXN_JSON, TXN_FIELDS) for r in raws if r]

    # --------------------------------------------------------------- freshness
    def freshness(self) -> dict:
        """{"offsets": {state-log partition: next offset to apply}, "updatedAt": ms | None,
        "rebuiltAt": ms | None}; empty offsets when the projector has written nothing (yet)."""
        return decode_projector(self._call(self.redis.hgetall, f"{self.prefix}:projector"))

    def close(self) -> None:
        self.redis.close()

    def __enter__(self) -> ReadModel:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
