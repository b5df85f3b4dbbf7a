"""The internal channel's replay guard: which internal records are new.

An internal record's MAC (streaming/trust.py) proves the service wrote it, not when: a genuine
record copied and written again later verifies too (a replayed metadata broadcast once rolled the
coordinators' topic metadata back). So every internal record but a wake carries a stamp
(publisher, epoch, sequence) under its MAC, and each coordinator partition keeps here the highest
stamp it accepted per publisher: a record whose (epoch, sequence) is not above it is dropped and
reported (`ReplayedInternalRecord`, by the partition that owns the record's key, so a broadcast is
reported once). Topic metadata thus never moves backwards: a restarted publisher takes a higher
epoch (a counter in the checkpoint directory), and an older broadcast is refused even after it.

The partition is a publisher too: its internal requests are stamped `partition-<id>` with an epoch
that is the batch time at which its counter started (the first batch that sent one, with this
state) and a sequence kept here. Both are functions of the state and the batch: a replayed
micro-batch stamps its requests as the original did, and a copy the original's sink wrote already
is dropped as stale. A partition whose state was rebuilt starts a new, later epoch.

Upgrade: a state written before this component has no chunk (empty: nothing seen, nothing sent).
Records written by the previous release carry no stamp; they are accepted until the partition has
accepted its first stamped record (the metadata broadcast of the new release's first start, which
every partition receives, comes after them in the channel's one partition), refused after that.
"""

from __future__ import annotations

from .chunks import UNCHANGED
from .component import Component

Stamp = tuple[str, int, int]  # (publisher, epoch, sequence)


def partition_publisher(partition_id: int) -> str:
    return f"partition-{partition_id}"


class InternalChannel(Component):
    name = "channel"

    def __init__(self, partition):
        super().__init__(partition)
        self.seen: dict[str, list[int]] = {}  # publisher -> [epoch, sequence] accepted last
        self.epoch: int | None = None  # this partition's own epoch as a publisher
        self.sent = 0  # stamps this partition used in its epoch
        self._changed = False

    # ------------------------------------------------------------------ receiving
    def admit(self, stamp: Stamp | None) -> str | None:
        """None if a record with this stamp is new (and remember it), else why it is refused."""
        if stamp is None:
            if self.seen:
                return "an internal record without a sequence stamp, after stamped ones"
            return None
        publisher, epoch, sequence = stamp
        last = self.seen.get(publisher)
        if last is not None and (epoch, sequence) <= (last[0], last[1]):
            return (
                f"stale: {publisher} epoch {epoch} sequence {sequence} is not after epoch {last[0]} sequence {last[1]}"
            )
        self.seen[publisher] = [epoch, sequence]
        self._changed = True
        return None

    def last_seen(self, publisher: str) -> tuple[int, int] | None:
        last = self.seen.get(publisher)
        return None if last is None else (last[0], last[1])

    # ------------------------------------------------------------------ sending
    def stamp(self, requests: list, batch_time_ms: int) -> None:
        """Stamp the batch's internal requests, in order."""
        if not requests:
            return
        if self.epoch is None:
            self.epoch, self.sent = batch_time_ms, 0
        publisher = partition_publisher(self.p.partition_id)
        for r in requests:
            r.stamp = (publisher, self.epoch, self.sent)
            self.sent += 1
        self._changed = True

    # ------------------------------------------------------------------ snapshot
    def to_json(self) -> dict:
        return {"seen": self.seen, "epoch": self.epoch, "sent": self.sent}

    def load_json(self, data: dict) -> None:
        self.seen = {p: list(v) for p, v in data.get("seen", {}).items()}
        self.epoch = data.get("epoch")
        self.sent = int(data.get("sent", 0))
        self._changed = False

    def load_rest(self, data: dict) -> None:
        self.load_json(data)

    def rest_json(self):
        return self.to_json() if self._changed else UNCHANGED
