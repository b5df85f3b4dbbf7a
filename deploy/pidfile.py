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
    """The pid in `pidfile` if that process is alive."""
    try:
        pid = int(pidfile.read_text())
        os.kill(pid, 0)
        return pid
    except (OSError, ValueError):
        return None


def terminate(pidfile: Path, timeout: float, poll_s: float = 0.1) -> None:
    """SIGTERM the process, SIGKILL it if it is still there after `timeout`; forget the pidfile."""
    pid = running_pid(pidfile)
    if pid is None:
        return
    os.kill(pid, signal.SIGTERM)
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            os.kill(pid, 0)
        except OSError:
            break
        time.sleep(poll_s)
    else:
        os.kill(pid, signal.SIGKILL)
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
