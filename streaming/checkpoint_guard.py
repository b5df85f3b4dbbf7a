"""Checks the checkpoint before the query starts; rolls a damaged newest batch back, refuses the rest.

    python -m streaming.checkpoint_guard --checkpoint DIR [--repair]

Spark does not check a checkpoint before using it: a truncated or deleted newest file fails the
query with a parse error (or, with Spark's default FileContext-based checkpoint file manager, a
misleading "Multiple streaming queries are concurrently using ..."), every time it starts (see
docs/operations.md, "Checkpoint damage"). This guard reads the files
Spark will read on restart and, for each, verifies its Hadoop `.crc` side file when there is one,
and its structure (offset and commit logs: their JSON lines; state changelogs: complete LZ4 blocks;
snapshots: a readable zip).

What it repairs (with `--repair`, or `[stream] checkpoint_repair = true` at start), by moving the
damaged files to `<checkpoint>.damaged/<time>/` so that Spark re-runs a batch from an earlier,
intact state version:
- the newest offset-log entry (and its commit): the batch is planned again from the previous
  batch's end offsets, with a new batch time;
- the newest commit-log entry, or a commit without its offset entry: the batch is re-run exactly
  (same offsets, same batch time) from the previous state version;
- the newest state version of any store partition (changelog or snapshot): its batch's commit is
  rolled back, so that the batch is re-run exactly and writes that version again;
- a snapshot older than that, when an earlier snapshot (or version 0) and unbroken changelogs
  still lead to the needed version;
- `.crc` files left behind by a deleted file (the FileContext-based manager cannot write the file
  again over them; the FileSystem-based one this job uses replaces them, but a kill between its
  two renames would leave the new file under the stale checksum).
Everything else (two damaged batches in a row, a damaged changelog in the middle of the chain, a
missing store partition, a missing offset log while state exists, an unreadable `metadata`) is
refused: rolling back further would start from state older than what was committed and answered.
A rollback never loses a committed request: the source offsets of the previous batch are in the
checkpoint, so every request after them is read and applied again (outputs are at-least-once).
"""

from __future__ import annotations

import argparse
import json
import logging
import re
import shutil
import struct
import sys
import time
import zipfile
import zlib
from dataclasses import dataclass, field
from pathlib import Path

log = logging.getLogger("checkpoint_guard")

LZ4_MAGIC = b"LZ4Block"
LZ4_HEADER = len(LZ4_MAGIC) + 1 + 4 + 4 + 4  # magic, token, compressed size, size, checksum


class CheckpointDamaged(RuntimeError):
    """The checkpoint is damaged and was not repaired; the message says what and what to do."""


# ------------------------------------------------------------------------------ file checks
def crc_problem(path: Path) -> str | None:
    """Compare `path` with its Hadoop checksum file `.<name>.crc` (CRC32 per 512-byte chunk)."""
    crc = path.with_name(f".{path.name}.crc")
    if not crc.exists():
        return None
    raw, data = crc.read_bytes(), path.read_bytes()
    if len(raw) < 8 or raw[:4] != b"crc\x00":
        return f"its checksum file {crc.name} is unreadable"
    chunk = struct.unpack(">i", raw[4:8])[0]
    expected = [struct.unpack(">I", raw[i : i + 4])[0] for i in range(8, len(raw) - 3, 4)]
    actual = [zlib.crc32(data[i : i + chunk]) for i in range(0, len(data), chunk)]
    if expected != actual:
        return (
            f"does not match its checksum file {crc.name} ({len(data)} bytes, the checksum covers "
            f"{len(expected)} chunk(s) of {chunk})"
        )
    return None


def log_entry_problem(path: Path, json_lines: int) -> str | None:
    """An offset-log entry (`v1`, metadata JSON, source offsets JSON) or a commit-log entry (`v1`,
    JSON)."""
    problem = crc_problem(path)
    if problem:
        return problem
    lines = path.read_bytes().decode("utf-8", "replace").split("\n")
    if not lines or not re.fullmatch(r"v\d+", lines[0]):
        return "has no version line (empty or truncated)"
    if len(lines) < 1 + json_lines:
        return f"is truncated ({len(lines) - 1} of {json_lines} JSON lines)"
    for line in lines[1 : 1 + json_lines]:
        try:
            json.loads(line)
        except ValueError:
            return "is truncated or corrupt (a line is not JSON)"
    return None


def changelog_problem(path: Path) -> str | None:
    problem = crc_problem(path)
    if problem:
        return problem
    data = path.read_bytes()
    if not data:
        return "is empty"
    if not data.startswith(LZ4_MAGIC):
        return None  # another compression codec: checksum only
    pos = 0
    while pos + LZ4_HEADER <= len(data):
        if data[pos : pos + len(LZ4_MAGIC)] != LZ4_MAGIC:
            return f"is corrupt at byte {pos}"
        compressed, size = struct.unpack("<ii", data[pos + 9 : pos + 17])
        if compressed == 0 and size == 0:
            return None if pos + LZ4_HEADER == len(data) else "has bytes after its end"
        pos += LZ4_HEADER + compressed
    return f"is truncated ({len(data)} bytes, no end block)"


def snapshot_problem(path: Path) -> str | None:
    problem = crc_problem(path)
    if problem:
        return problem
    try:
        with zipfile.ZipFile(path) as z:
            bad = z.testzip()
    except (zipfile.BadZipFile, OSError, EOFError) as e:
        return f"is not a readable zip ({e})"
    return f"has a corrupt member {bad}" if bad else None


# ------------------------------------------------------------------------------ diagnosis
@dataclass
class Diagnosis:
    checkpoint: Path
    damage: list[str] = field(default_factory=list)  # what is wrong, one line each
    move: list[Path] = field(default_factory=list)  # files the repair moves away
    refusal: str | None = None  # why it cannot be repaired
    outcome: str = ""  # what Spark does after the repair

    @property
    def healthy(self) -> bool:
        return not self.damage

    def report(self) -> str:
        lines = [f"checkpoint {self.checkpoint}: " + ("healthy" if self.healthy else "DAMAGED")]
        lines += [f"  - {d}" for d in self.damage]
        if self.refusal:
            lines.append(f"  cannot be repaired: {self.refusal}")
        elif self.move:
            lines.append("  repair: move " + ", ".join(str(p.relative_to(self.checkpoint)) for p in self.move))
            lines.append(f"  then: {self.outcome}")
        return "\n".join(lines)


def _ids(directory: Path, suffix: str = "") -> list[int]:
    if not directory.is_dir():
        return []
    pattern = re.compile(rf"(\d+){re.escape(suffix)}")
    return sorted(int(m.group(1)) for p in directory.iterdir() if (m := pattern.fullmatch(p.name)))


def _with_crc(path: Path) -> list[Path]:
    crc = path.with_name(f".{path.name}.crc")
    return [p for p in (path, crc) if p.exists()]


def _orphan_crcs(directory: Path) -> list[Path]:
    """Checksum files whose file is gone. Not those of Spark's hidden temporary files
    (`..N.<uuid>.tmp.crc`, left by a SIGKILL in mid-write): Spark never reads those names."""
    if not directory.is_dir():
        return []
    return sorted(
        p
        for p in directory.glob(".*.crc")
        if not p.name[1:-4].startswith(".") and not (directory / p.name[1:-4]).exists()
    )


def store_partitions(root: Path) -> list[Path]:
    """state/<operator>/<partition> directories."""
    state = root / "state"
    if not state.is_dir():
        return []
    return sorted(
        p
        for op in state.iterdir()
        if op.is_dir() and op.name.isdigit()
        for p in op.iterdir()
        if p.is_dir() and p.name.isdigit()
    )


def expected_store_partitions(root: Path) -> list[Path]:
    """Every store partition the operator metadata declares (state/<op>/_metadata/metadata)."""
    out = []
    state = root / "state"
    for op in sorted(p for p in state.iterdir() if p.is_dir() and p.name.isdigit()) if state.is_dir() else []:
        meta = op / "_metadata" / "metadata"
        try:
            info = json.loads(meta.read_text().split("\n")[1])
            n = max(s["numPartitions"] for s in info["stateStoreInfo"])
        except (OSError, ValueError, KeyError, IndexError):
            continue
        out += [op / str(p) for p in range(n)]
    return out


def _chain_problem(partition: Path, version: int) -> tuple[str, list[Path], int | None] | None:
    """Can state `version` of this store partition be loaded? None if yes. Otherwise (what is
    wrong, damaged snapshots to move away so that Spark picks an earlier one, the version whose
    changelog is missing or damaged, or None when moving the snapshots is enough).

    Spark loads the newest snapshot at or below `version` (or starts from empty at 0) and replays
    the changelogs after it."""
    if version == 0:
        return None
    bad: list[Path] = []
    what: list[str] = []
    for s in reversed([0] + [v for v in _ids(partition, ".zip") if v <= version]):
        if s and (problem := snapshot_problem(partition / f"{s}.zip")):
            bad.append(partition / f"{s}.zip")
            what.append(f"{s}.zip {problem}")
            continue
        for v in range(s + 1, version + 1):
            f = partition / f"{v}.changelog"
            problem = "is missing" if not f.exists() else changelog_problem(f)
            if problem:
                return "; ".join(what + [f"{f.name} {problem}"]), bad, v
        return ("; ".join(what), bad, None) if bad else None
    raise AssertionError("unreachable: version 0 always ends the loop")


def diagnose(checkpoint: str | Path) -> Diagnosis:
    root = Path(checkpoint)
    d = Diagnosis(root)
    offsets_dir, commits_dir = root / "offsets", root / "commits"
    partitions = store_partitions(root)
    offsets = _ids(offsets_dir)
    if not offsets:
        if any(p.iterdir() for p in partitions):
            d.damage.append("the offset log is empty or missing but state exists")
            d.refusal = "Spark would start a new query on top of it, with empty state"
        return d
    meta = root / "metadata"
    try:
        json.loads(meta.read_text().split("\n")[0])["id"]
    except (OSError, ValueError, KeyError, IndexError):
        d.damage.append("metadata (the query id) is missing or unreadable")
        d.refusal = (
            'write it again as {"id":"<any uuid>"} (the id only names the query), after '
            "checking that nothing else is damaged"
        )
        return d

    replanned = None
    for directory in (offsets_dir, commits_dir):
        for crc in _orphan_crcs(directory):
            d.damage.append(f"{crc.relative_to(root)} is the checksum of a deleted file")
            d.move.append(crc)
            batch = crc.name[1:-4]
            if directory == offsets_dir and batch.isdigit() and int(batch) > offsets[-1]:
                replanned = int(batch)  # its offset entry is gone: Spark plans that batch again

    # The offset log: the newest entry may be rolled back (planned again).
    n = offsets[-1]
    problem = log_entry_problem(offsets_dir / str(n), 2)
    if problem:
        d.damage.append(f"offsets/{n} {problem}")
        d.move += _with_crc(offsets_dir / str(n))
        replanned = n
        if n - 1 not in offsets or log_entry_problem(offsets_dir / str(n - 1), 2):
            d.refusal = f"offsets/{n - 1}, the entry before it, is missing or damaged too"
            return d
        n -= 1
    commits = _ids(commits_dir)
    for c in [c for c in commits if c > n]:
        if c != replanned:
            d.damage.append(f"commits/{c} has no offset entry (offsets/{c} was deleted)")
        d.move += _with_crc(commits_dir / str(c))
        if replanned is None:  # its offset entry is gone (no .crc left to tell): planned again
            replanned = n + 1
    commits = [c for c in commits if c <= n]
    rolled_back = None
    if commits and (problem := log_entry_problem(commits_dir / str(commits[-1]), 1)):
        d.damage.append(f"commits/{commits[-1]} {problem}")
        d.move += _with_crc(commits_dir / str(commits[-1]))
        rolled_back = commits.pop()
        if n > rolled_back:  # the batch after it was planned, not committed: plan it again
            d.move += _with_crc(offsets_dir / str(n))
            replanned, n = n, rolled_back
    c = commits[-1] if commits else -1
    if c < n - 1:
        d.refusal = (
            f"the newest commit is {c if c >= 0 else 'missing'} but offsets go up to {n}: "
            "more than one batch would have to be rolled back"
        )
        return d

    # State: the version the next batch loads is c + 1; each store partition must be able to
    # load it. If only that newest version is damaged, roll its batch back (re-run exactly).
    expected = expected_store_partitions(root) or partitions
    missing = [p for p in expected if p not in partitions]
    if missing and c >= 0:
        d.damage.append("store partition(s) missing: " + ", ".join(str(p.relative_to(root)) for p in missing))
        d.refusal = "the state of those partitions is lost"
        return d
    # Only RocksDB stores (changelogs, zip snapshots) are checked; HDFS-backed stores (.delta,
    # .snapshot files) are left to Spark.
    partitions = [p for p in partitions if not any(f.suffix in (".delta", ".snapshot") for f in p.iterdir())]
    for attempt in range(2):
        broken = [(p, *found) for p in partitions if (found := _chain_problem(p, c + 1))]
        only_newest = broken and all(version == c + 1 for *_, version in broken)
        if (
            only_newest
            and attempt == 0
            and rolled_back is None
            and c >= 0
            and not log_entry_problem(offsets_dir / str(c), 2)
        ):
            # Roll back batch c: it is re-run exactly from state version c and writes c + 1 again.
            for p, what, snapshots, _ in broken:
                d.damage.append(f"{p.relative_to(root)}/{what}")
                d.move += [f for s in snapshots for f in _with_crc(s)] + _with_crc(p / f"{c + 1}.changelog")
            d.move += _with_crc(commits_dir / str(c))
            rolled_back, c = c, c - 1
            if n > rolled_back:  # the batch after it was planned, not committed: plan it again
                d.move += _with_crc(offsets_dir / str(n))
                replanned, n = n, rolled_back
            continue
        for p, what, snapshots, version in broken:
            d.damage.append(f"{p.relative_to(root)}/{what}")
            if version is not None:
                d.refusal = (
                    f"state version {version} of {p.relative_to(root)} is needed to load version "
                    f"{c + 1} and cannot be read; rolling back further would start from state "
                    "older than what was committed"
                )
                return d
            for s in snapshots:
                d.move += _with_crc(s)
        break

    # Damaged state files above the version to load are rewritten by the re-run; move them too so
    # that nothing ever picks them up.
    for p in partitions:
        for v in _ids(p, ".changelog"):
            if v > c + 1 and p / f"{v}.changelog" not in d.move and changelog_problem(p / f"{v}.changelog"):
                d.damage.append(f"{p.relative_to(root)}/{v}.changelog {changelog_problem(p / f'{v}.changelog')}")
                d.move += _with_crc(p / f"{v}.changelog")
        for v in _ids(p, ".zip"):
            if v > c + 1 and p / f"{v}.zip" not in d.move and snapshot_problem(p / f"{v}.zip"):
                d.damage.append(f"{p.relative_to(root)}/{v}.zip {snapshot_problem(p / f'{v}.zip')}")
                d.move += _with_crc(p / f"{v}.zip")

    d.move = list(dict.fromkeys(d.move))
    d.damage = list(dict.fromkeys(d.damage))
    next_batch = c + 1
    if replanned is not None and replanned > next_batch:
        d.outcome = (
            f"batch {next_batch} is re-run exactly (same offsets, same batch time) from state "
            f"version {next_batch}, then batch {replanned} is planned again with a new batch time"
        )
    elif replanned is not None:
        d.outcome = (
            f"batch {next_batch} is planned again from the end offsets of batch {c} with a new "
            f"batch time, from state version {next_batch}; every request after those offsets "
            "is applied again"
        )
    elif n == next_batch:
        d.outcome = (
            f"batch {next_batch} is re-run exactly (same offsets, same batch time) from state version {next_batch}"
        )
    else:
        d.outcome = "Spark resumes where it stopped"
    return d


def repair(d: Diagnosis) -> Path | None:
    """Move the damaged files to `<checkpoint>.damaged/<UTC time>/`; returns that directory."""
    if d.refusal or not d.move:
        return None
    dest = d.checkpoint.with_name(d.checkpoint.name + ".damaged") / time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    for f in d.move:
        target = dest / f.relative_to(d.checkpoint)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(str(f), str(target))
    return dest


def check_before_start(checkpoint: str | Path, *, repair_damage: bool) -> Diagnosis:
    """Diagnose; repair if allowed and possible; raise CheckpointDamaged with an actionable
    message otherwise."""
    d = diagnose(checkpoint)
    if d.healthy:
        return d
    if d.refusal:
        raise CheckpointDamaged(
            d.report() + "\n  The query is not started. Restore the checkpoint from a backup; or move it "
            'away and start a new one: with [stream] starting_offsets = "earliest" the requests still in '
            "the request topic are applied again in order (with new batch times; requests past the "
            "topic's retention are lost). <checkpoint>.damaged/ holds what earlier repairs moved away."
        )
    if not repair_damage:
        raise CheckpointDamaged(
            d.report() + f"\n  The query is not started. Repair with: python -m streaming.checkpoint_guard "
            f"--checkpoint {d.checkpoint} --repair (or set [stream] checkpoint_repair = true)."
        )
    moved_to = repair(d)
    log.warning("%s\n  REPAIRED: damaged files moved to %s", d.report(), moved_to)
    return d


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--checkpoint", required=True)
    ap.add_argument("--repair", action="store_true", help="move the damaged newest batch away (see above)")
    args = ap.parse_args(argv)
    d = diagnose(args.checkpoint)
    print(d.report())
    if d.healthy:
        return 0
    if d.refusal or not args.repair:
        return 2
    print(f"moved to {repair(d)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
