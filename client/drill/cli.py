"""coordinator-drill: a recovery drill (`run`) or a consistency check (`verify`) against a deployment.

    coordinator-drill run    [--config job.toml] [--kill local|pid|hook|manual] [--kills 3] [--seed 7]
                             [--kill-hook CMD] [--restart-hook CMD] [--report-json PATH]
    coordinator-drill verify [--config job.toml] [--report-json PATH]

`run` drives a mixed load (simple offset commits, a classic group, a KIP-848 consumer group,
transactions) through the real topics, kills the job at seeded random moments, waits for it to
answer again (kill -> first answer is the recovery time), stops the load and runs every check of
`verify`, plus the load's own: every request answered, every acknowledged commit fetched with its
value, every committed transaction's records read exactly once by a read_committed reader.
Exit code 0: pass, 1: fail, 2: the drill could not run.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
import uuid
from pathlib import Path

from .compare import Report
from .kills import HookKiller, LocalJob, ManualKiller, StatusPidKiller
from .load import LoadSpec, MixedLoad, ensure_data_topics
from .verify import CheckpointStates, verify


def wait_until(condition, what, timeout: float, every: float = 0.1):
    """`condition()`'s first truthy value; TimeoutError(`what`, a string or a function describing
    the situation) if there is none within `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        result = condition()
        if result:
            return result
        if time.monotonic() > deadline:
            raise TimeoutError(what() if callable(what) else what)
        time.sleep(every)


def first_answer_after(load: MixedLoad, t_kill: float, timeout: float, alive=lambda: True) -> float | None:
    """Seconds from `t_kill` to the first answer to a request sent after it (None: none in time)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        answers = load.client.responses()
        if any(cid in answers for cid, at in list(load.simple.sent_at.items()) if at >= t_kill):
            return time.monotonic() - t_kill
        if not alive():
            return None
        time.sleep(0.05)
    return None


def load_checks(load: MixedLoad, report: Report, wait_s: float) -> None:
    """What the load's clients saw: answers, acknowledged commits, committed transactions."""
    from client import ReadCommittedConsumer

    report.add("load ran without client errors", load.errors())
    client = load.client
    missing: list[str] = []
    errors: list[str] = []
    last: dict[tuple[str, int], tuple[int, str | None]] = {}  # (group, partition) -> last acknowledged commit
    for cid, (api, _, body, group) in sorted(load.simple.sent.items()):
        try:
            r = client.wait(cid, timeout=wait_s if not missing else 5)["response"]
        except TimeoutError:
            missing.append(f"{api} correlation id {cid} ({group})")
            continue
        if api == "OffsetCommit":
            p = body["topics"][0]["partitions"][0]
            if r["topics"][0]["partitions"][0]["errorCode"] != 0:
                errors.append(f"OffsetCommit {group} correlation id {cid}: {r}")
            else:
                key = (group, p["partitionIndex"])
                last[key] = max(last.get(key, (-1, None)), (p["committedOffset"], p["committedMetadata"]))
        elif any(c["errorCode"] for c in r.get("coordinators", [])):
            errors.append(f"FindCoordinator correlation id {cid}: {r}")
    report.add(
        "every drill request answered without error",
        missing + errors,
        f"{len(load.simple.sent) - len(missing)} of {len(load.simple.sent)} answered",
    )

    def fetch(group: str, partitions: list[int]) -> dict[int, tuple]:
        r = client.request(
            "OffsetFetch",
            9,
            {
                "groups": [
                    {"groupId": group, "topics": [{"name": load.spec.input_topic, "partitionIndexes": partitions}]}
                ],
                "requireStable": True,
            },
            key=group,
            timeout=wait_s,
        )
        return {
            p["partitionIndex"]: (p["committedOffset"], p["metadata"])
            for p in r["groups"][0]["topics"][0]["partitions"]
        }

    wrong = []
    expected: dict[str, dict[int, tuple]] = {}
    for (group, partition), value in last.items():
        expected.setdefault(group, {})[partition] = value
    if load.commits.last:
        expected[load.classic_group] = {p: (o, "") for (_, p), o in load.commits.last.items()}
    if load.txns and load.txns.committed:
        expected[load.txns.group] = {1: (load.txns.committed[-1], "")}
    for group, want in sorted(expected.items()):
        got = fetch(group, sorted(want))
        for p, value in sorted(want.items()):
            if got.get(p) != value:
                wrong.append(
                    f"OffsetCommit {group} {load.spec.input_topic}-{p}: fetched {got.get(p)}, acknowledged {value}"
                )
    report.add(
        "every acknowledged offset commit fetchable with its value",
        wrong,
        f"{sum(map(len, expected.values()))} last acknowledged commits fetched",
    )

    if load.txns:
        values = sorted(load.txns.value(k, s) for k in load.txns.committed for s in ("a", "b"))
        prefix = f"{load.spec.run_id}-".encode()
        reader = ReadCommittedConsumer(load.bootstrap, [load.spec.txn_topic])
        read: list[bytes] = []
        try:
            deadline = time.monotonic() + wait_s
            while sorted(read) != values and time.monotonic() < deadline and len(read) <= len(values):
                read += [r.value for r in reader.poll(timeout_ms=200) if r.value.startswith(prefix)]
        finally:
            reader.close()
        problems = (
            []
            if sorted(read) == values
            else [
                f"read_committed saw {len(read)} records of this drill's transactions, expected {len(values)} "
                f"(missing {sorted(set(values) - set(read))[:5]}, unexpected or repeated "
                f"{sorted(v for v in set(read) if read.count(v) != values.count(v))[:5]})"
            ]
        )
        report.add(
            "committed transactions' records read exactly once (markers written)",
            problems,
            f"{len(load.txns.committed)} transactions committed",
        )


def run_drill(
    cfg,
    killer,
    spec: LoadSpec,
    kills: int,
    seed: int,
    *,
    max_delay_s: float = 3.0,
    states: CheckpointStates | None = None,
    out=sys.stdout,
) -> Report:
    """Drive the load, kill `kills` times at seeded random moments, then check everything."""
    rng = random.Random(seed)
    report = Report("drill", seed=seed)
    report.info["load"] = {k: v for k, v in vars(spec).items()}
    started = time.monotonic()
    ensure_data_topics(cfg.bootstrap, spec.topics)
    load = MixedLoad(cfg.bootstrap, cfg.topics, spec)
    alive = getattr(killer, "alive", lambda: True)
    try:
        load.start()
        mark: tuple = (0, 0, {}, tuple(-1 for _ in load.consumers))
        for n in range(1, kills + 1):
            wait_until(
                lambda mark=mark: load.progressed_since(mark) or load.errors(),
                lambda n=n: f"no progress of the load before kill {n}: {load.progress()}",
                spec.wait_s,
            )
            if load.errors():
                break
            delay = rng.uniform(0, max_delay_s)
            time.sleep(delay)  # the seeded random moment (where in a batch it lands is not assumed)
            t_kill = time.monotonic()
            how = killer.kill()
            print(f"kill {n}: {how} at +{t_kill - started:.1f}s", file=out, flush=True)
            killer.restart()
            recovery = first_answer_after(load, t_kill, spec.wait_s, alive)
            report.kills.append(
                {
                    "kill": n,
                    "atSeconds": round(t_kill - started, 2),
                    "delaySeconds": round(delay, 3),
                    "how": how,
                    "recoverySeconds": None if recovery is None else round(recovery, 3),
                }
            )
            print(
                f"kill {n}: first answer after {recovery if recovery is None else round(recovery, 2)}s",
                file=out,
                flush=True,
            )
            if recovery is None:
                break
            mark = load.progress()
        if not load.errors() and len(report.kills) == kills and report.kills[-1]["recoverySeconds"] is not None:
            wait_until(
                lambda: load.progressed_since(mark) or load.errors(),
                lambda: f"no progress of the load after the last restart: {load.progress()}",
                spec.wait_s,
            )
    finally:
        load.stop()
    report.add(
        f"{kills} kills, each recovered",
        [f"kill {k['kill']}: no answer within {spec.wait_s:.0f}s" for k in report.kills if k["recoverySeconds"] is None]
        + ([f"only {len(report.kills)} of {kills} kills done"] if len(report.kills) < kills else []),
    )
    try:
        load_checks(load, report, spec.wait_s)
    finally:
        load.close()
    verify(cfg, report, states=states, strict_transactions=True, timeout_s=spec.wait_s)
    report.info["elapsedSeconds"] = round(time.monotonic() - started, 1)
    return report


def _write(report: Report, path: str | None, out=sys.stdout) -> int:
    print(report.render(), file=out, flush=True)
    if path:
        Path(path).write_text(json.dumps(report.to_json(), indent=1, default=str) + "\n")
    return 0 if report.passed else 1


def main(argv: list[str] | None = None) -> int:
    from streaming.config import StreamConfig

    ap = argparse.ArgumentParser(
        prog="coordinator-drill", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = ap.add_subparsers(dest="command", required=True)
    for name in ("run", "verify"):
        p = sub.add_parser(name)
        p.add_argument("--config", help="the job's TOML override file (as run_stream.py --config)")
        p.add_argument("--report-json", help="also write the report as JSON here")
        p.add_argument("--wait", type=float, default=180, help="bound in seconds of every wait on the service")
    run = sub.choices["run"]
    run.add_argument(
        "--kill",
        choices=["local", "pid", "hook", "manual"],
        default="local",
        help="local: the drill runs the job and SIGKILLs its process group; pid: SIGKILL the pid "
        "of the job's status file (your supervisor restarts it); hook: run --kill-hook / "
        "--restart-hook; manual: tell you when to kill",
    )
    run.add_argument("--kill-hook", help="shell command that kills the job (--kill hook)")
    run.add_argument("--restart-hook", help="shell command that restarts it (--kill hook; default: none)")
    run.add_argument("--kill-group", action="store_true", help="--kill pid: signal the pid's process group")
    run.add_argument("--job-log", default=None, help="--kill local: the job's log (default: next to the checkpoint)")
    run.add_argument("--keep-job", action="store_true", help="--kill local: leave the job running afterwards")
    run.add_argument("--kills", type=int, default=3)
    run.add_argument("--seed", type=int, default=None, help="seed of the kill moments (default: random, printed)")
    run.add_argument(
        "--max-delay",
        type=float,
        default=3.0,
        help="a kill comes 0..this many seconds after every part of the load has progressed",
    )
    run.add_argument("--rate", type=float, default=10, help="simple requests per second")
    run.add_argument("--classic-members", type=int, default=2)
    run.add_argument("--consumer-members", type=int, default=2)
    run.add_argument("--no-transactions", action="store_true")
    run.add_argument(
        "--watch",
        action="store_true",
        help="drive no load of its own, only a FindCoordinator probe (to time recovery), and check "
        "the existing traffic",
    )
    run.add_argument("--prefix", default="drill", help="names of the drill's groups, topics, transactional id")
    args = ap.parse_args(argv)

    if args.command == "run" and args.kill == "hook" and not args.kill_hook:
        ap.error("--kill hook needs --kill-hook")
    cfg = StreamConfig.load(args.config)
    try:
        if args.command == "verify":
            return _write(verify(cfg, timeout_s=args.wait), args.report_json)
        seed = args.seed if args.seed is not None else random.randrange(2**31)
        spec = LoadSpec(
            rate_per_s=args.rate,
            classic_members=0 if args.watch else args.classic_members,
            consumer_members=0 if args.watch else args.consumer_members,
            transactions=not (args.watch or args.no_transactions),
            prefix=args.prefix,
            wait_s=args.wait,
            probe_only=args.watch,
            run_id=uuid.uuid4().hex[:8],
        )
        job = None
        ensure_data_topics(cfg.bootstrap, spec.topics)  # before a local job starts: its first metadata knows them
        if args.kill == "local":
            job = LocalJob(args.config, Path(args.job_log or str(cfg.checkpoint).rstrip("/") + ".drill.log"))
            job.wait_started(job.start(), args.wait)
            killer: LocalJob | StatusPidKiller | HookKiller | ManualKiller = job
        elif args.kill == "pid":
            killer = StatusPidKiller(cfg.checkpoint, group=args.kill_group)
        elif args.kill == "hook":
            killer = HookKiller(args.kill_hook, args.restart_hook)
        else:
            killer = ManualKiller(cfg.checkpoint, timeout=args.wait)
        try:
            report = run_drill(cfg, killer, spec, args.kills, seed, max_delay_s=args.max_delay)
        finally:
            if job is not None and not args.keep_job:
                job.stop()
        return _write(report, args.report_json)
    except (TimeoutError, RuntimeError, OSError) as e:
        print(f"coordinator-drill: could not complete: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
