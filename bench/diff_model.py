"""What a differential run is made of (bench/differential.py runs it, bench/diff_scenarios.py
defines the scenarios): each side of the run, a step sent to both, a scenario, a step's outcome."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .diff_wire import Names


@dataclass
class Side:
    """One side of a run: its target, placeholders and what steps saved."""

    name: str
    target: Any
    bootstrap: str  # its broker, for topics
    metadata: Any = None  # a KafkaWire to that broker: its topic ids
    # Waits until the side's coordinators know new topics (the service learns them at its next
    # metadata refresh; a broker at once)
    await_topics: Callable[[dict[str, int]], None] | None = None
    names: Names = field(default_factory=Names)
    saved: dict[str, Any] = field(default_factory=dict)

    def close(self) -> None:
        self.target.close()
        if self.metadata is not None:
            self.metadata.close()


Body = dict | Callable[[Side], dict]


@dataclass
class Step:
    """One request to both sides. `until`: repeat (each side on its own) until the answer satisfies
    it (given the answer and the side, after `save`), for what converges with time (a rebalance, a
    session expiry, a metadata refresh); `save` keeps values from each answer for later bodies; `deviation`: {generic path: pointer into
    docs/protocol.md} for differences documented there."""

    name: str
    api: str
    version: int
    body: Body
    until: Callable[[dict, Side], bool] | None = None
    timeout_s: float = 90
    save: Callable[[dict, Side], None] | None = None
    deviation: dict[str, str] = field(default_factory=dict)
    # An action on the side's cluster before each attempt (create a topic, keep a member alive)
    before: Callable[[Side], None] | None = None
    # An action repeated, once the side's answer is in, until the other side's is too (keep a member
    # alive while the slower side still waits, so its session does not expire meanwhile)
    keep_alive: Callable[[Side], None] | None = None
    # What of the answer is compared (e.g. ListGroups: only the scenario's groups; the service's
    # job serves other clients too)
    view: Callable[[dict], dict] | None = None


@dataclass
class Scenario:
    name: str
    topics: dict[str, int]
    steps: list[Step]


@dataclass
class Outcome:
    scenario: str
    step: str
    api: str
    kind: str  # "match", "deviation", "DIFFERENCE"
    detail: str = ""


# ------------------------------------------------------------------ step helpers the scenarios share
def saved(name: str) -> Callable[[dict, Side], None]:
    def save(answer: dict, side: Side) -> None:
        side.saved[name] = answer

    return save


def retried(answer: dict, side: Side) -> bool:
    """Until an answer a client would not retry (the broker loads a coordinator partition at its first
    use: COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE)."""
    return answer.get("errorCode") not in (14, 15)


def only_groups(*groups: str) -> Callable[[dict], dict]:
    """ListGroups: only these groups (the service's job lists the other clients' groups too)."""
    return lambda a: {**a, "groups": [g for g in a["groups"] if g["groupId"] in groups]}


def only_transactions(*ids: str) -> Callable[[dict], dict]:
    return lambda a: {**a, "transactionStates": [t for t in a["transactionStates"] if t["transactionalId"] in ids]}
