"""The base of a coordinator partition's components (see `CoordinatorPartition` in runtime.py)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:
    from .result import CoordinatorResult
    from .runtime import CoordinatorPartition

# handler(component, request) -> CoordinatorResult | response body | None
Handler = Callable[[Any, Any], Any]
# timer_handler(component, timer) -> CoordinatorResult | None
TimerHandler = Callable[[Any, Any], Any]
# replayer(component, record kind, record key's ids, record value or None for a tombstone)
Replayer = Callable[[Any, str, list, Any], None]


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

    def __init__(self, partition: CoordinatorPartition):
        self.p = partition

    def to_json(self) -> dict:
        return {}

    def load_json(self, data: dict) -> None:
        pass

    def after_replay(self) -> CoordinatorResult | None:
        """What a loaded partition must do that its records do not (Kafka's onLoaded: timers it
        keeps only in memory, markers to resend): a result the runtime applies, never done here."""
        return None
