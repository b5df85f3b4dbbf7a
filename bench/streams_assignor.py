"""Benchmark of the streams groups' sticky task assignor (KIP-1071; plain Python, run from the
repository root):

    python bench/streams_assignor.py [--repeat N] [--quick]

Prints, for groups of 10 / 100 / 1,000 members (one member per process, and 4 members per process)
over topologies of 4 subtopologies x P partitions (P = 250 for 1,000 tasks, 2,500 for 10,000),
stateless and stateful with one standby replica:
  first   the first assignment (no previous target);
  join    the reassignment after one member joins a group holding the first assignment;
  loss    the reassignment after one member is lost.
Times are the best of N runs, in milliseconds; `moved` counts active tasks whose owner changed.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from coordinator.group.streams.assignor import MemberSpec, StickyTaskAssignor, SubtopologySpec  # noqa: E402


def members_of(n: int, per_process: int, previous: dict | None = None) -> dict:
    previous = previous or {}
    out = {}
    for i in range(n):
        m = f"member-{i:05d}"
        t = previous.get(m)
        out[m] = MemberSpec(f"process-{i // per_process:05d}", t.active if t else {}, t.standby if t else {})
    return out


def best(fn, repeat: int):
    result, times = None, []
    for _ in range(repeat):
        t0 = time.perf_counter()
        result = fn()
        times.append((time.perf_counter() - t0) * 1000)
    return min(times), result


def moved(before: dict, after: dict) -> int:
    owner = {(s, p): m for m, t in before.items() for s, ps in t.active.items() for p in ps}
    return sum(1 for m, t in after.items() for s, ps in t.active.items() for p in ps if owner.get((s, p)) not in (m,))


def run(n: int, per_process: int, partitions: int, stateful: bool, repeat: int) -> None:
    topology = {f"sub-{i}": SubtopologySpec(partitions, stateful) for i in range(4)}
    standby = 1 if stateful else 0
    assignor = StickyTaskAssignor()
    t_first, first = best(lambda: assignor.assign(members_of(n, per_process), topology, standby), repeat)
    joined = members_of(n + 1, per_process, first)
    t_join, after_join = best(lambda: assignor.assign(joined, topology, standby), repeat)
    lost = members_of(n, per_process, first)
    lost.pop("member-00000")
    t_loss, after_loss = best(lambda: assignor.assign(lost, topology, standby), repeat)
    print(
        f"{n:>6} {per_process:>4} {4 * partitions:>7} {'1 standby' if stateful else 'stateless':>10} "
        f"{t_first:>10.1f} {t_join:>10.1f} {moved(first, after_join):>6} {t_loss:>10.1f} "
        f"{moved(first, after_loss):>6}"
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="only the 1,000-member, 1,000-task rows")
    args = ap.parse_args()
    print(
        f"{'members':>6} {'/proc':>4} {'tasks':>7} {'replicas':>10} {'first ms':>10} {'join ms':>10} "
        f"{'moved':>6} {'loss ms':>10} {'moved':>6}"
    )
    sizes = [(1000, 250)] if args.quick else [(10, 250), (100, 250), (1000, 250), (1000, 2500)]
    for n, partitions in sizes:
        for per_process in (1, 4):
            for stateful in (False, True):
                run(n, per_process, partitions, stateful, args.repeat)


if __name__ == "__main__":
    main()
