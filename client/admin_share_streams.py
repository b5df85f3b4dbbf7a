"""coordinator-admin share-groups and streams-groups: Kafka's kafka-share-groups.sh
(ShareGroupCommand) and kafka-streams-groups.sh (StreamsGroupCommand), 4.1.1, for this service.

    coordinator-admin share-groups --bootstrap-server H:P [...]
        --list [--state [S,...]]
        --describe (--group G ... | --all-groups) [--members | --state | --offsets] [--verbose]
        --delete (--group G ... | --all-groups)
        --reset-offsets --group G (--topic T[:P,...] ... | --all-topics)
            (--to-earliest | --to-latest | --to-datetime T) (--dry-run | --execute)
        --delete-offsets --group G --topic T ...
    coordinator-admin streams-groups --bootstrap-server H:P [...]
        --list [--state [S,...]]
        --describe (--group G ... | --all-groups) [--members | --state | --offsets] [--verbose]
        --delete (--group G ... | --all-groups)
        --delete-offsets --group G (--input-topic T[:P,...] ... | --all-input-topics)

Both read from the coordinators (ListGroups with the type filter, ShareGroupDescribe,
StreamsGroupDescribe, DescribeShareGroupOffsets, OffsetFetch), never the read model: a share
group's start offsets and a streams group's live state (its configured topology is soft state the
state log does not hold) are only the coordinators'. Changes are coordinator requests
(DeleteGroups, AlterShareGroupOffsets, DeleteShareGroupOffsets, OffsetDelete). Columns and messages
are Kafka's; where this tool differs (--reset-offsets, which Kafka 4.1.1's tool does not implement;
every --group described, where 4.1.1's streams tool describes the first listed streams group;
internal topics left to kafka-topics.sh) docs/operations.md says so. Names are printed escaped
(admin_format.visible).
"""

from __future__ import annotations

import argparse

from coordinator.errors import Errors
from coordinator.routing import coordinator_partition

from . import admin_format as fmt

SHARE_STATES = ["Stable", "Dead", "Empty"]
STREAMS_STATES = ["Stable", "Dead", "Empty", "NotReady", "Assigning", "Reconciling"]
SHARE_DESCRIBE_VERSION, STREAMS_DESCRIBE_VERSION = 1, 0
SHARE_OFFSETS_VERSION = 0  # DescribeShareGroupOffsets, AlterShareGroupOffsets, DeleteShareGroupOffsets
OFFSET_DELETE_VERSION = 0
SHARE_RESETS = ("to_earliest", "to_latest", "to_datetime")


# ============================================================================ arguments
def add_parsers(sub, common, epilog: str) -> None:
    s = sub.add_parser(
        "share-groups",
        help="kafka-share-groups.sh: list, describe, reset offsets, delete",
        description="This tool helps to list, describe, reset and delete share groups.",
        epilog=epilog,
    )
    common(s)
    _group_actions(s, "share", reset=True)
    s.add_argument(
        "--topic",
        action="append",
        default=[],
        help="The topic whose offset information should be deleted or included in the reset offset process.",
    )
    s.add_argument(
        "--all-topics",
        action="store_true",
        help="Consider all topics assigned to a share group in the 'reset-offsets' process.",
    )
    s.add_argument("--to-earliest", action="store_true", help="Reset offsets to earliest offset.")
    s.add_argument("--to-latest", action="store_true", help="Reset offsets to latest offset.")
    s.add_argument(
        "--to-datetime", metavar="T", help="Reset offsets to offset from datetime. Format: 'YYYY-MM-DDThh:mm:ss.sss'"
    )
    s.add_argument(
        "--dry-run", action="store_true", help="Only show results without executing changes on share groups."
    )
    s.add_argument("--execute", action="store_true", help="Execute operation. Supported operations: reset-offsets.")
    t = sub.add_parser(
        "streams-groups",
        help="kafka-streams-groups.sh: list, describe, delete",
        description="This tool helps to list, or describe streams groups.",
        epilog=epilog,
    )
    common(t)
    _group_actions(t, "streams", reset=False)
    t.add_argument(
        "--input-topic",
        action="append",
        default=[],
        help="The topic whose offsets should be deleted (topic or topic:0,1,2).",
    )
    t.add_argument(
        "--all-input-topics", action="store_true", help="Consider all input topics of the group (--delete-offsets)."
    )


def _group_actions(p: argparse.ArgumentParser, kind: str, reset: bool) -> None:
    actions = p.add_mutually_exclusive_group(required=True)
    actions.add_argument("--list", action="store_true", help=f"List all {kind} groups.")
    actions.add_argument(
        "--describe", action="store_true", help=f"Describe {kind} group, members and offset information."
    )
    actions.add_argument("--delete", action="store_true", help=f"Delete {kind} group.")
    if reset:
        actions.add_argument(
            "--reset-offsets",
            action="store_true",
            help="Reset offsets of share group (inactive groups, one at a time).",
        )
    actions.add_argument(
        "--delete-offsets", action="store_true", help=f"Delete offsets of {kind} group (one group, several topics)."
    )
    p.add_argument("--group", action="append", default=[], help=f"The {kind} group we wish to act on.")
    p.add_argument("--all-groups", action="store_true", help=f"Apply to all {kind} groups.")
    p.add_argument("--members", action="store_true", help="Describe members of the group.")
    p.add_argument(
        "--offsets", action="store_true", help="Describe the group's partitions with their offsets (default)."
    )
    p.add_argument("--verbose", action="store_true", help="More columns with --describe.")
    p.add_argument(
        "--state",
        nargs="?",
        const="",
        default=None,
        metavar="S,...",
        help="With --list: the states to list; with --describe: the group's state.",
    )


def check_describe_args(ns: argparse.Namespace, scopes: str, usage_error) -> None:
    """The checks of --describe the group tools' options share (Kafka's *CommandOptions.checkArgs)."""
    if not ns.group and not ns.all_groups:
        raise usage_error(f"Option [describe] takes one of these options: {scopes}")
    if sum(bool(x) for x in (ns.members, ns.offsets, ns.state is not None)) > 1:
        raise usage_error("Option [describe] takes at most one of these options: [members], [offsets], [state]")
    if ns.state:
        raise usage_error("Option [describe] does not take a value for [state]")


def check_args(ns: argparse.Namespace, usage_error) -> None:
    """ShareGroupCommandOptions / StreamsGroupCommandOptions.checkArgs."""
    scopes = "[all-groups], [group]"
    if ns.describe:
        check_describe_args(ns, scopes, usage_error)
    elif ns.members or ns.offsets or ns.verbose:
        raise usage_error("Options [members], [offsets] and [verbose] need [describe]")
    if ns.state is not None and not (ns.list or ns.describe):
        raise usage_error("Option [state] can be used only with [list], [describe]")
    if ns.delete and not ns.group and not ns.all_groups:
        raise usage_error(f"Option [delete] takes one of these options: {scopes}")
    if ns.group and ns.all_groups:
        raise usage_error("Option [group] cannot be used with [all-groups]")
    if ns.list and (ns.group or ns.all_groups):
        raise usage_error(
            "Option [group] can be used only with [describe], [delete], [reset-offsets], [delete-offsets]"
        )
    if ns.tool == "share-groups":
        _check_share(ns, usage_error)
    else:
        _check_streams(ns, usage_error)


def _check_share(ns, usage_error) -> None:
    if ns.delete and ns.topic:
        raise usage_error("Option [delete] does not take the option: [topic]")
    if ns.delete_offsets and (len(ns.group) != 1 or not ns.topic):
        raise usage_error("Option [delete-offsets] takes the following options: [group], [topic]")
    chosen = [s for s in SHARE_RESETS if getattr(ns, s) not in (None, False)]
    if ns.reset_offsets:
        if ns.dry_run and ns.execute:
            raise usage_error("Option [reset-offsets] only accepts one of [execute] and [dry-run]")
        if not ns.dry_run and not ns.execute:
            raise usage_error("Option [reset-offsets] takes the option: [execute] or [dry-run]")
        if len(ns.group) != 1:
            raise usage_error("Option [reset-offsets] takes the option: [group]")
        if len(chosen) != 1:
            raise usage_error(
                "Option [reset-offsets] takes one of the following scenarios: [to-datetime], [to-earliest], [to-latest]"
            )
        if bool(ns.topic) == bool(ns.all_topics):
            raise usage_error("One of the reset scopes should be defined: --all-topics, --topic.")
    elif chosen or ns.dry_run or ns.execute or ns.all_topics:
        raise usage_error("Reset scenarios, --all-topics, --dry-run and --execute need [reset-offsets]")
    if ns.topic and not (ns.reset_offsets or ns.delete_offsets):
        raise usage_error("Option [topic] can be used only with [delete], [reset-offsets]")


def _check_streams(ns, usage_error) -> None:
    if ns.delete_offsets:
        if (not ns.input_topic and not ns.all_input_topics) or not ns.group:
            raise usage_error(
                "Option [delete-offsets] takes the [group] and one of these options: [all-input-topics], [input-topic]"
            )
        if len(ns.group) > 1:
            raise usage_error(f"Option [delete-offsets] supports only one [group] at a time, but found: {ns.group}")
    elif ns.input_topic or ns.all_input_topics:
        raise usage_error("Options [input-topic] and [all-input-topics] need [delete-offsets]")


# ============================================================================ the service
class GroupTypeReads:
    """What the two tools ask the coordinators, through the CLI's CoordinatorClient."""

    def __init__(self, ctx, group_type: str):
        self.ctx, self.type = ctx, group_type
        self.not_found: dict[str, str] = {}  # group id -> the coordinator's GROUP_ID_NOT_FOUND message

    def list_groups(self, states: set[str] | None = None) -> list[dict]:
        """ListGroups with the type filter (and the states, as Kafka's admin sends them)."""
        listed = self.ctx.service.admin.list_groups(states=sorted(states or []), types=[self.type])
        return [{"groupId": g["groupId"], "state": g.get("groupState")} for g in listed]

    def describe(self, group_ids: list[str]) -> dict[str, dict | None]:
        """ShareGroupDescribe / StreamsGroupDescribe to each group's coordinator; None for a group
        that does not exist (or is another type: Kafka's GROUP_ID_NOT_FOUND)."""
        api, version = (
            ("ShareGroupDescribe", SHARE_DESCRIBE_VERSION)
            if self.type == "share"
            else ("StreamsGroupDescribe", STREAMS_DESCRIBE_VERSION)
        )
        client = self.ctx.client
        cids = [
            (g, client.send(api, version, {"groupIds": [g], "includeAuthorizedOperations": False}, key=g))
            for g in dict.fromkeys(group_ids)
        ]
        out: dict[str, dict | None] = {}
        for g, cid in cids:
            d = client.wait(cid, self.ctx.timeout_s)["response"]["groups"][0]
            if d["errorCode"] == Errors.GROUP_ID_NOT_FOUND.code or d.get("groupState") == "Dead":
                out[g] = None
                self.not_found[g] = str(d.get("errorMessage") or Errors.GROUP_ID_NOT_FOUND.message)
            elif d["errorCode"] != 0:
                e = Errors.for_code(d["errorCode"])
                raise self.ctx.command_error(f"{api} {fmt.visible(g)}: {e.name}: {d.get('errorMessage') or e.message}")
            else:
                out[g] = d
        return out

    def share_offsets(self, group_id: str) -> list[dict]:
        """DescribeShareGroupOffsets for all the group's share-partitions (Admin.listShareGroupOffsets)."""
        resp = self.ctx.request(
            "DescribeShareGroupOffsets",
            SHARE_OFFSETS_VERSION,
            {"groups": [{"groupId": group_id, "topics": None}]},
            key=group_id,
        )
        g = resp["groups"][0]
        if g["errorCode"] != 0:
            e = Errors.for_code(g["errorCode"])
            raise self.ctx.command_error(f"{e.name}: {g.get('errorMessage') or e.message}")
        return [
            {
                "topic": t["topicName"],
                "partition": p["partitionIndex"],
                "startOffset": p["startOffset"] if p["errorCode"] == 0 and p["startOffset"] >= 0 else None,
                # ListShareGroupOffsetsHandler: no start offset, no OffsetAndMetadata (both "-")
                "leaderEpoch": p["leaderEpoch"]
                if p["errorCode"] == 0 and p["startOffset"] >= 0 and p["leaderEpoch"] >= 0
                else None,
            }
            for t in g["topics"]
            for p in t["partitions"]
        ]


def _ids(ctx, reads: GroupTypeReads) -> list[str]:
    if ctx.ns.all_groups:
        return [g["groupId"] for g in reads.list_groups()]
    return list(dict.fromkeys(ctx.ns.group))


def _states(ctx, valid: list[str]) -> set[str]:
    """--state values for --list (groupStatesFromString): comma separated, case-insensitive, checked."""
    text = ctx.ns.state
    if not text:
        return set()
    by_lower = {v.lower(): v for v in valid}
    values = [s.strip() for s in text.split(",")]
    if any(v.lower() not in by_lower for v in values):
        raise ctx.usage_error(f"Invalid state list '{text}'. Valid states are: {', '.join(valid)}")
    return {by_lower[v.lower()] for v in values}


def _list(ctx, reads: GroupTypeReads, valid: list[str]) -> int:
    if ctx.ns.state is None:
        for g in reads.list_groups():
            ctx.print(fmt.visible(g["groupId"]))
        return 0
    groups = reads.list_groups(_states(ctx, valid))
    ctx.print(list_state_table(groups))
    return 0


def list_state_table(groups: list[dict]) -> str:
    """printGroupInfo: "%-Ns %s" (N = max(15, longest id)), GROUP STATE."""
    width = max([15] + [len(fmt.visible(g["groupId"])) for g in groups])
    lines = [f"{'GROUP':<{width}} STATE"] + [f"{fmt.visible(g['groupId']):<{width}} {g['state']}" for g in groups]
    return "\n".join(lines)


def _coordinator(ctx, group_id: str) -> str:
    return f"{ctx.bootstrap.split(',')[0].strip()}  ({coordinator_partition(group_id, ctx.partitions)})"


def _delete(ctx, reads: GroupTypeReads, kind: str) -> int:
    """deleteShareGroups / deleteGroups of the streams tool: the checks on the listing (a group of
    another type, not Empty), then DeleteGroups for the rest."""
    listed = {g["groupId"]: g["state"] for g in reads.list_groups()}
    ids = list(listed) if ctx.ns.all_groups else list(dict.fromkeys(ctx.ns.group))
    failed: dict[str, str] = {}
    title = kind.capitalize()
    for g in ids:
        state = listed.get(g)
        if state is None:
            failed[g] = (
                f"java.lang.IllegalArgumentException: Group '{fmt.visible(g)}' is not a share group."
                if kind == "share"
                else f"java.lang.IllegalArgumentException: Group '{fmt.visible(g)}' does not exist or is not a streams group."
            )
        elif state == "Dead":
            failed[g] = f"java.lang.IllegalStateException: {title} group '{fmt.visible(g)}' group state is DEAD."
        elif state != "Empty":
            failed[g] = (
                f"org.apache.kafka.common.errors.GroupNotEmptyException: {title} group '{fmt.visible(g)}' is not EMPTY."
            )
    rest = [g for g in ids if g not in failed]
    results = ctx.service.admin.delete_groups(rest) if rest else {}
    ok = []
    for g in rest:
        code = results.get(g, Errors.UNKNOWN_SERVER_ERROR.code)
        if code == 0:
            ok.append(g)
        else:
            e = Errors.for_code(code)
            failed[g] = f"{e.name}: {e.message}"
    quoted = ", ".join(f"'{fmt.visible(g)}'" for g in ok)
    if not failed:
        ctx.print(f"Deletion of requested {kind} groups ({quoted}) was successful.")
        return 0
    ctx.print(f"\nError: Deletion of some {kind} groups failed:")
    for g, why in failed.items():
        ctx.print(f"* Group '{fmt.visible(g)}' could not be deleted due to: {why}")
    if ok:
        ctx.print(f"\nThese {kind} groups were deleted successfully: {quoted}")
    return 1


# ============================================================================ share groups
def share_groups_command(ctx) -> int:
    ns, reads = ctx.ns, GroupTypeReads(ctx, "share")
    if ns.list:
        return _list(ctx, reads, SHARE_STATES)
    if ns.delete:
        return _delete(ctx, reads, "share")
    if ns.reset_offsets:
        return share_reset_offsets(ctx, reads)
    if ns.delete_offsets:
        return share_delete_offsets(ctx)
    ids = sorted(_ids(ctx, reads))
    described = reads.describe(ids)
    rc = 0
    for gid in ids:
        d = described.get(gid)
        if d is None:  # the admin client fails the group with GroupIdNotFoundException
            ctx.print(
                "\nError: Executing share group command failed due to "
                f"org.apache.kafka.common.errors.GroupIdNotFoundException: {fmt.visible(reads.not_found.get(gid, ''))}"
            )
            rc = 1
            continue
        if d["groupState"] == "Empty":
            ctx.warn(f"\nShare group '{fmt.visible(gid)}' has no active members.")
        if ns.members:
            if d["members"]:
                ctx.print(share_members_table(d, ns.verbose))
        elif ns.state is not None:
            ctx.print(share_state_table(d, _coordinator(ctx, gid), ns.verbose))
        else:
            ctx.print(share_offsets_table(gid, reads.share_offsets(gid), ns.verbose))
    return rc


def _w(values, least: int = 15) -> int:
    return max([least] + [len(fmt.visible(v)) for v in values])


def share_members_table(d: dict, verbose: bool) -> str:
    """printMembers: GROUP CONSUMER-ID HOST CLIENT-ID #PARTITIONS [MEMBER-EPOCH] ASSIGNMENT, members
    by id, each line after a newline, ASSIGNMENT as topic:0,1;other:2."""
    members = sorted(d["members"], key=lambda m: m["memberId"])
    gid = d["groupId"]
    widths = [
        _w([gid]),
        _w(m["memberId"] for m in members),
        _w(m["clientHost"] for m in members),
        _w(m["clientId"] for m in members),
        12,
    ]
    header = ["GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS"]
    if verbose:
        widths.append(13)
        header.append("MEMBER-EPOCH")
    lines = [fmt._row([*widths, None], [*header, "ASSIGNMENT"])]
    for m in members:
        tps = m["assignment"]["topicPartitions"]
        row = [gid, m["memberId"], m["clientHost"], m["clientId"], sum(len(t["partitions"]) for t in tps)]
        if verbose:
            row.append(m["memberEpoch"])
        text = ";".join(
            sorted(f"{fmt.visible(t['topicName'])}:{','.join(map(str, sorted(t['partitions'])))}" for t in tps)
        )
        lines.append(fmt._row([*widths, None], [*row, text]))
    return "\n" + "\n".join(lines)


def share_state_table(d: dict, coordinator: str, verbose: bool) -> str:
    """printStates: GROUP COORDINATOR (ID) STATE [GROUP-EPOCH ASSIGNMENT-EPOCH] #MEMBERS."""
    widths = [_w([d["groupId"]]), _w([coordinator], 25), 15]
    header = ["GROUP", "COORDINATOR (ID)", "STATE"]
    row = [d["groupId"], coordinator, d["groupState"]]
    if verbose:
        widths += [12, 17]
        header += ["GROUP-EPOCH", "ASSIGNMENT-EPOCH"]
        row += [d["groupEpoch"], d["assignmentEpoch"]]
    return (
        "\n"
        + fmt._row([*widths, None], [*header, "#MEMBERS"])
        + "\n"
        + fmt._row([*widths, None], [*row, len(d["members"])])
    )


def share_offsets_table(group_id: str, offsets: list[dict], verbose: bool) -> str:
    """printOffsets: GROUP TOPIC PARTITION [LEADER-EPOCH] START-OFFSET, by topic and partition;
    "-" for a share-partition without a start offset."""
    rows = sorted(offsets, key=lambda o: (o["topic"], o["partition"]))
    widths = [_w([group_id]), _w(o["topic"] for o in rows), 10]
    header = ["GROUP", "TOPIC", "PARTITION"]
    if verbose:
        widths.append(13)
        header.append("LEADER-EPOCH")
    lines = [fmt._row([*widths, None], [*header, "START-OFFSET"])]
    for o in rows:
        row = [group_id, o["topic"], o["partition"]] + ([o["leaderEpoch"]] if verbose else [])
        lines.append(fmt._row([*widths, None], [*row, o["startOffset"]]))
    return "\n" + "\n".join(lines) + "\n"


def share_reset_offsets(ctx, reads: GroupTypeReads) -> int:
    """AlterShareGroupOffsets (the service serves it; Kafka 4.1.1's tool says "not yet
    implemented"): the new start offsets of the chosen partitions, planned and shown (--dry-run) or
    sent (--execute). The coordinator refuses a group with members (NON_EMPTY_GROUP)."""
    ns = ctx.ns
    gid = ns.group[0]
    d = reads.describe([gid])[gid]
    if d is not None and d["groupState"] not in ("Empty", "Dead"):
        ctx.print(
            f"\nError: Share group '{fmt.visible(gid)}' is not empty (state {d['groupState']}): "
            "offsets can only be reset while it has no members."
        )
        return 1
    if ns.all_topics:
        tps = sorted({(o["topic"], o["partition"]) for o in (reads.share_offsets(gid) if d is not None else [])})
    else:
        tps = []
        for arg in ns.topic:
            topic, parts = fmt.parse_topic_partitions(arg)
            if parts is None:
                parts = ctx.topic_partitions(topic)
                if parts is None:
                    raise ctx.command_error(f"Topic '{fmt.visible(topic)}' does not exist (UNKNOWN_TOPIC_OR_PARTITION)")
            tps += [(topic, p) for p in parts]
        tps = sorted(dict.fromkeys(tps))
    if ns.to_earliest:
        new = ctx.log_offsets(tps, "beginning")
    elif ns.to_latest:
        new = ctx.log_offsets(tps, "end")
    else:
        at = ctx.offsets_for_time(tps, fmt.parse_datetime(ns.to_datetime))
        ends = ctx.log_offsets([tp for tp, o in at.items() if o is None], "end")
        new = {tp: (o if o is not None else ends.get(tp)) for tp, o in at.items()}
    new = {tp: o for tp, o in new.items() if o is not None}
    if ns.execute and new:
        topics: dict[str, list] = {}
        for (t, p), o in sorted(new.items()):
            topics.setdefault(t, []).append({"partitionIndex": p, "startOffset": o})
        resp = ctx.request(
            "AlterShareGroupOffsets",
            SHARE_OFFSETS_VERSION,
            {"groupId": gid, "topics": [{"topicName": t, "partitions": ps} for t, ps in topics.items()]},
            key=gid,
        )
        if resp["errorCode"] != 0:
            e = Errors.for_code(resp["errorCode"])
            raise ctx.command_error(
                f"Executing share group command failed due to {e.name}: {resp.get('errorMessage') or e.message}"
            )
        failed = [
            f"{fmt.visible(t['topicName'])}-{p['partitionIndex']}: {Errors.for_code(p['errorCode']).name}"
            for t in resp["responses"]
            for p in t["partitions"]
            if p["errorCode"] != 0
        ]
        if failed:
            raise ctx.command_error(f"Executing share group command failed for {', '.join(failed)}")
    rows = [{"topic": t, "partition": p, "startOffset": o, "leaderEpoch": None} for (t, p), o in sorted(new.items())]
    ctx.print(share_offsets_table(gid, rows, verbose=False))
    return 0


def share_delete_offsets(ctx) -> int:
    """DeleteShareGroupOffsets: the top-level error (Kafka's messages), then TOPIC STATUS."""
    gid, topics = ctx.ns.group[0], list(dict.fromkeys(ctx.ns.topic))
    resp = ctx.request(
        "DeleteShareGroupOffsets",
        SHARE_OFFSETS_VERSION,
        {"groupId": gid, "topics": [{"topicName": t} for t in topics]},
        key=gid,
    )
    top = Errors.for_code(resp["errorCode"])
    answered = {t["topicName"]: t for t in resp.get("responses") or []}
    results: dict[str, str | None] = {}
    for t in topics:
        r = answered.get(t)
        if top != Errors.NONE:
            results[t] = resp.get("errorMessage") or top.message
        elif r is None or r["errorCode"] == 0:
            results[t] = None
        else:
            results[t] = r.get("errorMessage") or Errors.for_code(r["errorCode"]).message
    if top in (
        Errors.INVALID_GROUP_ID,
        Errors.GROUP_ID_NOT_FOUND,
        Errors.GROUP_AUTHORIZATION_FAILED,
        Errors.NON_EMPTY_GROUP,
    ):
        ctx.print(f"\nError: {resp.get('errorMessage') or top.message}")
    elif top not in (Errors.NONE, Errors.TOPIC_AUTHORIZATION_FAILED, Errors.UNKNOWN_TOPIC_OR_PARTITION):
        ctx.print(f"\nError: Encounter some unknown error: {top.name}")
    width = _w(results)
    lines = [""] + [f"{'TOPIC':<{width}} STATUS"]
    for t in sorted(results):
        status = "Successful" if results[t] is None else f"Error: {results[t]}"
        lines.append(f"{fmt.visible(t):<{width}} {status}")
    ctx.print("\n".join(lines))
    return 0 if top == Errors.NONE and not any(results.values()) else 1


# ============================================================================ streams groups
def streams_groups_command(ctx) -> int:
    ns, reads = ctx.ns, GroupTypeReads(ctx, "streams")
    if ns.list:
        return _list(ctx, reads, STREAMS_STATES)
    if ns.delete:
        return _delete(ctx, reads, "streams")
    if ns.delete_offsets:
        return streams_delete_offsets(ctx, reads)
    ids = sorted(_ids(ctx, reads))
    described = reads.describe(ids)
    rc = 0
    for gid in ids:
        d = described.get(gid)
        if d is None:  # the admin client describes an unknown group as a Dead one
            ctx.print(f"\nError: Streams group '{fmt.visible(gid)}' does not exist.")
            rc = 1
            if ns.state is not None:
                dead = {"groupId": gid, "groupState": "Dead", "groupEpoch": -1, "assignmentEpoch": -1, "members": []}
                ctx.print(streams_state_table(dead, _coordinator(ctx, gid), ns.verbose))
            continue
        if ns.state is not None:
            if d["groupState"] == "Empty":
                ctx.print(f"\nError: Streams group '{fmt.visible(gid)}' has no active members.")
            ctx.print(streams_state_table(d, _coordinator(ctx, gid), ns.verbose))
            continue
        if not d["members"]:
            continue  # isGroupStateValid: nothing to print for a group without members
        if d["groupState"] == "Empty":
            ctx.print(f"\nError: Streams group '{fmt.visible(gid)}' has no active members.")
        if ns.members:
            ctx.print(streams_members_table(d, ns.verbose))
        else:
            ctx.print(streams_offsets_table(gid, streams_offset_rows(ctx, d), ns.verbose))
    return rc


def _source_topics(d: dict) -> dict[str, list[str]]:
    """Each subtopology's source and repartition source topics (getTopicPartitions)."""
    out = {}
    for s in (d.get("topology") or {}).get("subtopologies") or []:
        out[s["subtopologyId"]] = list(s.get("sourceTopics") or []) + [
            t["name"] for t in s.get("repartitionSourceTopics") or []
        ]
    return out


def streams_offset_rows(ctx, d: dict) -> list[list]:
    """getOffsets: the partitions of the members' active tasks; CURRENT-OFFSET the committed offset
    (of a source topic), LAG log end - committed, or log end - log start without a commit."""
    sources = _source_topics(d)
    tps = sorted(
        {
            (topic, p)
            for m in d["members"]
            for task in m["assignment"]["activeTasks"]
            for topic in sources.get(task["subtopologyId"], [])
            for p in task["partitions"]
        }
    )
    source_topics = {
        t for s in (d.get("topology") or {}).get("subtopologies") or [] for t in s.get("sourceTopics") or []
    }
    committed = {tp: o for tp, o in ctx.service.offsets(d["groupId"]).items() if tp[0] in source_topics}
    earliest, latest = ctx.log_offsets(tps, "beginning"), ctx.log_offsets(tps, "end")
    rows = []
    for tp in tps:
        if tp not in latest:
            continue
        current = committed.get(tp)
        lag = latest[tp] - (current if current is not None else earliest.get(tp, 0))
        rows.append([d["groupId"], tp[0], tp[1], current, None, latest[tp], lag])
    return rows


def streams_offsets_table(group_id: str, rows: list[list], verbose: bool) -> str:
    """printOffsets: GROUP TOPIC PARTITION [CURRENT-OFFSET LEADER-EPOCH LOG-END-OFFSET] OFFSET-LAG."""
    g, t = _w([group_id]), _w(r[1] for r in rows)
    if not verbose:
        lines = [fmt._row([g, t, 10, None], ["GROUP", "TOPIC", "PARTITION", "OFFSET-LAG"])]
        lines += [fmt._row([g, t, 10, None], [r[0], r[1], r[2], r[6]]) for r in rows]
    else:
        widths = [g, t, 10, 15, 15, 15, 15]
        lines = [
            fmt._row(
                widths,
                ["GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LEADER-EPOCH", "LOG-END-OFFSET", "OFFSET-LAG"],
            )
        ]
        lines += [fmt._row(widths, [r[0], r[1], r[2], r[3], r[4], r[5], r[6]]) for r in rows]
    return "\n".join(lines)


def _task_text(assignment: dict, prefix: str = "") -> str:
    """prepareTaskType per kind: "ACTIVE: 0:[0,1]; 1:[2]; " (empty kinds left out)."""
    out = ""
    for kind, field in (("ACTIVE", "activeTasks"), ("STANDBY", "standbyTasks"), ("WARMUP", "warmupTasks")):
        tasks = assignment.get(field) or []
        if tasks:
            out += f"{prefix}{kind}: " + "".join(
                f"{fmt.visible(t['subtopologyId'])}:[{','.join(map(str, t['partitions']))}]; " for t in tasks
            )
    return out


def streams_members_table(d: dict, verbose: bool) -> str:
    """printMembers: GROUP MEMBER PROCESS CLIENT-ID ASSIGNMENTS; verbose adds TARGET-ASSIGNMENT-EPOCH,
    TOPOLOGY-EPOCH, MEMBER-PROTOCOL, MEMBER-EPOCH and the target tasks."""
    members, gid = d["members"], d["groupId"]
    g, m_w = _w([gid]), _w(m["memberId"] for m in members)
    p_w, c_w = _w(m["processId"] for m in members), _w(m["clientId"] for m in members)
    topology_epoch = (d.get("topology") or {}).get("epoch", -1)
    if not verbose:
        widths = [g, m_w, p_w, c_w, None]
        lines = [fmt._row(widths, ["GROUP", "MEMBER", "PROCESS", "CLIENT-ID", "ASSIGNMENTS"])]
        lines += [
            fmt._row(widths, [gid, m["memberId"], m["processId"], m["clientId"], _task_text(m["assignment"])])
            for m in members
        ]
        return "\n".join(lines)

    # Kafka's format has no space between TOPOLOGY-EPOCH's column and MEMBER's ("%-15s%-Ns").
    def line(values):
        head = fmt._row([g, 25, 15], values[:3])
        return head + fmt._row([m_w, 15, 15, p_w, c_w, None], values[3:])

    lines = [
        line(
            [
                "GROUP",
                "TARGET-ASSIGNMENT-EPOCH",
                "TOPOLOGY-EPOCH",
                "MEMBER",
                "MEMBER-PROTOCOL",
                "MEMBER-EPOCH",
                "PROCESS",
                "CLIENT-ID",
                "ASSIGNMENTS",
            ]
        )
    ]
    for m in members:
        tasks = _task_text(m["assignment"]) + _task_text(m["targetAssignment"], "TARGET-")
        lines.append(
            line(
                [
                    gid,
                    d["assignmentEpoch"],
                    topology_epoch,
                    m["memberId"],
                    "classic" if m.get("isClassic") else "streams",
                    m["memberEpoch"],
                    m["processId"],
                    m["clientId"],
                    tasks,
                ]
            )
        )
    return "\n".join(lines)


def streams_state_table(d: dict, coordinator: str, verbose: bool) -> str:
    """printStates: GROUP COORDINATOR (ID) STATE [GROUP-EPOCH TARGET-ASSIGNMENT-EPOCH] #MEMBERS."""
    # Kafka's streams tool separates host:port and the id by one space.
    coordinator = coordinator.replace("  (", " (")
    widths = [_w([d["groupId"]]), _w([coordinator], 25), 25]
    header = ["GROUP", "COORDINATOR (ID)", "STATE"]
    row = [d["groupId"], coordinator, d["groupState"]]
    if verbose:
        widths += [15, 25]
        header += ["GROUP-EPOCH", "TARGET-ASSIGNMENT-EPOCH"]
        row += [d["groupEpoch"], d["assignmentEpoch"]]
    return (
        fmt._row([*widths, None], [*header, "#MEMBERS"]) + "\n" + fmt._row([*widths, None], [*row, len(d["members"])])
    )


def streams_delete_offsets(ctx, reads: GroupTypeReads) -> int:
    """OffsetDelete of the group's input-topic partitions (Admin.deleteStreamsGroupOffsets)."""
    gid = ctx.ns.group[0]
    results: dict[tuple[str, int], str | None] = {}
    wanted: set[tuple[str, int]] = set()
    if ctx.ns.all_input_topics:
        d = reads.describe([gid])[gid]
        sources = {
            t for s in ((d or {}).get("topology") or {}).get("subtopologies") or [] for t in s.get("sourceTopics") or []
        }
        wanted = {tp for tp in ctx.service.offsets(gid) if tp[0] in sources}
    for arg in ctx.ns.input_topic:
        topic, parts = fmt.parse_topic_partitions(arg)
        if parts is None:
            parts = ctx.topic_partitions(topic)
            if parts is None:
                results[(topic, -1)] = Errors.UNKNOWN_TOPIC_OR_PARTITION.message
                continue
        wanted |= {(topic, p) for p in parts}
    top = Errors.NONE
    if wanted:
        by_topic: dict[str, list[int]] = {}
        for t, p in sorted(wanted):
            by_topic.setdefault(t, []).append(p)
        resp = ctx.request(
            "OffsetDelete",
            OFFSET_DELETE_VERSION,
            {
                "groupId": gid,
                "topics": [
                    {"name": t, "partitions": [{"partitionIndex": p} for p in ps]} for t, ps in by_topic.items()
                ],
            },
            key=gid,
        )
        top = Errors.for_code(resp["errorCode"])
        answered = {(t["name"], p["partitionIndex"]): p["errorCode"] for t in resp["topics"] for p in t["partitions"]}
        for tp in wanted:
            code = answered.get(tp, resp["errorCode"])
            results[tp] = None if code == 0 else Errors.for_code(code).message
            if code != 0 and top == Errors.NONE:
                top = Errors.for_code(code)
    if top == Errors.NONE and any(results.values()):
        top = Errors.UNKNOWN_TOPIC_OR_PARTITION
    if top == Errors.NONE:
        ctx.print(f"Request succeeded for deleting offsets from group {fmt.visible(gid)}.")
    elif top in (
        Errors.INVALID_GROUP_ID,
        Errors.GROUP_ID_NOT_FOUND,
        Errors.GROUP_AUTHORIZATION_FAILED,
        Errors.NON_EMPTY_GROUP,
    ):
        ctx.print(f"\nError: {top.message}")
    elif top in (
        Errors.GROUP_SUBSCRIBED_TO_TOPIC,
        Errors.TOPIC_AUTHORIZATION_FAILED,
        Errors.UNKNOWN_TOPIC_OR_PARTITION,
    ):
        ctx.print("\nError: Encountered some partition-level error, see the follow-up details.")
    else:
        ctx.print(f"\nError: Encountered some unknown error: {top.name}")
    width = _w(t for t, _ in results)
    lines = ["", fmt._row([width, 10, 15], ["TOPIC", "PARTITION", "STATUS"])]
    for (t, p), error in sorted(results.items(), key=lambda kv: kv[0][0] + str(kv[0][1])):
        status = "Successful" if error is None else f"Error: {error}"
        lines.append(fmt._row([width, 10, 15], [t, p if p >= 0 else "-", status]))
    ctx.print("\n".join(lines))
    return 0 if top == Errors.NONE else 1
