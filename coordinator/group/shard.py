"""The "groups" component: every group of one coordinator partition and its offset store.

This is Kafka's GroupCoordinatorShard: it owns the groups (one id, one group, of one type), the
offset store, the state-log records and their replay, and the periodic offset expiry. The classic
protocol lives in `classic/manager.py`, offsets in `offset_manager.py`, the admin APIs in
`admin.py`; consumer, share and streams groups are other `Group` types with their managers in
`consumer/`, `share/`, `streams/`.

State-log records (keys from `coordinator.records.record_key`):
    ["GroupMetadata", groupId]                -> GroupMetadataValue, or null when the group is deleted
    ["OffsetCommit", groupId, topic, partition] -> OffsetCommitValue, or null when the offset is deleted
An OffsetCommit value with a "producerId" (>= 0) is a transactional offset of an open
transaction (TxnOffsetCommit), as Kafka tells them apart by the producer id of the record batch.

Construction is explicit: the class body names every manager (each built on a batch's first use
of it), and its literal tables route to them (API name -> handler, timer kind -> handler, record kind -> replayer, each a
function given the coordinator); new group types register with `group.register_group_type` and
get their manager and entries here.
`self.extensions` is a JSON-compatible dict persisted in the snapshot (the txn offsets' producer
state); it and the record count are the component's partition-wide chunk, read on a batch's first
use (`bind_rest`).

Public methods for the transaction coordinator's TxnOffsetCommit and marker handling:
    validate_transactional_offset_commit(...)   checks a TxnOffsetCommit like Kafka
    complete_transaction(producer_id, committed) applies a COMMIT/ABORT marker to the store
    has_pending_transactional_offsets(group, topic=None, partition=None)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..chunks import EMPTY_SOURCE, UNCHANGED, LazyMap
from ..component import Component
from ..errors import ApiError, Errors
from ..messages import StateRecord
from ..records import record_key
from ..result import CoordinatorResult
from . import admin, group_configs, txn_offsets
from .classic.group import ClassicGroup
from .classic.manager import T_INITIAL_JOIN, T_JOIN, T_SESSION, T_SYNC, ClassicGroupManager
from .consumer import group as consumer_group
from .consumer import manager as consumer
from .consumer import migration
from .consumer.manager import ConsumerGroupManager
from .group import CLASSIC, Group, group_from_json
from .group_configs import GroupConfigs
from .offset_manager import OffsetManager
from .offsets import OffsetAndMetadata, OffsetStore
from .share import group as share_group
from .share import manager as share
from .share import offsets_admin
from .share.manager import ShareGroupManager
from .share.offsets_admin import ShareOffsetsAdmin
from .streams import group as streams_group
from .streams import manager as streams
from .streams.manager import StreamsGroupManager
from .txn_offsets import TxnOffsetManager

if TYPE_CHECKING:
    from ..acl_state import AclSnapshot
    from ..component import Partition
    from ..metadata import TopicMetadata
    from ..share.coordinator import ShareCoordinator
    from ..txn.coordinator import TransactionCoordinator

T_EXPIRATION = "groups-expiration"
EXPIRATION_TIMER_KEY = record_key("groups-expiration")


class _Manager:
    """A manager of the coordinator, built by `build(coordinator)` on its first use and then kept
    in the instance (a non-data descriptor: later reads are plain attribute reads)."""

    def __init__(self, build):
        self.build = build

    def __set_name__(self, owner, name: str) -> None:
        self.name = name

    def __get__(self, coordinator, owner=None):
        if coordinator is None:
            return self
        manager = coordinator.__dict__[self.name] = self.build(coordinator)
        return manager


class _Rest:
    """A field of the coordinator's partition-wide chunk: on its first read the chunk is loaded
    (`load_rest`, which sets every field in the instance; later reads are plain attribute reads)."""

    def __set_name__(self, owner, name: str) -> None:
        self.name = name

    def __get__(self, coordinator, owner=None):
        if coordinator is None:
            return self
        fetch = coordinator._fetch_rest
        coordinator.load_rest((fetch() if fetch is not None else None) or {})
        return coordinator.__dict__[self.name]


class GroupCoordinator(Component):
    """Kafka's GroupCoordinatorShard: built explicitly, its handler and replay tables in one place.
    A table's entry is a lambda given the coordinator, as GroupCoordinatorService hands the shard
    one per API; the tables are class attributes, built once at import, not per partition load."""

    name = "groups"
    HANDLERS = {
        "JoinGroup": lambda g, request: g.classic.join_group(request),
        "SyncGroup": lambda g, request: g.classic.sync_group(request),
        "Heartbeat": lambda g, request: g.classic.heartbeat(request),
        "LeaveGroup": lambda g, request: g.classic.leave_group(request),
        "OffsetCommit": lambda g, request: g.offset_manager.commit_offset(request),
        "OffsetFetch": lambda g, request: g.offset_manager.fetch_offsets(request),
        "OffsetDelete": lambda g, request: g.offset_manager.delete_offsets(request),
        "DescribeGroups": lambda g, request: admin.describe_groups(g, request),
        "ListGroups": lambda g, request: admin.list_groups(g, request),
        "DeleteGroups": lambda g, request: admin.delete_groups(g, request),
        "ConsumerGroupHeartbeat": lambda g, request: g.consumer.consumer_group_heartbeat(request),
        "ConsumerGroupDescribe": lambda g, request: g.consumer.consumer_group_describe(request),
        "ShareGroupHeartbeat": lambda g, request: g.share.share_group_heartbeat(request),
        "ShareGroupDescribe": lambda g, request: g.share.share_group_describe(request),
        "StreamsGroupHeartbeat": lambda g, request: g.streams.streams_group_heartbeat(request),
        "StreamsGroupDescribe": lambda g, request: g.streams.streams_group_describe(request),
        "StreamsGroupTopologyDescriptionUpdate": lambda g, r: g.streams.streams_group_topology_description_update(r),
        "IncrementalAlterConfigs": lambda g, request: g.configs.incremental_alter_configs(request),
        "DescribeConfigs": lambda g, request: g.configs.describe_configs(request),
        "TxnOffsetCommit": lambda g, request: g.txn_offsets.txn_offset_commit(request),
        "WriteTxnMarkers": lambda g, request: g.txn_offsets.write_txn_markers(request),
        "TxnVerificationResult": lambda g, request: g.txn_offsets.txn_verification_result(request),
        "TxnOffsetsAdded": lambda g, request: g.txn_offsets.txn_offsets_added(request),
        "DescribeShareGroupOffsets": lambda g, request: g.share_offsets.describe(request),
        "AlterShareGroupOffsets": lambda g, request: g.share_offsets.alter(request),
        "DeleteShareGroupOffsets": lambda g, request: g.share_offsets.delete(request),
        "ShareStateSummaryAnswer": lambda g, request: g.share_offsets.on_answer(request),
        "ShareEndOffsetsAnswer": lambda g, request: g.share_offsets.on_end_offsets(request),
    }
    TIMER_HANDLERS = {
        T_JOIN: lambda g, timer: g.classic.on_join_timer(timer),
        T_INITIAL_JOIN: lambda g, timer: g.classic.on_initial_join_timer(timer),
        T_SYNC: lambda g, timer: g.classic.on_sync_timer(timer),
        T_SESSION: lambda g, timer: g.classic.on_session_timer(timer),
        T_EXPIRATION: lambda g, timer: g.cleanup_group_metadata(),
        consumer.T_SESSION: lambda g, timer: g.consumer.on_session_timeout(timer),
        consumer.T_REBALANCE: lambda g, timer: g.consumer.on_rebalance_timeout(timer),
        consumer.T_REGEX: lambda g, timer: g.consumer.on_resolve_regexes(timer),
        migration.T_JOIN: lambda g, timer: g.consumer.classic_members.on_join_timeout(timer),
        migration.T_SYNC: lambda g, timer: g.consumer.classic_members.on_sync_timeout(timer),
        share.T_SESSION: lambda g, timer: g.share.on_session_timeout(timer),
        streams.T_SESSION: lambda g, timer: g.streams.on_session_timeout(timer),
        streams.T_REBALANCE: lambda g, timer: g.streams.on_rebalance_timeout(timer),
        streams.T_INITIAL_REBALANCE: lambda g, timer: g.streams.on_initial_rebalance_timeout(timer),
        txn_offsets.T_PRODUCER_EXPIRATION: lambda g, timer: g.txn_offsets.on_producer_expiration(timer),
        txn_offsets.T_VERIFICATION_TIMEOUT: lambda g, timer: g.txn_offsets.on_verification_timeout(timer),
        offsets_admin.T_ADMIN_TIMEOUT: lambda g, timer: g.share_offsets.on_timeout(timer),
    }
    # State-log record kind -> replayer(g, kind, ids, value): GroupCoordinatorShard.replay's switch.
    REPLAYERS = {
        "GroupMetadata": lambda g, kind, ids, value: g.replay_group_metadata(ids, value),
        "OffsetCommit": lambda g, kind, ids, value: g.replay_offset_commit(ids, value),
        group_configs.RECORD: lambda g, kind, ids, value: g.configs.replay(kind, ids, value),
        txn_offsets.TXN_OFFSET_RECORD: lambda g, kind, ids, value: g.txn_offsets.replay(kind, ids, value),
        txn_offsets.MARKER_RECORD: lambda g, kind, ids, value: g.txn_offsets.replay(kind, ids, value),
        txn_offsets.ADDED_RECORD: lambda g, kind, ids, value: g.txn_offsets.replay(kind, ids, value),
        **{
            kind: lambda g, kind, ids, value: g.consumer.replay(kind, ids, value)
            for kind in consumer_group.RECORD_TYPES
        },
        **{kind: lambda g, kind, ids, value: g.share.replay(kind, ids, value) for kind in share_group.RECORD_TYPES},
        **{kind: lambda g, kind, ids, value: g.streams.replay(kind, ids, value) for kind in streams_group.RECORD_TYPES},
    }

    def __init__(
        self,
        partition: Partition,
        metadata: TopicMetadata,
        transactions: TransactionCoordinator,
        share_coordinator: ShareCoordinator,
        acls: AclSnapshot | None = None,
    ):
        super().__init__(partition)
        # The other coordinators of the partition this one calls (Kafka's shard is given the
        # metadata image; the transaction coordinator answers KIP-890 verification locally; the
        # share coordinator holds the share-partitions' state, Kafka's persister target).
        self.metadata = metadata
        self.transactions = transactions
        self.share_coordinator = share_coordinator
        # The broker's ACLs (Kafka's shard is given the authorizer plugin: a regex subscription
        # resolves only to the topics its member may DESCRIBE).
        self.acls = acls
        # One chunk per group (coordinator/chunks.py): decoded when a request or timer touches it.
        self.groups: LazyMap[str, Group] = LazyMap(
            partition.chunks, "GroupMetadata", _group_from_chunk, _group_to_chunk
        )
        # Per-group config overrides (group_configs.py): groupId -> {name: value}, one chunk each.
        self.group_configs: LazyMap[str, dict] = LazyMap(partition.chunks, "GroupConfig", _plain, _plain)
        self.offsets = OffsetStore(partition.chunks)
        self._fetch_rest = None  # reads the partition-wide chunk (bind_rest), None: there is none

    # The partition-wide chunk (`rest_json`), read on a batch's first use of either field:
    # extra JSON state of the managers (txn offsets, consumer groups), in the snapshot,
    extensions = _Rest()
    # and the count of OffsetCommit records written or replayed: the log position used to order a
    # transaction's offsets against regular commits (Kafka's record offset).
    next_record_seq = _Rest()

    # The managers, each given this coordinator: built on a batch's first use of them (a batch
    # rebuilds the partition's components, and most use one or two of them), then plain attributes.
    configs = _Manager(GroupConfigs)
    offset_manager = _Manager(OffsetManager)
    txn_offsets = _Manager(TxnOffsetManager)
    classic = _Manager(ClassicGroupManager)
    consumer = _Manager(ConsumerGroupManager)
    share = _Manager(ShareGroupManager)
    streams = _Manager(StreamsGroupManager)
    share_offsets = _Manager(lambda g: ShareOffsetsAdmin(g, g.share_coordinator))

    # ================================================================ timers
    def ensure_expiration_timer(self, result: CoordinatorResult) -> None:
        """Kafka runs the expiry every offsets.retention.check.interval.ms from coordinator load;
        here the cycle runs while the partition has groups (it finds nothing to do otherwise)."""
        if EXPIRATION_TIMER_KEY not in self.p.timers:
            deadline = self.p.clock_ms + self.p.config["offsets.retention.check.interval.ms"]
            result.schedule(EXPIRATION_TIMER_KEY, deadline, T_EXPIRATION)

    def cleanup_group_metadata(self) -> CoordinatorResult:
        """GroupCoordinatorShard.cleanupGroupMetadata: expire offsets, and delete Empty groups
        left without offsets or open transactions."""
        result = CoordinatorResult()
        for group_id in list(self.groups):
            group = self.groups.get(group_id)
            if group is None or not group.should_expire():
                continue
            if self.offset_manager.cleanup_expired_offsets(group_id, result) and group.is_empty():
                result.merge(self.delete_group(group, reason="expired: no offsets left"))
        if self.groups:
            self.ensure_expiration_timer(result)
        return result

    # ================================================================ groups
    @staticmethod
    def event(result: CoordinatorResult, group_id: str, event: str, **fields) -> None:
        """A group event, into `result`."""
        result.emit(group_id, event, groupId=group_id, **fields)

    def create_classic_group(self, group_id: str, reason: str, result: CoordinatorResult) -> ClassicGroup:
        """A new classic group, in the groups map at once (Kafka keeps classic groups in memory only:
        its in-memory exception); its event and the expiry timer go into `result`."""
        group = ClassicGroup(group_id, now_ms=self.p.clock_ms)
        self.groups[group_id] = group
        self.event(result, group_id, "GroupCreated", groupType=CLASSIC, reason=reason)
        self.ensure_expiration_timer(result)
        return group

    def delete_group(
        self, group: Group, reason: str, with_offsets: bool = False, in_memory: bool = False
    ) -> CoordinatorResult:
        """The group's tombstones (and its offsets' when asked), its timers cancelled, and the
        GroupDeleted event: replaying the tombstones forgets the group. `in_memory`: a conversion
        into a classic group (Kafka's removeGroup in an in-memory-only result), whose tombstones
        are written but not replayed."""
        result = CoordinatorResult(replay_records=not in_memory)
        offsets = self.offset_manager.delete_all_offsets(group.group_id, result) if with_offsets else 0
        state = group.state_as_string()  # before the tombstones' replay empties it (what the gauges hold)
        for key in group.tombstone_record_keys():
            result.record(key, None)
        for key in group.timer_keys():
            result.cancel(key)
        # The tombstones' replay forgets the group too; it goes now so that the rest of the
        # handler sees it gone (Kafka's timeline map), e.g. a conversion creating a group of
        # another type under the same id. Only called once nothing can fail.
        self.groups.pop(group.group_id, None)
        self.event(
            result,
            group.group_id,
            "GroupDeleted",
            groupType=group.type,
            reason=reason,
            offsetsDeleted=offsets,
            state=state,
        )
        return result

    # ================================================================ records
    @staticmethod
    def offset_commit_record(
        group_id: str, topic: str, partition: int, value: OffsetAndMetadata, producer_id: int | None = None
    ) -> StateRecord:
        record = value.record_value()
        if producer_id is not None:
            record["producerId"] = producer_id
        return StateRecord(record_key("OffsetCommit", group_id, topic, partition), record)

    @staticmethod
    def offset_tombstone(group_id: str, topic: str, partition: int) -> StateRecord:
        return StateRecord(record_key("OffsetCommit", group_id, topic, partition), None)

    # ================================================================ transactional offsets
    def validate_transactional_offset_commit(
        self,
        group_id: str,
        member_id: str,
        instance_id: str | None,
        generation_id: int,
        api_version: int,
        result: CoordinatorResult,
    ) -> Group:
        """OffsetMetadataManager.validateTransactionalOffsetCommit: raises ApiError, or returns the
        group (creating a simple group for generation -1, as Kafka does; its event and timer into
        `result`)."""
        group = self.groups.get(group_id)
        if group is None:
            if generation_id >= 0:
                raise ApiError(Errors.ILLEGAL_GENERATION)
            group = self.create_classic_group(group_id, reason="simple group created by TxnOffsetCommit", result=result)
        try:
            group.validate_offset_commit(member_id, instance_id, generation_id, True, api_version)
        except ApiError as e:
            if e.error is Errors.STALE_MEMBER_EPOCH:
                raise ApiError(Errors.ILLEGAL_GENERATION) from e
            raise
        return group

    def is_offset_metadata_invalid(self, metadata: str | None) -> bool:
        return self.offset_manager.is_metadata_invalid(metadata)

    def complete_transaction(self, producer_id: int, committed: bool) -> list[tuple[str, str, int]]:
        """Apply a COMMIT or ABORT marker for `producer_id` to the offset store
        (replayEndTransactionMarker); returns the offsets that became committed. The state-log
        record of the marker is the transaction coordinator's to write (and to replay by calling
        this method)."""
        changed = self.offsets.complete_transaction(producer_id, committed)
        return changed

    def has_pending_transactional_offsets(
        self, group_id: str, topic: str | None = None, partition: int | None = None
    ) -> bool:
        return self.offsets.has_pending(group_id, topic, partition)

    # ================================================================ topic metadata
    def on_metadata_change(self, old: dict, new: dict) -> CoordinatorResult:
        """Called by the metadata component when the broker's topics change (it applies the result)."""
        result = self.consumer.on_metadata_change(old, new)
        self.share.on_metadata_change(old, new)
        self.streams.on_metadata_change(old, new)
        return result

    # ================================================================ replay (coordinator load)
    def replay_group_metadata(self, ids: list, value: dict | None) -> None:
        group_id = ids[0]
        if value is None:
            group = self.groups.get(group_id)
            if group is not None and group.type == CLASSIC:
                del self.groups[group_id]
        else:
            self.groups[group_id] = ClassicGroup.from_record(group_id, value)

    def replay_offset_commit(self, ids: list, value: dict | None) -> None:
        group_id, topic, partition = ids
        seq = self.next_record_seq
        self.next_record_seq += 1
        if value is None:
            self.offsets.remove(group_id, topic, partition)
            return
        if group_id not in self.groups:
            # Offsets without membership: a simple group.
            self.groups[group_id] = ClassicGroup(group_id, now_ms=self.p.clock_ms)
        offset = OffsetAndMetadata.from_record(value, seq)
        producer_id = value.get("producerId", -1)
        if producer_id >= 0:
            self.offsets.add_pending(producer_id, group_id, topic, partition, offset)
        else:
            self.offsets.put(group_id, topic, partition, offset)

    def after_replay(self) -> CoordinatorResult:
        """onLoaded: session timers for every classic member (from now), rebalance groups over
        group.max.size, and the expiry cycle."""
        result = CoordinatorResult()
        for group in list(self.groups.values()):
            if isinstance(group, ClassicGroup):
                loaded = CoordinatorResult(replay_records=False)  # a classic path: in memory only
                self.classic.on_loaded(loaded, group)
                result.merge(loaded)
        self.consumer.on_loaded(result)
        self.share.on_loaded(result)
        self.streams.on_loaded(result)
        self.txn_offsets.on_loaded(result)
        if self.groups:
            self.ensure_expiration_timer(result)
        return result

    # ================================================================ snapshot
    def to_json(self) -> dict:
        return {
            "groups": {gid: g.to_json() for gid, g in self.groups.items()},
            "offsets": self.offsets.to_json(),
            "groupConfigs": dict(self.group_configs),
            "nextRecordSeq": self.next_record_seq,
            "extensions": self.extensions,
        }

    def load_json(self, data: dict) -> None:
        self.groups = LazyMap(EMPTY_SOURCE, "GroupMetadata", _group_from_chunk, _group_to_chunk)
        for gid, g in data.get("groups", {}).items():
            self.groups[gid] = group_from_json(g)
        self.offsets = OffsetStore.from_json(data.get("offsets", {}))
        self.group_configs = LazyMap(EMPTY_SOURCE, "GroupConfig", _plain, _plain)
        self.group_configs.update(data.get("groupConfigs", {}))  # absent before group configs
        self.__dict__.pop("offset_manager", None)  # built again on the loaded store
        self.load_rest(data)

    # Chunked storage: the groups and offsets per entity, the rest in one partition-wide chunk.
    def chunk_maps(self) -> tuple:
        return (self.groups, self.group_configs, *self.offsets.chunk_maps())

    def bind_rest(self, fetch) -> None:
        self._fetch_rest = fetch

    def rest_json(self):
        if "next_record_seq" not in self.__dict__:  # not read this batch (_Rest)
            return UNCHANGED
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
