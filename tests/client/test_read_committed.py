"""The read_committed rule of `client.read_committed` on one partition (no Kafka): markers close
transactions, nothing is delivered past the last stable offset, fenced and stale input is ignored.
Plus a property test against a straightforward model of Kafka's LSO semantics."""

from __future__ import annotations

from dataclasses import dataclass, field

from hypothesis import given, settings
from hypothesis import strategies as st

from client.read_committed import ReadCommittedPartition, parse_producer_headers, producer_headers
from coordinator.txn.markers import marker_record


@dataclass
class Rec:
    offset: int
    value: bytes | None
    headers: list = field(default_factory=list)
    key: bytes | None = None


class Log:
    """A data partition: records appended in offset order and fed to a reader."""

    def __init__(self):
        self.reader = ReadCommittedPartition()
        self.offset = 0
        self.delivered: list[bytes] = []

    def _add(self, value, headers) -> list[bytes]:
        got = self.reader.add(Rec(self.offset, value, headers))
        self.offset += 1
        self.delivered += [r.value for r in got]
        return [r.value for r in got]

    def plain(self, value: bytes) -> list[bytes]:
        return self._add(value, [])

    def txn(self, value: bytes, pid: int, epoch: int) -> list[bytes]:
        return self._add(value, producer_headers(pid, epoch, f"tid-{pid}"))

    def marker(self, pid: int, epoch: int, commit: bool, tv: int = 2) -> list[bytes]:
        m = marker_record(
            "t",
            0,
            committed=commit,
            transactional_id=f"tid-{pid}",
            producer_id=pid,
            producer_epoch=epoch,
            coordinator_partition=0,
            transaction_version=tv,
        )
        return self._add(m.value, m.headers)


def test_headers_round_trip():
    assert parse_producer_headers(producer_headers(12, 3, "x")) == (12, 3)
    assert parse_producer_headers([("other", b"1")]) is None and parse_producer_headers(None) is None


def test_committed_records_are_delivered_after_the_marker_and_aborted_ones_never():
    log = Log()
    assert log.txn(b"a1", 1, 0) == [] and log.txn(b"a2", 1, 0) == []
    assert log.marker(1, 1, True) == [b"a1", b"a2"]
    log.txn(b"b1", 1, 1)
    assert log.marker(1, 2, False) == []
    assert log.delivered == [b"a1", b"a2"] and log.reader.aborted == 1 and log.reader.committed == 2


def test_nothing_is_delivered_past_the_first_open_transaction():
    log = Log()
    log.plain(b"p0")
    log.txn(b"x", 7, 0)
    assert log.plain(b"p1") == []  # held behind the open transaction (the LSO)
    log.txn(b"y", 8, 0)
    assert log.marker(8, 1, True) == []  # 8 committed, but 7 is still open before it
    assert log.reader.last_stable_offset == 1
    assert log.marker(7, 1, True) == [b"x", b"p1", b"y"]
    assert log.delivered == [b"p0", b"x", b"p1", b"y"] and log.reader.last_stable_offset == log.offset


def test_records_of_a_fenced_producer_and_stale_markers_are_ignored():
    log = Log()
    log.txn(b"zombie-1", 3, 4)
    log.marker(3, 5, False)  # the coordinator fenced epoch 4 and aborted its transaction
    assert log.txn(b"zombie-2", 3, 4) == []  # written after the fence: never delivered, never blocks
    assert log.reader.fenced == 1 and log.reader.last_stable_offset == log.offset
    log.txn(b"new", 3, 6)
    assert log.marker(3, 5, True) == []  # a stale copy of an older marker does not end the new one
    assert log.marker(3, 6, True, tv=2) == []  # not newer than the data epoch for TV2: stale
    assert log.marker(3, 7, True) == [b"new"]


def test_transaction_version_0_markers_carry_the_data_epoch():
    log = Log()
    log.txn(b"a", 1, 2)
    assert log.marker(1, 2, True, tv=0) == [b"a"]
    log.txn(b"b", 1, 2)  # the next transaction, same epoch
    assert log.marker(1, 2, False, tv=0) == []
    assert log.delivered == [b"a"]


def test_a_marker_without_records_is_harmless():
    log = Log()
    log.marker(1, 1, True)
    assert log.plain(b"p") == [b"p"]


# ---------------------------------------------------------------------- property
@st.composite
def histories(draw):
    """Random interleavings of up to 3 producers (each running transactions one after another with
    TV2 epochs), non-transactional records, zombie writes and duplicate markers."""
    ops = []
    epoch = {1: 0, 2: 0, 3: 0}
    open_ = {1: False, 2: False, 3: False}
    for _ in range(draw(st.integers(0, 40))):
        kind = draw(st.sampled_from(["plain", "data", "data", "end", "zombie", "dup"]))
        pid = draw(st.sampled_from([1, 2, 3]))
        if kind == "plain":
            ops.append(("plain",))
        elif kind == "data":
            ops.append(("txn", pid, epoch[pid]))
            open_[pid] = True
        elif kind == "end" and open_[pid]:
            epoch[pid] += 1
            ops.append(("marker", pid, epoch[pid], draw(st.booleans())))
            open_[pid] = False
        elif kind == "zombie" and epoch[pid] > 0:
            ops.append(("txn", pid, epoch[pid] - 1))
        elif kind == "dup" and epoch[pid] > 0:
            ops.append(("marker", pid, epoch[pid], draw(st.booleans())))
    return ops


@given(histories())
@settings(max_examples=150, deadline=None)
def test_delivery_matches_the_last_stable_offset_model(ops):
    log = Log()
    # The model: decide every record's fate from the whole history, then deliver the decided prefix.
    fate: dict[int, bool | None] = {}
    open_by_pid: dict[int, list[int]] = {}
    last_epoch: dict[int, int] = {}
    offset = 0
    for op in ops:
        if op[0] == "plain":
            log.plain(b"%d" % offset)
            fate[offset] = True
        elif op[0] == "txn":
            _, pid, epoch = op
            log.txn(b"%d" % offset, pid, epoch)
            if epoch >= last_epoch.get(pid, -1):
                last_epoch[pid] = epoch
                fate[offset] = None
                open_by_pid.setdefault(pid, []).append(offset)
        else:
            _, pid, epoch, commit = op
            log.marker(pid, epoch, commit)
            if epoch > last_epoch.get(pid, -1):
                last_epoch[pid] = epoch
                for o in open_by_pid.pop(pid, []):
                    fate[o] = commit
        offset += 1
    expected = []
    for o in sorted(fate):
        if fate[o] is None:
            break
        if fate[o]:
            expected.append(b"%d" % o)
    assert log.delivered == expected
    undecided = [o for o in sorted(fate) if fate[o] is None]
    assert log.reader.last_stable_offset == (undecided[0] if undecided else offset if ops else None)
