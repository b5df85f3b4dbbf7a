"""The "groups" component: every group of one coordinator partition and its offset store.

This is Kafka's GroupCoordinatorShard: it owns the groups (one id, one group, of one type), the
offset store, the state-log records and their replay, and the periodic offset expiry. The classic
protocol lives in `classic_manager.py`, offsets in `offset_manager.py`, the admin APIs in
`admin.py`; KIP-848 consumer groups plug in as another `Group` type.

State-log records (keys from `coordinator.records.record_key`):
    ["GroupMetadata", groupId]                -> GroupMetadataValue, or null when the group is deleted
    ["OffsetCommit", groupId, topic, partition] -> OffsetCommitValue, or null when the offset is deleted
An OffsetCommit value with a "producerId" (>= 0) is a transactional offset of an open
transaction (TxnOffsetCommit), as Kafka tells them apart by the producer id of the record batch.

Extension points (KIP-848 consumer groups, TxnOffsetCommit): `GroupCoordinator.extend(...)` adds
APIs, timer kinds, state-log replay and load steps without editing this class; new group types
register with `group.register_group_type`; `self.extensions` is a JSON-compatible dict persisted in
the snapshot for any extra per-partition state.

Public methods for the transaction coordinator's TxnOffsetCommit and marker handling:
    validate_transactional_offset_commit(...)   checks a TxnOffsetCommit like Kafka
    append_transactional_offset(...)            writes and stores one pending offset
    complete_transaction(producer_id, committed) applies a COMMIT/ABORT marker to the store
    has_pending_transactional_offsets(group, topic=None, partition=None)
"""
from __future__ import annotations

from ..chunks import EMPTY_SOURCE, LazyMap
from ..errors import ApiError, Errors
from ..messages import Request, StateRecord
from ..records import parse_record_key, record_key
from ..runtime import register_component
from ..timers import Timer
from . import admin
from .classic import ClassicGroup
from .classic_manager import T_INITIAL_JOIN, T_JOIN, T_SESSION, T_SYNC, ClassicGroupManager
from .group import CLASSIC, Group, group_from_json
from .offset_manager import OffsetManager
from .offsets import OffsetAndMetadata, OffsetStore

T_EXPIRATION = "groups-expiration"
EXPIRATION_TIMER_KEY = record_key("groups-expiration")


@register_component
class GroupCoordinator:
    name = "groups"
    handlers = {
        "JoinGroup": "join_group",
        "SyncGroup": "sync_group",
        "Heartbeat": "heartbeat",
        "LeaveGroup": "leave_group",
        "OffsetCommit": "offset_commit",
        "OffsetFetch": "offset_fetch",
        "OffsetDelete": "offset_delete",
        "DescribeGroups": "describe_groups",
        "ListGroups": "list_groups",
        "DeleteGroups": "delete_groups",
    }
    timer_handlers = {
        T_JOIN: "_on_join_timer",
        T_INITIAL_JOIN: "_on_initial_join_timer",
        T_SYNC: "_on_sync_timer",
        T_SESSION: "_on_session_timer",
        T_EXPIRATION: "_on_expiration_timer",
    }

    _replay_extensions: tuple = ()
    _load_extensions: tuple = ()
    _metadata_extensions: tuple = ()

    @classmethod
    def extend(cls, *, apis: dict | None = None, timers: dict | None = None, replay=None, on_load=None,
               on_metadata_change=None) -> None:
        """Plug more into the component:
            apis      {"ConsumerGroupHeartbeat": fn(component, request) -> body | None}
            timers    {"consumer-session": fn(component, timer)}
            replay    fn(component, StateRecord) -> bool (True if it was this extension's record)
            on_load   fn(component), run by after_replay (Kafka's onLoaded)
            on_metadata_change  fn(component, old, new), run when the topic metadata changes
                      (Kafka's GroupMetadataManager.onMetadataUpdate)"""
        for api, fn in (apis or {}).items():
            attr = f"_ext_api_{api}"
            setattr(cls, attr, fn)
            cls.handlers = {**cls.handlers, api: attr}
        for kind, fn in (timers or {}).items():
            attr = f"_ext_timer_{kind}"
            setattr(cls, attr, fn)
            cls.timer_handlers = {**cls.timer_handlers, kind: attr}
        if replay is not None and replay not in cls._replay_extensions:
            cls._replay_extensions = (*cls._replay_extensions, replay)
        if on_load is not None and on_load not in cls._load_extensions:
            cls._load_extensions = (*cls._load_extensions, on_load)
        if on_metadata_change is not None and on_metadata_change not in cls._metadata_extensions:
            cls._metadata_extensions = (*cls._metadata_extensions, on_metadata_change)

    def __init__(self, partition):
        self.p = partition
        # One chunk per group (coordinator/chunks.py): decoded when a request or timer touches it.
        self.groups: dict[str, Group] = LazyMap(partition.chunks, "GroupMetadata", _group_from_chunk,
                                                _group_to_chunk)
        # Per-group config overrides (group_configs.py): groupId -> {name: value}, one chunk each.
        self.group_configs: dict[str, dict] = LazyMap(partition.chunks, "GroupConfig", _plain, _plain)
        self.extensions: dict = {}  # extra JSON state of extensions, persisted in the snapshot
        self.offsets = OffsetStore(partition.chunks)
        # Count of OffsetCommit records written or replayed: the log position used to order a
        # transaction's offsets against regular commits (Kafka's record offset).
        self.next_record_seq = 0
        self.classic = ClassicGroupManager(self)
        self.offset_manager = OffsetManager(self)

    # ================================================================ API handlers
    def join_group(self, request: Request):
        return self.classic.join_group(request)

    def sync_group(self, request: Request):
        return self.classic.sync_group(request)

    def heartbeat(self, request: Request):
        return self.classic.heartbeat(request)

    def leave_group(self, request: Request):
        return self.classic.leave_group(request)

    def offset_commit(self, request: Request):
        return self.offset_manager.commit_offset(request)

    def offset_fetch(self, request: Request):
        return self.offset_manager.fetch_offsets(request)

    def offset_delete(self, request: Request):
        return self.offset_manager.delete_offsets(request)

    def describe_groups(self, request: Request):
        return admin.describe_groups(self, request)

    def list_groups(self, request: Request):
        return admin.list_groups(self, request)

    def delete_groups(self, request: Request):
        return admin.delete_groups(self, request)

    # ================================================================ timers
    def _on_join_timer(self, timer: Timer) -> None:
        self.classic.on_join_timeout(timer.payload)

    def _on_initial_join_timer(self, timer: Timer) -> None:
        self.classic.on_initial_join_timeout(timer.payload)

    def _on_sync_timer(self, timer: Timer) -> None:
        self.classic.on_sync_timeout(timer.payload)

    def _on_session_timer(self, timer: Timer) -> None:
        self.classic.on_session_timeout(timer.payload)

    def _on_expiration_timer(self, timer: Timer) -> None:
        self.cleanup_group_metadata()

    def ensure_expiration_timer(self) -> None:
        """Kafka runs the expiry every offsets.retention.check.interval.ms from coordinator load;
        here the cycle runs while the partition has groups (it finds nothing to do otherwise)."""
        if EXPIRATION_TIMER_KEY not in self.p.timers:
            self.p.schedule(EXPIRATION_TIMER_KEY, self.p.clock_ms + self.p.config["offsets.retention.check.interval.ms"],
                            T_EXPIRATION)

    def cleanup_group_metadata(self) -> None:
        """GroupCoordinatorShard.cleanupGroupMetadata: expire offsets, and delete Empty groups
        left without offsets or open transactions."""
        for group_id in list(self.groups):
            group = self.groups.get(group_id)
            if group is None or not group.should_expire():
                continue
            if self.offset_manager.cleanup_expired_offsets(group_id) and group.is_empty():
                self.delete_group(group, reason="expired: no offsets left")
        if self.groups:
            self.ensure_expiration_timer()

    # ================================================================ groups
    def emit(self, group_id: str, event: str, **fields) -> None:
        self.p.emit_event(group_id, event, groupId=group_id, **fields)

    def create_classic_group(self, group_id: str, reason: str) -> ClassicGroup:
        group = ClassicGroup(group_id, now_ms=self.p.clock_ms)
        self.groups[group_id] = group
        self.emit(group_id, "GroupCreated", groupType=CLASSIC, reason=reason)
        self.ensure_expiration_timer()
        return group

    def delete_group(self, group: Group, reason: str, with_offsets: bool = False) -> None:
        """Write the group's tombstones (and its offsets' when asked) and forget it."""
        offsets = self.offset_manager.delete_all_offsets(group.group_id) if with_offsets else 0
        state = group.state_as_string()  # before the tombstones' replay empties it (what the gauges hold)
        for key in group.tombstone_record_keys():
            self.append_and_replay(key, None)
        for key in group.timer_keys():
            self.p.cancel(key)
        self.groups.pop(group.group_id, None)
        self.emit(group.group_id, "GroupDeleted", groupType=group.type, reason=reason, offsetsDeleted=offsets,
                  state=state)

    # ================================================================ records
    def append_group_metadata(self, group_id: str, value: dict) -> None:
        """A GroupMetadata record of the live classic group. Kafka does not replay these into the
        live state (the group in memory is the truth); they serve coordinator load."""
        self.p.append_record(record_key("GroupMetadata", group_id), value)

    def append_and_replay(self, key: str, value: dict | None) -> None:
        self.p.append_record(key, value)
        self.replay(StateRecord(key, value))

    def append_offset_commit(self, group_id: str, topic: str, partition: int, value: OffsetAndMetadata,
                             producer_id: int | None = None) -> None:
        record = value.record_value()
        if producer_id is not None:
            record["producerId"] = producer_id
        self.append_and_replay(record_key("OffsetCommit", group_id, topic, partition), record)

    def append_offset_tombstone(self, group_id: str, topic: str, partition: int) -> None:
        self.append_and_replay(record_key("OffsetCommit", group_id, topic, partition), None)

    # ================================================================ transactional offsets
    def validate_transactional_offset_commit(self, group_id: str, member_id: str, instance_id: str | None,
                                             generation_id: int, api_version: int) -> Group:
        """OffsetMetadataManager.validateTransactionalOffsetCommit: raises ApiError, or returns the
        group (creating a simple group for generation -1, as Kafka does)."""
        group = self.groups.get(group_id)
        if group is None:
            if generation_id >= 0:
                raise ApiError(Errors.ILLEGAL_GENERATION)
            group = self.create_classic_group(group_id, reason="simple group created by TxnOffsetCommit")
        try:
            group.validate_offset_commit(member_id, instance_id, generation_id, True, api_version)
        except ApiError as e:
            if e.error is Errors.STALE_MEMBER_EPOCH:
                raise ApiError(Errors.ILLEGAL_GENERATION) from e
            raise
        return group

    def is_offset_metadata_invalid(self, metadata: str | None) -> bool:
        return self.offset_manager.is_metadata_invalid(metadata)

    def append_transactional_offset(self, producer_id: int, group_id: str, topic: str, partition: int,
                                    offset: int, leader_epoch: int = -1, metadata: str | None = "") -> None:
        """Write one TxnOffsetCommit offset (an OffsetCommit record tagged with the producer id) and
        keep it pending until the transaction's marker."""
        value = OffsetAndMetadata(offset, None if leader_epoch == -1 else leader_epoch, metadata or "",
                                  self.p.clock_ms, None)
        self.append_offset_commit(group_id, topic, partition, value, producer_id=producer_id)

    def complete_transaction(self, producer_id: int, committed: bool) -> list[tuple[str, str, int]]:
        """Apply a COMMIT or ABORT marker for `producer_id` to the offset store
        (replayEndTransactionMarker); returns the offsets that became committed. The state-log
        record of the marker is the transaction coordinator's to write (and to replay by calling
        this method)."""
        changed = self.offsets.complete_transaction(producer_id, committed)
        return changed

    def has_pending_transactional_offsets(self, group_id: str, topic: str | None = None,
                                          partition: int | None = None) -> bool:
        return self.offsets.has_pending(group_id, topic, partition)

    # ================================================================ topic metadata
    def on_metadata_change(self, old: dict, new: dict) -> None:
        """Called by the metadata component when the broker's topics change."""
        for fn in self._metadata_extensions:
            fn(self, old, new)

    # ================================================================ replay (coordinator load)
    def replay(self, record: StateRecord) -> bool:
        kind, ids = parse_record_key(record.key)
        if kind == "GroupMetadata":
            group_id = ids[0]
            if record.value is None:
                group = self.groups.get(group_id)
                if group is not None and group.type == CLASSIC:
                    del self.groups[group_id]
            else:
                self.groups[group_id] = ClassicGroup.from_record(group_id, record.value)
            return True
        if kind == "OffsetCommit":
            group_id, topic, partition = ids
            seq = self.next_record_seq
            self.next_record_seq += 1
            if record.value is None:
                self.offsets.remove(group_id, topic, partition)
                return True
            if group_id not in self.groups:
                # Offsets without membership: a simple group.
                self.groups[group_id] = ClassicGroup(group_id, now_ms=self.p.clock_ms)
            value = OffsetAndMetadata.from_record(record.value, seq)
            producer_id = record.value.get("producerId", -1)
            if producer_id >= 0:
                self.offsets.add_pending(producer_id, group_id, topic, partition, value)
            else:
                self.offsets.put(group_id, topic, partition, value)
            return True
        return any(fn(self, record) for fn in self._replay_extensions)

    def after_replay(self) -> None:
        """onLoaded: session timers for every classic member (from now), rebalance groups over
        group.max.size, and the expiry cycle."""
        for group in list(self.groups.values()):
            if isinstance(group, ClassicGroup):
                self.classic.on_loaded(group)
        for fn in self._load_extensions:
            fn(self)
        if self.groups:
            self.ensure_expiration_timer()

    # ================================================================ snapshot
    def to_json(self) -> dict:
        return {"groups": {gid: g.to_json() for gid, g in self.groups.items()},
                "offsets": self.offsets.to_json(),
                "groupConfigs": dict(self.group_configs),
                "nextRecordSeq": self.next_record_seq,
                "extensions": self.extensions}

    def load_json(self, data: dict) -> None:
        self.groups = LazyMap(EMPTY_SOURCE, "GroupMetadata", _group_from_chunk, _group_to_chunk)
        for gid, g in data.get("groups", {}).items():
            self.groups[gid] = group_from_json(g)
        self.offsets = OffsetStore.from_json(data.get("offsets", {}))
        self.group_configs = LazyMap(EMPTY_SOURCE, "GroupConfig", _plain, _plain)
        self.group_configs.update(data.get("groupConfigs", {}))  # absent before group configs
        self.offset_manager.store = self.offsets
        self.load_rest(data)

    # Chunked storage: the groups and offsets per entity, the rest in one partition-wide chunk.
    def chunk_maps(self) -> tuple:
        return (self.groups, self.group_configs, *self.offsets.chunk_maps())

    def rest_json(self) -> dict:
        return {"nextRecordSeq": self.next_record_seq, "extensions": self.extensions}

    def load_rest(self, data: dict) -> None:
        self.next_record_seq = data.get("nextRecordSeq", 0)
        self.extensions = data.get("extensions", {})


def _plain(*args):
    return args[-1]


def _group_from_chunk(_group_id: str, data: dict) -> Group:
    return group_from_json(data)


def _group_to_chunk(group: Group) -> dict:
    return group.to_json()
