"""coordinator-admin: Kafka's kafka-consumer-groups.sh and kafka-transactions.sh for this service.

    coordinator-admin groups --bootstrap-server H:P [--config job.toml] [--redis URL | --no-redis]
        --list [--state [S,...]] [--type [T,...]]
        --describe (--group G ... | --all-groups) [--members [--verbose] | --offsets | --state]
        --reset-offsets (--group G | --all-groups) (--topic T[:P,...] ... | --all-topics)
            (--to-earliest | --to-latest | --to-current | --to-offset N | --shift-by N | --to-datetime T)
            [--dry-run | --execute]
        --delete (--group G ... | --all-groups)
        --delete-offsets --group G --topic T[:P,...] ...
    coordinator-admin share-groups | streams-groups ...   (client/admin_share_streams.py)
    coordinator-admin transactions --bootstrap-server H:P [...] list [--duration-filter MS]
        | describe --transactional-id X | find-hanging [--max-transaction-timeout MIN] | abort --transactional-id X

(also `python -m client.admin_cli`). Option names, messages and columns are Kafka's
(ConsumerGroupCommand, TransactionsCommand). Reads come from the Redis read model when it answers,
otherwise (and with --no-redis) from the coordinators through the request topic; every change is a
coordinator request (OffsetCommit as an admin, DeleteGroups, OffsetDelete, InitProducerId), so the
state machines stay the only writers. Log-end offsets come from the broker. Exit code 0 on
success, 1 on any error (unknown group, a reset refused, the service not answering), 2 on bad
arguments. docs/operations.md (*Admin CLI*) describes every command and where it differs from Kafka.

Names (group, transactional, member, client and instance ids, hosts, topics) are printed with
control characters as visible escapes (`\\n`, `\\t`, `\\x1b`, `\\u2028`, ...): a name cannot forge
a row or drive the terminal. Kafka's tools print them raw.
"""

from __future__ import annotations

import argparse
import sys
import time
import uuid

from coordinator.errors import Errors
from coordinator.routing import coordinator_partition

from . import admin_format as fmt
from . import admin_share_streams as share_streams
from .admin_sources import RedisReads, ServiceError, ServiceReads
from .request_client import NO_BROKER, CoordinatorClient, ResponseTimeout

DEFAULT_REDIS_URL, DEFAULT_REDIS_PREFIX = "redis://127.0.0.1:6379/0", "coord"
GROUP_STATES = ["PreparingRebalance", "CompletingRebalance", "Stable", "Dead", "Empty", "Assigning", "Reconciling"]
GROUP_TYPES = ["consumer", "classic"]
REBALANCING = {"PreparingRebalance", "CompletingRebalance", "Assigning", "Reconciling"}
RESET_SCENARIOS = ("to_earliest", "to_latest", "to_current", "to_offset", "shift_by", "to_datetime")
INIT_PRODUCER_ID_VERSION, OFFSET_COMMIT_VERSION, OFFSET_DELETE_VERSION = 5, 9, 0
RESET_WARN = (
    "WARN: No action will be performed as the --execute option is missing. In a future major release, "
    "the default behavior of this command will be to prompt the user before executing the reset rather "
    "than doing a dry run. You should add the --dry-run option explicitly if you are scripting this "
    "command and want to keep the current default behavior without prompting."
)


class CommandError(Exception):
    """A failure to report as Kafka's tools do: the message, exit code 1."""


class UsageError(Exception):
    """Bad arguments (Kafka's printUsageAndExit): the message, exit code 2."""


# ============================================================================ arguments
def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--bootstrap-server", metavar="H:P", help="the Kafka broker (default: [kafka] of --config)")
    p.add_argument(
        "--config",
        metavar="FILE",
        help="the service's configuration (topic names, coordinator "
        "partitions, [redis] url and prefix); conf/defaults.toml otherwise",
    )
    p.add_argument("--redis", metavar="URL", help=f"the read model's Redis (default: [redis] url, {DEFAULT_REDIS_URL})")
    p.add_argument(
        "--redis-prefix", metavar="PREFIX", help="key prefix of the read model (default: [redis] prefix, coord)"
    )
    p.add_argument("--no-redis", action="store_true", help="read from the coordinators only")
    p.add_argument(
        "--timeout",
        type=int,
        default=30000,
        metavar="MS",
        help="how long to wait for the service's answers (also for its first answer), ms (default 30000)",
    )


ESCAPING_NOTE = (
    "Names (group, transactional, member, client and instance ids, hosts, topics) are printed with "
    "control characters as visible escapes (\\n, \\r, \\t, \\x1b, \\u2028, ...), so that a name "
    "cannot forge a row or drive the terminal; Kafka's tools print them raw."
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="coordinator-admin", description=__doc__.split("\n\n")[0], epilog=ESCAPING_NOTE
    )
    sub = parser.add_subparsers(dest="tool", required=True, metavar="{groups,share-groups,streams-groups,transactions}")

    g = sub.add_parser(
        "groups", help="kafka-consumer-groups.sh: list, describe, reset offsets, delete", epilog=ESCAPING_NOTE
    )
    _common(g)
    actions = g.add_mutually_exclusive_group(required=True)
    actions.add_argument("--list", action="store_true", help="List all consumer groups.")
    actions.add_argument("--describe", action="store_true", help="Describe consumer group and list offset lag.")
    actions.add_argument("--delete", action="store_true", help="Delete groups (offsets and ownership).")
    actions.add_argument("--reset-offsets", action="store_true", help="Reset offsets of inactive consumer groups.")
    actions.add_argument("--delete-offsets", action="store_true", help="Delete offsets of a consumer group.")
    g.add_argument("--group", action="append", default=[], help="The consumer group we wish to act on.")
    g.add_argument("--all-groups", action="store_true", help="Apply to all consumer groups.")
    g.add_argument(
        "--topic",
        action="append",
        default=[],
        metavar="T[:P,...]",
        help="topic (all partitions) or topic:0,1 for --reset-offsets and --delete-offsets",
    )
    g.add_argument("--all-topics", action="store_true", help="Consider all topics of the group (--reset-offsets).")
    g.add_argument("--members", action="store_true", help="Describe members of the group.")
    g.add_argument("--verbose", action="store_true", help="With --members: the members' assignments.")
    g.add_argument("--offsets", action="store_true", help="Describe the group's partitions with their lag (default).")
    g.add_argument(
        "--state",
        nargs="?",
        const="",
        default=None,
        metavar="STATES",
        help="with --describe: the group's state; with --list: show (or filter by) states",
    )
    g.add_argument(
        "--type",
        nargs="?",
        const="",
        default=None,
        metavar="TYPES",
        help="with --list: show (or filter by) group types (consumer, classic)",
    )
    for name in ("to-earliest", "to-latest", "to-current"):
        g.add_argument(f"--{name}", action="store_true", help=f"Reset offsets to {name[3:]} offset.")
    g.add_argument("--to-offset", type=int, metavar="N", help="Reset offsets to a specific offset.")
    g.add_argument("--shift-by", type=int, metavar="N", help="Shift the committed offset by N (may be negative).")
    g.add_argument(
        "--to-datetime",
        metavar="YYYY-MM-DDTHH:mm:SS.sss",
        help="Reset offsets to the first offset at or after this time (zone optional: Z, +hh:mm).",
    )
    g.add_argument("--dry-run", action="store_true", help="Only show the new offsets (the default).")
    g.add_argument("--execute", action="store_true", help="Commit the new offsets.")

    share_streams.add_parsers(sub, _common, ESCAPING_NOTE)

    t = sub.add_parser(
        "transactions", help="kafka-transactions.sh: list, describe, find-hanging, abort", epilog=ESCAPING_NOTE
    )
    _common(t)
    tsub = t.add_subparsers(dest="command", required=True, metavar="COMMAND")
    lst = tsub.add_parser("list", help="list transactions")
    lst.add_argument(
        "--duration-filter",
        type=int,
        default=-1,
        metavar="MS",
        help="only transactions running longer than this (ms); < 0: all",
    )
    d = tsub.add_parser("describe", help="describe the state of an active transactional-id")
    d.add_argument("--transactional-id", required=True)
    f = tsub.add_parser("find-hanging", help="find hanging transactions")
    f.add_argument(
        "--max-transaction-timeout",
        type=float,
        default=15.0,
        metavar="MIN",
        help="open transactions running longer than this many minutes (15 by default; fractions allowed)",
    )
    f.add_argument("--topic", help="limit the search to this topic")
    f.add_argument("--partition", type=int, help="and this partition (requires --topic)")
    a = tsub.add_parser("abort", help="abort the open transaction of a transactional id (fences its producer)")
    a.add_argument("--transactional-id", required=True)
    return parser


def check_group_args(ns: argparse.Namespace) -> None:
    """ConsumerGroupCommandOptions.checkArgs, for the options this tool has."""
    scopes = "--all-groups, --group"
    if ns.describe:
        share_streams.check_describe_args(ns, scopes, UsageError)
    if ns.verbose and not ns.members:
        raise UsageError("Option [verbose] can only be used with [describe] [members]")
    if ns.delete:
        if not ns.group and not ns.all_groups:
            raise UsageError(f"Option [delete] takes one of these options: {scopes}")
        if ns.topic:
            raise UsageError("The consumer does not support topic-specific offset deletion from a consumer group.")
    if ns.delete_offsets and (len(ns.group) != 1 or not ns.topic):
        raise UsageError("Option [delete-offsets] takes the following options: [group], [topic] (one group)")
    if ns.reset_offsets:
        if ns.dry_run and ns.execute:
            raise UsageError("Option [reset-offsets] only accepts one of [execute] and [dry-run]")
        if not ns.group and not ns.all_groups:
            raise UsageError(f"Option [reset-offsets] takes one of these options: {scopes}")
        chosen = [s for s in RESET_SCENARIOS if getattr(ns, s) not in (None, False)]
        if len(chosen) != 1:
            raise UsageError(
                "Option [reset-offsets] requires one of the following scenarios: "
                + ", ".join(f"[{s.replace('_', '-')}]" for s in RESET_SCENARIOS)
            )
        if not ns.topic and not ns.all_topics:
            raise UsageError("One of the reset scopes should be defined: --all-topics, --topic.")
        if ns.topic and ns.all_topics:
            raise UsageError("Option [reset-offsets] takes one of [all-topics] and [topic]")
    else:
        if (
            any(getattr(ns, s) not in (None, False) for s in RESET_SCENARIOS)
            or ns.dry_run
            or ns.execute
            or ns.all_topics
        ):
            raise UsageError("Reset scenarios, --all-topics, --dry-run and --execute need [reset-offsets]")
    if ns.group and ns.all_groups:
        raise UsageError("Option [group] cannot be used with [all-groups]")
    if ns.list and (ns.group or ns.all_groups):
        raise UsageError("Option [group] can be used only with [describe], [delete], [reset-offsets], [delete-offsets]")
    if ns.topic and not (ns.reset_offsets or ns.delete_offsets):
        raise UsageError("Option [topic] can be used only with [reset-offsets], [delete-offsets]")
    if ns.type is not None and not ns.list:
        raise UsageError("Option [type] can be used only with [list]")


def reset_spec(ns: argparse.Namespace) -> fmt.ResetSpec:
    if ns.to_earliest:
        return fmt.ResetSpec("to-earliest")
    if ns.to_latest:
        return fmt.ResetSpec("to-latest")
    if ns.to_current:
        return fmt.ResetSpec("to-current")
    if ns.to_offset is not None:
        return fmt.ResetSpec("to-offset", ns.to_offset)
    if ns.shift_by is not None:
        return fmt.ResetSpec("shift-by", ns.shift_by)
    return fmt.ResetSpec("to-datetime", fmt.parse_datetime(ns.to_datetime))


def parse_filter(text: str | None, valid: list[str], what: str) -> set[str]:
    """--state / --type values for --list: comma separated, case-insensitive, checked."""
    if not text:
        return set()
    by_lower = {v.lower(): v for v in valid}
    values = [s.strip() for s in text.split(",")]
    if any(v.lower() not in by_lower for v in values):
        raise UsageError(f"Invalid {what} list '{text}'. Valid {what}s are: {', '.join(valid)}")
    return {by_lower[v.lower()] for v in values}


# ============================================================================ the service
class Context:
    """Settings and lazily made connections of one CLI run."""

    def __init__(self, ns: argparse.Namespace, out, err):
        from streaming.config import StreamConfig

        self.ns, self.out, self.err = ns, out, err
        cfg = StreamConfig.load(ns.config) if ns.config else StreamConfig.load()
        self.bootstrap = ns.bootstrap_server or cfg.bootstrap
        self.topics = cfg.topics
        self.partitions = cfg.coordinator_partitions
        redis_cfg = cfg.raw.get("redis", {})
        self.redis_url = ns.redis or redis_cfg.get("url", DEFAULT_REDIS_URL)
        self.redis_prefix = ns.redis_prefix or redis_cfg.get("prefix", DEFAULT_REDIS_PREFIX)
        # A service configured without the read model has none to read (unless --redis names one).
        self.use_redis = not ns.no_redis and bool(ns.redis or redis_cfg.get("enabled", True))
        self.timeout_s = max(1.0, ns.timeout / 1000)
        self._client: CoordinatorClient | None = None
        self._consumer = None
        self._service_reads: ServiceReads | None = None
        self._reads: RedisReads | ServiceReads | None = None

    def print(self, text: str = "") -> None:
        print(fmt.printable(text), file=self.out)

    def warn(self, text: str) -> None:
        print(fmt.printable(text), file=self.err)

    @property
    def client(self) -> CoordinatorClient:
        if self._client is None:
            _ = self.consumer  # fails within --timeout when no broker answers (the client would wait 30 s)
            self._client = CoordinatorClient(
                self.bootstrap,
                f"coordinator-admin-{uuid.uuid4().hex[:12]}",
                requests_topic=self.topics["requests"],
                responses_topic=self.topics["responses"],
                startup_timeout=self.timeout_s,
            )
        return self._client

    @property
    def service(self) -> ServiceReads:
        if self._service_reads is None:
            self._service_reads = ServiceReads(self.client, self.partitions, self.timeout_s)
        return self._service_reads

    @property
    def reads(self):
        """The read model when it answers (and has been written), else the coordinators."""
        if self._reads is None:
            self._reads = self._redis_reads() or self.service
        return self._reads

    def _redis_reads(self) -> RedisReads | None:
        if not self.use_redis:
            return None
        try:
            from .read_model import ReadModel, ReadModelUnavailable
        except ImportError as e:  # the redis package is not installed
            self.warn(f"Redis at {self.redis_url} is not reachable: {e}; reading from the coordinators instead")
            return None
        model = ReadModel(self.redis_url, self.redis_prefix, timeout=min(self.timeout_s, 5.0))
        try:
            freshness = model.freshness()
        except ReadModelUnavailable as e:
            self.warn(
                f"Redis at {self.redis_url} is not reachable: {e.__cause__ or e}; reading from the coordinators instead"
            )
            return None
        if not freshness.get("offsets") and freshness.get("updatedAt") is None:
            self.warn(
                f"Redis at {self.redis_url} has no read model under prefix '{self.redis_prefix}' (no projector "
                f"has written it); reading from the coordinators instead"
            )
            return None
        return RedisReads(model)

    def redis_failed(self, e: Exception) -> None:
        """Redis went away in the middle of the command: the rest is read from the coordinators."""
        self.warn(
            f"Redis at {self.redis_url} is not reachable: {e.__cause__ or e}; reading from the coordinators instead"
        )
        self._reads = self.service

    @property
    def consumer(self):
        """A kafka-python consumer without a group, for log start/end offsets and topic metadata."""
        if self._consumer is None:
            from kafka import KafkaConsumer

            try:
                self._consumer = KafkaConsumer(
                    bootstrap_servers=self.bootstrap,
                    group_id=None,
                    enable_auto_commit=False,
                    client_id="coordinator-admin",
                    bootstrap_timeout_ms=int(self.timeout_s * 1000),
                )
            except NO_BROKER:
                raise CommandError(f"No Kafka broker answers at {self.bootstrap}") from None
        return self._consumer

    def topic_partitions(self, topic: str) -> list[int] | None:
        parts = self.consumer.partitions_for_topic(topic)
        return sorted(parts) if parts else None

    def log_offsets(self, tps: list[tuple[str, int]], which: str) -> dict[tuple[str, int], int]:
        """beginning_offsets / end_offsets of the partitions that exist (others are left out)."""
        from kafka import TopicPartition

        known = {t: set(self.topic_partitions(t) or []) for t in {t for t, _ in tps}}
        ask = [TopicPartition(t, p) for t, p in tps if p in known[t]]
        if not ask:
            return {}
        got = getattr(self.consumer, f"{which}_offsets")(ask)
        return {(tp.topic, tp.partition): o for tp, o in got.items()}

    def offsets_for_time(self, tps: list[tuple[str, int]], timestamp_ms: int) -> dict[tuple[str, int], int | None]:
        from kafka import TopicPartition

        got = self.consumer.offsets_for_times({TopicPartition(t, p): timestamp_ms for t, p in tps})
        return {(tp.topic, tp.partition): (None if o is None else o.offset) for tp, o in got.items()}

    def request(self, api: str, version: int, body: dict, key: str) -> dict:
        return self.client.wait(self.client.send(api, version, body, key=key), self.timeout_s)["response"]

    def coordinator_text(self, group: dict) -> str:
        """COORDINATOR (ID): the broker the service answers on and the coordinator partition, as
        FindCoordinator reports them (nodeId = coordinator partition)."""
        p = group.get("coordinatorPartition")
        if p is None:
            p = coordinator_partition(group["groupId"], self.partitions)
        return f"{self.bootstrap.split(',')[0].strip()}  ({p})"

    @staticmethod
    def command_error(text: str) -> CommandError:
        return CommandError(text)

    @staticmethod
    def usage_error(text: str) -> UsageError:
        return UsageError(text)

    def close(self) -> None:
        for c in (self._client, self._consumer):
            if c is not None:
                try:
                    c.close()
                except Exception:  # closing is best effort; the process exits anyway
                    pass


def _redis_errors() -> tuple:
    try:
        from .read_model import ReadModelUnavailable

        return (ReadModelUnavailable,)
    except ImportError:
        return ()


# ============================================================================ groups
def groups_command(ctx: Context) -> int:
    ns = ctx.ns
    if ns.list:
        return list_groups(ctx)
    if ns.describe:
        return describe_groups(ctx)
    if ns.reset_offsets:
        return reset_offsets(ctx)
    if ns.delete:
        return delete_groups(ctx)
    return delete_offsets(ctx)


def list_groups(ctx: Context) -> int:
    ns = ctx.ns
    states = parse_filter(ns.state, GROUP_STATES, "state")
    types = parse_filter(ns.type, GROUP_TYPES, "type")
    groups = [
        g for g in ctx.reads.list_groups() if (not states or g["state"] in states) and (not types or g["type"] in types)
    ]
    groups.sort(key=lambda g: g["groupId"])
    if ns.state is None and ns.type is None:
        for g in groups:
            ctx.print(fmt.visible(g["groupId"]))
    else:
        ctx.print(fmt.list_table(groups, ns.type is not None, ns.state is not None))
    return 0


def _group_ids(ctx: Context) -> list[str]:
    if ctx.ns.all_groups:
        return [g["groupId"] for g in ctx.reads.list_groups()]
    return list(dict.fromkeys(ctx.ns.group))


def _announce_state(ctx: Context, group_id: str, group: dict | None) -> bool:
    """shouldPrintMemberState: False (and an error) for a group that does not exist; notes on
    stderr for an empty or rebalancing group."""
    if group is None or group["state"] == "Dead":
        ctx.warn(f"\nError: Consumer group '{fmt.visible(group_id)}' does not exist.")
        return False
    if group["state"] == "Empty":
        ctx.warn(f"\nConsumer group '{fmt.visible(group_id)}' has no active members.")
    elif group["state"] in REBALANCING:
        ctx.warn(f"\nWarning: Consumer group '{fmt.visible(group_id)}' is rebalancing.")
    return True


def describe_groups(ctx: Context) -> int:
    ns = ctx.ns
    ids = sorted(_group_ids(ctx))
    described = ctx.reads.describe_groups(ids)
    rc = 0
    for gid in ids:
        group = described.get(gid)
        if not _announce_state(ctx, gid, group):
            rc = 1
            continue
        if ns.members:
            ctx.print(fmt.members_table(group, ns.verbose))
        elif ns.state is not None:
            ctx.print(fmt.state_table(group, ctx.coordinator_text(group)))
        else:
            committed = ctx.reads.offsets(gid)
            partitions = set(committed) | {
                (t, p) for m in group["members"] for t, ps in m["assignment"].items() for p in ps
            }
            log_end = ctx.log_offsets(sorted(partitions), "end")
            rows = fmt.offset_rows(group, committed, log_end)
            if rows:
                ctx.print(fmt.offsets_table(rows))
    return rc


def _partitions_to_reset(ctx: Context, group_id: str, committed: dict) -> list[tuple[str, int]]:
    if ctx.ns.all_topics:
        return sorted(committed)
    out = []
    for arg in ctx.ns.topic:
        topic, parts = fmt.parse_topic_partitions(arg)
        if parts is None:
            parts = ctx.topic_partitions(topic)
            if parts is None:
                raise CommandError(f"Topic '{fmt.visible(topic)}' does not exist (UNKNOWN_TOPIC_OR_PARTITION)")
        out += [(topic, p) for p in parts]
    return sorted(dict.fromkeys(out))


def reset_offsets(ctx: Context) -> int:
    """The group's state and offsets are read from the coordinators (never the read model: a reset
    must see the group as it is). Empty, Dead or unknown groups only, as Kafka's tool; the
    coordinator also refuses an admin commit to a group with members."""
    ns = ctx.ns
    spec = reset_spec(ns)
    if not ns.execute and not ns.dry_run:
        ctx.warn(RESET_WARN)
    ids = [g["groupId"] for g in ctx.service.list_groups()] if ns.all_groups else list(dict.fromkeys(ns.group))
    described = ctx.service.describe_groups(ids)
    plan: dict[str, dict] = {}
    rc = 0
    for gid in ids:
        group = described.get(gid)
        state = "Dead" if group is None else group["state"]
        if state not in ("Empty", "Dead"):
            ctx.warn(
                f"\nError: Assignments can only be reset if the group '{fmt.visible(gid)}' is inactive, but the current "
                f"state is {state}."
            )
            rc = 1
            continue
        committed = ctx.service.offsets(gid) if group is not None else {}
        tps = _partitions_to_reset(ctx, gid, committed)
        earliest, latest = ctx.log_offsets(tps, "beginning"), ctx.log_offsets(tps, "end")
        by_time = ctx.offsets_for_time(tps, spec.amount()) if spec.kind == "to-datetime" else None
        offsets, warnings = fmt.plan_reset(spec, tps, committed, earliest, latest, by_time)
        for w in warnings:
            ctx.warn(w)
        if ns.execute and offsets:
            _commit_as_admin(ctx, gid, offsets)
        plan[gid] = offsets
    if any(plan.values()):
        ctx.print(fmt.reset_table(plan))
    return rc


def _commit_as_admin(ctx: Context, group_id: str, offsets: dict) -> None:
    """OffsetCommit as Kafka's Admin.alterConsumerGroupOffsets sends it: no member, generation -1."""
    topics: dict[str, list] = {}
    for (t, p), o in sorted(offsets.items()):
        topics.setdefault(t, []).append(
            {"partitionIndex": p, "committedOffset": o, "committedLeaderEpoch": -1, "committedMetadata": ""}
        )
    resp = ctx.request(
        "OffsetCommit",
        OFFSET_COMMIT_VERSION,
        {
            "groupId": group_id,
            "generationIdOrMemberEpoch": -1,
            "memberId": "",
            "groupInstanceId": None,
            "topics": [{"name": t, "partitions": ps} for t, ps in topics.items()],
        },
        key=group_id,
    )
    failed = {
        (t["name"], p["partitionIndex"]): Errors.for_code(p["errorCode"])
        for t in resp["topics"]
        for p in t["partitions"]
        if p["errorCode"] != 0
    }
    if failed:
        first = next(iter(failed.values()))
        where = ", ".join(f"{fmt.visible(t)}-{p}: {e.name}" for (t, p), e in sorted(failed.items()))
        raise CommandError(f"Executing consumer group command failed due to {first.name}: {first.message} ({where})")


def delete_groups(ctx: Context) -> int:
    ids = [g["groupId"] for g in ctx.service.list_groups()] if ctx.ns.all_groups else list(dict.fromkeys(ctx.ns.group))
    results = ctx.service.admin.delete_groups(ids)
    ok = [fmt.visible(g) for g in ids if results.get(g) == 0]
    failed = {g: Errors.for_code(results[g]) for g in ids if results.get(g, 0) != 0}
    if not failed:
        ctx.print(f"Deletion of requested consumer groups ('{', '.join(ok)}') was successful.")
        return 0
    ctx.warn("\nError: Deletion of some consumer groups failed:")
    for g, e in failed.items():
        ctx.print(f"* Group '{fmt.visible(g)}' could not be deleted due to: {e.name}: {e.message}")
    if ok:
        ctx.print(f"\nThese consumer groups were deleted successfully: '{', '.join(ok)}'")
    return 1


DELETE_OFFSETS_TOP = {
    "INVALID_GROUP_ID": "'{g}' is not valid.",
    "GROUP_ID_NOT_FOUND": "'{g}' does not exist.",
    "NON_EMPTY_GROUP": "Deleting offsets of a consumer group '{g}' is forbidden if the group is not empty.",
    "GROUP_SUBSCRIBED_TO_TOPIC": "Encounter some partition level error, see the follow-up details:",
    "UNKNOWN_TOPIC_OR_PARTITION": "Encounter some partition level error, see the follow-up details:",
}


def delete_offsets(ctx: Context) -> int:
    gid = ctx.ns.group[0]
    results: dict[tuple[str, int], str | None] = {}
    wanted: dict[str, list[int]] = {}
    for arg in ctx.ns.topic:
        topic, parts = fmt.parse_topic_partitions(arg)
        if parts is None:
            parts = ctx.topic_partitions(topic)
            if parts is None:  # Kafka's describeTopics failure for a topic given without partitions
                results[(topic, -1)] = Errors.UNKNOWN_TOPIC_OR_PARTITION.message
                continue
        wanted.setdefault(topic, []).extend(p for p in parts if p not in wanted.get(topic, []))
    top = Errors.NONE
    if wanted:
        resp = ctx.request(
            "OffsetDelete",
            OFFSET_DELETE_VERSION,
            {
                "groupId": gid,
                "topics": [{"name": t, "partitions": [{"partitionIndex": p} for p in ps]} for t, ps in wanted.items()],
            },
            key=gid,
        )
        top = Errors.for_code(resp["errorCode"])
        answered = {(t["name"], p["partitionIndex"]): p["errorCode"] for t in resp["topics"] for p in t["partitions"]}
        for t, ps in wanted.items():
            for p in ps:
                code = answered.get((t, p), resp["errorCode"])
                results[(t, p)] = None if code == 0 else Errors.for_code(code).message
                if code != 0 and top == Errors.NONE:
                    top = Errors.for_code(code)  # Kafka's all() fails with the first partition error
    if top == Errors.NONE and any(results.values()):
        top = Errors.UNKNOWN_TOPIC_OR_PARTITION
    if top == Errors.NONE:
        topics = ", ".join(fmt.visible(t) for t in ctx.ns.topic)
        ctx.print(f"Request succeed for deleting offsets with topic {topics} group {fmt.visible(gid)}")
    else:
        text = DELETE_OFFSETS_TOP.get(top.name, f"Encounter some unknown error: {top.name}").format(g=fmt.visible(gid))
        ctx.warn(f"\nError: {text}")
    lines = ["", " ".join([f"{'TOPIC':<30}", f"{'PARTITION':<15}", f"{'STATUS':<15}"])]
    for (t, p), error in sorted(results.items(), key=lambda kv: kv[0][0] + str(kv[0][1])):
        status = "Successful" if error is None else f"Error: :{error}"
        lines.append(" ".join([f"{fmt.visible(t):<30}", f"{(p if p >= 0 else 'Not Provided')!s:<15}", f"{status:<15}"]))
    ctx.print("\n".join(lines))
    return 0 if top == Errors.NONE else 1


# ============================================================================ transactions
def transactions_command(ctx: Context) -> int:
    return {
        "list": list_transactions,
        "describe": describe_transaction,
        "find-hanging": find_hanging,
        "abort": abort_transaction,
    }[ctx.ns.command](ctx)


def _now_ms() -> int:
    return int(time.time() * 1000)


def list_transactions(ctx: Context) -> int:
    duration = ctx.ns.duration_filter
    reads = ctx.reads
    if isinstance(reads, ServiceReads):
        txns = reads.list_transactions(duration_ms=duration)
    else:
        now = _now_ms()
        txns = [
            t
            for t in reads.list_transactions()
            if duration < 0 or now - (t.get("startTimestamp") if t.get("startTimestamp") is not None else -1) > duration
        ]
    rows = [
        [t["transactionalId"], t["coordinatorPartition"], t["producerId"], t["state"]]
        for t in sorted(txns, key=lambda t: (t["coordinatorPartition"], t["transactionalId"]))
    ]
    ctx.print(fmt.pretty_table(fmt.LIST_TXN_HEADERS, rows))
    return 0


def _txn_not_found(tid: str) -> CommandError:
    e = Errors.TRANSACTIONAL_ID_NOT_FOUND
    return CommandError(
        f"Failed to describe transaction state of transactional-id `{fmt.visible(tid)}`: {e.name}: {e.message}."
    )


def describe_transaction(ctx: Context) -> int:
    tid = ctx.ns.transactional_id
    txn = ctx.reads.describe_transaction(tid)
    if txn is None:
        raise _txn_not_found(tid)
    ctx.print(fmt.pretty_table(fmt.DESCRIBE_TXN_HEADERS, [fmt.describe_txn_row(txn, _now_ms())]))
    return 0


def find_hanging(ctx: Context) -> int:
    """Open transactions (Ongoing, Prepare*) older than --max-transaction-timeout, with the
    partitions they wrote to. Kafka asks each data partition's leader for its open transactions
    (DescribeProducers); here the transaction coordinator knows every transaction."""
    ns = ctx.ns
    if ns.partition is not None and ns.topic is None:
        raise CommandError("The --partition argument requires --topic to be provided")
    max_ms = int(ns.max_transaction_timeout * 60000)
    reads = ctx.reads
    if isinstance(reads, ServiceReads):
        listed = reads.list_transactions(states=list(fmt.OPEN_STATES), duration_ms=max_ms)
        described = reads.describe_transactions([t["transactionalId"] for t in listed])
        txns = [t for t in described.values() if t is not None]
    else:
        txns = reads.list_transactions()
    rows = fmt.hanging_rows(txns, max_ms, _now_ms())
    if ns.topic is not None:
        rows = [r for r in rows if r[0] == ns.topic and (ns.partition is None or r[1] == ns.partition)]
    ctx.print(fmt.pretty_table(fmt.HANGING_HEADERS, rows))
    return 0


def abort_transaction(ctx: Context) -> int:
    """Ends the open transaction of a transactional id as Kafka's Admin.fenceProducers does:
    InitProducerId for the id, retried while the coordinator answers CONCURRENT_TRANSACTIONS (it is
    aborting the transaction with a bumped epoch), then DescribeTransactions shows it ended. Kafka's
    `abort` writes an ABORT marker into one data partition instead; here the coordinator is the only
    writer of markers, so the whole transaction is aborted through it."""
    tid = ctx.ns.transactional_id
    before = ctx.service.describe_transaction(tid)
    if before is None:
        raise _txn_not_found(tid)
    if before["state"] not in fmt.OPEN_STATES:
        raise CommandError(
            f"Transactional id `{fmt.visible(tid)}` has no open transaction to abort (state {before['state']})."
        )
    deadline = time.monotonic() + ctx.timeout_s
    backoff = 0.05
    while True:
        resp = ctx.request(
            "InitProducerId",
            INIT_PRODUCER_ID_VERSION,
            {
                "transactionalId": tid,
                "transactionTimeoutMs": before["timeoutMs"],
                "producerId": -1,
                "producerEpoch": -1,
            },
            key=tid,
        )
        error = Errors.for_code(resp["errorCode"])
        if error == Errors.NONE:
            break
        if (
            error not in (Errors.CONCURRENT_TRANSACTIONS, Errors.COORDINATOR_LOAD_IN_PROGRESS)
            or time.monotonic() >= deadline
        ):
            raise CommandError(
                f"Failed to abort the transaction of transactional-id `{fmt.visible(tid)}`: {error.name}: {error.message}"
            )
        time.sleep(backoff)
        backoff = min(backoff * 2, 1.0)
    after = ctx.service.describe_transaction(tid)
    state = after["state"] if after else "Dead"
    if state not in ("Empty", "CompleteAbort", "CompleteCommit"):
        raise CommandError(
            f"Transactional id `{fmt.visible(tid)}` was fenced but its transaction has not ended (state {state})"
        )
    ended = "completed its commit" if before["state"] == "PrepareCommit" else "aborted"
    ctx.print(
        f"Transaction of transactional-id `{fmt.visible(tid)}` (producer id {before['producerId']}, epoch "
        f"{before['producerEpoch']}, {before['state']}) {ended}; the producer is fenced: now producer id "
        f"{resp['producerId']}, epoch {resp['producerEpoch']}, state {state}."
    )
    return 0


# ============================================================================ main
COMMANDS_BY_TYPE = {
    "share-groups": share_streams.share_groups_command,
    "streams-groups": share_streams.streams_groups_command,
}


def main(argv: list[str] | None = None, out=None, err=None, make_context=Context) -> int:
    out = out or sys.stdout
    err = err or sys.stderr
    parser = build_parser()
    ns = parser.parse_args(argv)
    try:
        if ns.tool == "groups":
            check_group_args(ns)
        elif ns.tool in COMMANDS_BY_TYPE:
            share_streams.check_args(ns, UsageError)
        ctx = make_context(ns, out, err)
    except (UsageError, fmt.ResetError) as e:
        parser.print_usage(err)
        print(fmt.printable(f"{parser.prog}: error: {e}"), file=err)
        return 2
    except (OSError, ValueError) as e:  # an unreadable or invalid --config
        print(fmt.printable(f"Error: {e}"), file=err)
        return 2
    command = {"groups": groups_command, "transactions": transactions_command, **COMMANDS_BY_TYPE}[ns.tool]
    try:
        for attempt in range(2):
            try:
                return command(ctx)
            except _redis_errors() as e:
                if attempt or isinstance(ctx._reads, ServiceReads):
                    raise
                ctx.redis_failed(e)
        return 1
    except (UsageError, fmt.ResetError) as e:
        print(fmt.printable(f"Error: {e}"), file=err)
        return 2 if isinstance(e, UsageError) else 1
    except CommandError as e:
        print(fmt.printable(f"Error: {e}"), file=err)
        return 1
    except ResponseTimeout as e:  # also ServiceUnavailable
        print(fmt.printable(f"Error: the coordinator service did not answer: {e}"), file=err)
        return 1
    except ServiceError as e:
        print(fmt.printable(f"Error: the coordinator service answered with an error: {e}"), file=err)
        return 1
    except NO_BROKER as e:
        print(fmt.printable(f"Error: no Kafka broker answers at {ctx.bootstrap}: {e}"), file=err)
        return 1
    except KeyboardInterrupt:
        return 130
    finally:
        ctx.close()


if __name__ == "__main__":
    sys.exit(main())
