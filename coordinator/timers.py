"""One coordinator partition's timers, kept in its state.

Spark gives each key a single processing-time timeout, so every timer of the partition (session
timeouts, rebalance timeouts, transaction timeouts, retention sweeps) lives here, keyed by name, and
the partition re-arms the Spark timeout at the earliest deadline. A timer with the same key
replaces the previous one, as Kafka's `CoordinatorTimer.schedule` does.

Timers due at the same time fire in the order they were scheduled (a timer rescheduled counts as
newly scheduled), as tasks of one tick of Kafka's timing wheel expire in insertion order. The
schedule sequence is part of the snapshot (older snapshots without it load in key order).

Storage scales with the timers a batch touches, not with all of them: each timer is its own chunk
(kind "Timer", by key), and a deadline index orders them by (deadline, sequence, key) in pages of
at most `PAGE_MAX` entries (kind "TimerPage"), with a small directory of each page's first entry in
the partition-wide part. The next deadline is the directory's first entry; firing, scheduling or
cancelling a timer decodes that timer and one or two pages.
"""

from __future__ import annotations

import base64
import sys
from array import array
from bisect import bisect_left, bisect_right, insort
from typing import Any, NamedTuple

from .chunks import EMPTY_SOURCE, ChunkCorrupt, ChunkSource, LazyMap, chunk_key

PAGE_MAX = 96  # entries of a deadline-index page before it splits in two


class Timer(NamedTuple):
    """A named tuple, not a frozen dataclass: timers are decoded by the page on every load, and a
    tuple is far cheaper to build (a frozen dataclass sets each field through object.__setattr__)."""

    key: str
    deadline_ms: int
    kind: str  # selects the handler
    payload: dict
    seq: int = 0  # schedule order: breaks ties between equal deadlines

    def to_json(self) -> list:
        return [self.deadline_ms, self.kind, self.payload, self.seq]


class Timers:
    """Timers by key, with a paged deadline index (see the module doc)."""

    def __init__(self, source: ChunkSource = EMPTY_SOURCE, meta: dict | None = None) -> None:
        self._by_key: LazyMap[str, Timer] = LazyMap(source, "Timer", _timer_from_json, Timer.to_json)
        self._pages: LazyMap[int, list] = LazyMap(source, "TimerPage", lambda k, j: j, lambda page: page, key_type=int)
        meta = meta or {}
        self._dir = _Directory(meta.get("dir", ""))
        self._next_seq = meta.get("nextSeq", 0)
        self._next_page = meta.get("nextPage", 0)

    @property
    def next_seq(self) -> int:
        return self._next_seq

    def meta(self) -> dict:
        return {"dir": self._dir.packed(), "nextSeq": self._next_seq, "nextPage": self._next_page}

    def dirty_items(self):
        yield from self._by_key.dirty_items()
        yield from self._pages.dirty_items()

    # ------------------------------------------------------------------ the API
    def schedule(
        self, key: str, deadline_ms: int, kind: str, payload: dict | None = None, seq: int | None = None
    ) -> None:
        if seq is None:
            seq = self._next_seq
        self._next_seq = max(self._next_seq, seq + 1)
        old = self._by_key.get(key)
        if old is not None:
            self._index_remove([old.deadline_ms, old.seq, key])
        timer = Timer(key, int(deadline_ms), kind, payload or {}, seq)
        self._by_key[key] = timer
        self._index_add([timer.deadline_ms, seq, key])

    def cancel(self, key: str) -> None:
        old = self._by_key.pop(key, None)
        if old is not None:
            self._index_remove([old.deadline_ms, old.seq, key])

    def get(self, key: str) -> Timer | None:
        return self._by_key.get(key)

    def __contains__(self, key: str) -> bool:
        return key in self._by_key

    def __len__(self) -> int:
        return len(self._by_key)

    def __iter__(self):
        return iter(sorted(self._by_key.values(), key=lambda t: (t.deadline_ms, t.seq)))

    def next_deadline(self) -> int | None:
        return self._dir.deadline(0) if self._dir else None

    def pop_due(self, now_ms: int) -> Timer | None:
        """The earliest timer with deadline <= now (ties broken by schedule order)."""
        first = self._dir._a  # (deadline, seq, page) of each page's first entry: inlined, as every request asks
        if not first or first[0] > now_ms:
            return None
        entry = self._page(self._dir.page(0))[0]
        self._index_remove(entry, at=0)
        timer = self._by_key.pop(entry[2], None)
        if timer is None or [timer.deadline_ms, timer.seq] != entry[:2]:
            raise ChunkCorrupt(chunk_key("Timer", entry[2]), f"deadline index entry {entry} has no such timer")
        return timer

    def schedule_view(self) -> dict:
        """{key: (deadline, kind, payload)}: what is scheduled, without the tie-break sequence
        (which depends on scheduling history, e.g. live versus rebuilt from the state log)."""
        return {k: (t.deadline_ms, t.kind, t.payload) for k, t in sorted(self._by_key.items())}

    def to_json(self) -> dict:
        return {k: t.to_json() for k, t in sorted(self._by_key.items())}

    @staticmethod
    def from_json(d: dict) -> Timers:
        timers = Timers()
        for key, value in d.items():
            deadline, kind, payload = value[:3]
            timers.schedule(key, deadline, kind, payload, value[3] if len(value) > 3 else None)
        return timers

    # ------------------------------------------------------------------ deadline index
    def _page(self, page_id: int) -> list:
        page = self._pages.get(page_id)
        if page is None:
            raise ChunkCorrupt(chunk_key("TimerPage", str(page_id)), "listed in the timer directory but missing")
        return page

    def _locate(self, entry: list) -> int:
        """Index in the directory of the page that holds (or would hold) `entry`."""
        return max(self._dir.bisect_right(entry[0], entry[1]) - 1, 0)

    def _index_add(self, entry: list) -> None:
        if not self._dir:
            page_id = self._new_page([entry])
            self._dir.insert(0, entry[0], entry[1], page_id)
            return
        i = self._locate(entry)
        page = self._page(self._dir.page(i))
        insort(page, entry)
        if page[0] is entry:
            self._dir.set_first(i, entry[0], entry[1])
        if len(page) > PAGE_MAX:
            half = len(page) // 2
            upper = page[half:]
            del page[half:]
            page_id = self._new_page(upper)
            self._dir.insert(i + 1, upper[0][0], upper[0][1], page_id)

    def _index_remove(self, entry: list, at: int | None = None) -> None:
        i = self._locate(entry)
        if not self._dir:
            raise ChunkCorrupt(chunk_key("TimerPage"), f"timer {entry} is not in the empty deadline index")
        page_id = self._dir.page(i)
        page = self._page(page_id)
        j = at if at is not None else bisect_left(page, entry)
        if j >= len(page) or page[j] != entry:
            raise ChunkCorrupt(chunk_key("TimerPage", str(page_id)), f"timer {entry} is missing from its page")
        del page[j]
        if not page:
            del self._pages[page_id]
            self._dir.delete(i)
        elif j == 0:
            self._dir.set_first(i, page[0][0], page[0][1])

    def _new_page(self, entries: list) -> int:
        page_id = self._next_page
        self._next_page += 1
        self._pages[page_id] = entries
        return page_id


class _Directory:
    """(deadline, seq, page id) of each page's first entry, in order, as a flat int64 array: it is
    read and written by every batch, and packed bytes decode in C where JSON of a few hundred small
    lists costs a fraction of a millisecond. Stored as base64 of little-endian int64 triples."""

    def __init__(self, packed: str):
        self._a = array("q")
        self._a.frombytes(base64.b64decode(packed))
        if sys.byteorder == "big":
            self._a.byteswap()

    def packed(self) -> str:
        a = self._a
        if sys.byteorder == "big":
            a = array("q", a)
            a.byteswap()
        return base64.b64encode(a.tobytes()).decode("ascii")

    def __len__(self) -> int:
        return len(self._a) // 3

    def deadline(self, i: int) -> int:
        return self._a[3 * i]

    def page(self, i: int) -> int:
        return self._a[3 * i + 2]

    def bisect_right(self, deadline: int, seq: int) -> int:
        a = self._a
        return bisect_right(range(len(self)), (deadline, seq), key=lambda i: (a[3 * i], a[3 * i + 1]))

    def set_first(self, i: int, deadline: int, seq: int) -> None:
        self._a[3 * i], self._a[3 * i + 1] = deadline, seq

    def insert(self, i: int, deadline: int, seq: int, page_id: int) -> None:
        self._a[3 * i : 3 * i] = array("q", (deadline, seq, page_id))

    def delete(self, i: int) -> None:
        del self._a[3 * i : 3 * i + 3]


def _timer_from_json(key: str, value: Any) -> Timer:
    deadline, kind, payload, seq = value
    return Timer(key, int(deadline), kind, payload, int(seq))
