"""The Python worker daemon of the coordinator job (`spark.python.daemon.module`).

Spark starts one daemon per executor; it forks a worker per Python task and reuses it. This module
runs PySpark's own daemon after three changes, all measured (docs/operations.md, *Latency*):

- **No archives on the import path that it does not need.** Spark puts spark-core's jar (37 MB,
  5,000 entries, no Python in it), `pyspark.zip` and the py4j zip on the workers' PYTHONPATH, and
  every task calls `importlib.invalidate_caches()`, which on Python 3.11 makes `zipimporter` re-read
  each archive's whole directory, in Python. That was about a third of a worker's time on an idle
  stream. With pyspark installed from PyPI the zips' packages are in site-packages too, so they are
  dropped; an archive that is the only source of a module stays.
- **Warm imports.** pandas, pyarrow and the coordinator core are imported once here, before any
  fork, so a new worker starts with them loaded (copy-on-write) instead of importing them on its
  first task, which made the stream's first micro-batches slow.
- **Frozen imports.** What was imported then lives as long as the workers. It is moved to the
  garbage collector's permanent generation (`gc.freeze()`, as Python's documentation advises before
  a fork), so a worker's full collections no longer walk its ~80,000 objects. Measured in the
  workers before this: ~18 full collections in a two-burst run, ~37 ms of CPU each, a quarter of the
  identity step's worker CPU and an eighth of the coordinator's. It also keeps those pages shared
  with the daemon: a collection no longer writes to them.
"""

from __future__ import annotations

import gc
import importlib.util
import os
import sys
import zipfile


def python_top_levels(archive: str) -> set[str]:
    """The top-level modules and packages an archive on the import path provides."""
    with zipfile.ZipFile(archive) as z:
        names = z.namelist()
    return {
        n.split("/")[0].removesuffix(".py").removesuffix(".pyc")
        for n in names
        if n.endswith((".py", ".pyc")) and n.split("/")[0].isidentifier() or n.split("/")[0].endswith((".py", ".pyc"))
    }


def drop_redundant_archives(path: list[str]) -> list[str]:
    """`path` without the archives (zip, jar) whose Python modules are all importable from
    elsewhere on it: PySpark's zips next to the installed packages, and spark-core's jar, which
    Spark puts on the workers' path although it holds no Python."""
    archives = [p for p in path if p.endswith((".zip", ".jar")) and os.path.isfile(p)]
    kept = [p for p in path if p not in archives]
    saved = sys.path[:]
    try:
        sys.path[:] = kept
        importlib.invalidate_caches()
        needed = [a for a in archives if any(importlib.util.find_spec(m) is None for m in python_top_levels(a))]
    except Exception:  # noqa: BLE001 - unreadable archive: leave the path as it was
        return path
    finally:
        sys.path[:] = saved
    return [p for p in path if p not in archives or p in needed]


def warm_imports() -> None:
    import pandas  # noqa: F401
    import pyarrow  # noqa: F401

    import streaming.step  # noqa: F401  (coordinator core, state codec)


def prepare() -> None:
    """Everything done before PySpark's daemon starts forking workers."""
    kept = drop_redundant_archives(sys.path)
    dropped = tuple(set(sys.path) - set(kept))
    for entry in [e for e in sys.path_importer_cache if dropped and e.startswith(dropped)]:
        # Finding this module already made importers for them: invalidate_caches visits those.
        del sys.path_importer_cache[entry]
    sys.path[:] = kept
    try:
        warm_imports()
    except Exception:  # noqa: BLE001 - a worker imports what it needs anyway; never block start-up
        pass
    gc.collect()  # no garbage cycle of the imports kept for ever
    gc.freeze()


def main() -> None:
    prepare()
    from pyspark import daemon  # reads the worker module from sys.argv[1], as when run with -m

    daemon.manager()


if __name__ == "__main__":
    main()
