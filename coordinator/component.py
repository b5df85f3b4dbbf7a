"""The base of a coordinator partition's components (see `CoordinatorPartition` in runtime.py)."""

from __future__ import annotations

from collections.abc import Callable
from functools import cached_property
from typing import TYPE_CHECKING, Any

from .messages import StateRecord

if TYPE_CHECKING:
    from .runtime import CoordinatorPartition


class Component:
    """Defaults for a component without state-log records: override what applies."""

    name = ""

    def __init__(self, partition: CoordinatorPartition):
        self.p = partition

    # API name -> handler, timer kind -> timer handler: each component's literal tables of its
    # bound methods, in one place (its __init__, or a cached property like these: a partition is
    # loaded for every batch, and most batches dispatch to one component).
    @cached_property
    def handlers(self) -> dict[str, Callable[..., Any]]:
        return {}

    @cached_property
    def timer_handlers(self) -> dict[str, Callable[..., Any]]:
        return {}

    def to_json(self) -> dict:
        return {}

    def load_json(self, data: dict) -> None:
        pass

    def replay(self, record: StateRecord) -> bool:
        return False

    def after_replay(self) -> None:
        pass
