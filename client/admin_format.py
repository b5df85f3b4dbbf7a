"""Pure parts of the admin CLI (`client/admin_cli.py`): Kafka's tables, column for column, and the
offset-reset plan. No I/O: inputs are plain dicts, outputs strings.

The table layouts are those of Kafka's `ConsumerGroupCommand` (printf formats with a width per
column, "-" for a missing value) and `ToolsUtils.prettyPrintTable` (kafka-transactions.sh: each
cell padded to its column's width, followed by a tab).

Names come from clients (a group id, a transactional id, a member's client id and host are any
strings), so every name is printed through `visible`: control characters become visible escapes
(`\n`, `\r`, `\t`, `\x1b`, `\u2028`, ...), so that a group id with a newline cannot forge a row
and one with an escape sequence cannot drive the terminal. Kafka's tools print names raw.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

MISSING = "-"
TopicPartition = tuple  # (topic, partition)

# C0 and C1 controls, DEL, the Unicode line and paragraph separators and the bidirectional
# overrides and isolates (which reorder what a terminal shows).
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
_CONTROL_BUT_LAYOUT = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(m: re.Match) -> str:
    c = m.group()
    named = _NAMED.get(c)
    if named is not None:
        return named
    return f"\\x{ord(c):02x}" if ord(c) < 0x100 else f"\\u{ord(c):04x}"


def visible(name) -> str:
    """A client-chosen name as one line of printable text: control characters as escapes."""
    text = str(name)
    return _CONTROL.sub(_escape, text) if _CONTROL.search(text) else text


def printable(text: str) -> str:
    """Whole output text (whose own newlines and tabs are layout): every other control character
    as an escape, the last line of defence for a name a message did not pass through `visible`."""
    return _CONTROL_BUT_LAYOUT.sub(_escape, text) if _CONTROL_BUT_LAYOUT.search(text) else text


def _cell(v) -> str:
    return MISSING if v is None else visible(v)


def _row(widths: Sequence[int | None], values: list) -> str:
    """Java's "%-Ns" for each column (None: "%s", the last column), joined by one space."""
    return " ".join(_cell(v) if w is None else f"{_cell(v):<{w}}" for w, v in zip(widths, values, strict=True))


# ---------------------------------------------------------------------------------- groups --list
def list_table(groups: list[dict], include_type: bool, include_state: bool) -> str:
    """`--list` with `--type` and/or `--state`: GROUP [TYPE] [STATE] (ConsumerGroupCommand.printGroupInfo)."""
    width = max([15] + [len(_cell(g["groupId"])) for g in groups]) + 10
    header, keys, widths = ["GROUP"], ["groupId"], [width]
    if include_type:
        header, keys, widths = header + ["TYPE"], keys + ["type"], widths + [20]
    if include_state:
        header, keys, widths = header + ["STATE"], keys + ["state"], widths + [20]
    # Java's format is "%-Ns %-20s %-20s%n": every column padded, also the last one.
    lines = [" ".join(f"{h:<{w}}" for h, w in zip(header, widths, strict=True))]
    lines += [" ".join(f"{_cell(g.get(k)):<{w}}" for k, w in zip(keys, widths, strict=True)) for g in groups]
    return "\n".join(lines)


# ------------------------------------------------------------------------- groups --describe
OFFSET_HEADERS = [
    "GROUP",
    "TOPIC",
    "PARTITION",
    "CURRENT-OFFSET",
    "LOG-END-OFFSET",
    "LAG",
    "CONSUMER-ID",
    "HOST",
    "CLIENT-ID",
]


def offset_rows(group: dict, committed: dict[TopicPartition, int], log_end: dict[TopicPartition, int]) -> list[list]:
    """ConsumerGroupCommand.collectGroupsOffsets: the assigned partitions of each member (members
    with more partitions first), then the committed partitions no member has, CONSUMER-ID "-".
    LAG = LOG-END-OFFSET - CURRENT-OFFSET where both are known."""

    def row(tp, member):
        offset = committed.get(tp)
        end = log_end.get(tp)
        lag = end - offset if offset is not None and offset != -1 and end is not None else None
        cid, host, client = (
            (member["memberId"], member.get("clientHost"), member.get("clientId"))
            if member
            else (MISSING, MISSING, MISSING)
        )
        return [group["groupId"], tp[0], tp[1], offset, end, lag, cid, host, client]

    rows, assigned = [], set()
    members = [m for m in group.get("members") or [] if _partitions(m)]
    for m in sorted(members, key=lambda m: -len(_partitions(m))):
        tps = sorted(_partitions(m), key=lambda tp: (tp[1], tp[0]))  # Kafka sorts by partition
        assigned.update(tps)
        rows += [row(tp, m) for tp in tps]
    rows += [row(tp, None) for tp in sorted(tp for tp in committed if tp not in assigned)]
    return rows


def offsets_table(rows: list[list]) -> str:
    """printOffsets: the header and each row start with a newline (Java's "\\n%-Ns ...")."""
    g = max([15] + [len(_cell(r[0])) for r in rows])
    t = max([15] + [len(_cell(r[1])) for r in rows])
    c = max([15] + [len(_cell(r[6])) for r in rows])
    h = max([15] + [len(_cell(r[7])) for r in rows])
    widths = [g, t, 10, 15, 15, 15, c, h, None]
    return "\n" + "\n".join(_row(widths, r) for r in [OFFSET_HEADERS] + rows)


def _partitions(member: dict) -> list[TopicPartition]:
    return [(t, p) for t, ps in (member.get("assignment") or {}).items() for p in ps]


def members_table(group: dict, verbose: bool) -> str:
    """printMembers: GROUP CONSUMER-ID [GROUP-INSTANCE-ID] HOST CLIENT-ID #PARTITIONS [ASSIGNMENT]."""
    members = group.get("members") or []
    gid = group["groupId"]
    with_instance = any(m.get("groupInstanceId") for m in members)
    g = max([15, len(_cell(gid))])
    c = max([15] + [len(_cell(m["memberId"])) for m in members])
    i = max([17] + [len(_cell(m.get("groupInstanceId") or "")) for m in members])
    h = max([15] + [len(_cell(m.get("clientHost") or "")) for m in members])
    cl = max([15] + [len(_cell(m.get("clientId") or "")) for m in members])
    widths = [g, c] + ([i] if with_instance else []) + [h, cl, 15]
    header = (
        ["GROUP", "CONSUMER-ID"]
        + (["GROUP-INSTANCE-ID"] if with_instance else [])
        + ["HOST", "CLIENT-ID", "#PARTITIONS"]
    )
    # Java's format ends with "%-15s " (a trailing space), then ASSIGNMENT when verbose.
    lines = ["\n" + _row(widths, header) + " " + ("ASSIGNMENT" if verbose else "")]
    for m in members:
        values = (
            [gid, m["memberId"]]
            + ([m.get("groupInstanceId") or ""] if with_instance else [])
            + [m.get("clientHost") or "", m.get("clientId") or "", len(_partitions(m))]
        )
        line = _row(widths, values) + " "
        if verbose:
            line += assignment_text(m.get("assignment") or {})
        lines.append(line)
    return "\n".join(lines)


def assignment_text(assignment: dict[str, list[int]]) -> str:
    """topic(0,1), other(2): each topic's partitions sorted, topics sorted; "-" when none."""
    parts = sorted(f"{visible(t)}({','.join(str(p) for p in sorted(ps))})" for t, ps in assignment.items() if ps)
    return ", ".join(parts) if parts else MISSING


def state_table(group: dict, coordinator: str) -> str:
    """printStates: GROUP COORDINATOR (ID) ASSIGNMENT-STRATEGY STATE #MEMBERS, each line after a newline."""
    width = max(25, len(_cell(coordinator)))
    fmt = [width, 25, 20, 15, None]
    members = group.get("members") or []
    return (
        "\n"
        + _row(fmt, ["GROUP", "COORDINATOR (ID)", "ASSIGNMENT-STRATEGY", "STATE", "#MEMBERS"])
        + "\n"
        + _row(fmt, [group["groupId"], coordinator, group.get("protocol") or "", group["state"], len(members)])
    )


# ------------------------------------------------------------------------ groups --reset-offsets
def reset_table(plan: dict[str, dict[TopicPartition, int]]) -> str:
    """printOffsetsToReset: "%n%-30s %-30s %-10s %-15s" per row, then a newline."""
    widths = [30, 30, 10, 15]
    rows: list[list] = [["GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"]] if plan else []
    rows += [[g, tp[0], tp[1], o] for g, offsets in plan.items() for tp, o in sorted(offsets.items())]
    return "".join("\n" + " ".join(f"{_cell(v):<{w}}" for w, v in zip(widths, r, strict=True)) for r in rows)


@dataclass(frozen=True)
class ResetSpec:
    """One reset scenario: `kind` is to-earliest, to-latest, to-current, to-offset, shift-by or
    to-datetime (the latter's offsets come from the broker's offsets_for_times, given as `by_time`)."""

    kind: str
    value: int | None = None

    def amount(self) -> int:
        """The offset (to-offset), the shift (shift-by) or the time in ms (to-datetime): they need one."""
        if self.value is None:
            raise ResetError(f"--{self.kind} needs a value")
        return self.value


class ResetError(ValueError):
    pass


def plan_reset(
    spec: ResetSpec,
    partitions: list[TopicPartition],
    committed: dict[TopicPartition, int],
    earliest: dict[TopicPartition, int],
    latest: dict[TopicPartition, int],
    by_time: dict[TopicPartition, int | None] | None = None,
) -> tuple[dict[TopicPartition, int], list[str]]:
    """ConsumerGroupCommand.prepareOffsetsToReset: the new offset of each partition and the warnings
    Kafka logs. to-offset and shift-by are clamped to [earliest, latest] (checkOffsetsRange); a
    to-datetime partition with no record at or after the time falls back to the latest offset."""
    out: dict[TopicPartition, int] = {}
    warnings: list[str] = []

    def clamp(tp, offset):
        if offset > latest[tp]:
            warnings.append(
                f"New offset ({offset}) is higher than latest offset for topic partition "
                f"{tp[0]}-{tp[1]}. Value will be set to {latest[tp]}"
            )
            return latest[tp]
        if offset < earliest[tp]:
            warnings.append(
                f"New offset ({offset}) is lower than earliest offset for topic partition "
                f"{tp[0]}-{tp[1]}. Value will be set to {earliest[tp]}"
            )
            return earliest[tp]
        return offset

    for tp in partitions:
        if tp not in latest or tp not in earliest:
            raise ResetError(f"Error getting offsets of topic partition: {tp[0]}-{tp[1]}")
        if spec.kind == "to-earliest":
            out[tp] = earliest[tp]
        elif spec.kind == "to-latest":
            out[tp] = latest[tp]
        elif spec.kind == "to-current":
            current = committed.get(tp)
            out[tp] = latest[tp] if current is None or current < 0 else current
        elif spec.kind == "to-offset":
            out[tp] = clamp(tp, spec.amount())
        elif spec.kind == "shift-by":
            current = committed.get(tp)
            if current is None or current < 0:
                raise ResetError(
                    f"Cannot shift offset for partition {tp[0]}-{tp[1]} since there is no current committed offset"
                )
            out[tp] = clamp(tp, current + spec.amount())
        elif spec.kind == "to-datetime":
            found = (by_time or {}).get(tp)
            if found is None:
                warnings.append(
                    f"Warn: Partition {tp[1]} from topic {tp[0]} is empty. Falling back to latest known offset."
                )
                found = latest[tp]
            out[tp] = found
        else:
            raise ResetError(f"unknown reset scenario {spec.kind}")
    return out, warnings


def parse_topic_partitions(arg: str) -> tuple[str, list[int] | None]:
    """`topic` (all partitions) or `topic:0,1,2` (parseTopicsWithPartitions)."""
    if ":" not in arg:
        return arg, None
    parts = arg.split(":")
    if len(parts) != 2 or not parts[0]:
        raise ResetError(f"Invalid topic arg '{arg}', expected topic name and partitions")
    try:
        return parts[0], [int(p) for p in parts[1].split(",")]
    except ValueError:
        bad = next(p for p in parts[1].split(",") if not p.strip().lstrip("-").isdigit())
        raise ResetError(f"Invalid partition '{bad}' specified in topic arg '{arg}''") from None


def parse_datetime(text: str) -> int:
    """Utils.getDateTime: 'YYYY-MM-DDTHH:mm:SS.sss' with an optional zone (Z, +hh:mm, +hhmm);
    without one, the local time zone. Milliseconds since the epoch."""
    from datetime import datetime

    s = text.strip()
    if s.endswith("Z"):
        s = s[:-1] + "+00:00"
    elif len(s) > 5 and s[-5] in "+-" and s[-4:].isdigit() and "T" in s and s[-3] != ":":
        s = s[:-2] + ":" + s[-2:]
    try:
        dt = datetime.fromisoformat(s)
    except ValueError:
        raise ResetError(f"Error parsing timestamp '{text}': expected 'YYYY-MM-DDTHH:mm:SS.sss'") from None
    if dt.tzinfo is None:
        dt = dt.astimezone()
    return int(dt.timestamp() * 1000)


# ------------------------------------------------------------------------------- transactions
def pretty_table(headers: list[str], rows: list[list]) -> str:
    """ToolsUtils.prettyPrintTable: each cell padded to its column's width and followed by a tab."""
    cells = [[_cell(v) for v in r] for r in rows]
    widths = [max([len(h)] + [len(r[i]) for r in cells]) for i, h in enumerate(headers)]
    return "\n".join("".join(f"{v:<{w}}\t" for v, w in zip(r, widths, strict=True)) for r in [headers] + cells)


LIST_TXN_HEADERS = ["TransactionalId", "Coordinator", "ProducerId", "TransactionState"]
DESCRIBE_TXN_HEADERS = [
    "CoordinatorId",
    "TransactionalId",
    "ProducerId",
    "ProducerEpoch",
    "TransactionState",
    "TransactionTimeoutMs",
    "CurrentTransactionStartTimeMs",
    "TransactionDurationMs",
    "TopicPartitions",
]
# Kafka's find-hanging columns, then the transactional id (here the coordinator knows it, and
# `abort` takes it).
HANGING_HEADERS = [
    "Topic",
    "Partition",
    "ProducerId",
    "ProducerEpoch",
    "CoordinatorEpoch",
    "StartOffset",
    "LastTimestamp",
    "Duration(min)",
    "TransactionalId",
]
OPEN_STATES = ("Ongoing", "PrepareCommit", "PrepareAbort", "PrepareEpochFence")


def describe_txn_row(txn: dict, now_ms: int) -> list:
    start = txn.get("startTimestamp")
    started: tuple[int | str, int | str] = ("None", "None") if start is None or start < 0 else (start, now_ms - start)
    tps = ",".join(f"{t['topic']}-{p}" for t in txn.get("partitions") or [] for p in t["partitions"])
    return [
        txn["coordinatorPartition"],
        txn["transactionalId"],
        txn["producerId"],
        txn["producerEpoch"],
        txn["state"],
        txn["timeoutMs"],
        *started,
        tps,
    ]


def hanging_rows(txns: list[dict], max_timeout_ms: int, now_ms: int) -> list[list]:
    """Open transactions (Ongoing / Prepare*) running longer than `max_timeout_ms`: one row per
    partition they wrote to (one row with Topic "-" when none yet). CoordinatorEpoch and
    StartOffset are the data partition's producer state in Kafka, not known to the coordinator: -1."""
    rows = []
    for t in sorted(txns, key=lambda t: t["transactionalId"]):
        start = t.get("startTimestamp")
        if t["state"] not in OPEN_STATES or start is None or start < 0 or now_ms - start <= max_timeout_ms:
            continue
        minutes = (now_ms - start) // 60000
        tps = [(x["topic"], p) for x in t.get("partitions") or [] for p in sorted(x["partitions"])] or [(None, None)]
        for topic, p in sorted(tps, key=lambda tp: (tp[0] or "", tp[1] or 0)):
            rows.append([topic, p, t["producerId"], t["producerEpoch"], -1, -1, start, minutes, t["transactionalId"]])
    return rows
