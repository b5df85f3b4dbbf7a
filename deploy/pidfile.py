"""What the local servers (deploy/kafka_local.py, deploy/redis_local.py) share: a process known by
its pidfile, stopped with SIGTERM then SIGKILL, and the `start | stop | status` command line."""

from __future__ import annotations

import argparse
import os
import signal
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol, TypeVar


class LocalServer(Protocol):
    """What `server_cli` drives: a server known by its pidfile."""

    @property
    def logfile(self) -> Path: ...

    def pid(self) -> int | None: ...

    def start(self) -> Any: ...

    def stop(self) -> None: ...


Server = TypeVar("Server", bound=LocalServer)


def running_pid(pidfile: Path) -> int | None:
    """The pid in `pidfile` if that process is alive (a child of ours that exited is reaped here,
    not taken for alive)."""
    try:
        pid = int(pidfile.read_text())
    except (OSError, ValueError):
        return None
    return pid if _alive(pid) else None


def _alive(pid: int) -> bool:
    """Whether `pid` runs. A process that exited stays a zombie, answering signal 0, until its
    parent waits for it: when it is our own child, reap it, or a stop would wait its whole timeout."""
    try:
        done, _ = os.waitpid(pid, os.WNOHANG)
        if done == pid:
            return False
    except ChildProcessError:  # not our child: its own parent reaps it
        pass
    try:
        os.kill(pid, 0)
        return True
    except OSError:
        return False


def terminate(pidfile: Path, timeout: float, poll_s: float = 0.05) -> None:
    """SIGTERM the process, SIGKILL it if it is still there after `timeout`; forget the pidfile.
    Returns as soon as the process is gone (reaped, when it is our child)."""
    pid = running_pid(pidfile)
    if pid is None:
        pidfile.unlink(missing_ok=True)
        return
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while _alive(pid):
        if time.monotonic() >= deadline:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
            deadline = time.monotonic() + 30  # SIGKILL ends it; wait for it to be gone, bounded
            while _alive(pid) and time.monotonic() < deadline:
                time.sleep(poll_s)
            break
        time.sleep(poll_s)
    pidfile.unlink(missing_ok=True)


def server_cli(
    argv: list[str] | None,
    description: str,
    name: str,
    default_dir: Path,
    default_port: int,
    make: Callable[[str, int], Server],
    address: Callable[[Server], str],
) -> int:
    """`start | stop | status [--dir D] [--port P]` for a server object with start(), stop(), pid()
    and logfile."""
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("action", choices=["start", "stop", "status"])
    ap.add_argument("--dir", default=str(default_dir))
    ap.add_argument("--port", type=int, default=default_port)
    args = ap.parse_args(argv)
    server = make(args.dir, args.port)
    if args.action == "start":
        server.start()
        print(f"{name} up at {address(server)} (pid {server.pid()}, log {server.logfile})")
    elif args.action == "stop":
        server.stop()
        print(f"{name} stopped")
    else:
        pid = server.pid()
        print(f"running (pid {pid}) at {address(server)}" if pid else "not running")
        return 0 if pid else 1
    return 0
