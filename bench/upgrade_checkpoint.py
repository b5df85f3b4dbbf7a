#!/usr/bin/env python3
"""Does a checkpoint written by an older checkout (another pyspark) restart under this one with its
state? A recovery drill whose one "kill" is the upgrade.

    .venv/bin/python bench/upgrade_checkpoint.py --from-checkout DIR [--rate 10] [--wait 600]

DIR is an older checkout of this project set up with its own `deploy/setup.sh` (its `.venv` holds
its pinned pyspark, e.g. `git archive <commit> | tar -x -C DIR && (cd DIR && bash deploy/setup.sh)`).
One broker of its own (free port, new data directory), then:

1. the job of DIR (`DIR/.venv/bin/python DIR/run_stream.py`) on a new checkpoint, under the drill's
   mixed load (simple commits, a classic group, a KIP-848 group, transactions; `coordinator-drill run`);
2. the upgrade: SIGTERM to that job (a clean stop, as an operator upgrading does), then the state of
   every coordinator partition at the last committed batch read twice, by DIR's
   `streaming.inspect_state` (the old Spark) and by this checkout's (the new one): they must be equal;
3. this checkout's job started on the same checkpoint (same `spark.sql.shuffle.partitions`, state
   schema and configuration), the load goes on, and every check of `coordinator-drill verify` runs:
   every request answered, every acknowledged commit fetched with its value, committed
   transactions read exactly once, the checkpointed state equal to an uninterrupted run's.

Exit code 0 when every check passed.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from client.drill.cli import run_drill  # noqa: E402
from client.drill.load import LoadSpec, ensure_data_topics  # noqa: E402
from deploy.kafka_local import LocalKafka, free_port  # noqa: E402
from streaming.config import SERVICE_TOPICS, StreamConfig  # noqa: E402
from streaming.inspect_state import committed_progress  # noqa: E402


def pyspark_version(checkout: Path) -> str:
    return subprocess.run(
        [str(checkout / ".venv" / "bin" / "python"), "-c", "import pyspark; print(pyspark.__version__)"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()


class UpgradingJob:
    """The drill's killer: `kill` stops the old checkout's job cleanly and compares the state both
    Sparks read from the checkpoint; `restart` starts this checkout's job on it."""

    def __init__(self, old: Path, config: Path, checkpoint: Path, log_dir: Path):
        self.old, self.config, self.checkpoint, self.log_dir = old, config, checkpoint, log_dir
        self.proc: subprocess.Popen | None = None
        self.state_diff: list[str] | None = None
        self.compared_batch: int | None = None
        self.partitions_compared = 0

    def start(self, checkout: Path, name: str) -> None:
        log = open(self.log_dir / f"job-{name}.log", "ab")  # noqa: SIM115 - the job's lifetime
        self.log = self.log_dir / f"job-{name}.log"
        self.proc = subprocess.Popen(
            [str(checkout / ".venv" / "bin" / "python"), str(checkout / "run_stream.py"), "--ensure-topics"]
            + ["--config", str(self.config)],
            cwd=checkout,
            env=dict(os.environ, PYTHONUNBUFFERED="1", PYSPARK_PYTHON=str(checkout / ".venv" / "bin" / "python")),
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        deadline = time.monotonic() + 300
        while b"COORDINATOR-READY" not in self.log.read_bytes():
            if self.proc.poll() is not None:
                raise RuntimeError(f"the {name} job exited with {self.proc.returncode}; see {self.log}")
            if time.monotonic() > deadline:
                raise TimeoutError(f"the {name} job was not READY in 300 s; see {self.log}")
            time.sleep(0.3)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=90)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=30)

    def states(self, checkout: Path, batch: int) -> dict:
        out = subprocess.run(
            [str(checkout / ".venv" / "bin" / "python"), "-m", "streaming.inspect_state"]
            + ["--checkpoint", str(self.checkpoint), "--batch", str(batch)],
            cwd=checkout,
            capture_output=True,
            text=True,
            env=dict(os.environ, PYSPARK_PYTHON=str(checkout / ".venv" / "bin" / "python")),
        )
        if out.returncode != 0:
            raise RuntimeError(f"inspect_state in {checkout} failed:\n{out.stderr[-3000:]}")
        return json.loads(out.stdout)

    def kill(self) -> str:
        self.stop()
        progress = committed_progress(str(self.checkpoint))
        assert progress is not None, "the old job committed no batch"
        self.compared_batch = progress[0]
        before, after = self.states(self.old, progress[0]), self.states(ROOT, progress[0])
        self.partitions_compared = len(before)
        self.state_diff = [
            f"coordinator partition {p}: {json.dumps(before.get(p))[:300]} != {json.dumps(after.get(p))[:300]}"
            for p in sorted(set(before) | set(after), key=int)
            if before.get(p) != after.get(p)
        ]
        return f"SIGTERM to the {pyspark_version(self.old)} job, state read by both Sparks at batch {progress[0]}"

    def restart(self) -> None:
        self.start(ROOT, "new")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--from-checkout", required=True, type=Path, help="the older checkout, set up")
    ap.add_argument("--rate", type=float, default=10, help="simple requests per second of the load")
    ap.add_argument(
        "--wait",
        type=float,
        default=600,
        help="bound in seconds of every wait on the service (the load waits through the upgrade: the stop, both state reads, the new start)",
    )
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    old = args.from_checkout.resolve()
    work = Path(tempfile.mkdtemp(prefix="upgrade-checkpoint-"))
    port = free_port()
    broker = LocalKafka(work / "kafka", port).start()
    prefix = "upgrade"
    config = work / "job.toml"
    topics = "\n".join(f'{n} = "{prefix}-{n.replace("_", "-")}"' for n in SERVICE_TOPICS)
    checkpoint = work / "checkpoint"
    config.write_text(
        f'[kafka]\nbootstrap_servers = "{broker.bootstrap}"\n[topics]\n{topics}\n'
        "replication_factor = 1\nmin_insync_replicas = 1\n"
        f'[stream]\ncheckpoint = "{checkpoint}"\n[redis]\nenabled = false\n'
        "[metrics]\nport = 0\n"
    )
    cfg = StreamConfig.load(config, environ={})
    job = UpgradingJob(old, config, checkpoint, work)
    print(f"from pyspark {pyspark_version(old)} ({old}) to {pyspark_version(ROOT)} ({ROOT}); work dir {work}")
    spec = LoadSpec(rate_per_s=args.rate, prefix="upgrade", wait_s=args.wait, run_id=os.urandom(4).hex())
    try:
        ensure_data_topics(cfg.bootstrap, spec.topics)
        job.start(old, "old")
        report = run_drill(cfg, job, spec, kills=1, seed=args.seed, max_delay_s=5.0)
        report.add(
            "state read by the old and the new Spark equal",
            job.state_diff or [],
            f"{job.partitions_compared} coordinator partitions at batch {job.compared_batch}",
        )
        print(report.render())
        return 0 if report.passed else 1
    finally:
        job.stop()
        broker.stop()


if __name__ == "__main__":
    sys.exit(main())
