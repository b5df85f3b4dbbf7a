"""coordinator-admin share-groups / streams-groups (client/admin_share_streams.py): Kafka 4.1.1's
kafka-share-groups.sh and kafka-streams-groups.sh columns and messages, whole commands against the
real coordinator core served in-process (tests/client/local_service.py), the broker's log offsets
stood in by FakeLog (as tests/client/test_admin_cli.py)."""

from __future__ import annotations

import io
import itertools
import json
import time

import pytest

from client import admin_cli
from client import admin_share_streams as ss
from coordinator.metadata import BROADCAST_KEY
from tests.consumer.consumer_group_helpers import topic_id
from tests.streams.helpers import subtopology, topology

from .local_service import LocalService
from .test_admin_cli import FakeLog

PARTITIONS = 5
TOPICS = {"orders": 2, "clicks": 1}
_ids = itertools.count()


@pytest.fixture
def service():
    # Target assignments at once (Kafka 4.3+ batches them, 1 s by default, and delays a new streams
    # group's first one by 3 s; each request here comes from a new client id, a member change that
    # bumps the group epoch).
    s = LocalService(
        **{
            "coordinator.partitions": PARTITIONS,
            "group.consumer.assignment.interval.ms": 0,
            "group.share.assignment.interval.ms": 0,
            "group.streams.assignment.interval.ms": 0,
            "group.streams.initial.rebalance.delay.ms": 0,
        }
    )
    body = {"topicStates": [{"topicName": t, "topicId": topic_id(t), "numPartitions": n} for t, n in TOPICS.items()]}
    envelope = {"apiKey": "UpdateMetadata", "apiVersion": 0, "correlationId": 0, "clientId": "meta", "request": body}
    with s._lock:  # the broker's metadata broadcast reaches every coordinator partition
        for p in range(PARTITIONS):
            s._run(p, BROADCAST_KEY, json.dumps(envelope).encode(), int(time.time() * 1000), internal=True)
    yield s
    s.close()


@pytest.fixture
def cli(service):
    def run(*args: str, log: FakeLog | None = None) -> tuple[int, str, str]:
        def context(ns, out, err):
            ctx = admin_cli.Context(ns, out, err)
            ctx.partitions = PARTITIONS
            ctx._client = service.client(f"admin-{next(_ids)}")
            ctx._consumer = log or FakeLog(TOPICS, 10)
            return ctx

        out, err = io.StringIO(), io.StringIO()
        rc = admin_cli.main(
            [args[0], "--bootstrap-server", "127.0.0.1:9092", "--no-redis", "--timeout", "5000", *args[1:]],
            out,
            err,
            make_context=context,
        )
        return rc, out.getvalue(), err.getvalue()

    return run


def request(service, api: str, version: int, body: dict, key: str) -> dict:
    return service.client(f"c-{next(_ids)}").request(api, version, body, key=key, timeout=10)


def share_member(service, group: str, member: str, topics: list[str], epoch: int = 0) -> dict:
    return request(
        service,
        "ShareGroupHeartbeat",
        1,
        {"groupId": group, "memberId": member, "memberEpoch": epoch, "rackId": None, "subscribedTopicNames": topics},
        group,
    )


def streams_member(service, group: str, member: str, epoch: int = 0, **fields) -> dict:
    body = {"groupId": group, "memberId": member, "memberEpoch": epoch, "endpointInformationEpoch": 0, **fields}
    if epoch == 0:
        body.update(
            rebalanceTimeoutMs=30000,
            processId=f"process-{member}",
            activeTasks=[],
            standbyTasks=[],
            warmupTasks=[],
            topology=topology(2, subtopology("0", source=["orders"])),
        )
    return request(service, "StreamsGroupHeartbeat", 0, body, group)


# ================================================================== arguments
@pytest.mark.parametrize(
    "args, message",
    [
        (("share-groups", "--describe"), "Option [describe] takes one of these options: [all-groups], [group]"),
        (("share-groups", "--describe", "--group", "g", "--members", "--state"), "takes at most one of these options"),
        (
            ("share-groups", "--reset-offsets", "--group", "g", "--to-earliest", "--all-topics"),
            "[execute] or [dry-run]",
        ),
        (("share-groups", "--delete-offsets", "--group", "g"), "[delete-offsets] takes the following options"),
        (("share-groups", "--delete", "--group", "g", "--topic", "t"), "does not take the option: [topic]"),
        (("streams-groups", "--delete-offsets", "--group", "g"), "one of these options: [all-input-topics]"),
        (("streams-groups", "--list", "--members"), "need [describe]"),
        (("streams-groups", "--describe", "--group", "g", "--state", "Stable"), "does not take a value for [state]"),
    ],
)
def test_bad_arguments_exit_2_with_kafkas_message(args, message):
    err = io.StringIO()
    assert admin_cli.main([args[0], "--bootstrap-server", "x:1", *args[1:]], io.StringIO(), err) == 2
    assert message in err.getvalue()


def test_a_bad_state_filter_is_refused_with_the_valid_ones(cli):
    rc, _, err = cli("streams-groups", "--list", "--state", "Bogus")
    assert rc == 2 and "Valid states are: Stable, Dead, Empty, NotReady, Assigning, Reconciling" in err


# ================================================================== share groups
def test_share_groups_list_describe_offsets_reset_delete(service, cli):
    first = share_member(service, "sg", "m1", ["orders"])
    assert first["errorCode"] == 0
    # The share-partitions are initialized: the next heartbeat gets them, at a new epoch.
    second = share_member(service, "sg", "m1", ["orders"], first["memberEpoch"])
    epoch = second["memberEpoch"]
    assert epoch == 3 and second["assignment"]["topicPartitions"][0]["partitions"] == [0, 1]
    # A consumer group of the same service is no share group: not listed.
    request(
        service,
        "ConsumerGroupHeartbeat",
        0,
        {
            "groupId": "cg",
            "memberId": "c1",
            "memberEpoch": 0,
            "rebalanceTimeoutMs": 30000,
            "subscribedTopicNames": ["orders"],
            "topicPartitions": [],
        },
        "cg",
    )

    rc, out, _ = cli("share-groups", "--list")
    assert (rc, out) == (0, "sg\n")
    rc, out, _ = cli("share-groups", "--list", "--state")
    assert out.split("\n")[:2] == ["GROUP           STATE", "sg              Stable"]
    rc, out, _ = cli("share-groups", "--list", "--state", "empty")
    assert out == "GROUP           STATE\n"

    rc, out, _ = cli("share-groups", "--describe", "--group", "sg", "--members", "--verbose")
    lines = out.split("\n")
    assert lines[1].split() == [
        "GROUP",
        "CONSUMER-ID",
        "HOST",
        "CLIENT-ID",
        "#PARTITIONS",
        "MEMBER-EPOCH",
        "ASSIGNMENT",
    ]
    assert lines[2].split()[0:2] == ["sg", "m1"] and lines[2].split()[-3:] == [
        "2",
        str(epoch),
        "orders:0,1",
    ]

    rc, out, _ = cli("share-groups", "--describe", "--group", "sg", "--state", "--verbose")
    assert out.split("\n")[1].split() == [
        "GROUP",
        "COORDINATOR",
        "(ID)",
        "STATE",
        "GROUP-EPOCH",
        "ASSIGNMENT-EPOCH",
        "#MEMBERS",
    ]
    row = out.split("\n")[2].split()
    assert row[0] == "sg" and row[3:] == ["Stable", str(epoch), str(epoch), "1"]

    # Offsets: the initialized share-partitions, no start offset yet ("-").
    rc, out, _ = cli("share-groups", "--describe", "--group", "sg", "--offsets")
    assert [line.split() for line in out.split("\n") if line.strip()] == [
        ["GROUP", "TOPIC", "PARTITION", "START-OFFSET"],
        ["sg", "orders", "0", "-"],
        ["sg", "orders", "1", "-"],
    ]

    # A reset while the member is there: refused; a delete too.
    rc, out, _ = cli("share-groups", "--reset-offsets", "--group", "sg", "--all-topics", "--to-latest", "--execute")
    assert rc == 1 and "is not empty" in out
    rc, out, _ = cli("share-groups", "--delete", "--group", "sg")
    assert rc == 1 and "Share group 'sg' is not EMPTY." in out

    share_member(service, "sg", "m1", ["orders"], -1)  # the member leaves
    rc, _, err = cli("share-groups", "--describe", "--group", "sg", "--members")
    assert rc == 0 and "Share group 'sg' has no active members." in err
    rc, out, _ = cli(
        "share-groups", "--reset-offsets", "--group", "sg", "--topic", "orders:1", "--to-latest", "--dry-run"
    )
    assert [line.split() for line in out.split("\n") if line.strip()][1] == ["sg", "orders", "1", "10"]
    rc, out, _ = cli("share-groups", "--describe", "--group", "sg", "--verbose")
    assert ["sg", "orders", "1", "-", "-"] in [line.split() for line in out.split("\n")]  # a dry run changes nothing
    rc, out, _ = cli(
        "share-groups", "--reset-offsets", "--group", "sg", "--topic", "orders:1", "--to-latest", "--execute"
    )
    assert rc == 0
    rc, out, _ = cli("share-groups", "--describe", "--group", "sg")
    assert ["sg", "orders", "1", "10"] in [line.split() for line in out.split("\n")]

    rc, out, _ = cli("share-groups", "--delete-offsets", "--group", "sg", "--topic", "orders")
    assert rc == 0 and [line.split() for line in out.split("\n") if line.strip()] == [
        ["TOPIC", "STATUS"],
        ["orders", "Successful"],
    ]

    rc, out, _ = cli("share-groups", "--delete", "--group", "sg", "--group", "cg")
    assert rc == 1
    assert (
        "* Group 'cg' could not be deleted due to: java.lang.IllegalArgumentException: Group 'cg' is not a share group."
        in out
    )
    assert "These share groups were deleted successfully: 'sg'" in out
    rc, out, _ = cli("share-groups", "--describe", "--group", "sg")
    assert rc == 1
    assert (
        "Error: Executing share group command failed due to org.apache.kafka.common.errors.GroupIdNotFoundException: "
        in out
    )


# ================================================================== streams groups
def test_streams_groups_list_describe_offsets_delete(service, cli):
    first = streams_member(service, "app", "m1")
    assert first["errorCode"] == 0 and first["activeTasks"] == [{"subtopologyId": "0", "partitions": [0, 1]}]
    # A new group's first heartbeat leaves it NotReady (Kafka configures its topology on a throwaway
    # group); the member's next heartbeat configures it.
    first = streams_member(service, "app", "m1", first["memberEpoch"])
    assert first["errorCode"] == 0
    commit = request(
        service,
        "OffsetCommit",
        9,
        {
            "groupId": "app",
            "generationIdOrMemberEpoch": first["memberEpoch"],
            "memberId": "m1",
            "groupInstanceId": None,
            "topics": [
                {
                    "name": "orders",
                    "partitions": [
                        {"partitionIndex": 0, "committedOffset": 4, "committedLeaderEpoch": -1, "committedMetadata": ""}
                    ],
                }
            ],
        },
        "app",
    )
    assert commit["topics"][0]["partitions"][0]["errorCode"] == 0

    rc, out, _ = cli("streams-groups", "--list", "--state")
    assert out.split("\n")[:2] == ["GROUP           STATE", "app             Stable"]

    rc, out, _ = cli("streams-groups", "--describe", "--group", "app")
    assert [line.split() for line in out.split("\n") if line.strip()] == [
        ["GROUP", "TOPIC", "PARTITION", "OFFSET-LAG"],
        ["app", "orders", "0", "6"],  # log end 10 - committed 4
        ["app", "orders", "1", "10"],  # nothing committed: log end - log start
    ]
    rc, out, _ = cli("streams-groups", "--describe", "--group", "app", "--offsets", "--verbose")
    assert ["app", "orders", "0", "4", "-", "10", "6"] in [line.split() for line in out.split("\n")]

    rc, out, _ = cli("streams-groups", "--describe", "--group", "app", "--members")
    lines = out.split("\n")
    assert lines[0].split() == ["GROUP", "MEMBER", "PROCESS", "CLIENT-ID", "ASSIGNMENTS"]
    assert lines[1].split()[:3] == ["app", "m1", "process-m1"] and lines[1].endswith("ACTIVE: 0:[0,1]; ")
    rc, out, _ = cli("streams-groups", "--describe", "--group", "app", "--members", "--verbose")
    assert out.split("\n")[1].endswith("ACTIVE: 0:[0,1]; TARGET-ACTIVE: 0:[0,1]; ")
    assert out.split("\n")[1].split()[:6] == [
        "app",
        str(first["memberEpoch"]),
        "2",
        "m1",
        "streams",
        str(first["memberEpoch"]),
    ]
    # Kafka's "%-15s%-Ns": no space after TOPOLOGY-EPOCH's 15 columns.
    assert out.split("\n")[1].startswith(f"app             {first['memberEpoch']:<26}2              m1 ")

    rc, out, _ = cli("streams-groups", "--describe", "--group", "app", "--state", "--verbose")
    assert out.split("\n")[1].split()[0] == "app" and out.split("\n")[1].split()[3:] == [
        "Stable",
        str(first["memberEpoch"]),  # the group epoch
        str(first["memberEpoch"]),  # the target assignment epoch
        "1",  # the members
    ]
    assert "127.0.0.1:9092 (" in out  # the streams tool's coordinator column: one space

    rc, out, _ = cli("streams-groups", "--delete", "--group", "app")
    assert rc == 1 and "Streams group 'app' is not EMPTY." in out
    rc, out, _ = cli("streams-groups", "--delete-offsets", "--group", "app", "--all-input-topics")
    # The group reads the topic: GROUP_SUBSCRIBED_TO_TOPIC per partition, as Kafka's tool reports it.
    assert rc == 1 and "Error: Encountered some partition-level error, see the follow-up details." in out
    assert "Error: Deleting offsets of a topic is forbidden while the consumer group is actively subscribed" in out

    streams_member(service, "app", "m1", -1)
    rc, out, _ = cli("streams-groups", "--delete-offsets", "--group", "app", "--input-topic", "orders:0")
    assert rc == 0 and "Request succeeded for deleting offsets from group app." in out
    rc, out, _ = cli("streams-groups", "--delete", "--group", "app")
    assert (rc, out) == (0, "Deletion of requested streams groups ('app') was successful.\n")
    rc, out, _ = cli("streams-groups", "--list")
    assert out == ""
    # DescribeStreamsGroupsHandler: an unknown group is a Dead one, and --state still prints its row.
    rc, out, _ = cli("streams-groups", "--describe", "--group", "app", "--state")
    assert rc == 1 and "Error: Streams group 'app' does not exist." in out
    assert out.split("\n")[-2].split()[3:] == ["Dead", "0"]


def test_control_characters_in_names_are_escaped(service, cli):
    evil = "x\n\x1b[2Jsg"
    assert share_member(service, evil, "m\r1", ["orders"])["errorCode"] == 0
    rc, out, _ = cli("share-groups", "--list")
    assert out == "x\\n\\x1b[2Jsg\n"
    rc, out, _ = cli("share-groups", "--describe", "--all-groups", "--members")
    assert "\x1b" not in out and "\r" not in out and "m\\r1" in out
    assert len([line for line in out.split("\n") if line.startswith("x\\n")]) == 1


def test_tables_are_kafkas_layout():
    d = {"groupId": "g", "groupState": "Stable", "groupEpoch": 3, "assignmentEpoch": 3, "members": [{}]}
    assert ss.share_state_table(d, "h:1  (2)", False).split("\n") == [
        "",
        "GROUP           COORDINATOR (ID)          STATE           #MEMBERS",
        "g               h:1  (2)                  Stable          1",
    ]
    assert ss.share_offsets_table(
        "g", [{"topic": "t", "partition": 0, "startOffset": 5, "leaderEpoch": 1}], True
    ).split("\n") == [
        "",
        "GROUP           TOPIC           PARTITION  LEADER-EPOCH  START-OFFSET",
        "g               t               0          1             5",
        "",
    ]
    assert ss.list_state_table([{"groupId": "g", "state": "Empty"}]) == "GROUP           STATE\ng               Empty"
