"""The dashboard end to end, in a real headless browser (Debian's Chromium).

The real broker and the test run's shared `observed` job: its projector (a real redis-server) and
its metrics endpoint, which serves the page. Other modules' groups and transactions are on the page
too: the checks look at this module's rows (all `dash-`). A classic group and a KIP-848 group
commit offsets below the log end (lag), one transaction commits and one is left open past the
(small) hanging threshold. Once the page's JSON shows all of it, Chromium renders the overview and
the classic group's page (`--dump-dom`, after the page's script ran) and takes screenshots, kept
under artifacts/dashboard-e2e/. Last (this module runs last on the observed job), with the job
stopped, an exporter on its status file and a Redis nobody listens on: the page says both.
"""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
import time
import urllib.request

import pytest
from kafka import KafkaProducer

from client import ConsumerGroupMember
from client.classic_group import ClassicGroupMember
from client.transactional_producer import TransactionalProducer
from deploy.kafka_local import free_port
from streaming.config import ROOT
from streaming.metrics_exporter import MetricsExporter
from streaming.status import status_path

from .harness import wait_topics_known

# Last on the observed job: its last test stops the job.
pytestmark = [pytest.mark.integration, pytest.mark.shared_job("observed", order=1)]

PARTITIONS = 4  # of TOPIC
TOPIC, TX_TOPIC = "dash-e2e-orders", "dash-e2e-tx"
CLASSIC, CONSUMER = "dash-classic", "dash-consumer"
TX_OPEN, TX_DONE = "dash-tx-hanging", "dash-tx-done"
RECORDS = 10  # per partition of TOPIC
CLASSIC_COMMITS = {(TOPIC, 0): 3, (TOPIC, 1): 5}  # lag 7 + 5
CONSUMER_COMMITS = {(TOPIC, 2): 4}  # lag 6
HANGING_MS = 5000
WAIT = 240
ARTIFACTS = ROOT / "artifacts" / "dashboard-e2e"


@pytest.fixture(scope="module")
def base_url(job) -> str:
    """The page's address, once the module's topics are known to the running job's coordinators."""
    assert job.cfg.dashboard["hanging_transaction_ms"] == HANGING_MS
    wait_topics_known(job, {TOPIC: PARTITIONS, TX_TOPIC: 1})
    return f"http://127.0.0.1:{job.cfg.metrics['port']}"


def get_json(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=15) as r:
        return json.loads(r.read())


def until(what: str, check, timeout: float = WAIT, every: float = 1.0):
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        try:
            last = check()
        except OSError as e:  # the endpoint is not up yet
            last = e
        if last and not isinstance(last, Exception):
            return last
        time.sleep(every)
    raise AssertionError(f"{what}: not reached in {timeout}s (last: {last!r})")


def chromium(tmp_path, *args: str) -> str:
    exe = shutil.which("chromium")
    assert exe, "Debian's chromium is not installed: run deploy/setup.sh"
    out = subprocess.run(
        [
            exe,
            "--headless=new",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            f"--user-data-dir={tmp_path / 'chromium-profile'}",
            "--virtual-time-budget=5000",
            *args,
        ],
        capture_output=True,
        timeout=180,
    )
    assert out.returncode == 0, out.stderr.decode()[-2000:]
    return out.stdout.decode()


def rendered(tmp_path, url: str) -> str:
    """The DOM after the page's script ran (without the script's own text)."""
    return chromium(tmp_path, "--dump-dom", url).split("<script>", 1)[0]


def screenshot(tmp_path, url: str, name: str) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / name
    path.unlink(missing_ok=True)
    chromium(tmp_path, f"--screenshot={path}", "--window-size=1280,1000", url)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", f"no screenshot at {path}"


def row(dom: str, attr: str, value: str) -> str:
    """The text of the table row with `attr`="value" (tags stripped, entities decoded), and its class."""
    m = re.search(rf'<tr class="([^"]*)" {attr}="{re.escape(html.escape(value))}">(.*?)</tr>', dom, re.S)
    assert m, f"no row {attr}={value!r} in the rendered page"
    cells = re.findall(r"<td[^>]*>(.*?)</td>", m.group(2), re.S)
    return m.group(1), [html.unescape(re.sub(r"<[^>]+>", "", c)).strip() for c in cells]


def consumer_described(client) -> dict:
    return client.request(
        "ConsumerGroupDescribe",
        1,
        {"groupIds": [CONSUMER], "includeAuthorizedOperations": False},
        key=CONSUMER,
        timeout=60,
    )["groups"][0]


def test_the_page_shows_groups_lag_rebalances_and_a_hanging_transaction(job, base_url, tmp_path):
    producer = KafkaProducer(bootstrap_servers=job.bootstrap, acks="all")
    for p in range(PARTITIONS):
        for i in range(RECORDS):
            producer.send(TOPIC, f"r{i}".encode(), partition=p)
    producer.flush()
    producer.close()
    client = job.client("dash-e2e-admin")
    made: list = [client]
    try:
        kw = dict(
            requests_topic=job.topics["requests"],
            responses_topic=job.topics["responses"],
            session_timeout_ms=30000,
            heartbeat_interval_ms=2000,
            rebalance_timeout_ms=60000,
        )
        classic = ClassicGroupMember(job.bootstrap, CLASSIC, [TOPIC], **kw)
        made.append(classic)
        classic.start().wait_stable(1, timeout=WAIT)
        assert set(classic.commit(CLASSIC_COMMITS).values()) == {"NONE"}

        member = ConsumerGroupMember(job.client("dash-e2e-member"), CONSUMER, [TOPIC])
        made.append(member)
        member.start()
        until("the consumer group is Stable", lambda: consumer_described(client)["groupState"] == "Stable")
        m = consumer_described(client)["members"][0]
        resp = client.request(
            "OffsetCommit",
            9,
            {
                "groupId": CONSUMER,
                "generationIdOrMemberEpoch": m["memberEpoch"],
                "memberId": m["memberId"],
                "groupInstanceId": None,
                "topics": [
                    {"name": t, "partitions": [{"partitionIndex": p, "committedOffset": o, "committedMetadata": None}]}
                    for (t, p), o in CONSUMER_COMMITS.items()
                ],
            },
            key=CONSUMER,
            timeout=60,
        )
        assert resp["topics"][0]["partitions"][0]["errorCode"] == 0, resp

        tx_kw = dict(requests_topic=job.topics["requests"], responses_topic=job.topics["responses"])
        done = TransactionalProducer(job.bootstrap, TX_DONE, **tx_kw)
        made.append(done)
        done.init_transactions()
        done.begin_transaction()
        done.send(TX_TOPIC, b"committed", partition=0)
        done.commit_transaction()
        hanging = TransactionalProducer(job.bootstrap, TX_OPEN, transaction_timeout_ms=900000, **tx_kw)
        made.append(hanging)
        hanging.init_transactions()
        hanging.begin_transaction()
        hanging.send(TX_TOPIC, b"open", partition=0)
        hanging.flush()

        # The page's data, once the read model caught up and the transaction is old enough.
        def ready():
            d = get_json(base_url + "/api/overview")
            groups = {g["groupId"]: g for g in d["groups"]}
            txns = {t["transactionalId"]: t for t in d["transactions"] or []}
            ok = (
                groups.get(CLASSIC, {}).get("totalLag") == 12
                and groups.get(CONSUMER, {}).get("totalLag") == 6
                and groups[CLASSIC]["state"] == "Stable"
                and groups[CONSUMER]["state"] == "Stable"
                and txns.get(TX_OPEN, {}).get("hanging")
                and TX_DONE not in txns
                and {e["groupId"] for e in d["rebalances"]["recent"]} >= {CLASSIC, CONSUMER}
                and d["history"]["batchDurationMs"]
                and d["stream"]["status"]["up"]
            )
            return d if ok else None

        data = until("the overview shows both groups, their lag, the rebalances and the hanging transaction", ready)
        assert data["problems"] == []

        dom = rendered(tmp_path, base_url + "/")
        _, cells = row(dom, "data-group", CLASSIC)
        assert cells[:5] == [CLASSIC, "classic", "Stable", "1", str(classic.generation.generation_id)], cells
        assert cells[-1] == "12", cells
        _, cells = row(dom, "data-group", CONSUMER)
        assert cells[:4] == [CONSUMER, "consumer", "Stable", "1"] and cells[-1] == "6", cells
        cls, cells = row(dom, "data-txn", TX_OPEN)
        assert "hanging" in cls.split() and cells[1] == "Ongoing" and cells[-1] == "HANGING", (cls, cells)
        assert f"{TX_TOPIC}-0" in cells
        assert f'data-txn="{TX_DONE}"' not in dom  # completed: not in flight
        rebalances = dom.split('<table class="rebalances">', 1)[1].split("</table>", 1)[0]
        assert CLASSIC in rebalances and CONSUMER in rebalances
        assert 'class="banner error"' not in dom
        assert "<polyline" in dom or "<circle" in dom  # the batch-duration chart has samples
        screenshot(tmp_path, base_url + "/", "overview.png")

        gdom = rendered(tmp_path, base_url + f"/group/{CLASSIC}")
        _, cells = row(gdom, "data-member", classic.member_id)
        assert f"{TOPIC}(0,1,2,3)" in cells, cells
        for (t, p), committed in CLASSIC_COMMITS.items():
            _, cells = row(gdom, "data-tp", f"{t}-{p}")
            assert cells == [t, str(p), str(committed), str(RECORDS), str(RECORDS - committed), classic.member_id]
        screenshot(tmp_path, base_url + f"/group/{CLASSIC}", "group-classic.png")
    finally:
        for x in made:
            try:
                (
                    x.abandon
                    if isinstance(x, ClassicGroupMember)
                    else x.kill
                    if isinstance(x, ConsumerGroupMember)
                    else x.close
                )()
            except Exception:  # noqa: BLE001 - best effort: the job is stopped with the module
                pass


def test_the_page_says_when_redis_and_the_stream_are_down(job, shared_jobs, tmp_path):
    """An exporter of our own (as an operator runs it on the driver's machine) with the job's status
    file, once the job has stopped, and a Redis nobody listens on."""
    # The one test that stops a shared job: this module runs last on the observed job (order=1 in
    # its marker). It stops the job the shared-job manager is running (no other) and tells the
    # manager it is gone, so that a module after this one that asks for a shared job gets a fresh
    # one (and the manager's teardown has nothing left to kill).
    assert shared_jobs.running is not None and shared_jobs.running[1] is job
    job.stop()
    shared_jobs.running = None
    dead = f"redis://127.0.0.1:{free_port()}/0"
    exporter = MetricsExporter(
        job.bootstrap,
        job.topics["metrics"],
        0,
        "127.0.0.1",
        status_file=status_path(job.cfg.checkpoint),
        dashboard={"events_topic": job.topics["events"], "redis_url": dead},
    ).start()
    try:
        dom = rendered(tmp_path, f"http://127.0.0.1:{exporter.port}/")
        banners = [html.unescape(b) for b in re.findall(r'<div class="banner error">(.*?)</div>', dom, re.S)]
        assert any(b.startswith(f"Redis at {dead} is not reachable: ") for b in banners), banners
        assert any(re.fullmatch(r"The stream is down: the job \(pid \d+\) is not running\.", b) for b in banners), (
            banners
        )
        assert "Groups are read from the Redis read model, which is not available." in dom
        assert "Traceback" not in dom
        screenshot(tmp_path, f"http://127.0.0.1:{exporter.port}/", "redis-and-stream-down.png")
    finally:
        exporter.stop()
