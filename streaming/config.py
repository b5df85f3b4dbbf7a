"""Configuration of the stream: conf/defaults.toml, an optional override file, then environment.

Environment variables COORD_<TABLE>_<KEY> override single values (e.g.
COORD_KAFKA_BOOTSTRAP_SERVERS, COORD_STREAM_CHECKPOINT); values are read as TOML literals when
they parse as one (numbers, booleans, quoted strings), otherwise as plain strings.
"""

from __future__ import annotations

import copy
import os
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from coordinator.config import CoordinatorConfig

ROOT = Path(__file__).resolve().parent.parent
DEFAULTS_FILE = ROOT / "conf" / "defaults.toml"
# The service's own topics by their [topics] name: no client answer or marker may go there.
# The tables whose keys COORD_<TABLE>_<KEY> environment variables override.
ENV_TABLES = ("kafka", "topics", "stream", "spark", "redis", "metrics", "dashboard", "gateway", "txn", "security")
SERVICE_TOPICS = ("requests", "responses", "events", "state_log", "internal", "dead_letters", "metrics", "timers")


def _merge(base: dict, over: Mapping) -> dict:
    for k, v in over.items():
        if isinstance(v, Mapping) and isinstance(base.get(k), dict):
            _merge(base[k], v)
        else:
            base[k] = copy.deepcopy(v)
    return base


def _env_value(raw: str) -> Any:
    try:
        return tomllib.loads(f"v = {raw}")["v"]
    except tomllib.TOMLDecodeError:
        return raw


@dataclass
class StreamConfig:
    raw: dict

    @classmethod
    def load(
        cls,
        override_file: str | os.PathLike | None = None,
        overrides: Mapping | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> StreamConfig:
        with open(DEFAULTS_FILE, "rb") as f:
            raw = tomllib.load(f)
        if override_file:
            with open(override_file, "rb") as f:
                _merge(raw, tomllib.load(f))
        env = os.environ if environ is None else environ
        for name, value in env.items():
            if not name.startswith("COORD_"):
                continue
            for table in ENV_TABLES:
                prefix = f"COORD_{table.upper()}_"
                if name.startswith(prefix):
                    key = name[len(prefix) :].lower()
                    if key in raw.get(table, {}):
                        raw[table][key] = _env_value(value)
        if overrides:
            _merge(raw, overrides)
        cfg = cls(raw)
        cfg.coordinator_config()  # validate early
        _ = cfg.topic_durability  # validate early
        _ = cfg.txn_markers  # validate early
        return cfg

    # --------------------------------------------------------------- accessors
    @property
    def bootstrap(self) -> str:
        return self.raw["kafka"]["bootstrap_servers"]

    @property
    def topics(self) -> dict:
        return self.raw["topics"]

    @property
    def topic_durability(self) -> tuple[int, int]:
        """([topics] replication_factor, min_insync_replicas) of every service topic."""
        rf = int(self.topics.get("replication_factor", 3))
        min_isr = int(self.topics.get("min_insync_replicas", 2))
        if rf < 1 or not 1 <= min_isr <= rf:
            raise ValueError(
                f"[topics] replication_factor ({rf}) must be at least 1 and min_insync_replicas ({min_isr}) "
                f"between 1 and it"
            )
        return rf, min_isr

    @property
    def source_api_timeout_ms(self) -> int:
        """The Kafka sources' default.api.timeout.ms. Each micro-batch asks the partitions' leaders
        for their latest offsets (an admin client's ListOffsets); one asked of a broker just lost
        waits for it until this timeout (the leader is not looked up again), then Spark asks again
        (fetchOffset.numRetries) and finds the new leader. With Kafka's 60 s the service stopped a
        minute after a broker loss (bench/broker_loss.py)."""
        return int(self.stream.get("source_api_timeout_ms", 10000))

    @property
    def stream(self) -> dict:
        return self.raw["stream"]

    @property
    def spark(self) -> dict:
        return self.raw["spark"]

    @property
    def redis(self) -> dict:
        return self.raw.get("redis", {"enabled": False})

    @property
    def projector_checkpoint(self) -> Path:
        own = self.redis.get("checkpoint") or ""
        if not own:
            return self.checkpoint.with_name(self.checkpoint.name + ".projector")
        p = Path(own)
        return p if p.is_absolute() else ROOT / p

    @property
    def txn_markers(self) -> str:
        """[txn] markers: "auto", "json" or "broker" (streaming/step.py `sent_by_broker`)."""
        mode = self.raw.get("txn", {}).get("markers", "auto")
        if mode not in ("auto", "json", "broker"):
            raise ValueError(f'[txn] markers must be "auto", "json" or "broker", not {mode!r}')
        return mode

    @property
    def security(self) -> dict:
        """[security]: the coordinator APIs' authorisation with the broker's ACLs (streaming/acl_publisher.py)."""
        return self.raw.get("security", {})

    @property
    def metrics(self) -> dict:
        return self.raw.get("metrics", {})

    @property
    def dashboard(self) -> dict:
        return self.raw.get("dashboard", {})

    @property
    def coordinator_partitions(self) -> int:
        return self.coordinator_config()["coordinator.partitions"]

    @property
    def checkpoint(self) -> Path:
        p = Path(self.stream["checkpoint"])
        return p if p.is_absolute() else ROOT / p

    @property
    def timer_read_margin_ms(self) -> int:
        """[stream] timer_read_margin_ms; "auto": 0 when the service's topics have one replica (a
        record is readable as soon as the broker appended it), else the timer grace."""
        value = self.stream.get("timer_read_margin_ms", "auto")
        if value == "auto":
            return 0 if self.topic_durability[0] == 1 else int(self.stream["timer_grace_ms"])
        return int(value)

    def coordinator_config(self) -> CoordinatorConfig:
        settings = dict(self.raw.get("coordinator", {}))
        host, _, port = self.bootstrap.split(",")[0].strip().rpartition(":")
        settings.setdefault("coordinator.endpoint.host", host or "127.0.0.1")
        settings.setdefault("coordinator.endpoint.port", int(port or 9092))
        settings.setdefault("coordinator.timer.grace.ms", int(self.stream["timer_grace_ms"]))
        settings.setdefault("coordinator.timer.read.margin.ms", self.timer_read_margin_ms)
        settings.setdefault(
            "coordinator.internal.topics",
            [self.topics[t] for t in SERVICE_TOPICS],
        )
        settings.setdefault(
            "coordinator.reply.to.pattern", re.escape(self.topics["responses"]) + r"(\.[A-Za-z0-9._-]{1,200})?"
        )
        return CoordinatorConfig(settings)
