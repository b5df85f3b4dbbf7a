"""The base of a coordinator partition's components (see `CoordinatorPartition` in runtime.py)."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

if TYPE_CHECKING:
    from .chunks import ChunkSource
    from .config import CoordinatorConfig
    from .result import CoordinatorResult
    from .timers import Timers

# handler(component, request) -> CoordinatorResult | response body | None
Handler = Callable[[Any, Any], Any]
# timer_handler(component, timer) -> CoordinatorResult | None
TimerHandler = Callable[[Any, Any], Any]
# replayer(component, record kind, record key's ids, record value or None for a tombstone)
Replayer = Callable[[Any, str, list, Any], None]


class Partition(Protocol):
    """What a component sees of its coordinator partition (the runtime, runtime.PartitionRuntime):
    it reads it, and changes it only through the results it returns. The other coordinators it
    calls are given to it when it is built (coordinators.py), not looked up by name."""

    partition_id: int
    config: CoordinatorConfig
    clock_ms: int
    chunks: ChunkSource
    timers: Timers
    deferred: dict[str, list]

    @property
    def reply_to_re(self) -> re.Pattern: ...

    def owns(self, key: str | None) -> bool: ...

    def reply_target_problem(self, reply_to: str | None) -> str | None: ...


# Builds a partition's components, in the partition's order (coordinators.py `build_components`).
ComponentsBuilder = Callable[[Partition], "dict[str, Component]"]


class Component:
    """Defaults for a component without state-log records: override what applies.

    Each component's dispatch is three literal tables in its class body, read by the runtime:
    API name -> handler, timer kind -> timer handler, record kind -> replayer. Their entries are
    functions of the component (its methods, or lambdas reaching one of its managers, as Kafka's
    GroupCoordinatorService hands the shard a lambda per API). Being class attributes, they are
    built once at import, not for every partition a micro-batch loads; nothing changes them later.
    """

    name = ""
    HANDLERS: ClassVar[dict[str, Handler]] = {}
    TIMER_HANDLERS: ClassVar[dict[str, TimerHandler]] = {}
    REPLAYERS: ClassVar[dict[str, Replayer]] = {}

    def __init__(self, partition: Partition):
        self.p = partition

    def to_json(self) -> dict:
        return {}

    def load_json(self, data: dict) -> None:
        pass

    def after_replay(self) -> CoordinatorResult | None:
        """What a loaded partition must do that its records do not (Kafka's onLoaded: timers it
        keeps only in memory, markers to resend): a result the runtime applies, never done here."""
        return None
