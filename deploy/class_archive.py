"""Writing a JVM class-data archive (JDK CDS) in place: the steps deploy/jvm_archive.py (the Spark
driver's) and deploy/kafka_archive.py (the Kafka broker's) share."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path


def write_archive(
    archive: Path,
    train: Callable[[Path], None],
    name: str,
    users: str,
    usable: Callable[[Path], bool] | None = None,
) -> int:
    """`train(path)` runs a JVM that writes an archive to `path` when it exits; the archive is made
    next to `archive`, checked with `usable` (when given) and only then moved in place. Returns 0,
    or 1 with a line on stderr naming `name` and saying that `users` start without one."""
    archive.parent.mkdir(parents=True, exist_ok=True)
    partial = archive.with_suffix(".partial")
    partial.unlink(missing_ok=True)
    train(partial)
    if not partial.exists():
        print(f"{name}: the JVM wrote no archive; {users} start without one", file=sys.stderr)
        return 1
    if usable is not None and not usable(partial):
        partial.unlink()
        print(f"{name}: a JVM cannot use the archive written; {users} start without one", file=sys.stderr)
        return 1
    os.replace(partial, archive)  # a running JVM keeps the file it mapped
    return 0
