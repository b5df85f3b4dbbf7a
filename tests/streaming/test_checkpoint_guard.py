"""The checkpoint guard on checkpoints laid out as Spark 4.0 writes them (offset and commit logs,
RocksDB changelogs and snapshots, Hadoop .crc files). tests/integration/test_faults.py damages real
checkpoints of the running job."""

from __future__ import annotations

import json
import struct
import zipfile
import zlib
from pathlib import Path

import pytest

from streaming.checkpoint_guard import CheckpointDamaged, check_before_start, diagnose, main


def write(path: Path, data: bytes) -> None:
    """A file and its Hadoop checksum file, as Spark's local file system writes them."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    sums = b"".join(struct.pack(">I", zlib.crc32(data[i : i + 512])) for i in range(0, len(data), 512))
    path.with_name(f".{path.name}.crc").write_bytes(b"crc\x00" + struct.pack(">i", 512) + sums)


def lz4_block(payload: bytes) -> bytes:  # a stored (uncompressed) block of lz4-java's block stream
    return b"LZ4Block" + bytes([0x15]) + struct.pack("<iii", len(payload), len(payload), 0) + payload


def changelog(n_records: int) -> bytes:
    return lz4_block(b"\x00" * 8 * n_records + b"\xff\xff\xff\xff") + lz4_block(b"")


def snapshot() -> bytes:
    import io

    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("metadata", "v1\n{}")
    return buf.getvalue()


def make_checkpoint(root: Path, batches: int = 12, committed: bool = True, snapshot_at: int | None = 6) -> Path:
    """Batches 0..batches-1 planned; all committed (or all but the last); state versions up to the
    last batch's + 1 in two store partitions."""
    write(root / "metadata", b'{"id":"00000000-0000-0000-0000-000000000000"}')
    write(root / "state/0/_metadata/metadata", b'v1\n{"operatorInfo":{},"stateStoreInfo":[{"numPartitions":2}]}')
    for b in range(batches):
        meta = json.dumps({"batchWatermarkMs": 0, "batchTimestampMs": 1000 + b})
        write(root / f"offsets/{b}", f'v1\n{meta}\n{{"req":{{"0":{b}}}}}'.encode())
        if committed or b < batches - 1:
            write(root / f"commits/{b}", b'v1\n{"nextBatchWatermarkMs":0}')
        for p in (0, 1):
            write(root / f"state/0/{p}/{b + 1}.changelog", changelog(b % 3))
            if b + 1 == snapshot_at:
                write(root / f"state/0/{p}/{b + 1}.zip", snapshot())
    return root


def truncate(path: Path) -> None:
    path.write_bytes(path.read_bytes()[: len(path.read_bytes()) // 2])


def test_a_healthy_checkpoint_and_a_new_one(tmp_path):
    assert diagnose(make_checkpoint(tmp_path / "c")).healthy
    assert diagnose(make_checkpoint(tmp_path / "u", committed=False)).healthy
    assert diagnose(tmp_path / "new").healthy


@pytest.mark.parametrize("damage", ["truncate", "empty", "delete"])
def test_damaged_newest_commit_is_rolled_back_and_rerun_exactly(tmp_path, damage):
    root = make_checkpoint(tmp_path / "c")
    f = root / "commits/11"
    {"truncate": truncate, "empty": lambda p: p.write_bytes(b""), "delete": lambda p: p.unlink()}[damage](f)
    d = diagnose(root)
    assert not d.healthy and d.refusal is None
    assert "re-run exactly" in d.outcome and "batch 11" in d.outcome
    check_before_start(root, repair_damage=True)
    assert not (root / "commits/11").exists() and not (root / "commits/.11.crc").exists()
    assert (root / "offsets/11").exists()
    assert diagnose(root).healthy
    assert list((tmp_path / "c.damaged").rglob("*"))  # kept, not deleted


@pytest.mark.parametrize("committed", [True, False])
def test_damaged_newest_offsets_are_planned_again(tmp_path, committed):
    root = make_checkpoint(tmp_path / "c", committed=committed)
    truncate(root / "offsets/11")
    d = diagnose(root)
    assert d.refusal is None and "planned again" in d.outcome
    check_before_start(root, repair_damage=True)
    assert not (root / "offsets/11").exists() and not (root / "commits/11").exists()
    assert diagnose(root).healthy


def test_a_deleted_file_leaves_its_checksum_behind(tmp_path):
    root = make_checkpoint(tmp_path / "c", committed=False)
    # Spark's default (FileContext) checkpoint manager cannot write offsets/11 again over .11.crc
    (root / "offsets/11").unlink()
    d = diagnose(root)
    assert d.refusal is None and "batch 11 is planned again" in d.outcome
    check_before_start(root, repair_damage=True)
    assert not (root / "offsets/.11.crc").exists() and diagnose(root).healthy


@pytest.mark.parametrize("crc_left", [True, False])
def test_deleted_offsets_of_a_committed_batch_are_planned_again(tmp_path, crc_left):
    """commits/11 without offsets/11: Spark would re-run batch 10 and fail on its existing commit."""
    root = make_checkpoint(tmp_path / "c")
    (root / "offsets/11").unlink()
    if not crc_left:  # storage without checksum files
        (root / "offsets/.11.crc").unlink()
    d = diagnose(root)
    assert d.refusal is None and root / "commits/11" in d.move, d.report()
    assert "batch 11 is planned again from the end offsets of batch 10" in d.outcome, d.report()
    check_before_start(root, repair_damage=True)
    assert not (root / "commits/11").exists() and not (root / "offsets/.11.crc").exists()
    assert (root / "state/0/0/12.changelog").exists()  # batch 11's version: rewritten by the re-plan
    assert diagnose(root).healthy


def test_deleted_offsets_of_a_batch_killed_before_its_checksum_was_renamed(tmp_path):
    """A SIGKILL between renaming offsets/12 and renaming its checksum leaves offsets/12 without
    .12.crc and the temporary's checksum. Deleting that offsets/12 then leaves nothing to repair:
    the checkpoint is one whose batch 12 was never planned, and Spark plans it."""
    root = make_checkpoint(tmp_path / "c", batches=12)
    write(root / "offsets/.12.5d0c.tmp", b"v1\n{}\n{}")
    (root / "offsets/.12.5d0c.tmp").rename(root / "offsets/12")
    assert (root / "offsets/..12.5d0c.tmp.crc").exists() and not (root / "offsets/.12.crc").exists()
    assert diagnose(root).healthy  # an unchecked but intact offsets/12
    (root / "offsets/12").unlink()
    assert diagnose(root).healthy


def test_temporary_files_of_either_checkpoint_manager_are_not_damage(tmp_path):
    """Spark names a temporary `.<name>.<uuid>[.TID<task>].tmp` (the task id when a task writes it:
    state changelogs and snapshots); the FileSystem-based manager also writes its `.crc`."""
    root = make_checkpoint(tmp_path / "c")
    for name in (
        "offsets/.12.5d0c.tmp",
        "commits/.11.77aa.tmp",
        "state/0/0/.13.changelog.9e3f.TID41.tmp",
        "state/0/1/.12.zip.0b1c.TID42.tmp",
    ):
        write(root / name, b"partial")
    assert diagnose(root).healthy


@pytest.mark.parametrize("damage", ["truncate", "delete"])
def test_damaged_newest_state_version_rolls_its_batch_back(tmp_path, damage):
    root = make_checkpoint(tmp_path / "c")
    f = root / "state/0/1/12.changelog"
    truncate(f) if damage == "truncate" else f.unlink()
    d = diagnose(root)
    assert d.refusal is None and "batch 11 is re-run exactly" in d.outcome, d.report()
    check_before_start(root, repair_damage=True)
    assert not (root / "commits/11").exists() and (root / "offsets/11").exists()
    assert diagnose(root).healthy


def test_uncommitted_state_version_is_just_rewritten(tmp_path):
    root = make_checkpoint(tmp_path / "c", committed=False)  # batch 11 planned, state 12 written
    truncate(root / "state/0/0/12.changelog")
    d = diagnose(root)
    assert d.refusal is None and (root / "state/0/0/12.changelog") in d.move
    assert (root / "commits/10") not in d.move


def test_a_damaged_snapshot_is_skipped_when_changelogs_lead_past_it(tmp_path):
    root = make_checkpoint(tmp_path / "c", snapshot_at=6)
    truncate(root / "state/0/0/6.zip")
    d = diagnose(root)
    assert d.refusal is None and d.move == [root / "state/0/0/6.zip", root / "state/0/0/.6.zip.crc"]
    assert "resumes" in d.outcome


def test_a_damaged_snapshot_without_older_changelogs_is_refused(tmp_path):
    root = make_checkpoint(tmp_path / "c", snapshot_at=6)
    for v in range(1, 6):  # retention removed the changelogs before the snapshot
        (root / f"state/0/0/{v}.changelog").unlink()
    truncate(root / "state/0/0/6.zip")
    d = diagnose(root)
    assert d.refusal and "1.changelog is missing" in d.report()
    with pytest.raises(CheckpointDamaged, match="not started"):
        check_before_start(root, repair_damage=True)
    assert (root / "state/0/0/6.zip").exists()  # nothing moved


def test_damage_in_the_middle_of_the_chain_is_refused(tmp_path):
    root = make_checkpoint(tmp_path / "c")
    truncate(root / "state/0/0/9.changelog")
    assert "state version 9" in diagnose(root).refusal


def test_two_damaged_batches_are_refused(tmp_path):
    root = make_checkpoint(tmp_path / "c")
    truncate(root / "offsets/11")
    truncate(root / "offsets/10")
    assert diagnose(root).refusal


def test_state_without_an_offset_log_is_refused(tmp_path):
    root = make_checkpoint(tmp_path / "c")
    for f in (root / "offsets").iterdir():
        f.unlink()
    assert "empty state" in diagnose(root).refusal


def test_without_repair_the_start_is_refused_with_the_command_to_run(tmp_path, capsys):
    root = make_checkpoint(tmp_path / "c")
    truncate(root / "commits/11")
    with pytest.raises(CheckpointDamaged, match="--repair"):
        check_before_start(root, repair_damage=False)
    assert main(["--checkpoint", str(root)]) == 2
    assert main(["--checkpoint", str(root), "--repair"]) == 0
    assert main(["--checkpoint", str(root)]) == 0
    assert "healthy" in capsys.readouterr().out


def test_damaged_committed_state_under_an_uncommitted_batch(tmp_path):
    root = make_checkpoint(tmp_path / "c", batches=12, committed=False)  # commits up to 10
    (root / "state/0/0/12.changelog").unlink()  # batch 11's version: rewritten by its re-run
    truncate(root / "state/0/0/11.changelog")  # batch 10's version: committed
    d = diagnose(root)
    assert d.refusal is None, d.report()
    assert "batch 10 is re-run exactly" in d.outcome and "batch 11 is planned again" in d.outcome


def test_damaged_commit_under_an_uncommitted_batch(tmp_path):
    root = make_checkpoint(tmp_path / "c", batches=12, committed=False)  # commits up to 10
    truncate(root / "commits/10")
    d = diagnose(root)
    assert d.refusal is None, d.report()
    assert "batch 10 is re-run exactly" in d.outcome and "batch 11 is planned again" in d.outcome
    check_before_start(root, repair_damage=True)
    assert diagnose(root).healthy


def test_hdfs_backed_state_is_left_to_spark(tmp_path):
    root = make_checkpoint(tmp_path / "c")
    for p in (0, 1):
        for f in (root / f"state/0/{p}").iterdir():
            f.unlink()
        write(root / f"state/0/{p}/12.delta", b"\x00")
    assert diagnose(root).healthy


def test_temporary_files_left_by_a_sigkill_are_not_damage(tmp_path):
    root = make_checkpoint(tmp_path / "c", committed=False)
    (root / "offsets/..12.3f1e.tmp.crc").write_bytes(b"crc\x00")  # its .12.3f1e.tmp was never renamed
    assert diagnose(root).healthy
