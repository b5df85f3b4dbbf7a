"""A Spark standalone cluster from the pyspark installation: master and workers.

    python -m deploy.standalone start-master [--host 0.0.0.0] [--port 7077]
    python -m deploy.standalone start-worker spark://MASTER:7077 [--cores 2] [--memory 2g]
    python -m deploy.standalone stop

Each machine of the cluster needs this repository with `deploy/setup.sh` run (the same Python
packages, at the same path, so that PYSPARK_PYTHON resolves on every worker). The job then runs
against the master with `[spark] master = "spark://MASTER:7077"` (deploy/run-cluster.sh), and its
checkpoint must be on storage every machine sees (HDFS, S3, NFS): the driver and executors both
write it. The connector jars travel with the job (spark.jars), so workers need no Maven.
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pyspark

ROOT = Path(__file__).resolve().parent.parent
RUN = ROOT / ".run" / "standalone"
SPARK_HOME = Path(pyspark.__file__).parent


def _spark_class(*args: str, name: str, run_dir: Path = RUN) -> int:
    run_dir.mkdir(parents=True, exist_ok=True)
    env = dict(
        os.environ,
        SPARK_HOME=str(SPARK_HOME),
        PYSPARK_PYTHON=sys.executable,
        SPARK_LOG_DIR=str(run_dir),
        SPARK_WORKER_DIR=str(run_dir / "work"),
    )
    log = open(run_dir / f"{name}.log", "ab")
    proc = subprocess.Popen(
        [str(SPARK_HOME / "bin" / "spark-class"), *args],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    (run_dir / f"{name}.pid").write_text(str(proc.pid))
    return proc.pid


def _wait_port(host: str, port: int, timeout: float = 60) -> None:
    deadline = time.time() + timeout
    while time.time() < deadline:
        with socket.socket() as s:
            s.settimeout(0.5)
            if s.connect_ex((host, port)) == 0:
                return
        time.sleep(0.3)
    raise RuntimeError(f"nothing listens on {host}:{port} after {timeout}s (see {RUN})")


def start_master(host: str = "127.0.0.1", port: int = 7077, webui_port: int = 8080, run_dir: Path = RUN) -> str:
    _spark_class(
        "org.apache.spark.deploy.master.Master",
        "--host",
        host,
        "--port",
        str(port),
        "--webui-port",
        str(webui_port),
        name="master",
        run_dir=run_dir,
    )
    _wait_port("127.0.0.1" if host == "0.0.0.0" else host, port)
    return f"spark://{host}:{port}"


def start_worker(
    master: str, cores: int = 2, memory: str = "2g", name: str = "worker", webui_port: int = 8081, run_dir: Path = RUN
) -> None:
    _spark_class(
        "org.apache.spark.deploy.worker.Worker",
        "--cores",
        str(cores),
        "--memory",
        memory,
        "--webui-port",
        str(webui_port),
        master,
        name=name,
        run_dir=run_dir,
    )


def stop(run_dir: Path = RUN) -> None:
    for pidfile in run_dir.glob("*.pid"):
        try:
            os.killpg(int(pidfile.read_text()), signal.SIGTERM)
        except (ProcessLookupError, ValueError):
            pass
        pidfile.unlink(missing_ok=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("start-master")
    m.add_argument("--host", default="127.0.0.1")
    m.add_argument("--port", type=int, default=7077)
    m.add_argument("--webui-port", type=int, default=8080)
    w = sub.add_parser("start-worker")
    w.add_argument("master")
    w.add_argument("--cores", type=int, default=2)
    w.add_argument("--memory", default="2g")
    w.add_argument("--webui-port", type=int, default=8081)
    sub.add_parser("stop")
    args = ap.parse_args(argv)
    if args.cmd == "start-master":
        print(start_master(args.host, args.port, args.webui_port))
    elif args.cmd == "start-worker":
        start_worker(args.master, args.cores, args.memory, webui_port=args.webui_port)
        print(f"worker started for {args.master} (log in {RUN})")
    else:
        stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
