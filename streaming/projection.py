"""Folding state-log records into the Redis read model (pure: no Spark, no Redis I/O).

The projector (streaming/projector.py) reads from Redis what the fold needs of the entities a
micro-batch's records name, and only those (`Projection.load_group`): a batch costs what its records
cost, not what the model holds. The `Projection` folds the records in state-log order (`apply`) and
returns the writes (`writes`): Redis commands the projector sends in one MULTI/EXEC with the new
state-log positions.

Keys (prefix `p`, docs/operations.md *The Redis read model*):
    p:groups, p:group:<g>, p:offsets:<g>, p:shareoffsets:<g>, p:txns, p:txn:<t>, p:projector
                      (the read model)
    p:aux:group:<g>   the group's records as the log last had them (GroupMetadata, the
                      ConsumerGroup* records per member, the ShareGroup* / StreamsGroup* records),
                      from which p:group:<g> is recomputed; kept in Redis so that a restarted
                      projector needs nothing but Redis and its checkpoint.

A group's state is what a coordinator loading the log would derive (Kafka's replay), computed by the
core's own functions: a classic group with members is Stable, one without Empty (a rebalance in
progress is not in the log); a consumer group's state follows ConsumerGroup.maybeUpdateGroupState,
a share group's ShareGroup.maybeUpdateGroupState, a streams group's StreamsGroup's (Kafka 4.2+: from
the validated topology epoch of its StreamsGroupMetadata record, so exact too; 4.1's depended on the
configured topology, soft state a loaded coordinator lacks until the next heartbeat).

A share group's progress is the share coordinator's state (ShareSnapshot / ShareUpdate records,
keyed by topic id): p:shareoffsets:<g> holds each share-partition's start offset by
"topicId:partition"; the group hash maps the topic ids to names (`shareTopics`, from
ShareGroupStatePartitionMetadata).
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field

from coordinator.group.classic.consumer_protocol import SchemaError, decode_assignment, parse_subscription_topics
from coordinator.group.consumer._java import order_key
from coordinator.group.consumer.group_state import derive_group_state, preferred_server_assignor
from coordinator.group.consumer.member import ConsumerGroupMember
from coordinator.group.share import group as share
from coordinator.group.streams import group as streams
from coordinator.group.streams.member import StreamsGroupMember
from coordinator.group.streams.tasks import TasksTuple, tasks_to_wire
from coordinator.records import parse_record_key
from coordinator.share.simple_assignor import SIMPLE_ASSIGNOR_NAME
from coordinator.txn.metadata import TransactionState

log = logging.getLogger("projector")
CONSUMER_RECORDS = {
    "ConsumerGroupMetadata",
    "ConsumerGroupMemberMetadata",
    "ConsumerGroupTargetAssignmentMember",
    "ConsumerGroupTargetAssignmentMetadata",
    "ConsumerGroupCurrentMemberAssignment",
}
# Member-scoped consumer records -> their field prefix in the aux hash.
MEMBER_FIELDS = {
    "ConsumerGroupMemberMetadata": "member:",
    "ConsumerGroupCurrentMemberAssignment": "current:",
    "ConsumerGroupTargetAssignmentMember": "target:",
}
# Share and streams group records: kept in the aux hash under their own kind ("<kind>" for the
# group's records, "<kind>:<memberId>" for a member's).
SHARE_RECORDS, STREAMS_RECORDS = set(share.RECORD_TYPES), set(streams.RECORD_TYPES)
SHARE_MEMBER_RECORDS = {share.R_MEMBER, share.R_CURRENT, share.R_TARGET}
STREAMS_MEMBER_RECORDS = {streams.R_MEMBER, streams.R_CURRENT, streams.R_TARGET}
SHARE_STATE_RECORDS = ("ShareSnapshot", "ShareUpdate")  # the share coordinator's (coordinator/share)


@dataclass(frozen=True)
class StateRecord:
    """One state-log record: its Kafka partition and offset, key (JSON array) and value (None: tombstone)."""

    partition: int
    offset: int
    key: str
    value: dict | None

    @staticmethod
    def of(partition: int, offset: int, key: str | None, value: str | bytes | None) -> StateRecord | None:
        """From the Kafka record; None when it is not a state record the projection can read."""
        if key is None:
            return None
        try:
            kind, _ = parse_record_key(key)
            parsed = None if value is None else json.loads(value)
        except (ValueError, TypeError, IndexError, KeyError):
            return None
        if not isinstance(kind, str):
            return None
        if parsed is not None and not isinstance(parsed, dict):
            return None
        return StateRecord(int(partition), int(offset), key, parsed)


@dataclass
class GroupAux:
    """What the projection keeps of one group between batches (p:aux:group:<g>), decoded, and what
    it needs to know of the group's offsets (whether any are left)."""

    fields: dict = field(default_factory=dict)  # aux field -> decoded JSON value
    offset_count: int = 0  # entries in p:offsets:<g> before this batch
    offset_before: dict = field(default_factory=dict)  # touched "topic:partition" -> existed before
    offset_now: dict = field(default_factory=dict)  # touched "topic:partition" -> exists now
    changed: bool = False  # fields changed: the aux hash is rewritten

    def offsets_left(self) -> int:
        return self.offset_count + sum(
            int(now) - int(self.offset_before.get(f, False)) for f, now in self.offset_now.items()
        )


class Projection:
    """The fold of one batch. Usage: `touched(records)` -> `load_group` each (what Redis has of
    them; groups not loaded start empty) -> `apply` each record -> `writes()`."""

    def __init__(self, prefix: str = "coord", default_assignor: str | None = "uniform"):
        self.p = prefix
        self.default_assignor = default_assignor
        self.groups: dict[str, GroupAux] = {}
        self.group_offsets: dict[str, dict[str, str | None]] = {}  # group -> field -> JSON or None (deleted)
        # group -> "topicId:partition" -> share-partition start offset JSON, or None (deleted)
        self.share_offsets: dict[str, dict[str, str | None]] = {}
        self.group_position: dict[str, tuple[int, int]] = {}  # group -> (partition, newest offset)
        self.txns: dict[str, dict | None] = {}  # transactional id -> hash or None (deleted)
        self.positions: dict[int, int] = {}  # state-log partition -> next offset

    # ------------------------------------------------------------------ keys
    def key(self, *parts) -> str:
        return ":".join([self.p, *map(str, parts)])

    # ------------------------------------------------------------------ loading
    @staticmethod
    def touched(records) -> tuple[set[str], dict[str, set[str]]]:
        """The group ids the records name, and per group the offset fields they touch."""
        groups: set[str] = set()
        offset_fields: dict[str, set[str]] = {}
        for r in records:
            kind, ids = parse_record_key(r.key)
            if not ids:
                continue
            if kind == "GroupMetadata" or kind in CONSUMER_RECORDS or kind in SHARE_RECORDS or kind in STREAMS_RECORDS:
                groups.add(str(ids[0]))
            elif kind == "OffsetCommit" and len(ids) == 3:
                groups.add(str(ids[0]))
                offset_fields.setdefault(str(ids[0]), set()).add(f"{ids[1]}:{ids[2]}")
        return groups, offset_fields

    def load_group(self, group_id: str, aux_hash: dict, offset_count: int, existing_fields: dict[str, bool]) -> None:
        """Install a group as Redis has it: its aux hash (str -> JSON), how many offsets it has,
        and whether each offset field this batch touches exists."""
        self.groups[group_id] = GroupAux(
            {k: json.loads(v) for k, v in aux_hash.items()}, int(offset_count), dict(existing_fields)
        )

    # ------------------------------------------------------------------ folding
    def apply(self, r: StateRecord) -> None:
        """Fold one record (records of a partition in offset order; each partition on its own)."""
        if r.offset < self.positions.get(r.partition, 0):
            return  # already folded (a replayed batch): the read model holds it
        self.positions[r.partition] = r.offset + 1
        try:
            self._fold(r)
        except (ValueError, TypeError, KeyError, AttributeError) as e:
            # Only the service writes the state log, so this is a bug or a newer record shape: the
            # record is left out (and said so) rather than stopping the read model for good.
            log.warning(
                "state-log record %s at %d/%d left out of the read model: %r", r.key[:200], r.partition, r.offset, e
            )

    def _fold(self, r: StateRecord) -> None:
        kind, ids = parse_record_key(r.key)
        if kind == "TransactionLog" and ids:
            self._txn(str(ids[0]), r)
        elif kind == "OffsetCommit" and len(ids) == 3:
            self._offset(str(ids[0]), str(ids[1]), int(ids[2]), r)
        elif kind == "GroupMetadata" and ids:
            self._group_field(str(ids[0]), "classic", r.value, r)
        elif kind == "ConsumerGroupMetadata" and ids:
            self._group_field(str(ids[0]), "consumer", r.value, r)
        elif kind == "ConsumerGroupTargetAssignmentMetadata" and ids:
            self._group_field(
                str(ids[0]), "targetEpoch", None if r.value is None else r.value.get("assignmentEpoch"), r
            )
        elif kind in MEMBER_FIELDS and len(ids) == 2:
            self._group_field(str(ids[0]), MEMBER_FIELDS[kind] + str(ids[1]), r.value, r)
        elif kind in SHARE_MEMBER_RECORDS or kind in STREAMS_MEMBER_RECORDS:
            if len(ids) == 2:
                self._group_field(str(ids[0]), f"{kind}:{ids[1]}", r.value, r)
        elif (kind in SHARE_RECORDS or kind in STREAMS_RECORDS) and ids:
            self._group_field(str(ids[0]), kind, r.value, r)
        elif kind in SHARE_STATE_RECORDS and len(ids) >= 3:
            self._share_offset(kind, str(ids[0]), str(ids[1]), int(ids[2]), r)
        # Anything else (pending transactional offsets, markers, producer-id blocks, regexes) is
        # not in the read model: committed offsets of a transaction are re-appended as OffsetCommit.

    def _aux(self, group_id: str) -> GroupAux:
        if group_id not in self.groups:  # not loaded: a new group (tests fold without Redis)
            self.load_group(group_id, {}, 0, {})
        return self.groups[group_id]

    def _group_field(self, group_id: str, name: str, value, r: StateRecord) -> None:
        aux = self._aux(group_id)
        if value is None:
            aux.fields.pop(name, None)
        else:
            aux.fields[name] = value
        aux.changed = True
        self.group_position[group_id] = (r.partition, r.offset)

    def _offset(self, group_id: str, topic: str, partition: int, r: StateRecord) -> None:
        if r.value is not None and r.value.get("producerId", -1) >= 0:
            return  # a pending transactional offset (older record shape): not committed
        aux = self._aux(group_id)
        name = f"{topic}:{partition}"
        offsets = self.group_offsets.setdefault(group_id, {})
        if r.value is None:
            offsets[name] = None
            aux.offset_now[name] = False
        else:
            v = r.value
            offsets[name] = json.dumps(
                {
                    "committedOffset": v.get("offset"),
                    "committedLeaderEpoch": v.get("leaderEpoch", -1),
                    "metadata": v.get("metadata") or "",
                    "commitTimestamp": v.get("commitTimestamp", -1),
                    "stateLogOffset": r.offset,
                },
                separators=(",", ":"),
            )
            aux.offset_now[name] = True
        self.group_position[group_id] = (r.partition, r.offset)

    def _share_offset(self, kind: str, group_id: str, topic_id: str, partition: int, r: StateRecord) -> None:
        """A share-partition's start offset: a snapshot sets it (its tombstone deletes the
        share-partition), an update sets it unless it says -1 (unchanged); an update's tombstone
        only frees its slot (ShareCoordinatorShard's replay)."""
        name = f"{topic_id}:{partition}"
        offsets = self.share_offsets.setdefault(group_id, {})
        if r.value is None:
            if kind == "ShareSnapshot":
                offsets[name] = None
            return
        start = int(r.value.get("startOffset", -1))
        if kind == "ShareUpdate" and start == -1:
            return
        offsets[name] = json.dumps(
            {"startOffset": start, "leaderEpoch": r.value.get("leaderEpoch", -1), "stateLogOffset": r.offset},
            separators=(",", ":"),
        )

    def _txn(self, tid: str, r: StateRecord) -> None:
        v = r.value
        if v is None:
            self.txns[tid] = None
            return
        try:
            state = TransactionState.from_id(v["transactionStatus"]).state_name
        except Exception:  # noqa: BLE001 - a state id from a newer version: shown as is
            state = str(v.get("transactionStatus"))
        partitions = [
            {"topic": e["topic"], "partitions": list(e["partitionIds"])} for e in (v.get("transactionPartitions") or [])
        ]
        self.txns[tid] = {
            "transactionalId": tid,
            "state": state,
            "producerId": v.get("producerId", -1),
            "producerEpoch": v.get("producerEpoch", -1),
            "timeoutMs": v.get("transactionTimeoutMs", -1),
            "partitions": json.dumps(partitions, separators=(",", ":")),
            "startTimestamp": v.get("transactionStartTimestampMs", -1),
            "lastUpdateTimestamp": v.get("transactionLastUpdateTimestampMs", -1),
            "coordinatorPartition": r.partition,
            "stateLogPartition": r.partition,
            "stateLogOffset": r.offset,
        }

    # ------------------------------------------------------------------ the group hash
    def group_hash(self, group_id: str) -> dict | None:
        """p:group:<g> for a touched group as the fold leaves it; None when the group is gone."""
        aux = self.groups[group_id]
        partition, offset = self.group_position[group_id]
        f = aux.fields
        base = {
            "groupId": group_id,
            "coordinatorPartition": partition,
            "stateLogPartition": partition,
            "stateLogOffset": offset,
        }
        if "consumer" in f or any(k.startswith(("member:", "current:")) for k in f):
            return {**base, **self._consumer_group(f)}
        if any(k.startswith("ShareGroup") for k in f):
            return {**base, **share_group(f)}
        if any(k.startswith("StreamsGroup") for k in f):
            return {**base, **streams_group(f)}
        if "classic" in f:
            return {**base, **classic_group(f["classic"])}
        if aux.offsets_left() > 0:  # offsets without a group: a simple group, as a loading coordinator makes one
            return {**base, "type": "classic", "state": "Empty", "protocolType": "", "generation": 0, "members": "[]"}
        return None

    def _consumer_group(self, f: dict) -> dict:
        member_ids = sorted({k.split(":", 1)[1] for k in f if k.startswith(("member:", "current:"))}, key=order_key)
        models, members = [], []
        for m in member_ids:
            model = (
                ConsumerGroupMember(m)
                .with_metadata_value(f.get("member:" + m) or {})
                .with_assignment_value(f.get("current:" + m) or {})
            )
            models.append(model)
            members.append(
                {
                    **_member_identity(model),
                    "subscribedTopicNames": sorted(model.subscribed_topic_names, key=order_key),
                    "subscribedTopicRegex": model.subscribed_topic_regex or "",
                    "assignment": topic_partitions((f.get("current:" + m) or {}).get("assignedPartitions")),
                    "targetAssignment": topic_partitions((f.get("target:" + m) or {}).get("topicPartitions")),
                }
            )
        group_epoch = (f.get("consumer") or {}).get("epoch", 0)
        target_epoch = f.get("targetEpoch", 0) or 0
        state = derive_group_state(models, group_epoch, target_epoch)
        return {
            "type": "consumer",
            "state": str(state),
            "protocolType": "consumer",
            "protocol": preferred_server_assignor(models, self.default_assignor),
            "generation": group_epoch,
            "assignmentEpoch": target_epoch,
            "members": json.dumps(members, separators=(",", ":")),
        }

    # ------------------------------------------------------------------ output
    def writes(self, now_ms: int) -> list[tuple]:
        """The Redis commands of this fold, in order: (command, *args)."""
        out: list[tuple] = []
        for g, aux in self.groups.items():
            if g not in self.group_position:
                continue  # loaded but not changed (e.g. only a pending transactional offset)
            for name, value in self.group_offsets.get(g, {}).items():
                out.append(
                    ("HDEL", self.key("offsets", g), name)
                    if value is None
                    else ("HSET", self.key("offsets", g), name, value)
                )
            h = self.group_hash(g)
            out.append(("DEL", self.key("group", g)))
            if aux.changed:
                out.append(("DEL", self.key("aux", "group", g)))
                if aux.fields:
                    out.append(
                        (
                            "HSET",
                            self.key("aux", "group", g),
                            *_flat({k: json.dumps(v, separators=(",", ":")) for k, v in aux.fields.items()}),
                        )
                    )
            if h is None:
                out.append(("SREM", self.key("groups"), g))
            else:
                out.append(("HSET", self.key("group", g), *_flat(h)))
                out.append(("SADD", self.key("groups"), g))
        for g, offsets in self.share_offsets.items():
            for name, value in offsets.items():
                key = self.key("shareoffsets", g)
                out.append(("HDEL", key, name) if value is None else ("HSET", key, name, value))
        for t, h in self.txns.items():
            out.append(("DEL", self.key("txn", t)))
            if h is None:
                out.append(("SREM", self.key("txns"), t))
            else:
                out.append(("HSET", self.key("txn", t), *_flat(h)))
                out.append(("SADD", self.key("txns"), t))
        if self.positions:
            out.append(
                (
                    "HSET",
                    self.key("projector"),
                    *_flat({**{f"offset:{p}": o for p, o in sorted(self.positions.items())}, "updatedAt": now_ms}),
                )
            )
        return out


def classic_group(v: dict) -> dict:
    """The group hash fields of a classic group from its GroupMetadata value (Kafka's load: Stable
    with members, Empty without)."""
    consumer_protocol = v.get("protocolType") == "consumer"
    members = []
    for m in v.get("members") or []:
        member = {
            "memberId": m.get("memberId"),
            "groupInstanceId": m.get("groupInstanceId"),
            "clientId": m.get("clientId"),
            "clientHost": m.get("clientHost"),
        }
        if consumer_protocol:  # the embedded protocol is readable: show topics and partitions
            try:
                member["subscribedTopicNames"] = parse_subscription_topics(m.get("subscription") or "")
            except (SchemaError, ValueError):
                member["subscribedTopicNames"] = None
            try:
                member["assignment"] = topic_partitions(decode_assignment(m.get("assignment") or "").as_dict())
            except (SchemaError, ValueError):
                member["assignment"] = None
        members.append(member)
    out = {
        "type": "classic",
        "state": "Stable" if members else "Empty",
        "protocolType": v.get("protocolType") or "",
        "generation": v.get("generation", 0),
        "members": json.dumps(members, separators=(",", ":")),
    }
    if v.get("protocol") is not None:
        out["protocol"] = v["protocol"]
    if v.get("leader") is not None:
        out["leader"] = v["leader"]
    return out


def _member_identity(model) -> dict:
    """The fields a consumer or streams group member's read-model entry starts with."""
    return {
        "memberId": model.member_id,
        "groupInstanceId": model.instance_id,
        "rackId": model.rack_id,
        "clientId": model.client_id,
        "clientHost": model.client_host,
        "memberEpoch": model.member_epoch,
        "memberState": model.state.name,
    }


def _members_of(f: dict, kind: str) -> list[str]:
    """The member ids of a share / streams group's aux fields (its members' metadata and current
    assignment records), in Java's order."""
    return sorted(
        {k.split(":", 1)[1] for k in f if k.startswith((f"{kind}MemberMetadata:", f"{kind}CurrentMemberAssignment:"))},
        key=order_key,
    )


def share_group(f: dict) -> dict:
    """The group hash fields of a share group, its state derived by the core's ShareGroup."""
    group = share.ShareGroup("")
    members = []
    for m in _members_of(f, "ShareGroup"):
        model = (
            share.ShareGroupMember(m)
            .with_metadata_value(f.get(f"{share.R_MEMBER}:{m}") or {})
            .with_assignment_value(f.get(f"{share.R_CURRENT}:{m}") or {})
        )
        group.update_member(model)
        members.append(
            {
                "memberId": m,
                "rackId": model.rack_id,
                "clientId": model.client_id,
                "clientHost": model.client_host,
                "memberEpoch": model.member_epoch,
                "subscribedTopicNames": sorted(map(str, model.subscribed_topic_names), key=order_key),
                "assignment": topic_partitions(dict(model.assigned_partitions)),
                "targetAssignment": topic_partitions((f.get(f"{share.R_TARGET}:{m}") or {}).get("topicPartitions")),
            }
        )
    spm = f.get(share.R_STATE_PARTITION_METADATA) or {}
    topics = {
        t["topicId"]: t["topicName"]
        for part in ("initializingTopics", "initializedTopics")
        for t in spm.get(part) or []
    }
    return {
        "type": "share",
        "state": group.state,
        "protocolType": share.SHARE_PROTOCOL_TYPE,
        "protocol": SIMPLE_ASSIGNOR_NAME,
        "generation": (f.get(share.R_GROUP) or {}).get("epoch", 0),
        "assignmentEpoch": (f.get(share.R_TARGET_EPOCH) or {}).get("assignmentEpoch", 0),
        "members": json.dumps(members, separators=(",", ":")),
        "shareTopics": json.dumps(topics, separators=(",", ":")),
    }


def streams_group(f: dict) -> dict:
    """The group hash fields of a streams group, its state derived by the core's derive_state as a
    coordinator that loaded the log has it."""
    models, members = [], []
    for m in _members_of(f, "StreamsGroup"):
        model = StreamsGroupMember.default(m).with_metadata_value(f.get(f"{streams.R_MEMBER}:{m}") or {})
        current = f.get(f"{streams.R_CURRENT}:{m}")
        if current is not None:
            model = model.with_assignment_value(current)
        models.append(model)
        members.append(
            {
                **_member_identity(model),
                "topologyEpoch": model.topology_epoch,
                "processId": model.process_id,
                "userEndpoint": None
                if model.user_endpoint is None
                else {"host": model.user_endpoint[0], "port": model.user_endpoint[1]},
                "tasks": _tasks(model.assigned_tasks),
                "tasksPendingRevocation": _tasks(model.tasks_pending_revocation),
                "targetTasks": _tasks(TasksTuple.from_wire(f.get(f"{streams.R_TARGET}:{m}"))),
            }
        )
    topology = f.get(streams.R_TOPOLOGY)
    group_epoch = (f.get(streams.R_GROUP) or {}).get("epoch", 0)
    validated = (f.get(streams.R_GROUP) or {}).get("validatedTopologyEpoch", -1)
    target_epoch = (f.get(streams.R_TARGET_EPOCH) or {}).get("assignmentEpoch", 0)
    return {
        "type": "streams",
        "state": streams.derive_state(models, topology, validated, group_epoch, target_epoch),
        "protocolType": streams.STREAMS_PROTOCOL_TYPE,
        "generation": group_epoch,
        "assignmentEpoch": target_epoch,
        "topologyEpoch": -1 if topology is None else topology.get("epoch", -1),
        "subtopologies": json.dumps(
            [
                {
                    "subtopologyId": s["subtopologyId"],
                    # the topics its tasks read: source and repartition source topics
                    "sourceTopics": list(s.get("sourceTopics") or [])
                    + [t["name"] for t in s.get("repartitionSourceTopics") or []],
                }
                for s in sorted((topology or {}).get("subtopologies") or [], key=lambda s: s["subtopologyId"])
            ],
            separators=(",", ":"),
        ),
        "members": json.dumps(members, separators=(",", ":")),
    }


def _tasks(t: TasksTuple) -> dict:
    """A member's tasks as {"activeTasks", "standbyTasks", "warmupTasks"}: [{"subtopologyId", "partitions"}]."""
    return {
        "activeTasks": tasks_to_wire(t.active),
        "standbyTasks": tasks_to_wire(t.standby),
        "warmupTasks": tasks_to_wire(t.warmup),
    }


def topic_partitions(assignment: dict | None) -> list[dict]:
    """{topic: [partitions]} -> [{"topic", "partitions"}] (topics in Java order, partitions sorted)."""
    assignment = assignment or {}
    return [
        {"topic": t, "partitions": sorted(assignment[t])} for t in sorted(assignment, key=order_key) if assignment[t]
    ]


def _flat(mapping: dict) -> list:
    out: list = []
    for k, v in mapping.items():
        if v is None:
            continue
        out += [k, v]
    return out
