"""The embedded local setup: a broker on 127.0.0.1, the topics, then the stream in the foreground.

    python -m deploy.local [--config override.toml] [other run_stream.py options]

Called by deploy/run-local.sh after deploy/setup.sh. The broker is started only when the
configured bootstrap address is local; it keeps running after the stream stops
(deploy/stop-local.sh stops it).
"""
from __future__ import annotations

import argparse
import os
import sys
import time

from deploy.kafka_local import ROOT, LocalKafka
from streaming.config import StreamConfig


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(add_help=False)
    ap.add_argument("--config")
    known, _ = ap.parse_known_args(argv)
    t0 = time.monotonic()
    cfg = StreamConfig.load(known.config)
    host, _, port = cfg.bootstrap.split(",")[0].rpartition(":")
    if host in ("127.0.0.1", "localhost"):
        # A broker on another port (a bench, a second setup) keeps its data apart from the default one.
        data = ROOT / ".run" / ("kafka" if int(port) == 9092 else f"kafka-{port}")
        broker = LocalKafka(data, int(port)).launch()
        print(f"Kafka broker starting at {broker.bootstrap} (log: {broker.logfile})", flush=True)
    print(f"starting the coordinator stream ({time.monotonic() - t0:.1f} s); it creates its topics once the "
          f"broker answers and logs READY when it answers requests", flush=True)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    # The stream starts Spark while the broker starts (they take seconds each), then waits for the
    # broker and creates the topics (--ensure-topics).
    os.execv(sys.executable, [sys.executable, str(ROOT / "run_stream.py"), "--ensure-topics", *argv])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
