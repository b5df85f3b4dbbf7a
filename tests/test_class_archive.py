"""deploy/class_archive.write_archive: an archive is moved in place only once written and usable."""

from __future__ import annotations

from deploy.class_archive import write_archive


def test_an_archive_is_moved_in_place_only_when_written_and_usable(tmp_path, capsys):
    archive = tmp_path / "jvm" / "x.jsa"
    assert write_archive(archive, lambda p: p.write_bytes(b"classes"), "x_archive", "brokers") == 0
    assert archive.read_bytes() == b"classes" and not archive.with_suffix(".partial").exists()

    assert write_archive(archive, lambda p: None, "x_archive", "brokers") == 1  # the JVM wrote none
    assert "x_archive: the JVM wrote no archive; brokers start without one" in capsys.readouterr().err
    assert archive.read_bytes() == b"classes"  # the one in place stays

    unusable = write_archive(archive, lambda p: p.write_bytes(b"bad"), "x_archive", "brokers", lambda p: False)
    assert unusable == 1 and "cannot use the archive" in capsys.readouterr().err
    assert archive.read_bytes() == b"classes" and not archive.with_suffix(".partial").exists()
