"""The Python worker daemon drops the archives Spark puts on the workers' import path that only
make every task re-read them (streaming/worker_daemon.py), and keeps those a module needs."""

from __future__ import annotations

import sys
import zipfile

from streaming.worker_daemon import drop_redundant_archives, python_top_levels


def make_archive(path, files: dict[str, str]):
    with zipfile.ZipFile(path, "w") as z:
        for name, text in files.items():
            z.writestr(name, text)
    return str(path)


def test_drops_archives_without_python_or_whose_modules_are_installed_and_keeps_the_only_source(tmp_path):
    jar = make_archive(tmp_path / "spark-core.jar", {"org/apache/spark/X.class": "", "META-INF/MANIFEST.MF": ""})
    shadow = make_archive(tmp_path / "pyspark-like.zip", {"json/__init__.py": "", "csv.py": ""})
    needed = make_archive(tmp_path / "only-here.zip", {"only_here_pkg/__init__.py": "VALUE = 1\n"})
    path = [jar, shadow, needed, *sys.path]
    assert python_top_levels(shadow) == {"json", "csv"} and python_top_levels(jar) == set()
    kept = drop_redundant_archives(path)
    assert jar not in kept and shadow not in kept and needed in kept
    assert kept[0] == needed and kept[1:] == sys.path  # order otherwise unchanged


def test_an_unreadable_archive_leaves_the_path_alone(tmp_path):
    broken = tmp_path / "broken.zip"
    broken.write_bytes(b"not a zip")
    path = [str(broken), *sys.path]
    assert drop_redundant_archives(path) == path


def test_the_imports_are_frozen_before_any_worker_is_forked():
    """A worker's full collections must not walk what the daemon imported (pandas, pyarrow, the
    core): prepare() leaves it in the collector's permanent generation, and a fork inherits that."""
    import subprocess
    import textwrap

    script = textwrap.dedent(
        """
        import gc, os, sys
        from streaming.worker_daemon import prepare
        prepare()
        import pandas, streaming.step
        frozen = gc.get_freeze_count()
        tracked = sum(len(gc.get_objects(g)) for g in range(3))
        pid = os.fork()
        if pid == 0:
            # (a few frozen objects die in the fork's own handlers)
            os._exit(0 if gc.get_freeze_count() > frozen * 0.99 else 1)
        _, status = os.waitpid(pid, 0)
        print(frozen, tracked, os.waitstatus_to_exitcode(status))
        """
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout
    frozen, tracked, child = (int(x) for x in out.split())
    assert frozen > 50_000 and tracked < frozen // 10 and child == 0
