"""Kafka's PersisterStateBatchCombiner: merges a share-partition's state batches.

A state batch is an offset range with a delivery state (0 Available, 1 Acquired, 2 Acknowledged,
4 Archived) and a delivery count. Combining the batches so far with new ones: batches below the
start offset are dropped (one straddling it is cut), then overlapping batches are resolved (the one
with the higher delivery count, then the higher state, wins the overlap) and contiguous or
overlapping batches with equal delivery info are joined. The result is sorted and non-overlapping.

A batch is `(first, last, count, state)` here, so that tuple order is PersisterStateBatch.compareTo
(first offset, last offset, delivery count, delivery state); the sorted set is Kafka's TreeSet.
JSON uses Kafka's field names (`batch_to_json`).
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Mapping

Batch = tuple  # (firstOffset, lastOffset, deliveryCount, deliveryState)


def batch_from_json(b: Mapping) -> Batch:
    return (int(b["firstOffset"]), int(b["lastOffset"]), int(b["deliveryCount"]), int(b["deliveryState"]))


def batch_to_json(b: Batch) -> dict:
    return {"firstOffset": b[0], "lastOffset": b[1], "deliveryState": b[3], "deliveryCount": b[2]}


def _info(b: Batch) -> tuple:
    """compareBatchDeliveryInfo's order: delivery count, then delivery state."""
    return (b[2], b[3])


class _SortedSet:
    def __init__(self, items: Iterable[Batch]):
        self.items = sorted(set(items))

    def add(self, b: Batch) -> None:
        i = bisect.bisect_left(self.items, b)
        if i == len(self.items) or self.items[i] != b:
            self.items.insert(i, b)

    def remove(self, b: Batch) -> None:
        i = bisect.bisect_left(self.items, b)
        if i < len(self.items) and self.items[i] == b:
            del self.items[i]


def combine(so_far: list[Batch], new: list[Batch], start_offset: int) -> list[Batch]:
    """PersisterStateBatchCombiner(soFar, new, startOffset).combineStateBatches()."""
    combined = list(so_far or ()) + list(new or ())
    if start_offset != -1:
        kept = []
        for b in combined:
            if b[1] < start_offset:
                continue
            kept.append(b if b[0] >= start_offset else (start_offset, b[1], b[2], b[3]))
        combined = kept
    if len(combined) < 2:
        return combined
    batches = _SortedSet(combined)
    final: list[Batch] = []
    while True:
        pair = _merge_candidate_pair(batches, final)
        if pair is None:
            break
        prev, cand = pair
        batches.remove(prev)
        batches.remove(cand)
        if _info(cand) == _info(prev):
            batches.add((prev[0], max(cand[1], prev[1]), prev[2], prev[3]))
        else:
            _diff_state_overlap(batches, prev, cand)
    final.extend(batches.items)
    return final


def _merge_candidate_pair(batches: _SortedSet, final: list) -> tuple | None:
    items = batches.items
    if not items:
        return None
    prev = items[0]
    non_overlapping = []
    for cand in items[1:]:
        if cand[0] <= prev[1] or (prev[1] + 1 == cand[0] and _info(prev) == _info(cand)):
            break
        non_overlapping.append(prev)
        prev = cand
    else:
        cand = None
    for b in non_overlapping:
        batches.remove(b)
    final.extend(non_overlapping)
    return None if cand is None else (prev, cand)


def _diff_state_overlap(batches: _SortedSet, prev: Batch, cand: Batch) -> None:
    lower = _info(cand) < _info(prev)  # the candidate has the lower priority
    if cand[0] == prev[0]:
        if cand[1] == prev[1]:
            batches.add(cand)
        elif lower:
            batches.add(prev)
            batches.add((prev[1] + 1, cand[1], cand[2], cand[3]))
        else:
            batches.add(cand)
    elif cand[1] < prev[1]:  # prev swallows the candidate
        if lower:
            batches.add(prev)
        else:
            batches.add((prev[0], cand[0] - 1, prev[2], prev[3]))
            batches.add(cand)
            batches.add((cand[1] + 1, prev[1], prev[2], prev[3]))
    elif cand[1] == prev[1]:
        if lower:
            batches.add(prev)
        else:
            batches.add((prev[0], cand[0] - 1, prev[2], prev[3]))
            batches.add(cand)
    else:  # the candidate reaches further
        if lower:
            batches.add(prev)
            batches.add((prev[1] + 1, cand[1], cand[2], cand[3]))
        else:
            batches.add((prev[0], cand[0] - 1, prev[2], prev[3]))
            batches.add(cand)
