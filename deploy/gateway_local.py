"""The local gateway (gateway/) as a background process, for deploy/run-local.sh and stop-local.sh.

    python -m deploy.gateway_local start|stop|status [--config override.toml]

It logs to .run/gateway/gateway.log and is known by .run/gateway/gateway.pid.
"""

from __future__ import annotations

import argparse
import subprocess
import sys

from deploy.kafka_local import ROOT
from deploy.pidfile import running_pid, terminate

DIR = ROOT / ".run" / "gateway"
PIDFILE = DIR / "gateway.pid"
LOGFILE = DIR / "gateway.log"


def start(config: str | None) -> int:
    pid = running_pid(PIDFILE)
    if pid is not None:
        return pid
    DIR.mkdir(parents=True, exist_ok=True)
    args = [sys.executable, "-m", "gateway"] + (["--config", config] if config else [])
    proc = subprocess.Popen(
        args,
        cwd=ROOT,
        stdout=open(LOGFILE, "ab"),
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
    )
    PIDFILE.write_text(str(proc.pid))
    return proc.pid


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("action", choices=["start", "stop", "status"])
    ap.add_argument("--config")
    args = ap.parse_args(argv)
    if args.action == "start":
        print(f"gateway started (pid {start(args.config)}, log {LOGFILE})")
    elif args.action == "stop":
        terminate(PIDFILE, timeout=10)
        print("gateway stopped")
    else:
        pid = running_pid(PIDFILE)
        print(f"running (pid {pid})" if pid else "not running")
        return 0 if pid else 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
