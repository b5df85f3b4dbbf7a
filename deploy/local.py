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

from deploy.kafka_local import ROOT, LocalKafka
from deploy.topics import ensure_topics
from streaming.config import StreamConfig


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(add_help=False)
    ap.add_argument("--config")
    known, _ = ap.parse_known_args(argv)
    cfg = StreamConfig.load(known.config)
    host, _, port = cfg.bootstrap.split(",")[0].rpartition(":")
    if host in ("127.0.0.1", "localhost"):
        # A broker on another port (a bench, a second setup) keeps its data apart from the default one.
        data = ROOT / ".run" / ("kafka" if int(port) == 9092 else f"kafka-{port}")
        broker = LocalKafka(data, int(port)).start()
        print(f"Kafka broker at {broker.bootstrap} (log: {broker.logfile})", flush=True)
    ensure_topics(cfg)
    print("topics ready; starting the coordinator stream", flush=True)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.execv(sys.executable, [sys.executable, str(ROOT / "run_stream.py"), *argv])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
