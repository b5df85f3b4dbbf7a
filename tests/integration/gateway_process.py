"""The gateway (`python -m gateway`) as a process, for tests and benchmarks.

For the gateway's test modules, the fixture `gateway`: a module imports it (pytest finds a fixture
imported into a test module: `from .gateway_process import gateway_fixture`, whose function name
keeps the tests' `gateway` arguments from shadowing an import) and gets one gateway for the job it
runs against. The gateway outlives its module when a later module of the test run takes it for the
same job (the shared job: one gateway start instead of one per module), and is stopped after its
last user.
`run_concurrently` runs a test's independent flows (e.g. one per client family) at once.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
import tomllib
from collections.abc import Callable
from pathlib import Path

import pytest

from deploy.kafka_local import free_port

from .harness import ROOT, StreamJob, _to_toml

READY_TIMEOUT = 180  # seconds: the gateway's first answer from the job, on a shared, loaded machine


class Gateway:
    """`python -m gateway` in a process of its own, for the topics of a job's config file, on a free port.
    Ready once the service answered it (GATEWAY-READY)."""

    def __init__(
        self,
        job_config: Path,
        workdir: Path,
        client_id: str = "e2e-gateway",
        ready_timeout: float = 180,
        settings: dict | None = None,
    ):
        workdir.mkdir(parents=True, exist_ok=True)
        config = workdir / "gateway.toml"
        gateway = {"base_port": free_port(), "client_id": client_id, **(settings or {})}
        text = job_config.read_text()
        if "[gateway]" in text:  # the job's own [gateway] settings (e.g. principal_key_file), and these
            data = tomllib.loads(text)
            data["gateway"] = {**data["gateway"], **gateway}
            config.write_text(_to_toml(data))
        else:
            config.write_text(text + "\n" + _to_toml({"gateway": gateway}))
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


class Gateways:
    """At most one gateway at a time, for the job of the modules that take it: kept while the next
    module runs against the same (running) job, started anew for another job. One instance for the
    test run (`_gateways`): pytest makes a fixture imported into two modules two fixtures of their
    own, so a fixture's own state would not outlive its module."""

    def __init__(self):
        self.running: tuple[StreamJob, Gateway] | None = None

    def get(self, job: StreamJob, workdir: Callable[[], Path]) -> Gateway:
        if self.running is not None:
            running_job, gateway = self.running
            if running_job is job and gateway.proc.poll() is None:
                return gateway
        self.stop()
        gateway = Gateway(job.config_file, workdir(), ready_timeout=READY_TIMEOUT)
        self.running = (job, gateway)
        return gateway

    def stop(self) -> None:
        if self.running is not None:
            self.running[1].stop()
            self.running = None


_gateways = Gateways()


@pytest.fixture(scope="module", name="gateway")
def gateway_fixture(job, tmp_path_factory, request):
    """The gateway for this module's `job`; stopped with the module unless a later test of this run
    takes a gateway too (an idle gateway still polls its reply topic: it costs CPU), and at the
    latest when the run ends."""
    request.config.add_cleanup(_gateways.stop)
    yield _gateways.get(job, lambda: tmp_path_factory.mktemp("gateway"))
    items = request.session.items
    last = max((i for i, item in enumerate(items) if item.module is request.module), default=len(items))
    if not any("gateway" in getattr(item, "fixturenames", ()) for item in items[last + 1 :]):
        _gateways.stop()


def run_concurrently(flows: dict[str, Callable[[], None]]) -> None:
    """Run each named flow in a thread of its own, all at once (so that their waits overlap: e.g. one
    member session timeout waited for several groups), and wait for every one of them. A flow's
    failure is raised with a note naming it; several failures as one exception group."""
    errors: dict[str, BaseException] = {}

    def run(name: str, flow: Callable[[], None]) -> None:
        try:
            flow()
        except BaseException as e:  # noqa: BLE001 - raised in the test's thread below
            errors[name] = e

    threads = [threading.Thread(target=run, args=item, name=f"flow-{item[0]}", daemon=True) for item in flows.items()]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    failed = [name for name in flows if name in errors]
    for name in failed:
        errors[name].add_note(f"(in the {name} flow)")
    if len(failed) == 1:
        raise errors[failed[0]]
    if failed:
        raise BaseExceptionGroup(f"the {', '.join(failed)} flows failed", [errors[name] for name in failed])
