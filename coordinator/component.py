"""The base of a coordinator partition's components (see `CoordinatorPartition` in runtime.py)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .messages import StateRecord

if TYPE_CHECKING:
    from .runtime import CoordinatorPartition


class Component:
    """Defaults for a component without state-log records: override what applies."""

    name = ""

    def __init__(self, partition: CoordinatorPartition):
        self.p = partition
        # API name -> handler, timer kind -> timer handler: built by each component from its
        # bound methods, in its __init__, in one place.
        self.handlers: dict[str, Callable[..., Any]] = {}
        self.timer_handlers: dict[str, Callable[..., Any]] = {}

    def to_json(self) -> dict:
        return {}

    def load_json(self, data: dict) -> None:
        pass

    def replay(self, record: StateRecord) -> bool:
        return False

    def after_replay(self) -> None:
        pass
