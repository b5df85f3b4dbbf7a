"""The Java clients of tests/integration/java/GatewayClient.java (kafka-clients 4.4.0) as processes.

`compile_java_client(dir)` compiles it with javac against the jars deploy/setup.sh resolved into
.cache/jars/kafka (the broker's dependencies include kafka-clients and its compression and logging
jars) and returns the classpath. `JavaMember` runs one consumer group member and collects the lines
it prints (see the Java file for their format); `run_java` runs a mode to its end.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from pathlib import Path

from deploy.kafka_local import KAFKA_JARS

SOURCE = Path(__file__).resolve().parent / "java" / "GatewayClient.java"
JVM_OPTS = ["-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xshare:auto"]


def compile_java_client(out_dir: str | os.PathLike) -> str:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    jars = str(KAFKA_JARS / "*")
    if not any(KAFKA_JARS.glob("kafka-clients-*.jar")):
        raise RuntimeError(f"kafka-clients missing in {KAFKA_JARS}: run deploy/setup.sh")
    subprocess.run(["javac", "-nowarn", "-d", str(out), "-cp", jars, str(SOURCE)], check=True, capture_output=True)
    return f"{out}{os.pathsep}{jars}"


class JavaMember:
    """One Java process whose stdout lines are collected in the background (`lines`)."""

    def __init__(self, classpath: str, *args: str, log_dir: str | os.PathLike | None = None):
        self.args = args
        self.lines: list[str] = []
        self.times: list[float] = []  # time.monotonic() when each line was read
        self.started = time.monotonic()
        self.cond = threading.Condition()
        stderr = (
            open(Path(log_dir) / f"java-{'-'.join(args[:1] + args[-1:])}-{time.monotonic_ns()}.log", "wb")
            if log_dir
            else subprocess.DEVNULL
        )
        self.proc = subprocess.Popen(
            ["java", *JVM_OPTS, "-cp", classpath, "GatewayClient", *args],
            stdout=subprocess.PIPE,
            stderr=stderr,
            start_new_session=True,
        )
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        for raw in self.proc.stdout:
            line = raw.decode("utf-8", "replace").rstrip("\n")
            with self.cond:
                self.lines.append(line)
                self.times.append(time.monotonic())
                self.cond.notify_all()

    def wait_for(self, predicate, timeout: float, what: str = "a line"):
        """The first collected line matching `predicate` (waiting up to `timeout` s)."""
        deadline = time.monotonic() + timeout
        seen = 0
        with self.cond:
            while True:
                for line in self.lines[seen:]:
                    if predicate(line):
                        return line
                seen = len(self.lines)
                left = deadline - time.monotonic()
                if left <= 0 or (self.proc.poll() is not None and not self._thread.is_alive()):
                    raise TimeoutError(f"{self.args[0]}: no {what} within {timeout}s; last lines {self.lines[-5:]}")
                self.cond.wait(min(left, 0.5))

    def snapshot(self) -> list[str]:
        with self.cond:
            return list(self.lines)

    def kill(self) -> None:
        """SIGKILL the JVM: no LeaveGroup, no last commit."""
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=30)

    def stop(self, timeout: float = 20) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.kill()
        self._thread.join(timeout=5)


def run_java(classpath: str, *args: str, timeout: float = 180) -> list[str]:
    """Run a mode to its end; its stdout lines (raises with its stderr if it fails)."""
    p = subprocess.run(
        ["java", *JVM_OPTS, "-cp", classpath, "GatewayClient", *args], capture_output=True, timeout=timeout
    )
    if p.returncode != 0:
        raise RuntimeError(f"GatewayClient {' '.join(args)} exited {p.returncode}: {p.stderr.decode()[-3000:]}")
    return p.stdout.decode().splitlines()


def assignments(lines: list[str]) -> dict[str, list[int]]:
    """Each member's latest assignment."""
    out: dict[str, list[int]] = {}
    for line in lines:
        if line.startswith("ASSIGNED "):
            parts = line.split(" ")
            out[parts[1]] = [int(p) for p in parts[2].split(",")] if len(parts) > 2 and parts[2] else []
    return out


def consumed(lines: list[str]) -> list[tuple[str, int, int, str]]:
    """(member, partition, offset, value) of every RECORD line."""
    out = []
    for line in lines:
        if line.startswith("RECORD "):
            _, member, partition, offset, value = line.split(" ", 4)
            out.append((member, int(partition), int(offset), value))
    return out
