"""The differential test: the same Kafka requests to a real Kafka 4.4.0 broker's own coordinators
and to the service, answers compared field by field.

    .venv/bin/python -m bench.differential                 # every scenario
    .venv/bin/python -m bench.differential -k streams      # the scenarios whose name contains "streams"
    .venv/bin/python -m bench.differential --list
    .venv/bin/python -m bench.differential -k consumer --answers   # matching steps' answers too

It starts, in a temporary directory: the reference broker (`reference_broker`: streams and share
groups enabled as Kafka documents, Kafka's defaults otherwise, the group timings the service's job
runs with), the project's own broker, a job and the gateway (tests/integration/harness.py,
gateway_process.py). Each scenario (bench/diff_scenarios.py) creates its topics on both brokers,
then runs its steps on both sides, step by step. Every step prints one line:

    match                     the normalised answers are equal
    documented deviation      they differ only where docs/protocol.md says why (the pointer printed)
    DIFFERENCE                anything else, with both answers

and the command exits 1 if any step differed without documentation. docs/protocol.md,
*The differential test*, says what is normalised.
"""

from __future__ import annotations

import argparse
import faulthandler
import json
import shutil
import signal
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from deploy.kafka_local import LocalKafka, free_port

from .diff_model import Outcome, Scenario, Side, Step
from .diff_wire import differences, generic_path, normalise

# A 4.4.0 broker with streams and share groups (docs/protocol.md, *The differential test*): both are
# production features of its default metadata version (4.4-IV2: streams.version 1, share.version 2),
# named here so the reference never depends on the storage tool's defaults. Kafka 4.4.0 has no
# unstable API or feature left to enable for them, and no `group.share.enable` (the feature decides).
REFERENCE_FEATURES = {"streams.version": 1, "share.version": 2}
REFERENCE_RELEASE = "4.4-IV2"
REFERENCE_CONFIG = {
    "share.coordinator.state.topic.replication.factor": "1",
    "share.coordinator.state.topic.min.isr": "1",
    # Assignments computed at once: the service follows Kafka 4.3+'s assignment interval (1 s by
    # default) but the job's config (tests/integration/conftest.py) sets it to 0, as here, so that
    # answers do not depend on when each side's requests arrive; offloading is a setting 4.4.0
    # reads nowhere. A new streams group's initial rebalance delay is Kafka's default (3 s) on both
    # sides (`Clusters` leaves the suite's 0 out). Streams warm-ups stay at the job's value (Kafka's
    # default, 2): 4.4.0's AssignmentRefiner hands out none, as the service.
    "group.consumer.assignment.interval.ms": "0",
    "group.consumer.assignor.offload.enable": "false",
    "group.share.assignment.interval.ms": "0",
    "group.share.assignor.offload.enable": "false",
    "group.streams.assignment.interval.ms": "0",
    "group.streams.assignor.offload.enable": "false",
}
# The suite's job turns a new streams group's initial rebalance delay off (its tests wait for
# assignments); the differential runs both sides with Kafka's default.
SUITE_ONLY_SETTINGS = ("group.streams.initial.rebalance.delay.ms",)
# The service's job config keys that are not broker configs (the rest are Kafka's names).
SERVICE_ONLY_PREFIXES = ("coordinator.", "share.admin.", "group.share.enable")


def reference_broker(workdir: Path, coordinator_config: dict) -> LocalKafka:
    """The reference broker, with the service job's group and transaction settings (Kafka's config
    names) so that both answer with the same intervals and time out alike."""
    timings = {
        k: str(v).lower() if isinstance(v, bool) else str(v)
        for k, v in coordinator_config.items()
        if not k.startswith(SERVICE_ONLY_PREFIXES) and not isinstance(v, (list, dict))
    }
    # As many __consumer_offsets partitions as the service has coordinator partitions: a group's
    # offsets partition (in DescribeTransactions' topics) is its coordinator partition on both.
    # The same for __share_group_state (fewer to create and load when a run first looks one up).
    count = str(coordinator_config.get("coordinator.partitions", 50))
    partitions = {"offsets.topic.num.partitions": count, "share.coordinator.state.topic.num.partitions": count}
    return LocalKafka(
        workdir,
        free_port(),
        free_port(),
        extra_config={**timings, **partitions, **REFERENCE_CONFIG},
        features=REFERENCE_FEATURES,
        release_version=REFERENCE_RELEASE,
        service_broker=False,
    )


def run_step(step: Step, side: Side, finished: Callable[[], bool] | None = None) -> dict:
    """The step's answer on one side (repeated `until` it holds); then, with `keep_alive`, that
    action until `finished` says both sides have their answer."""
    deadline = time.monotonic() + step.timeout_s
    while True:
        if step.before is not None:
            step.before(side)
        body = step.body(side) if callable(step.body) else step.body
        answer = side.target.call(step.api, step.version, body)
        if step.save is not None:
            step.save(answer, side)
        if step.until is None or step.until(answer, side) or time.monotonic() > deadline:
            break
        time.sleep(0.3)
    if step.keep_alive is not None and finished is not None:
        while not finished() and time.monotonic() < deadline:
            step.keep_alive(side)
            time.sleep(0.3)
    return step.view(answer) if step.view is not None else answer


def compare(step: Step, ref: dict, ref_side: Side, svc: dict, svc_side: Side) -> tuple[str, str]:
    a, b = normalise(ref, ref_side.names, step.api), normalise(svc, svc_side.names, step.api)
    diffs = differences(a, b)
    if not diffs:
        return "match", ""
    undocumented = [d for d in diffs if not _documented(step, d[0])]
    lines = [f"    {p}: broker {json.dumps(x)} | service {json.dumps(y)}" for p, x, y in diffs]
    if not undocumented:
        pointers = sorted({_documented(step, p) or "" for p, _, _ in diffs})
        return "deviation", "  ".join(pointers) + "\n" + "\n".join(lines)
    return "DIFFERENCE", f"\n    broker:  {json.dumps(a)}\n    service: {json.dumps(b)}\n" + "\n".join(lines)


def _documented(step: Step, path: str) -> str | None:
    generic = generic_path(path)
    for prefix, pointer in step.deviation.items():
        if generic == prefix or generic.startswith(prefix + ".") or generic.startswith(prefix + "["):
            return pointer
    return None


def run_scenario(scenario: Scenario, ref: Side, svc: Side, out=print, answers: bool = False) -> list[Outcome]:
    from client.drill.load import ensure_data_topics

    for side in (ref, svc):
        ensure_data_topics(side.bootstrap, scenario.topics)
        if side.await_topics is not None:
            side.await_topics(scenario.topics)
    outcomes = []
    for step in scenario.steps:
        for side in (ref, svc):
            side.names.topic_ids = {v: k for k, v in side.metadata.topic_ids().items()}
        # Both sides at once: a step that waits on one side (an expiry, a rebalance) must not let the
        # other side's members time out meanwhile.
        answered: set[str] = set()

        def on_side(side: Side, step: Step = step, answered: set[str] = answered) -> dict:
            def finished() -> bool:
                answered.add(side.name)
                return len(answered) == 2

            return run_step(step, side, finished)

        with ThreadPoolExecutor(2) as pool:
            replies = list(pool.map(on_side, (ref, svc)))
        kind, detail = compare(step, replies[0], ref, replies[1], svc)
        if answers and kind == "match":  # what both answered (normalised), to read what a step checked
            detail = json.dumps(normalise(replies[0], ref.names, step.api))
        outcomes.append(Outcome(scenario.name, step.name, step.api, kind, detail))
        path = svc.target.path(step.api)
        out(
            f"{kind:<10} {scenario.name} / {step.name} ({step.api} v{step.version}, service via {path}){detail and ' ' + detail}"
        )
    return outcomes


def summary(outcomes: list[Outcome]) -> str:
    counts = {k: sum(o.kind == k for o in outcomes) for k in ("match", "deviation", "DIFFERENCE")}
    apis = sorted({o.api for o in outcomes})
    return (
        f"{len(outcomes)} steps in {len({o.scenario for o in outcomes})} scenarios over {len(apis)} APIs: "
        f"{counts['match']} match, {counts['deviation']} documented deviations, {counts['DIFFERENCE']} differences"
    )


# ------------------------------------------------------------------ the clusters
class Clusters:
    """The reference broker and the service (its broker, a job, the gateway), started in `workdir`."""

    def __init__(self, workdir: Path, coordinator_config: dict | None = None):
        from tests.integration.conftest import PLAIN

        self.workdir = workdir
        from .diff_scenarios import SNAPSHOT_EVERY

        if coordinator_config is None:
            coordinator_config = {
                **{k: v for k, v in PLAIN["coordinator"].items() if k not in SUITE_ONLY_SETTINGS},
                # Both sides (the reference takes the job's Kafka-named settings): snapshots within a scenario.
                "share.coordinator.snapshot.update.records.per.snapshot": SNAPSHOT_EVERY,
            }
        self.config = {"stream": PLAIN["stream"], "coordinator": coordinator_config}
        self.reference = reference_broker(workdir / "reference", self.config["coordinator"])
        self.broker = LocalKafka(workdir / "kafka", free_port(), free_port())
        self.job: Any = None
        self.gateway: Any = None

    def start(self) -> Clusters:
        from tests.integration.gateway_process import Gateway
        from tests.integration.harness import StreamJob

        self.reference.launch()
        self.broker.start()
        self.reference.wait_ready()
        self.job = StreamJob(self.broker.bootstrap, self.workdir / "job", "differential", **self.config).start()
        self.gateway = Gateway(self.job.config_file, self.workdir / "gateway")
        return self

    def stop(self) -> None:
        if self.gateway is not None:
            self.gateway.stop()
        if self.job is not None:
            self.job.stop()
        self.broker.stop(timeout=3)
        self.reference.stop(timeout=3)


def wait_coordinators(target: Any, timeout_s: float = 120) -> None:
    """Until the broker's group and transaction coordinators are loaded (a new broker creates
    __consumer_offsets and __transaction_state on the first FindCoordinator and answers
    COORDINATOR_NOT_AVAILABLE meanwhile)."""
    deadline = time.monotonic() + timeout_s
    probes = [
        ("FindCoordinator", 4, {"keyType": 0, "coordinatorKeys": ["differential-probe"]}, "coordinators"),
        ("FindCoordinator", 4, {"keyType": 1, "coordinatorKeys": ["differential-probe"]}, "coordinators"),
        ("ListGroups", 5, {"statesFilter": [], "typesFilter": []}, None),
        ("ListTransactions", 1, {"stateFilters": [], "producerIdFilters": [], "durationFilter": -1}, None),
    ]
    for api, version, body, items in probes:
        while True:
            answer = target.call(api, version, body)
            codes = [i["errorCode"] for i in answer[items]] if items else [answer["errorCode"]]
            if not any(codes):
                break
            if time.monotonic() > deadline:
                raise TimeoutError(f"the reference broker's coordinators are not ready: {api} {answer}")
            time.sleep(0.5)


def sides(reference_bootstrap: str, gateway_bootstrap: str, job: Any, client_id: str) -> tuple[Side, Side]:
    """The two sides; the service's JSON client is one of `job`'s (its topics) and sets clientHost
    as the gateway does (docs/protocol.md, *Request record*)."""
    from client.request_client import local_client_host
    from tests.integration.harness import wait_topics_known

    from .diff_wire import KafkaWire, ReferenceTarget, ServiceTarget

    ref = Side(
        "broker",
        ReferenceTarget(reference_bootstrap, client_id),
        reference_bootstrap,
        KafkaWire(reference_bootstrap, client_id),
    )
    wait_coordinators(ref.target)
    json_client = job.client(client_id, client_host=local_client_host(job.bootstrap))
    svc = Side(
        "service",
        ServiceTarget(gateway_bootstrap, json_client),
        job.bootstrap,
        KafkaWire(job.bootstrap, client_id),
        await_topics=lambda topics: wait_topics_known(job, topics),
    )
    return ref, svc


def run(scenarios: list[Scenario], ref: Side, svc: Side, out=print, answers: bool = False) -> list[Outcome]:
    outcomes: list[Outcome] = []
    for scenario in scenarios:
        outcomes += run_scenario(scenario, ref, svc, out, answers)
    return outcomes


def main(argv: list[str] | None = None) -> int:
    from .diff_scenarios import SCENARIOS, scenario_names

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-k", dest="match", default="", help="run only the scenarios whose name contains this")
    parser.add_argument("--list", action="store_true", help="list the scenarios and exit")
    parser.add_argument("--answers", action="store_true", help="print the (normalised) answer of matching steps too")
    parser.add_argument("--workdir", type=Path, help="where the brokers, job and gateway live (default: a temp dir)")
    args = parser.parse_args(argv)
    faulthandler.register(signal.SIGUSR1)  # `kill -USR1` prints where a stuck run waits
    run_id = f"{int(time.time()) % 100000}"
    chosen = [s for s in SCENARIOS(run_id) if args.match in s.name]
    if args.list:
        print("\n".join(scenario_names(run_id)))
        return 0
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="differential-"))
    clusters = Clusters(workdir)
    started = time.monotonic()
    try:
        clusters.start()
        print(f"reference broker {clusters.reference.bootstrap}, gateway {clusters.gateway.bootstrap}", flush=True)
        ref, svc = sides(clusters.reference.bootstrap, clusters.gateway.bootstrap, clusters.job, "differential")
        try:
            outcomes = run(chosen, ref, svc, lambda line: print(line, flush=True), args.answers)
        finally:
            ref.close()
            svc.close()
    finally:
        clusters.stop()
    print(f"\n{summary(outcomes)} ({time.monotonic() - started:.0f} s)")
    failed = any(o.kind == "DIFFERENCE" for o in outcomes)
    if args.workdir is None and not failed:
        shutil.rmtree(workdir, ignore_errors=True)  # kept when a step differed: the brokers', job's and gateway's logs
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
