"""Comparing coordinator states entity by entity, and the drill's pass/fail report."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

FINAL_TXN_STATES = ("Empty", "CompleteCommit", "CompleteAbort", "Dead")


def differences(actual: Any, expected: Any, path: tuple = ()) -> list[tuple[tuple, Any, Any]]:
    """(path, actual, expected) of every differing leaf, in sorted key order; a key present on one
    side only differs with `MISSING` on the other."""
    if isinstance(actual, dict) and isinstance(expected, dict):
        out = []
        for k in sorted(set(actual) | set(expected), key=str):
            out += differences(actual.get(k, MISSING), expected.get(k, MISSING), path + (k,))
        return out
    return [] if actual == expected else [(path, actual, expected)]


class _Missing:
    def __repr__(self) -> str:
        return "<absent>"


MISSING = _Missing()


def entity(path: tuple) -> str:
    """The entity a path in a logical state belongs to, named like its state-log record type."""
    p = [str(x) for x in path]
    if p[:2] == ["groups", "groups"] and len(p) > 2:
        return f"GroupMetadata {p[2]}"
    if p[:3] == ["groups", "offsets", "committed"] and len(p) > 5:
        return f"OffsetCommit {p[3]} {p[4]}-{p[5]}"
    if p[:3] == ["groups", "offsets", "pending"] and len(p) > 6:
        return f"PendingTxnOffsetCommit producerId={p[3]} {p[4]} {p[5]}-{p[6]}"
    if p[:2] == ["transactions", "transactions"] and len(p) > 2:
        return f"TransactionLog {p[2]}"
    return _generic(path)


def _generic(path: tuple) -> str:
    return " ".join(str(x) for x in path[:2]) if path else "<whole state>"


def first_difference(actual: dict, expected: dict) -> str | None:
    """One line naming the first differing entity and field, or None when equal. Entities (groups,
    offsets, transactions) come before partition-wide counters, which follow from them."""
    diffs = differences(actual, expected)
    if not diffs:
        return None
    path, a, e = min(diffs, key=lambda d: entity(d[0]) == _generic(d[0]))
    where = "/".join(str(x) for x in path)
    more = f" (and {len(diffs) - 1} more differing fields)" if len(diffs) > 1 else ""
    return f"{entity(path)}: {where}: checkpoint {_short(a)} != expected {_short(e)}{more}"


def _short(v: Any, limit: int = 200) -> str:
    s = repr(v) if isinstance(v, _Missing) else json.dumps(v, sort_keys=True, default=str)
    return s if len(s) <= limit else s[:limit] + "..."


def compare_partitions(actual: dict[int, dict], expected: dict[int, dict], label: str) -> list[str]:
    """One failure line per coordinator partition whose states differ (empty: all equal)."""
    failures = []
    for p in sorted(set(actual) | set(expected)):
        if p not in expected:
            failures.append(f"coordinator partition {p}: in the checkpoint, absent from {label}")
        elif p not in actual:
            failures.append(f"coordinator partition {p}: absent from the checkpoint, present in {label}")
        else:
            diff = first_difference(actual[p], expected[p])
            if diff is not None:
                failures.append(f"coordinator partition {p}: differs from {label}: {diff}")
    return failures


def durable_view(part) -> dict:
    """What the state log carries of a partition (a `CoordinatorPartition`): the committed
    offsets, each group's type, epoch and members as Kafka loads them (a group with members is
    Stable, without is Empty), and every transaction's TransactionLog value. Parked requests,
    timers and in-memory counters are not logged, so they are not compared."""
    groups = part.component("groups")
    offsets = {
        f"{g}/{t}/{p}": [o.committed_offset, o.metadata]
        for g, ts in groups.offsets.committed.items()
        for t, ps in ts.items()
        for p, o in ps.items()
    }
    view_groups = {}
    for gid, g in groups.groups.items():
        members = getattr(g, "members", {}) or {}
        view_groups[gid] = {
            "type": type(g).__name__,
            "epoch": getattr(g, "generation_id", getattr(g, "group_epoch", None)),
            "state": "Stable" if members else "Empty",
            "members": sorted(members),
        }
    return {
        "groups": {"offsets": offsets, "groups": view_groups},
        "transactions": part.component("transactions").persistent_view(),
    }


def unfinished_transactions(logical_states: dict[int, dict]) -> list[str]:
    """Transactions not in a final state (or with a transition still pending)."""
    out = []
    for p, comps in sorted(logical_states.items()):
        for tid, t in sorted(comps.get("transactions", {}).get("transactions", {}).items()):
            if t.get("state") not in FINAL_TXN_STATES or t.get("pendingState") or t.get("topicPartitions"):
                out.append(
                    f"coordinator partition {p}: TransactionLog {tid} is {t.get('state')} "
                    f"(pending {t.get('pendingState')}, partitions {t.get('topicPartitions')})"
                )
    return out


@dataclass
class Check:
    name: str
    ok: bool
    detail: str = ""
    failures: list[str] = field(default_factory=list)


@dataclass
class Report:
    mode: str  # "drill" or "verify"
    checks: list[Check] = field(default_factory=list)
    kills: list[dict] = field(default_factory=list)  # {"kill": n, "afterS": .., "recoverySeconds": ..}
    seed: int | None = None
    info: dict = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        return bool(self.checks) and all(c.ok for c in self.checks)

    def add(self, name: str, failures: list[str], detail: str = "") -> Check:
        check = Check(name, not failures, detail, failures)
        self.checks.append(check)
        return check

    def to_json(self) -> dict:
        return {
            "mode": self.mode,
            "passed": self.passed,
            "seed": self.seed,
            "kills": self.kills,
            "checks": [asdict(c) for c in self.checks],
            "info": self.info,
        }

    def render(self, max_failures: int = 10) -> str:
        lines = [f"coordinator {self.mode}: {'PASS' if self.passed else 'FAIL'}"]
        if self.seed is not None:
            lines.append(f"  seed {self.seed}")
        for k in self.kills:
            rec = k.get("recoverySeconds")
            lines.append(
                f"  kill {k['kill']} at +{k['atSeconds']:.1f}s ({k['how']}): recovered (kill -> first answer) "
                + (f"in {rec:.2f}s" if rec is not None else "NOT within the wait")
            )
        for c in self.checks:
            lines.append(f"  [{'pass' if c.ok else 'FAIL'}] {c.name}" + (f": {c.detail}" if c.detail else ""))
            lines += [f"      {f}" for f in c.failures[:max_failures]]
            if len(c.failures) > max_failures:
                lines.append(f"      ... and {len(c.failures) - max_failures} more")
        return "\n".join(lines)
