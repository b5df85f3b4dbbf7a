"""The share coordinator (KIP-932): Kafka's ShareCoordinatorShard, as the "share" component of a
coordinator partition.

It keeps the durable state of share-partitions (a share group's progress on one topic partition:
the start offset, the state batches of in-flight records above it, the state and leader epochs),
keyed `groupId:topicId:partition` and routed like Kafka's share coordinator keys (FindCoordinator
keyType 2; the coordinator partition is `abs(hashCode(key)) % coordinator.partitions`). Each
share-partition is one chunk of the partition's state ("ShareState"), so a request costs what it
touches.

State-log records (Kafka's __share_group_state records):
    ["ShareSnapshot", groupId, topicId, partition]        a complete state (ShareSnapshotValue)
    ["ShareUpdate", groupId, topicId, partition, slot]    an incremental state (ShareUpdateValue)
Kafka's state topic is pruned by offset (it is not compacted); this state log is compacted, so each
update of a snapshot cycle has its own key (`slot`, the update count, bounded by
share.coordinator.snapshot.update.records.per.snapshot): compaction keeps the latest snapshot and,
per slot, the latest update, and an update older than the latest snapshot always precedes it in the
log, so replay in log order gives the same state. Deleting a share-partition writes tombstones for
its update slots and then its snapshot.

Errors, epochs and records are Kafka 4.4.0's ShareCoordinatorShard's: a write or read of a
share-partition that was never initialized is INVALID_REQUEST, so is a negative leader epoch (write,
read) or state epoch (write, initialize); an older leader epoch FENCED_LEADER_EPOCH, an older state
epoch FENCED_STATE_EPOCH, an unknown topic or partition UNKNOWN_TOPIC_OR_PARTITION (checked once the
coordinator has topic metadata, as elsewhere in this service). A write never moves the start offset
back (the larger of the write's and the state's), the state epoch (only initialization sets it) or
the leader epoch (only a read does); a snapshot replaces the updates once a cycle's are used up.
"""

from __future__ import annotations

from typing import Any

from ..chunks import EMPTY_SOURCE, UNCHANGED, LazyMap
from ..component import Component, Partition
from ..errors import Errors
from ..messages import Request, StateRecord
from ..metadata import TopicMetadata
from ..protocol.loader import shape
from ..records import parse_record_key, record_key
from ..result import CoordinatorResult
from ..routing import key_for_partition
from .batch_combiner import batch_from_json, batch_to_json, combine
from .keys import parse_share_partition_key, share_partition_key  # noqa: F401  (re-exported)
from .state_apis import partition_error

R_SNAPSHOT = "ShareSnapshot"
R_UPDATE = "ShareUpdate"

NEGATIVE_PARTITION_ID = "The partition id cannot be a negative number."
WRITE_UNINITIALIZED = "Write operation on uninitialized share partition not allowed."
READ_UNINITIALIZED = "Read operation on uninitialized share partition not allowed."
NEGATIVE_LEADER_EPOCH = "The leader epoch cannot be a negative number."
NEGATIVE_STATE_EPOCH = "The state epoch cannot be a negative number."

# PartitionFactory's defaults (ReadShareGroupStateSummary of a share-partition without state).
UNINITIALIZED_START_OFFSET, DEFAULT_STATE_EPOCH, DEFAULT_LEADER_EPOCH = -1, 0, 0
# KIP-1226 (Kafka 4.2+): how many offsets at or above the start offset were delivered completely,
# -1 where unknown (PartitionFactory.UNINITIALIZED_DELIVERY_COMPLETE_COUNT). A state or record
# written before the field has none: it reads as -1, the records' tagged-field default.
UNINITIALIZED_DELIVERY_COMPLETE_COUNT = -1


def delivery_complete_count(value: dict) -> int:
    return int(value.get("deliveryCompleteCount", UNINITIALIZED_DELIVERY_COMPLETE_COUNT))


def _offset(value: dict, state_epoch: int | None = None) -> dict:
    """ShareGroupOffset from a ShareSnapshot value (or a ShareUpdate one with `state_epoch` 0)."""
    return {
        "snapshotEpoch": int(value["snapshotEpoch"]),
        "stateEpoch": int(value["stateEpoch"]) if state_epoch is None else state_epoch,
        "leaderEpoch": int(value["leaderEpoch"]),
        "startOffset": int(value["startOffset"]),
        "deliveryCompleteCount": delivery_complete_count(value),
        "stateBatches": [batch_to_json(batch_from_json(b)) for b in value.get("stateBatches") or []],
        "createTimestamp": int(value.get("createTimestamp", 0)),
        "writeTimestamp": int(value.get("writeTimestamp", 0)),
    }


class ShareCoordinator(Component):
    name = "share"
    HANDLERS = {
        "InitializeShareGroupState": lambda c, request: c.initialize_state(request),
        "ReadShareGroupState": lambda c, request: c.read_state(request),
        "WriteShareGroupState": lambda c, request: c.write_state(request),
        "DeleteShareGroupState": lambda c, request: c.delete_state(request),
        "ReadShareGroupStateSummary": lambda c, request: c.read_state_summary(request),
        "ShareStateSummaryQuery": lambda c, request: c.on_summary_query(request),
    }
    # One replayer for both kinds: an update needs the snapshot's state.
    REPLAYERS = {
        R_SNAPSHOT: lambda c, kind, ids, value: c.replay(kind, ids, value),
        R_UPDATE: lambda c, kind, ids, value: c.replay(kind, ids, value),
    }

    def __init__(self, partition: Partition, metadata: TopicMetadata):
        super().__init__(partition)
        self.metadata = metadata
        # key -> {"offset": ShareGroupOffset, "leaderEpoch", "stateEpoch" (Kafka's epoch maps),
        #         "updates" (snapshotUpdateCount, absent before the first update), "updateCount" (the
        #         last update's slot), "slots" (how many slots have been used: the tombstones)}
        self.states: LazyMap[str, dict[str, Any]] = LazyMap(partition.chunks, "ShareState", _plain, _plain)
        # The group side's requests waiting for other partitions' answers (the persister's pending
        # futures: coordinator/group/share/offsets_admin.py); partition-wide, read only when needed.
        self._admin: dict | None = {}
        self._admin_fetch = None

    # ================================================================ the group side's (offsets_admin.py)
    def admin_state(self) -> dict:
        if self._admin is None:
            self._admin = (self._admin_fetch() if self._admin_fetch else None) or {}
        return self._admin

    @property
    def updates_per_snapshot(self) -> int:
        return self.p.config["share.coordinator.snapshot.update.records.per.snapshot"]

    # ================================================================ request plumbing
    def writes(self, result: CoordinatorResult) -> StagedStates:
        return StagedStates(self, result)

    def _each(self, request: Request, api: str, fn) -> CoordinatorResult:
        """ShareCoordinatorService: an empty request is answered empty; each share-partition is
        handled on its own (the shard's method gets one partition, and sees the records of the
        partitions before it), results grouped by topic."""
        body = request.body
        group_id = body["groupId"]
        result = CoordinatorResult(response={"results": []})
        if not body["topics"] or any(not t["partitions"] for t in body["topics"]) or not group_id:
            return result
        staged = self.writes(result)
        results: dict[str, list] = {}
        for topic in body["topics"]:
            tid = topic["topicId"]
            for pdata in topic["partitions"]:
                partition = pdata["partition"]
                key = share_partition_key(group_id, tid, partition)
                if not self.p.owns(key):
                    out = partition_error(Errors.NOT_COORDINATOR, Errors.NOT_COORDINATOR.message, partition, api)
                else:
                    out = fn(staged, group_id, tid, partition, key, pdata)
                results.setdefault(tid, []).append(out)
        response = {"results": [{"topicId": tid, "partitions": parts} for tid, parts in results.items()]}
        # The request's version's fields (v1 of Write / ReadSummary: deliveryCompleteCount).
        result.response = shape(api + "Response", request.api_version, response)
        return result

    def _common_error(self, tid: str, partition: int, api: str) -> dict | None:
        """The shard's checks of any request. Its null topic id cannot come over the wire (a uuid
        field is never null): the zero id is a topic id like any other, which no topic has."""
        if partition < 0:
            return partition_error(Errors.INVALID_REQUEST, NEGATIVE_PARTITION_ID, partition, api)
        return None

    def _unknown_partition(self, tid: str, partition: int, api: str) -> dict | None:
        meta = self.metadata
        if not meta.available:
            return None
        name = meta.topic_name(tid)
        if name is None or not 0 <= partition < meta.topics.get(name, 0):
            return partition_error(
                Errors.UNKNOWN_TOPIC_OR_PARTITION, Errors.UNKNOWN_TOPIC_OR_PARTITION.message, partition, api
            )
        return None

    # ================================================================ WriteShareGroupState
    def write_state(self, request: Request) -> CoordinatorResult:
        return self._each(request, "WriteShareGroupState", self._write_one)

    def _write_one(self, staged: StagedStates, group_id: str, tid: str, partition: int, key: str, data: dict) -> dict:
        api = "WriteShareGroupState"
        error = (
            self._common_error(tid, partition, api)
            or _negative_epoch(data["leaderEpoch"], NEGATIVE_LEADER_EPOCH, partition, api)
            or _negative_epoch(data["stateEpoch"], NEGATIVE_STATE_EPOCH, partition, api)
        )
        if error:
            return error
        state = staged.get(key)
        if state is None:
            return partition_error(Errors.INVALID_REQUEST, WRITE_UNINITIALIZED, partition, api)
        if state.get("leaderEpoch") is not None and state["leaderEpoch"] > data["leaderEpoch"]:
            return partition_error(Errors.FENCED_LEADER_EPOCH, Errors.FENCED_LEADER_EPOCH.message, partition, api)
        if state.get("stateEpoch") is not None and state["stateEpoch"] > data["stateEpoch"]:
            return partition_error(Errors.FENCED_STATE_EPOCH, Errors.FENCED_STATE_EPOCH.message, partition, api)
        error = self._unknown_partition(tid, partition, api)
        if error:
            return error
        staged.append(*self._share_state_record(group_id, tid, partition, state, data))
        written_state = staged.get(key)
        assert written_state is not None  # just appended
        written = written_state["offset"]
        staged.result.emit(
            key,
            "ShareStateWritten",
            groupId=group_id,
            topicId=tid,
            partition=partition,
            startOffset=written["startOffset"],
            stateBatches=len(written["stateBatches"]),
        )
        return {"partition": partition, "errorCode": 0, "errorMessage": None}

    def _share_state_record(
        self, group_id: str, tid: str, partition: int, state: dict, data: dict, update_leader_epoch: bool = False
    ):
        """Kafka 4.4.0's generateShareStateRecord: a snapshot once the cycle's updates are used up
        (snapshotUpdateCount at the limit), else an update. The start offset only moves forward; the
        leader epoch is the request's only for a read (`update_leader_epoch`), the state epoch the
        state's."""
        now = self.p.clock_ms
        current = state["offset"]
        leader_epoch = data["leaderEpoch"] if update_leader_epoch else current["leaderEpoch"]
        start = max(data["startOffset"], current["startOffset"])
        count = _written_delivery_complete_count(current, data)
        batches = [batch_from_json(b) for b in data["stateBatches"]]
        if _snapshot_update_count(state) >= self.updates_per_snapshot:
            merged = combine([batch_from_json(b) for b in current["stateBatches"]], batches, start)
            value = {
                "type": R_SNAPSHOT,
                "snapshotEpoch": current["snapshotEpoch"] + 1,
                "stateEpoch": current["stateEpoch"],
                "leaderEpoch": leader_epoch,
                "startOffset": start,
                "deliveryCompleteCount": count,
                "createTimestamp": now,
                "writeTimestamp": now,
                "stateBatches": [batch_to_json(b) for b in merged],
            }
            return record_key(R_SNAPSHOT, group_id, tid, partition), value
        merged = combine([], batches, start)
        value = {
            "type": R_UPDATE,
            "snapshotEpoch": current["snapshotEpoch"],
            "leaderEpoch": leader_epoch,
            "startOffset": start,
            "deliveryCompleteCount": count,
            "stateBatches": [batch_to_json(b) for b in merged],
        }
        slot = 0 if "updateCount" not in state else state["updateCount"] + 1
        return record_key(R_UPDATE, group_id, tid, partition, slot), value

    # ================================================================ ReadShareGroupState
    def read_state(self, request: Request) -> CoordinatorResult:
        return self._each(request, "ReadShareGroupState", self._read_one)

    def _read_one(self, staged: StagedStates, group_id: str, tid: str, partition: int, key: str, data: dict) -> dict:
        """readStateAndMaybeUpdateLeaderEpoch: a newer leader epoch is recorded (a snapshot or
        update without batches)."""
        api = "ReadShareGroupState"
        error = self._common_error(tid, partition, api) or _negative_epoch(
            data["leaderEpoch"], NEGATIVE_LEADER_EPOCH, partition, api
        )
        if error:
            return error
        state = staged.get(key)
        if state is None:
            return partition_error(Errors.INVALID_REQUEST, READ_UNINITIALIZED, partition, api)
        leader_epoch = data["leaderEpoch"]
        if state.get("leaderEpoch") is not None and state["leaderEpoch"] > leader_epoch:
            return partition_error(Errors.FENCED_LEADER_EPOCH, Errors.FENCED_LEADER_EPOCH.message, partition, api)
        error = self._unknown_partition(tid, partition, api)
        if error:
            return error
        offset = state["offset"]
        out = {
            "partition": partition,
            "errorCode": 0,
            "errorMessage": None,
            "stateEpoch": offset["stateEpoch"],
            "startOffset": offset["startOffset"],
            "stateBatches": [dict(b) for b in offset["stateBatches"]],
        }
        if state.get("leaderEpoch") != leader_epoch:
            staged.append(
                *self._share_state_record(
                    group_id,
                    tid,
                    partition,
                    state,
                    {
                        "leaderEpoch": leader_epoch,
                        "stateBatches": [],
                        "startOffset": offset["startOffset"],
                        "deliveryCompleteCount": delivery_complete_count(offset),
                        "stateEpoch": offset["stateEpoch"],
                    },
                    update_leader_epoch=True,
                )
            )
        return out

    # ================================================================ ReadShareGroupStateSummary
    def read_state_summary(self, request: Request) -> CoordinatorResult:
        return self._each(request, "ReadShareGroupStateSummary", self._summary_one)

    def _summary_one(self, staged: StagedStates, group_id: str, tid: str, partition: int, key: str, data: dict) -> dict:
        api = "ReadShareGroupStateSummary"
        error = self._common_error(tid, partition, api) or self._unknown_partition(tid, partition, api)
        if error:
            return error
        state = staged.get(key)
        if state is None:
            return {
                "partition": partition,
                "errorCode": 0,
                "errorMessage": None,
                "stateEpoch": DEFAULT_STATE_EPOCH,
                "leaderEpoch": DEFAULT_LEADER_EPOCH,
                "startOffset": UNINITIALIZED_START_OFFSET,
                "deliveryCompleteCount": UNINITIALIZED_DELIVERY_COMPLETE_COUNT,
            }
        offset = state["offset"]
        return {
            "partition": partition,
            "errorCode": 0,
            "errorMessage": None,
            "stateEpoch": offset["stateEpoch"],
            "leaderEpoch": offset["leaderEpoch"],
            "startOffset": offset["startOffset"],
            "deliveryCompleteCount": delivery_complete_count(offset),  # v1 (KIP-1226)
        }

    # ================================================================ InitializeShareGroupState
    def initialize_state(self, request: Request) -> CoordinatorResult:
        return self._each(request, "InitializeShareGroupState", self._initialize_one)

    def _initialize_one(
        self, staged: StagedStates, group_id: str, tid: str, partition: int, key: str, data: dict
    ) -> dict:
        """initializeState: a new snapshot (a fresh start: nothing of a previous state is kept)."""
        api = "InitializeShareGroupState"
        error = self._common_error(tid, partition, api) or _negative_epoch(
            data["stateEpoch"], NEGATIVE_STATE_EPOCH, partition, api
        )
        if error:
            return error
        state = staged.get(key)
        if state is not None and state.get("stateEpoch") is not None and state["stateEpoch"] > data["stateEpoch"]:
            return partition_error(Errors.FENCED_STATE_EPOCH, Errors.FENCED_STATE_EPOCH.message, partition, api)
        error = self._unknown_partition(tid, partition, api)
        if error:
            return error
        now = self.p.clock_ms
        staged.append(
            record_key(R_SNAPSHOT, group_id, tid, partition),
            {
                "type": R_SNAPSHOT,
                "snapshotEpoch": 0 if state is None else state["offset"]["snapshotEpoch"] + 1,
                "stateEpoch": data["stateEpoch"],
                "leaderEpoch": 0,
                "startOffset": data["startOffset"],
                # ShareGroupOffset.fromRequest: counting starts with a known start offset.
                "deliveryCompleteCount": UNINITIALIZED_DELIVERY_COMPLETE_COUNT if data["startOffset"] == -1 else 0,
                "createTimestamp": now,
                "writeTimestamp": now,
                "stateBatches": [],
            },
        )
        staged.result.emit(
            key,
            "ShareStateInitialized",
            groupId=group_id,
            topicId=tid,
            partition=partition,
            stateEpoch=data["stateEpoch"],
            startOffset=data["startOffset"],
        )
        return {"partition": partition, "errorCode": 0, "errorMessage": None}

    # ================================================================ DeleteShareGroupState
    def delete_state(self, request: Request) -> CoordinatorResult:
        return self._each(request, "DeleteShareGroupState", self.delete_one)

    def delete_one(self, staged: StagedStates, group_id: str, tid: str, partition: int, key: str, data: dict) -> dict:
        api = "DeleteShareGroupState"
        error = self._common_error(tid, partition, api) or self._unknown_partition(tid, partition, api)
        if error:
            return error
        state = staged.get(key)
        if state is not None:
            for slot in range(state.get("slots", 0)):
                staged.append(record_key(R_UPDATE, group_id, tid, partition, slot), None)
            staged.append(record_key(R_SNAPSHOT, group_id, tid, partition), None)
            staged.result.emit(key, "ShareStateDeleted", groupId=group_id, topicId=tid, partition=partition)
        return {"partition": partition, "errorCode": 0, "errorMessage": None}

    # ================================================================ for the group side
    def start_offset(self, group_id: str, tid: str, partition: int) -> tuple[int, int, int]:
        """(start offset, leader epoch, deliveryCompleteCount) of a share-partition this partition
        owns; (-1, 0, -1) without state (ReadShareGroupStateSummary's answer)."""
        offset = self.share_partition_state(group_id, tid, partition)
        if offset is None:
            return UNINITIALIZED_START_OFFSET, DEFAULT_LEADER_EPOCH, UNINITIALIZED_DELIVERY_COMPLETE_COUNT
        return offset["startOffset"], offset["leaderEpoch"], delivery_complete_count(offset)

    def initialize_at(
        self, staged: StagedStates, group_id: str, tid: str, partition: int, state_epoch: int, start: int
    ) -> int:
        """InitializeShareGroupState of one share-partition this partition owns: its error code."""
        key = f"{group_id}:{tid}:{partition}"
        out = self._initialize_one(
            staged, group_id, tid, partition, key, {"stateEpoch": state_epoch, "startOffset": start}
        )
        return out["errorCode"]

    def on_summary_query(self, request: Request) -> CoordinatorResult:
        """A group coordinator partition asks about share-partitions this partition owns: their
        summaries, or to initialize or delete them (the persister's calls); the answer goes back to
        it as ShareStateSummaryAnswer."""
        b = request.body
        result = CoordinatorResult()
        staged = self.writes(result)
        summaries = []
        starts = iter(b["startOffsets"])
        for t in b["topics"]:
            for p in t["partitions"]:
                if b["op"] == "delete":
                    out = self.delete_one(
                        staged, b["groupId"], t["topicId"], p, f"{b['groupId']}:{t['topicId']}:{p}", {}
                    )
                    summaries.append(
                        {
                            "topicId": t["topicId"],
                            "partition": p,
                            "startOffset": -1,
                            "leaderEpoch": 0,
                            "errorCode": out["errorCode"],
                        }
                    )
                    continue
                if b["op"] == "initialize":
                    code = self.initialize_at(staged, b["groupId"], t["topicId"], p, b["stateEpoch"], next(starts))
                    summaries.append(
                        {
                            "topicId": t["topicId"],
                            "partition": p,
                            "startOffset": -1,
                            "leaderEpoch": 0,
                            "errorCode": code,
                        }
                    )
                    continue
                start, epoch, complete = self.start_offset(b["groupId"], t["topicId"], p)
                summaries.append(
                    {
                        "topicId": t["topicId"],
                        "partition": p,
                        "startOffset": start,
                        "leaderEpoch": epoch,
                        "deliveryCompleteCount": complete,
                        "errorCode": 0,
                    }
                )
        n = self.p.config["coordinator.partitions"]
        result.send_request(
            key_for_partition(b["fromPartition"], n),
            "ShareStateSummaryAnswer",
            0,
            {"queryId": b["queryId"], "groupId": b["groupId"], "summaries": summaries},
            correlation_id=b["queryId"] % 2**31,
            client_id=f"share-coordinator-{self.p.partition_id}",
        )
        return result

    # ================================================================ replay
    def replay(self, kind: str, ids: list, value: dict | None) -> None:
        key = _parsed_state_key(kind, ids)
        assert key is not None, kind
        state = replayed_parsed(self.states.get(key), kind, ids, value, self.updates_per_snapshot)
        if state is None:
            self.states.pop(key, None)
        else:
            self.states[key] = state

    # ================================================================ snapshot of the component
    def to_json(self) -> dict:
        return {"states": {k: self.states[k] for k in self.states}, "admin": self.admin_state()}

    def load_json(self, data: dict) -> None:
        self.states = LazyMap(EMPTY_SOURCE, "ShareState", _plain, _plain)
        self.states.update(data.get("states", {}))
        self._admin = data.get("admin", {})

    def chunk_maps(self) -> tuple:
        return (self.states,)

    def bind_rest(self, fetch) -> None:
        self._admin, self._admin_fetch = None, fetch

    def rest_json(self):
        return UNCHANGED if self._admin is None else self._admin

    # ================================================================ reads for other components
    def share_partition_state(self, group_id: str, topic_id: str, partition: int) -> dict | None:
        state = self.states.get(share_partition_key(group_id, topic_id, partition))
        return None if state is None else state["offset"]


class StagedStates:
    """The share-partition states as the records a handler has put in its `result` so far leave
    them: what the next share-partition of the same request sees (Kafka's service runs one write
    operation per share-partition, each replayed before the next). The runtime replays the records
    into the real states once the handler has returned."""

    def __init__(self, comp: ShareCoordinator, result: CoordinatorResult):
        self.comp, self.result = comp, result
        self._states: dict[str, dict | None] = {}

    def get(self, key: str) -> dict | None:
        return self._states[key] if key in self._states else self.comp.states.get(key)

    def append(self, key: str, value: dict | None) -> None:
        record = StateRecord(key, value)
        self.result.records.append(record)
        state_key = _state_key(key)
        assert state_key is not None, key
        self._states[state_key] = replayed(self.get(state_key), record, self.comp.updates_per_snapshot)


def _state_key(record_key_: str) -> str | None:
    """The share-partition a ShareSnapshot / ShareUpdate record belongs to (None: not one)."""
    return _parsed_state_key(*parse_record_key(record_key_))


def _parsed_state_key(kind: str, ids: list) -> str | None:
    if kind == R_SNAPSHOT:
        return share_partition_key(*ids)
    if kind == R_UPDATE:
        return share_partition_key(*ids[:3])
    return None


def replayed(state: dict | None, record: StateRecord, updates_per_snapshot: int) -> dict | None:
    """A share-partition's state after one of its records (None: deleted); `state` is not changed."""
    kind, ids = parse_record_key(record.key)
    return replayed_parsed(state, kind, ids, record.value, updates_per_snapshot)


def replayed_parsed(
    state: dict | None, kind: str, ids: list, value: dict | None, updates_per_snapshot: int
) -> dict | None:
    """handleShareSnapshot / handleShareUpdate (an update tombstone only clears its slot: the
    snapshot's tombstone follows)."""
    if kind == R_SNAPSHOT:
        if value is None:
            return None
        new = dict(state or {})
        new["leaderEpoch"] = max(new.get("leaderEpoch", value["leaderEpoch"]), value["leaderEpoch"])
        new["stateEpoch"] = max(new.get("stateEpoch", value["stateEpoch"]), value["stateEpoch"])
        new["offset"] = _offset(value)
        if _has_updates(new) and _snapshot_update_count(new) >= updates_per_snapshot:
            # The cycle's snapshot: the count starts again, and so do the slots.
            new["updates"] = 0
            new.pop("updateCount", None)
        return new
    if value is None:
        return state
    slot = int(ids[3])
    new = dict(state or {})
    new["leaderEpoch"] = max(new.get("leaderEpoch", value["leaderEpoch"]), value["leaderEpoch"])
    new["offset"] = _offset(value, state_epoch=0) if "offset" not in new else _merge(new["offset"], value)
    new["updates"] = _snapshot_update_count(new) + 1
    new["updateCount"] = 0 if "updateCount" not in new else new["updateCount"] + 1
    new["slots"] = max(new.get("slots", 0), slot + 1)
    return new


def _negative_epoch(epoch: int, message: str, partition: int, api: str) -> dict | None:
    """Kafka 4.4.0: a negative leader or state epoch is INVALID_REQUEST (4.1.1: -1 meant unchanged)."""
    return partition_error(Errors.INVALID_REQUEST, message, partition, api) if epoch < 0 else None


def _has_updates(state: dict) -> bool:
    return "updates" in state or "updateCount" in state


def _snapshot_update_count(state: dict) -> int:
    """Kafka 4.4.0's snapshotUpdateCount (getOrDefault 0): the updates since the snapshot that ended
    the last cycle; an initialization's snapshot does not reset it. A state checkpointed before
    `updates` was kept has only the last slot, which counted updates from 0."""
    if "updates" in state:
        return state["updates"]
    return state["updateCount"] + 1 if "updateCount" in state else 0


def _written_delivery_complete_count(current: dict, data: dict) -> int:
    """Kafka 4.4.0's ShareCoordinatorShard.generateShareStateRecord: the write's count, except that
    a write at the same start offset keeps the larger of the two, and one below it (or -1: the start
    offset unchanged) keeps the state's (a v0 write, whose count is -1, then changes nothing)."""
    written, start = delivery_complete_count(data), data["startOffset"]
    if start == current["startOffset"]:
        return max(written, delivery_complete_count(current))
    if start < current["startOffset"]:
        return delivery_complete_count(current)
    return written


def _merge(so_far: dict, update: dict) -> dict:
    """ShareCoordinatorShard.merge: an update applied to the state so far."""
    start = so_far["startOffset"] if update["startOffset"] == -1 else update["startOffset"]
    batches = combine(
        [batch_from_json(b) for b in so_far["stateBatches"]],
        [batch_from_json(b) for b in update.get("stateBatches") or []],
        start,
    )
    return {
        **so_far,
        "startOffset": start,
        "deliveryCompleteCount": delivery_complete_count(update),  # as written, -1 included
        "leaderEpoch": so_far["leaderEpoch"] if update["leaderEpoch"] == -1 else update["leaderEpoch"],
        "stateBatches": [batch_to_json(b) for b in batches],
    }


def _plain(*args: Any) -> Any:
    return args[-1]
