"""The gateway (`python -m gateway`) as a process, for tests and benchmarks."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from deploy.kafka_local import free_port

from .harness import ROOT, _to_toml


class Gateway:
    """`python -m gateway` in a process of its own, for the topics of a job's config file, on a free port.
    Ready once the service answered it (GATEWAY-READY)."""

    def __init__(self, job_config: Path, workdir: Path, client_id: str = "e2e-gateway", ready_timeout: float = 180):
        workdir.mkdir(parents=True, exist_ok=True)
        config = workdir / "gateway.toml"
        config.write_text(
            job_config.read_text() + "\n" + _to_toml({"gateway": {"base_port": free_port(), "client_id": client_id}})
        )
        self.log_file = workdir / "gateway.log"
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "gateway", "--config", str(config)],
            cwd=ROOT,
            env=dict(os.environ, PYTHONUNBUFFERED="1"),
            stdout=open(self.log_file, "ab"),
            stderr=subprocess.STDOUT,
        )
        try:
            self.bootstrap = self._wait_line("GATEWAY-LISTENING", 60).split("bootstrap.servers=")[1].strip()
            self._wait_line("GATEWAY-READY", ready_timeout)
        except BaseException:
            self.stop()
            raise

    def _wait_line(self, mark: str, timeout: float) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for line in self.log_file.read_text(errors="replace").splitlines():
                if mark in line:
                    return line
            if self.proc.poll() is not None:
                raise RuntimeError(f"the gateway exited with {self.proc.returncode}:\n{self.tail()}")
            time.sleep(0.3)
        raise TimeoutError(f"no {mark} from the gateway in {timeout}s:\n{self.tail()}")

    def tail(self, n: int = 40) -> str:
        return "\n".join(self.log_file.read_text(errors="replace").splitlines()[-n:])

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
