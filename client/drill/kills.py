"""How the drill kills the job and brings it back.

- `LocalJob`: the drill runs the job itself (run_stream.py in a process group of its own), SIGKILLs
  the whole group (driver, JVM, Python workers) and restarts it on the same config and checkpoint.
- `StatusPidKiller`: SIGKILLs the pid the job's status file names (the operator's supervisor, e.g.
  systemd or deploy/run-local.sh in a loop, restarts it).
- `HookKiller`: runs the operator's shell commands (`--kill-hook`, `--restart-hook`), e.g.
  `kubectl delete pod ...` on a cluster.
- `ManualKiller`: tells the operator when to kill, and notices the kill from the status file.
Recovery is never assumed: the drill waits (bounded) for the first answer to a request sent after
the kill.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


class LocalJob:
    def __init__(self, config_file: str | None, log_file: Path):
        self.config_file, self.log_file = config_file, Path(log_file)
        self.proc: subprocess.Popen | None = None
        self.starts = 0

    def start(self) -> int:
        """Start the job and return at once; the log offset where this start's output begins."""
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        env.setdefault("PYSPARK_PYTHON", sys.executable)
        self.log_file.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log_file, "ab") as log:
            log.write(f"\n===== drill start {self.starts} =====\n".encode())
            mark = log.tell()
            args = [sys.executable, str(ROOT / "run_stream.py"), "--ensure-topics"]
            if self.config_file:
                args += ["--config", str(self.config_file)]
            self.proc = subprocess.Popen(
                args, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
            )
        self.starts += 1
        return mark

    def wait_started(self, mark: int, timeout: float = 180) -> None:
        if self.proc is None:
            raise RuntimeError("the job was not started")
        proc = self.proc
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise RuntimeError(f"the job exited with {proc.returncode}; see {self.log_file}")
            with open(self.log_file, "rb") as f:
                f.seek(mark)
                if b"COORDINATOR-STREAM-STARTED" in f.read():
                    return
            time.sleep(0.3)
        raise TimeoutError(f"the job did not start in {timeout:.0f}s; see {self.log_file}")

    def kill(self) -> str:
        """SIGKILL the job's whole process group, wherever it is in a micro-batch."""
        if self.proc is None or self.proc.poll() is not None:
            raise RuntimeError("the job is not running")
        pgid = self.proc.pid
        os.killpg(pgid, signal.SIGKILL)
        self.proc.wait(timeout=30)
        self._reap(pgid)
        return f"SIGKILL process group {pgid}"

    def restart(self) -> None:
        self.start()

    def alive(self) -> bool:
        """Whether the job's process runs (the drill stops waiting for answers when it does not)."""
        return self.proc is not None and self.proc.poll() is None

    def stop(self, timeout: float = 60) -> None:
        """A clean stop: SIGTERM to the driver (it stops the query and Spark)."""
        if self.proc is None or self.proc.poll() is not None:
            return
        pgid = self.proc.pid
        os.kill(pgid, signal.SIGTERM)
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(pgid, signal.SIGKILL)
            self.proc.wait(timeout=30)
        self._reap(pgid)

    @staticmethod
    def _reap(pgid: int) -> None:
        # The JVM may outlive the driver for a moment: make sure the group is gone before a restart
        # opens the same state store. Never signal the group again once it is gone (its id is free).
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                os.killpg(pgid, signal.SIGKILL)
            except ProcessLookupError:
                return
            time.sleep(0.2)


class StatusPidKiller:
    """SIGKILLs the job's driver named in its status file; the operator's supervisor restarts it."""

    def __init__(self, checkpoint: Path, group: bool = False):
        self.checkpoint, self.group = checkpoint, group

    def _pid(self) -> int:
        from streaming.status import read_status, status_path

        doc = read_status(status_path(self.checkpoint)) or {}
        if not doc.get("pid"):
            raise RuntimeError(f"no job pid in {status_path(self.checkpoint)}: is the job running?")
        return int(doc["pid"])

    def kill(self) -> str:
        pid = self._pid()
        (os.killpg if self.group else os.kill)(pid, signal.SIGKILL)
        return f"SIGKILL {'process group' if self.group else 'pid'} {pid}"

    def restart(self) -> None:
        pass  # the operator's supervisor does


class HookKiller:
    def __init__(self, kill_cmd: str, restart_cmd: str | None = None, timeout: float = 300):
        self.kill_cmd, self.restart_cmd, self.timeout = kill_cmd, restart_cmd, timeout

    def _run(self, cmd: str) -> None:
        done = subprocess.run(cmd, shell=True, timeout=self.timeout)
        if done.returncode != 0:
            raise RuntimeError(f"hook {cmd!r} exited with {done.returncode}")

    def kill(self) -> str:
        self._run(self.kill_cmd)
        return f"kill hook {self.kill_cmd!r}"

    def restart(self) -> None:
        if self.restart_cmd:
            self._run(self.restart_cmd)


class ManualKiller:
    """Prints when to kill; the kill is noticed when the status file's pid dies (bounded wait)."""

    def __init__(self, checkpoint: Path, timeout: float = 600, out=sys.stdout):
        self.checkpoint, self.timeout, self.out = checkpoint, timeout, out

    def kill(self) -> str:
        from streaming.status import pid_alive, read_status, status_path

        pid = (read_status(status_path(self.checkpoint)) or {}).get("pid")
        print(
            f">>> KILL THE JOB NOW (pid {pid} per its status file), then restart it; waiting up to {self.timeout:.0f}s",
            file=self.out,
            flush=True,
        )
        deadline = time.monotonic() + self.timeout
        while pid and pid_alive(int(pid)):
            if time.monotonic() > deadline:
                raise TimeoutError(f"the job (pid {pid}) was not killed in {self.timeout:.0f}s")
            time.sleep(0.1)
        return f"operator kill of pid {pid}"

    def restart(self) -> None:
        pass
