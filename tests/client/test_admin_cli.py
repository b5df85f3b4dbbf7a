"""The admin CLI (client/admin_cli.py): argument checks, Kafka's table layouts, the reset plan, and
whole commands against the real coordinator core served in-process (tests/client/local_service.py) with an
in-memory stand-in for the broker's log offsets. The CLI against the real broker, job and Redis:
tests/integration/test_admin_cli_e2e.py."""

from __future__ import annotations

import contextlib
import io
import itertools
import time
from types import SimpleNamespace

import pytest

from client import admin_cli
from client import admin_format as fmt
from client.classic_group import ClassicGroupMember
from coordinator.errors import Errors

from .local_service import LocalService


# ================================================================== pure: tables
def test_offsets_table_is_kafkas_layout():
    group = {
        "groupId": "orders-app",
        "members": [{"memberId": "m-1", "clientId": "c1", "clientHost": "/10.0.0.1", "assignment": {"orders": [1, 0]}}],
    }
    rows = fmt.offset_rows(
        group, {("orders", 0): 3, ("orders", 2): 7}, {("orders", 0): 10, ("orders", 1): 4, ("orders", 2): 7}
    )
    assert rows == [
        ["orders-app", "orders", 0, 3, 10, 7, "m-1", "/10.0.0.1", "c1"],
        ["orders-app", "orders", 1, None, 4, None, "m-1", "/10.0.0.1", "c1"],
        ["orders-app", "orders", 2, 7, 7, 0, "-", "-", "-"],
    ]
    text = fmt.offsets_table(rows)
    # "\n%-15s %-15s %-10s %-15s %-15s %-15s %-15s %-15s %s" per line, "-" for what is unknown
    assert text.split("\n") == [
        "",
        "GROUP           TOPIC           PARTITION  CURRENT-OFFSET  LOG-END-OFFSET  LAG             CONSUMER-ID     HOST            CLIENT-ID",
        "orders-app      orders          0          3               10              7               m-1             /10.0.0.1       c1",
        "orders-app      orders          1          -               4               -               m-1             /10.0.0.1       c1",
        "orders-app      orders          2          7               7               0               -               -               -",
    ]


def test_offset_rows_put_members_with_more_partitions_first():
    group = {
        "groupId": "g",
        "members": [
            {"memberId": "small", "assignment": {"t": [2]}},
            {"memberId": "big", "assignment": {"t": [1, 0]}},
            {"memberId": "idle", "assignment": {}},
        ],
    }
    rows = fmt.offset_rows(group, {}, {})
    assert [(r[6], r[2]) for r in rows] == [("big", 0), ("big", 1), ("small", 2)]


def test_members_table_verbose_and_instance_ids():
    group = {
        "groupId": "g",
        "members": [
            {
                "memberId": "m-1",
                "groupInstanceId": None,
                "clientId": "c",
                "clientHost": "/h",
                "assignment": {"b": [1, 0], "a": [3]},
            },
            {"memberId": "m-2", "groupInstanceId": "inst-2", "clientId": "c", "clientHost": "/h", "assignment": {}},
        ],
    }
    lines = fmt.members_table(group, verbose=True).split("\n")
    assert lines[0] == ""
    assert lines[1].split() == [
        "GROUP",
        "CONSUMER-ID",
        "GROUP-INSTANCE-ID",
        "HOST",
        "CLIENT-ID",
        "#PARTITIONS",
        "ASSIGNMENT",
    ]
    assert lines[2].startswith("g               m-1                               /h ")
    assert lines[2].endswith("3               a(3), b(0,1)")
    assert lines[3].split() == ["g", "m-2", "inst-2", "/h", "c", "0", "-"]
    plain = fmt.members_table({"groupId": "g", "members": group["members"][:1]}, verbose=False).split("\n")
    assert plain[1] == "GROUP           CONSUMER-ID     HOST            CLIENT-ID       #PARTITIONS     "


def test_state_and_reset_and_list_tables():
    state = fmt.state_table(
        {"groupId": "g", "protocol": "range", "state": "Stable", "members": [{}, {}]}, "127.0.0.1:9092  (12)"
    )
    assert state.split("\n") == [
        "",
        "GROUP                     COORDINATOR (ID)          ASSIGNMENT-STRATEGY  STATE           #MEMBERS",
        "g                         127.0.0.1:9092  (12)      range                Stable          2",
    ]
    reset = fmt.reset_table({"g": {("t", 1): 5, ("t", 0): 4}})
    assert reset.split("\n") == [
        "",
        f"{'GROUP':<30} {'TOPIC':<30} {'PARTITION':<10} {'NEW-OFFSET':<15}",
        f"{'g':<30} {'t':<30} {'0':<10} {'4':<15}",
        f"{'g':<30} {'t':<30} {'1':<10} {'5':<15}",
    ]
    assert fmt.reset_table({}) == ""
    listed = fmt.list_table([{"groupId": "g", "type": "classic", "state": "Empty"}], True, True).split("\n")
    assert listed == [f"{'GROUP':<25} {'TYPE':<20} {'STATE':<20}", f"{'g':<25} {'classic':<20} {'Empty':<20}"]


def test_pretty_table_pads_and_tabs_like_tools_utils():
    assert fmt.pretty_table(["A", "Bee"], [["long-value", 1], [None, 22]]).split("\n") == [
        "A         \tBee\t",
        "long-value\t1  \t",
        "-         \t22 \t",
    ]


def test_describe_txn_row_and_hanging_rows():
    txn = {
        "transactionalId": "tx",
        "coordinatorPartition": 3,
        "producerId": 7,
        "producerEpoch": 2,
        "state": "Ongoing",
        "timeoutMs": 600000,
        "startTimestamp": 1_000,
        "partitions": [{"topic": "out", "partitions": [1, 0]}],
    }
    assert fmt.describe_txn_row(txn, 61_000) == [3, "tx", 7, 2, "Ongoing", 600000, 1000, 60000, "out-1,out-0"]
    empty = dict(txn, state="Empty", startTimestamp=-1, partitions=[])
    assert fmt.describe_txn_row(empty, 5)[6:] == ["None", "None", ""]
    rows = fmt.hanging_rows([txn, empty, dict(txn, transactionalId="young", startTimestamp=100_000)], 30_000, 121_000)
    assert rows == [["out", 0, 7, 2, -1, -1, 1000, 2, "tx"], ["out", 1, 7, 2, -1, -1, 1000, 2, "tx"]]
    assert fmt.hanging_rows([dict(txn, partitions=[])], 0, 2_000) == [[None, None, 7, 2, -1, -1, 1000, 0, "tx"]]


# ================================================================== pure: reset plan
EARLIEST = {("t", 0): 2, ("t", 1): 0}
LATEST = {("t", 0): 10, ("t", 1): 5}
TPS = [("t", 0), ("t", 1)]


@pytest.mark.parametrize(
    "spec, committed, expected",
    [
        (fmt.ResetSpec("to-earliest"), {}, {("t", 0): 2, ("t", 1): 0}),
        (fmt.ResetSpec("to-latest"), {}, {("t", 0): 10, ("t", 1): 5}),
        (fmt.ResetSpec("to-current"), {("t", 0): 4}, {("t", 0): 4, ("t", 1): 5}),
        (fmt.ResetSpec("to-offset", 3), {}, {("t", 0): 3, ("t", 1): 3}),
        (fmt.ResetSpec("shift-by", -2), {("t", 0): 6, ("t", 1): 1}, {("t", 0): 4, ("t", 1): 0}),
    ],
)
def test_plan_reset(spec, committed, expected):
    assert fmt.plan_reset(spec, TPS, committed, EARLIEST, LATEST)[0] == expected


def test_plan_reset_clamps_like_check_offsets_range():
    plan, warnings = fmt.plan_reset(fmt.ResetSpec("to-offset", 7), TPS, {}, EARLIEST, LATEST)
    assert plan == {("t", 0): 7, ("t", 1): 5}
    assert warnings == ["New offset (7) is higher than latest offset for topic partition t-1. Value will be set to 5"]
    plan, warnings = fmt.plan_reset(fmt.ResetSpec("shift-by", -5), [("t", 0)], {("t", 0): 4}, EARLIEST, LATEST)
    assert plan == {("t", 0): 2} and "lower than earliest" in warnings[0]


def test_plan_reset_errors_and_datetime_fallback():
    with pytest.raises(fmt.ResetError, match="Cannot shift offset for partition t-1 since there is no current"):
        fmt.plan_reset(fmt.ResetSpec("shift-by", 1), TPS, {("t", 0): 1}, EARLIEST, LATEST)
    with pytest.raises(fmt.ResetError, match="Error getting offsets of topic partition: u-0"):
        fmt.plan_reset(fmt.ResetSpec("to-latest"), [("u", 0)], {}, EARLIEST, LATEST)
    plan, warnings = fmt.plan_reset(
        fmt.ResetSpec("to-datetime", 0), TPS, {}, EARLIEST, LATEST, {("t", 0): 6, ("t", 1): None}
    )
    assert plan == {("t", 0): 6, ("t", 1): 5}
    assert warnings == ["Warn: Partition 1 from topic t is empty. Falling back to latest known offset."]


def test_parse_topic_partitions_and_datetime():
    assert fmt.parse_topic_partitions("orders") == ("orders", None)
    assert fmt.parse_topic_partitions("orders:0,2") == ("orders", [0, 2])
    with pytest.raises(fmt.ResetError, match="Invalid partition 'x' specified in topic arg 'orders:0,x'"):
        fmt.parse_topic_partitions("orders:0,x")
    with pytest.raises(fmt.ResetError, match="expected topic name and partitions"):
        fmt.parse_topic_partitions("a:b:c")
    assert fmt.parse_datetime("1970-01-01T00:00:05.000Z") == 5000
    assert fmt.parse_datetime("1970-01-01T01:00:05.250+01:00") == 5250
    assert fmt.parse_datetime("1970-01-01T01:00:05.250+0100") == 5250
    with pytest.raises(fmt.ResetError):
        fmt.parse_datetime("yesterday")


# ================================================================== arguments
@pytest.mark.parametrize(
    "args, message",
    [
        (["--describe"], "Option [describe] takes one of these options: --all-groups, --group"),
        (["--describe", "--group", "g", "--members", "--offsets"], "takes at most one of these options"),
        (["--reset-offsets", "--group", "g", "--topic", "t"], "requires one of the following scenarios"),
        (
            ["--reset-offsets", "--group", "g", "--topic", "t", "--to-latest", "--to-earliest"],
            "requires one of the following scenarios",
        ),
        (["--reset-offsets", "--group", "g", "--to-latest"], "One of the reset scopes should be defined"),
        (
            ["--reset-offsets", "--group", "g", "--all-topics", "--to-latest", "--execute", "--dry-run"],
            "only accepts one of [execute] and [dry-run]",
        ),
        (["--delete"], "Option [delete] takes one of these options"),
        (["--delete-offsets", "--group", "g"], "Option [delete-offsets] takes the following options"),
        (["--list", "--group", "g"], "Option [group] can be used only with"),
        (["--describe", "--group", "g", "--to-latest"], "need [reset-offsets]"),
        (["--list", "--state", "Sleepy"], "Invalid state list 'Sleepy'. Valid states are: PreparingRebalance"),
    ],
)
def test_bad_arguments_exit_2_with_kafkas_message(args, message):
    err = io.StringIO()
    argv = ["groups", "--bootstrap-server", "127.0.0.1:1", "--no-redis"] + args
    rc = admin_cli.main(argv, io.StringIO(), err, make_context=_offline_context)
    assert rc == 2 and message in err.getvalue()


def test_service_not_answering_is_a_message_not_a_traceback():
    from deploy.kafka_local import free_port

    err = io.StringIO()
    rc = admin_cli.main(
        ["groups", "--bootstrap-server", f"127.0.0.1:{free_port()}", "--no-redis", "--list", "--timeout", "1500"],
        io.StringIO(),
        err,
    )
    assert rc == 1
    assert err.getvalue().startswith("Error: No Kafka broker answers at 127.0.0.1:")
    assert "Traceback" not in err.getvalue()


def _offline_context(ns, out, err):
    class Offline(admin_cli.Context):
        @property
        def client(self):
            raise AssertionError("bad arguments must be refused before any request")

    return Offline(ns, out, err)


# ================================================================== commands on the real core
class FakeLog:
    """The broker's log offsets (the only part of Kafka these tests stand in for)."""

    def __init__(self, partitions: dict[str, int], end: int, times: dict[int, int] | None = None):
        self.partitions, self.end, self.times = partitions, end, times or {}

    def partitions_for_topic(self, topic):
        return set(range(self.partitions[topic])) if topic in self.partitions else None

    def beginning_offsets(self, tps):
        return {tp: 0 for tp in tps}

    def end_offsets(self, tps):
        return {tp: self.end for tp in tps}

    def offsets_for_times(self, query):
        return {tp: (SimpleNamespace(offset=self.times[ts]) if ts in self.times else None) for tp, ts in query.items()}

    def close(self):
        pass


TOPICS = {"orders": 2}
_ids = itertools.count()


@pytest.fixture
def service():
    s = LocalService(
        **{"group.min.session.timeout.ms": 100, "group.initial.rebalance.delay.ms": 50, "coordinator.partitions": 5}
    )
    yield s
    s.close()


@pytest.fixture
def cli(service):
    def run(*args: str, log: FakeLog | None = None) -> tuple[int, str, str]:
        def context(ns, out, err):
            class Local(admin_cli.Context):
                pass

            ctx = Local(ns, out, err)
            ctx.partitions = 5
            ctx._client = service.client(f"admin-{next(_ids)}")
            ctx._consumer = log or FakeLog(TOPICS, 10)
            return ctx

        out, err = io.StringIO(), io.StringIO()
        tool = args[0]
        rc = admin_cli.main(
            [tool, "--bootstrap-server", "127.0.0.1:9092", "--no-redis", "--timeout", "5000", *args[1:]],
            out,
            err,
            make_context=context,
        )
        return rc, out.getvalue(), err.getvalue()

    return run


def member(service, group_id: str) -> ClassicGroupMember:
    m = ClassicGroupMember(
        None,
        group_id,
        list(TOPICS),
        client=service.client(f"m-{next(_ids)}"),
        partitions_for=TOPICS.get,
        session_timeout_ms=600,
        heartbeat_interval_ms=100,
        rebalance_timeout_ms=3000,
    )
    return m.start().wait_stable(timeout=15)


def committed(service, group_id: str) -> dict:
    resp = service.client(f"fetch-{next(_ids)}").request(
        "OffsetFetch", 9, {"groups": [{"groupId": group_id, "topics": None}], "requireStable": False}, key=group_id
    )
    return {
        (t["name"], p["partitionIndex"]): p["committedOffset"]
        for t in resp["groups"][0]["topics"]
        for p in t["partitions"]
    }


def test_groups_describe_reset_delete_on_the_core(service, cli):
    m = member(service, "app")
    assert m.commit({("orders", 0): 4, ("orders", 1): 6}) == {("orders", 0): "NONE", ("orders", 1): "NONE"}

    rc, out, _ = cli("groups", "--list")
    assert (rc, out) == (0, "app\n")
    rc, out, _ = cli("groups", "--describe", "--group", "app")
    lines = out.strip("\n").split("\n")
    assert rc == 0 and lines[0].split()[:6] == [
        "GROUP",
        "TOPIC",
        "PARTITION",
        "CURRENT-OFFSET",
        "LOG-END-OFFSET",
        "LAG",
    ]
    assert [line.split()[:7] for line in lines[1:]] == [
        ["app", "orders", "0", "4", "10", "6", m.member_id],
        ["app", "orders", "1", "6", "10", "4", m.member_id],
    ]
    rc, out, _ = cli("groups", "--describe", "--group", "app", "--state")
    assert rc == 0 and out.strip("\n").split("\n")[1].split() == [
        "app",
        "127.0.0.1:9092",
        "(1)",
        "range",
        "Stable",
        "1",
    ]

    # the tool refuses a reset of a group with members, and so does the coordinator
    rc, out, err = cli("groups", "--reset-offsets", "--group", "app", "--all-topics", "--to-earliest", "--execute")
    assert (
        rc == 1
        and "Assignments can only be reset if the group 'app' is inactive, but the current state is Stable." in err
    )
    admin = service.client("raw-admin")
    resp = admin.request(
        "OffsetCommit",
        9,
        {
            "groupId": "app",
            "generationIdOrMemberEpoch": -1,
            "memberId": "",
            "topics": [{"name": "orders", "partitions": [{"partitionIndex": 0, "committedOffset": 0}]}],
        },
        key="app",
    )
    assert resp["topics"][0]["partitions"][0]["errorCode"] == Errors.UNKNOWN_MEMBER_ID.code

    m.close()
    rc, out, err = cli("groups", "--reset-offsets", "--group", "app", "--topic", "orders:1", "--shift-by", "-2")
    assert rc == 0 and err.startswith("WARN: No action will be performed as the --execute option is missing.")
    assert out.split("\n")[2].split() == ["app", "orders", "1", "4"]
    assert committed(service, "app") == {("orders", 0): 4, ("orders", 1): 6}  # a dry run changes nothing
    rc, out, err = cli(
        "groups", "--reset-offsets", "--group", "app", "--topic", "orders:1", "--shift-by", "-2", "--execute"
    )
    assert rc == 0 and err == ""
    assert committed(service, "app") == {("orders", 0): 4, ("orders", 1): 4}

    rc, out, err = cli("groups", "--delete-offsets", "--group", "app", "--topic", "orders:0")
    assert rc == 0 and out.startswith("Request succeed for deleting offsets with topic orders:0 group app")
    assert out.strip().split("\n")[-1].split() == ["orders", "0", "Successful"]
    assert committed(service, "app") == {("orders", 1): 4}
    rc, out, err = cli("groups", "--delete", "--group", "app", "--group", "nope")
    assert rc == 1
    assert "* Group 'nope' could not be deleted due to: GROUP_ID_NOT_FOUND" in out
    assert "These consumer groups were deleted successfully: 'app'" in out
    rc, out, err = cli("groups", "--describe", "--group", "app")
    assert rc == 1 and "Error: Consumer group 'app' does not exist." in err


def test_reset_to_datetime_of_an_unknown_group_creates_its_offsets(service, cli):
    log = FakeLog(TOPICS, 10, times={5000: 3})
    rc, out, err = cli(
        "groups",
        "--reset-offsets",
        "--group",
        "fresh",
        "--topic",
        "orders",
        "--to-datetime",
        "1970-01-01T00:00:05.000Z",
        "--execute",
        log=log,
    )
    assert rc == 0
    assert [line.split() for line in out.strip("\n").split("\n")[1:]] == [
        ["fresh", "orders", "0", "3"],
        ["fresh", "orders", "1", "3"],
    ]
    rc, out, _ = cli("groups", "--describe", "--group", "fresh", "--offsets", log=log)
    assert rc == 0 and [line.split()[3:6] for line in out.strip("\n").split("\n")[1:]] == [["3", "10", "7"]] * 2


def test_transactions_on_the_core(service, cli):
    c = service.client("txn-producer")
    r = c.request(
        "InitProducerId",
        5,
        {"transactionalId": "tx", "transactionTimeoutMs": 600000, "producerId": -1, "producerEpoch": -1},
        key="tx",
    )
    pid, epoch = r["producerId"], r["producerEpoch"]
    add = c.request(
        "AddPartitionsToTxn",
        3,
        {
            "v3AndBelowTransactionalId": "tx",
            "v3AndBelowProducerId": pid,
            "v3AndBelowProducerEpoch": epoch,
            "v3AndBelowTopics": [{"name": "orders", "partitions": [1]}],
        },
        key="tx",
    )
    assert add["resultsByTopicV3AndBelow"][0]["resultsByPartition"][0]["partitionErrorCode"] == 0
    time.sleep(0.01)  # the transaction's start time is in the past (its duration > 0 below)

    rc, out, _ = cli("transactions", "list")
    assert rc == 0 and out.split("\n")[1].split() == ["tx", "1", str(pid), "Ongoing"]
    rc, out, _ = cli("transactions", "describe", "--transactional-id", "tx")
    row = [c.strip() for c in out.split("\n")[1].split("\t")]
    assert rc == 0 and row[:6] == ["1", "tx", str(pid), str(epoch), "Ongoing", "600000"] and row[8] == "orders-1"
    rc, out, _ = cli("transactions", "find-hanging", "--max-transaction-timeout", "0")
    assert rc == 0 and out.split("\n")[1].split()[:4] == ["orders", "1", str(pid), str(epoch)]
    rc, out, _ = cli("transactions", "find-hanging")
    assert rc == 0 and out.strip("\n").split("\n") == [out.split("\n")[0]]  # 15 minutes: none

    rc, out, err = cli("transactions", "abort", "--transactional-id", "tx")
    assert rc == 0, err
    assert "aborted; the producer is fenced" in out and "state Empty" in out
    rc, out, _ = cli("transactions", "describe", "--transactional-id", "tx")
    assert out.split("\n")[1].split("\t")[4].strip() == "Empty"
    rc, _, err = cli("transactions", "abort", "--transactional-id", "tx")
    assert rc == 1 and "has no open transaction to abort (state Empty)" in err
    rc, _, err = cli("transactions", "describe", "--transactional-id", "nope")
    assert (
        rc == 1 and "Failed to describe transaction state of transactional-id `nope`: TRANSACTIONAL_ID_NOT_FOUND" in err
    )


# ================================================================== names with control characters
FORGED = "victim\nforged-group-1\nforged-group-2"


def test_visible_escapes_control_characters_and_leaves_names_alone():
    assert fmt.visible("orders.v2-ü") == "orders.v2-ü"
    assert fmt.visible("a\nb\rc\td") == "a\\nb\\rc\\td"
    assert fmt.visible("\x1b[31mred\x1b[0m\x00\x7f\x85") == "\\x1b[31mred\\x1b[0m\\x00\\x7f\\x85"
    assert fmt.visible("x\u2028y\u202ez") == "x\\u2028y\\u202ez"
    # Whole output keeps its own layout (newlines, tabs) and escapes the rest.
    assert fmt.printable("row 1\n\trow 2 \x1b]0;title\x07") == "row 1\n\trow 2 \\x1b]0;title\\x07"


def test_no_table_gets_a_row_from_a_name():
    member = {
        "memberId": "m\n1",
        "clientId": "c\nX",
        "clientHost": "/h\n2",
        "groupInstanceId": "i\n3",
        "assignment": {"t\nZ": [0]},
    }
    group = {"groupId": FORGED, "state": "Stable", "protocol": "range\nY", "members": [member]}
    tables = [
        fmt.list_table([{"groupId": FORGED, "type": "classic", "state": "Stable"}], True, True),
        fmt.offsets_table(fmt.offset_rows(group, {("t\nZ", 0): 1}, {("t\nZ", 0): 5})),
        fmt.members_table(group, verbose=True),
        fmt.state_table(group, "host:1  (0)"),
        fmt.reset_table({FORGED: {("t\nZ", 0): 3}}),
        fmt.pretty_table(fmt.LIST_TXN_HEADERS, [[FORGED, 0, 1, "Ongoing"]]),
        fmt.pretty_table(
            fmt.DESCRIBE_TXN_HEADERS,
            [
                fmt.describe_txn_row(
                    {
                        "coordinatorPartition": 0,
                        "transactionalId": FORGED,
                        "producerId": 1,
                        "producerEpoch": 0,
                        "state": "Ongoing",
                        "timeoutMs": 60000,
                        "startTimestamp": 1,
                        "partitions": [{"topic": "t\nZ", "partitions": [0]}],
                    },
                    2,
                )
            ],
        ),
    ]
    for table in tables:
        rows = [r for r in table.split("\n") if r]
        assert len(rows) == 2, table  # the header and the one row
        assert "forged-group-1" not in [r.split()[0] for r in rows if r.split()]
        assert not any(r.startswith(("forged", "Z", "X", "Y", "1", "2", "3")) for r in rows), table
    assert "victim\\nforged-group-1\\nforged-group-2" in tables[0]


def test_a_group_id_with_a_newline_forges_no_row_in_groups_list(service, cli):
    for gid in (FORGED, "plain"):
        service.client(f"c-{next(_ids)}").request(
            "OffsetCommit",
            9,
            {
                "groupId": gid,
                "generationIdOrMemberEpoch": -1,
                "memberId": "",
                "groupInstanceId": None,
                "topics": [{"name": "orders", "partitions": [{"partitionIndex": 0, "committedOffset": 1}]}],
            },
            key=gid,
        )
    rc, out, _ = cli("groups", "--list")
    assert rc == 0 and out.splitlines() == ["plain", "victim\\nforged-group-1\\nforged-group-2"]
    rc, out, _ = cli("groups", "--list", "--state")
    assert [line.split()[0] for line in out.splitlines()[1:]] == ["plain", "victim\\nforged-group-1\\nforged-group-2"]
    rc, out, err = cli("groups", "--describe", "--group", FORGED)
    assert rc == 0 and "forged-group-1\n" not in out + err and "victim\\nforged-group-1" in out
    rc, out, err = cli("groups", "--describe", "--group", "no\x1b[2Jsuch")
    assert rc == 1 and "\x1b" not in err and "no\\x1b[2Jsuch" in err


def test_help_says_names_are_escaped():
    out = io.StringIO()
    with pytest.raises(SystemExit), contextlib.redirect_stdout(out):
        admin_cli.main(["groups", "--help"])
    assert "visible escapes" in out.getvalue()
