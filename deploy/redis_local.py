"""A real Redis server (Debian's redis-server) on 127.0.0.1 for the read model.

    python -m deploy.redis_local start [--dir .run/redis] [--port 6379]
    python -m deploy.redis_local stop  [--dir .run/redis]

deploy/setup.sh installs redis-server. The server runs daemonless in its own directory (pid file,
log, no persistence: the read model is rebuilt from the state log, docs/operations.md); `start`
returns once it answers PING.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from deploy.kafka_local import ROOT, free_port  # noqa: F401 - free_port re-exported for the fixtures
from deploy.pidfile import running_pid, server_cli, terminate


class LocalRedis:
    def __init__(self, workdir: str | os.PathLike, port: int = 6379):
        self.dir = Path(workdir).resolve()
        self.port = port

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    @property
    def pidfile(self) -> Path:
        return self.dir / "redis.pid"

    @property
    def logfile(self) -> Path:
        return self.dir / "redis.log"

    def pid(self) -> int | None:
        return running_pid(self.pidfile)

    def answers(self) -> bool:
        import redis

        try:
            return bool(redis.Redis.from_url(self.url, socket_timeout=1, socket_connect_timeout=1).ping())
        except redis.RedisError:
            return False

    def start(self, timeout: float = 30) -> LocalRedis:
        if self.pid() is not None and self.answers():
            return self
        binary = shutil.which("redis-server")
        if binary is None:
            raise RuntimeError("redis-server is not installed: run deploy/setup.sh (apt-get install redis-server)")
        self.dir.mkdir(parents=True, exist_ok=True)
        log = open(self.logfile, "ab")
        # No RDB/AOF: a restarted server starts empty and the projector rebuilds it from the state log.
        proc = subprocess.Popen(
            [
                binary,
                "--bind",
                "127.0.0.1",
                "--port",
                str(self.port),
                "--dir",
                str(self.dir),
                "--save",
                "",
                "--appendonly",
                "no",
                "--daemonize",
                "no",
                "--protected-mode",
                "yes",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self.pidfile.write_text(str(proc.pid))
        deadline = time.time() + timeout
        while time.time() < deadline:
            if proc.poll() is not None:
                raise RuntimeError(f"redis-server exited with {proc.returncode}; see {self.logfile}")
            if self.answers():
                return self
            time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"redis-server did not answer PING within {timeout}s; see {self.logfile}")

    def stop(self, timeout: float = 10) -> None:
        terminate(self.pidfile, timeout)


def main(argv: list[str] | None = None) -> int:
    return server_cli(
        argv,
        "Run a local Redis server for the read model",
        "Redis",
        ROOT / ".run" / "redis",
        6379,
        LocalRedis,
        lambda server: server.url,
    )


if __name__ == "__main__":
    sys.exit(main())
