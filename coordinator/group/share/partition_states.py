"""The share-partitions' state as a share group sees it (Kafka's ShareGroupStatePartitionMetadata
handling in GroupMetadataManager): which partitions are initializing, initialized or deleting, the
heartbeat's initialization before assignment, and what DeleteGroups and DeleteShareGroupOffsets
move to deleting. The share coordinator holds the state itself (coordinator/share/coordinator.py);
`offsets_admin.py` carries the persister's calls to it."""

from __future__ import annotations

from ...errors import Errors
from ...messages import StateRecord
from ...records import record_key
from ...result import CoordinatorResult
from ..consumer._java import order_key
from ..group import SHARE
from .group import R_STATE_PARTITION_METADATA, ShareGroup


# ====================================================================== ShareGroupStatePartitionMetadata
def init_value(name: str, partitions, timestamp: int) -> dict:
    """Kafka's InitMapValue."""
    return {"name": name, "partitions": sorted(set(partitions)), "timestamp": timestamp}


def combine_init_maps(a: dict, b: dict) -> dict:
    """combineInitMaps: partitions united per topic, the newest timestamp kept."""
    out = {tid: dict(v) for tid, v in a.items()}
    for tid, v in b.items():
        if tid in out:
            out[tid] = init_value(
                v["name"],
                set(out[tid]["partitions"]) | set(v["partitions"]),
                max(out[tid]["timestamp"], v["timestamp"]),
            )
        else:
            out[tid] = dict(v)
    return out


def _topic_infos(m: dict) -> list:
    return [
        {"topicId": tid, "topicName": v["name"], "partitions": sorted(v["partitions"])} for tid, v in sorted(m.items())
    ]


def state_partition_metadata_record(group_id: str, initializing: dict, initialized: dict, deleting: dict):
    """newShareGroupStatePartitionMetadataRecord (deleting: {tid: name})."""
    return (
        record_key(R_STATE_PARTITION_METADATA, group_id),
        {
            "type": R_STATE_PARTITION_METADATA,
            "initializingTopics": _topic_infos(initializing),
            "initializedTopics": _topic_infos(initialized),
            "deletingTopics": [{"topicId": t, "topicName": n} for t, n in sorted(deleting.items())],
        },
    )


def state_partition_metadata_info(value: dict, timestamp: int) -> dict:
    """The replayed record (every InitMapValue stamped with the replay time, as Kafka does)."""

    def init_map(infos):
        return {i["topicId"]: init_value(i["topicName"], i["partitions"], timestamp) for i in infos or []}

    return {
        "initializing": init_map(value.get("initializingTopics")),
        "initialized": init_map(value.get("initializedTopics")),
        "deleting": {i["topicId"]: i.get("topicName", "<UNKNOWN>") for i in value.get("deletingTopics") or []},
    }


def initialized_by_name(group) -> dict[str, set]:
    """The group's initialized share-partitions by topic name (what the assignor may assign)."""
    info = group.state_partition_metadata
    if info is None:
        return {}
    out: dict[str, set] = {}
    for v in info["initialized"].values():
        out.setdefault(v["name"], set()).update(v["partitions"])
    return out


def _without(init_map: dict, topic_partitions: dict) -> dict:
    """`init_map` without the partitions of `topic_partitions` ({tid: partitions}); a topic left
    with none is dropped."""
    out = {}
    for tid, v in init_map.items():
        gone = set(topic_partitions.get(tid, ()))
        left = [p for p in v["partitions"] if p not in gone]
        if left:
            out[tid] = {**v, "partitions": left}
    return out


class SharePartitionStates:
    """The share group manager's (`m`) share-partition bookkeeping."""

    def __init__(self, manager):
        self.m = manager

    # ================================================================ share-partition initialization
    def initialized_assignment_pending(self, group: ShareGroup) -> bool:
        """initializedAssignmentPending: members, and initialized partitions the target lacks (or has
        extra). Only of subscribed topics (deviation, docs/protocol.md: Kafka 4.1 compares every
        initialized partition, so a topic no member subscribes to any more bumps the epoch at every
        heartbeat)."""
        if group.state_partition_metadata is None or not group.members:
            return False
        subscribed = group.subscribed_topic_names()
        initialized = {t: ps for t, ps in initialized_by_name(group).items() if t in subscribed}
        assigned: dict[str, set] = {}
        for a in group.target_assignment.values():
            for t, ps in a.items():
                assigned.setdefault(t, set()).update(ps)
        return {t: set(ps) for t, ps in initialized.items()} != assigned

    def subscribed_topics_change_map(self, group_id: str, topic_names) -> dict:
        """subscribedTopicsChangeMap: {tid: InitMapValue} of subscribed partitions neither initialized
        nor initializing since less than 2 x offsets.commit.timeout.ms (those are retried)."""
        if not topic_names:
            return {}
        meta = self.m.metadata
        group = self.m.c.groups.get(group_id)
        info = getattr(group, "state_partition_metadata", None)
        now = self.m.now
        delta = 2 * int(self.m.config.get("offsets.commit.timeout.ms", 5000))
        done: dict[str, set] = {}
        if info is not None:
            for tid, v in info["initialized"].items():
                done.setdefault(tid, set()).update(v["partitions"])
            for tid, v in info["initializing"].items():
                if now - v["timestamp"] < delta:
                    done.setdefault(tid, set()).update(v["partitions"])
        out = {}
        for name in sorted(topic_names, key=order_key):
            tid, count = meta.topic_id(name), meta.topics.get(name)
            if tid is None or count is None:
                continue
            missing = [p for p in range(count) if p not in done.get(tid, set())]
            if missing:
                out[tid] = init_value(name, missing, now)
        return out

    def maybe_create_initialize_request(self, group: ShareGroup, topic_names, records: list) -> dict:
        """maybeCreateInitializeShareGroupStateRequest: the initializing record; returns what to initialize."""
        if not topic_names or not self.m.metadata.available:
            return {}
        change = self.subscribed_topics_change_map(group.group_id, topic_names)
        if not change:
            return {}
        info = group.state_partition_metadata
        if info is None:
            records.append(state_partition_metadata_record(group.group_id, change, {}, {}))
        else:
            deleting = {t: n for t, n in info["deleting"].items() if t not in change}
            records.append(
                state_partition_metadata_record(
                    group.group_id, combine_init_maps(info["initializing"], change), info["initialized"], deleting
                )
            )
        return change

    def _send_initialize(
        self, group_id: str, group_epoch: int, init_map: dict, result: CoordinatorResult, info: dict
    ) -> None:
        """The persister's initializeState: each share-partition's coordinator partition initializes it
        (into `result`); `info` is the group's partition metadata once `result`'s records replay."""
        self.m.c.share_offsets.initialize_for_group(
            result, group_id, group_epoch, {tid: list(v["partitions"]) for tid, v in init_map.items()}, info
        )

    def _metadata_info(self, group_id: str, staged: dict | None) -> tuple[bool, dict | None]:
        """(whether the share group exists, its partition metadata): `staged` is the metadata the
        caller's records (not replayed yet) leave the group with; otherwise the group's own."""
        if staged is not None:
            return True, staged
        group = self.m.c.groups.get(group_id)
        if not isinstance(group, ShareGroup):
            return False, None
        return True, group.state_partition_metadata

    def initialize_share_group_state(
        self, group_id: str, topic_partitions: dict, staged: dict | None = None
    ) -> CoordinatorResult:
        """initializeShareGroupState: the answered partitions move from initializing to initialized."""
        result = CoordinatorResult()
        exists, info = self._metadata_info(group_id, staged)
        if not exists or not topic_partitions:
            return result
        enriched = self._attach_init_value(topic_partitions)
        if info is None:
            result.records.append(StateRecord(*state_partition_metadata_record(group_id, {}, enriched, {})))
            return result
        initializing = _without(info["initializing"], topic_partitions)
        result.records.append(
            StateRecord(
                *state_partition_metadata_record(
                    group_id, initializing, combine_init_maps(info["initialized"], enriched), info["deleting"]
                )
            )
        )
        self.m.c.event(
            result,
            group_id,
            "SharePartitionsInitialized",
            groupType=SHARE,
            topicPartitions={t: sorted(ps) for t, ps in sorted(topic_partitions.items())},
        )
        return result

    def uninitialize_share_group_state(
        self, group_id: str, topic_partitions: dict, staged: dict | None = None
    ) -> CoordinatorResult:
        """uninitializeShareGroupState: failed partitions leave initializing (the next heartbeat retries)."""
        result = CoordinatorResult()
        exists, info = self._metadata_info(group_id, staged)
        if not exists or not topic_partitions or info is None or not info["initializing"]:
            return result
        initializing = _without(info["initializing"], topic_partitions)
        result.records.append(
            StateRecord(*state_partition_metadata_record(group_id, initializing, info["initialized"], info["deleting"]))
        )
        return result

    def _attach_init_value(self, topic_partitions: dict) -> dict:
        meta = self.m.metadata
        return {
            tid: init_value(meta.topic_name(tid) or "<UNKNOWN>", ps, self.m.now) for tid, ps in topic_partitions.items()
        }

    # ================================================================ deleting share-partition state
    def share_group_build_partition_delete_request(self, group: ShareGroup, result: CoordinatorResult) -> dict | None:
        """shareGroupBuildPartitionDeleteRequest (DeleteGroups): the initialized and initializing
        share-partitions (and every partition of a topic still deleting from an earlier attempt) to
        delete, {tid: [partitions]}, after a record into `result` moving them all to deleting; None
        if nothing."""
        info = group.state_partition_metadata
        if info is None:
            return None
        candidates = combine_init_maps(info["initialized"], info["initializing"])
        meta = self.m.metadata
        if meta.available:
            for tid in sorted(info["deleting"]):
                name = meta.topic_name(tid)
                if name is not None:
                    candidates = combine_init_maps(candidates, {tid: init_value(name, range(meta.topics[name]), -1)})
        if not candidates and not info["deleting"]:
            return None
        deleting = {tid: v["name"] for tid, v in candidates.items()}
        result.records.append(StateRecord(*state_partition_metadata_record(group.group_id, {}, {}, deleting)))
        return {tid: list(v["partitions"]) for tid, v in sorted(candidates.items())} or None

    def share_partitions_eligible_for_offset_deletion(
        self, group_id: str, topic_names: list[str], result: CoordinatorResult
    ) -> tuple:
        """sharePartitionsEligibleForOffsetDeletion (DeleteShareGroupOffsets): ({tid: (name,
        [partitions])} to delete, [error topic responses], the group's share-partition metadata as
        the record leaves it); the initialized partitions of each named topic (all its partitions if
        it is already deleting) move to deleting in one record, into `result`."""
        group = self.m.share_group(group_id)
        info = group.state_partition_metadata
        if info is None:
            return {}, [], None
        meta = self.m.metadata
        initialized = {tid: dict(v) for tid, v in info["initialized"].items()}
        deleting = dict(info["deleting"])
        to_delete, errors = {}, []
        for name in topic_names:
            tid = meta.topic_id(name)
            if tid is None:
                errors.append(
                    {
                        "topicName": name,
                        "errorCode": Errors.UNKNOWN_TOPIC_OR_PARTITION.code,
                        "errorMessage": Errors.UNKNOWN_TOPIC_OR_PARTITION.message,
                    }
                )
            elif tid in initialized:
                to_delete[tid] = (name, list(initialized.pop(tid)["partitions"]))
                deleting[tid] = name
            elif tid in deleting:
                to_delete[tid] = (name, list(range(meta.topics.get(name, 0))))
            else:
                errors.append(
                    {
                        "topicName": name,
                        "errorCode": Errors.UNKNOWN_TOPIC_OR_PARTITION.code,
                        "errorMessage": "There is no offset information to delete.",
                    }
                )
        result.records.append(
            StateRecord(*state_partition_metadata_record(group_id, info["initializing"], initialized, deleting))
        )
        written = {"initializing": info["initializing"], "initialized": initialized, "deleting": deleting}
        return to_delete, errors, written

    def complete_delete_share_group_offsets(
        self, group_id: str, topic_ids, written: dict | None = None
    ) -> CoordinatorResult:
        """completeDeleteShareGroupOffsets: the deleted topics leave deleting. `written`: the
        metadata as the same handler's earlier record leaves it (not replayed yet); else the
        group's."""
        result = CoordinatorResult()
        info: dict | None
        if written is not None:
            info = written
        else:
            group = self.m.c.groups.get(group_id)
            info = group.state_partition_metadata if isinstance(group, ShareGroup) else None
        if info is None:
            return result
        deleting = {t: n for t, n in info["deleting"].items() if t not in set(topic_ids)}
        result.records.append(
            StateRecord(*state_partition_metadata_record(group_id, info["initializing"], info["initialized"], deleting))
        )
        return result
