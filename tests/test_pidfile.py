"""deploy/pidfile.terminate stops a server it started itself as soon as the server is gone: an exited
child stays a zombie (signal 0 still reaches it) until it is reaped, and a stop that did not reap
waited its whole timeout (10 s for every LocalRedis.stop)."""

from __future__ import annotations

import subprocess
import sys
import time

from deploy.pidfile import running_pid, terminate


def _child(tmp_path, code: str):
    proc = subprocess.Popen([sys.executable, "-c", code])
    pidfile = tmp_path / "server.pid"
    pidfile.write_text(str(proc.pid))
    return proc, pidfile


def test_a_child_that_exits_on_sigterm_is_reaped_at_once(tmp_path):
    proc, pidfile = _child(tmp_path, "import time; time.sleep(60)")
    assert running_pid(pidfile) == proc.pid
    t = time.monotonic()
    terminate(pidfile, timeout=10)
    assert time.monotonic() - t < 3
    assert not pidfile.exists()
    assert proc.poll() is not None  # reaped: no zombie left behind


def test_a_child_ignoring_sigterm_is_killed_after_the_timeout(tmp_path):
    code = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); print('up', flush=True); time.sleep(60)"
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE)
    assert proc.stdout.readline() == b"up\n"  # the handler is installed
    pidfile = tmp_path / "server.pid"
    pidfile.write_text(str(proc.pid))
    t = time.monotonic()
    terminate(pidfile, timeout=0.5)
    assert 0.5 <= time.monotonic() - t < 5
    assert proc.poll() is not None and running_pid(pidfile) is None


def test_an_exited_child_is_not_running(tmp_path):
    proc, pidfile = _child(tmp_path, "pass")
    deadline = time.monotonic() + 10
    while running_pid(pidfile) is not None:  # it exits; running_pid reaps it
        assert time.monotonic() < deadline
        time.sleep(0.05)
    terminate(pidfile, timeout=10)
    assert not pidfile.exists()
