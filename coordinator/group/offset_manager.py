"""OffsetCommit, OffsetFetch, OffsetDelete and offset expiry: Kafka's OffsetMetadataManager.

Generic over group types: it talks to groups through the `Group` interface only.
"""

from __future__ import annotations

from ..errors import ApiError, Errors
from ..messages import Request
from ..metadata import ZERO_UUID
from ..result import CoordinatorResult
from .classic.apis import (
    fetch_group_error,
    fetch_partition,
    offset_commit_response,
    offset_delete_response,
    offset_fetch_response,
    request_fetch_groups,
)
from .classic.group import PREPARING_REBALANCE, STABLE, ClassicGroup, session_timer_key
from .classic.manager import T_SESSION
from .group import CommitPartitionValidator, group_not_found
from .javautil import java_utf16_length
from .offsets import OffsetAndMetadata

DEFAULT_RETENTION_TIME = -1


def _unknown_id_key(topic_id: str) -> str:
    # Not a legal topic name (a NUL), so it cannot collide with a resolved topic's name.
    return "\x00" + topic_id


def _by_id(version: int, topics: list[dict], ids: dict[str, str]) -> list[dict]:
    """v10 answers name topics by id: the request's id for a resolved name, the unknown id itself."""
    if version < 10:
        return topics
    return [
        {"topicId": t["name"][1:] if t["name"].startswith("\x00") else ids[t["name"]], "partitions": t["partitions"]}
        for t in topics
    ]


class _ResponseBuilder:
    """OffsetCommitResponse.Builder / OffsetDeleteResponse.Builder: topics in the order they were
    first answered; `merge` appends the coordinator's topics (partitions of a topic already listed
    go after its own)."""

    def __init__(self) -> None:
        self.topics: list[dict] = []
        self._by_name: dict[str, dict] = {}

    def add(self, topic: str, partition: int, error) -> None:
        entry = self._by_name.get(topic)
        if entry is None:
            entry = self._by_name[topic] = {"name": topic, "partitions": []}
            self.topics.append(entry)
        entry["partitions"].append({"partitionIndex": partition, "errorCode": error.code})

    def merge(self, topics: list[dict]) -> list[dict]:
        for topic in topics:
            entry = self._by_name.get(topic["name"])
            if entry is None:
                entry = self._by_name[topic["name"]] = {"name": topic["name"], "partitions": []}
                self.topics.append(entry)
            entry["partitions"].extend(topic["partitions"])
        return self.topics


class OffsetManager:
    def __init__(self, coordinator):
        self.c = coordinator
        self.p = coordinator.p
        self.config = coordinator.p.config
        self.store = coordinator.offsets

    def is_metadata_invalid(self, metadata: str | None) -> bool:
        """Metadata longer than offset.metadata.max.bytes (Kafka compares String.length())."""
        if not metadata:
            return False if metadata is None else self.config["offset.metadata.max.bytes"] < 0
        limit = self.config["offset.metadata.max.bytes"]
        # A string's UTF-16 length is at most twice its length in code points: short metadata (the
        # usual "" or a few characters) needs no encoding to be measured.
        return len(metadata) * 2 > limit and java_utf16_length(metadata) > limit

    # ================================================================ OffsetCommit
    def validate_offset_commit(self, request: Request, result: CoordinatorResult) -> CommitPartitionValidator | None:
        """Raises ApiError before changing anything; then creates the simple group if needed (an
        in-memory classic group) and puts the member's session timer into `result`. Returns the
        check of each partition (None: all pass)."""
        body, version = request.body, request.api_version
        group_id, generation = body["groupId"], body["generationIdOrMemberEpoch"]
        group = self.c.groups.get(group_id)
        if group is None:
            if generation >= 0:
                raise group_not_found(group_id) if version >= 9 else ApiError(Errors.ILLEGAL_GENERATION)
            # The admin client or a consumer without group management: a "simple" group (an empty
            # classic group accepts such a commit, so nothing below can fail).
            self.c.create_classic_group(group_id, reason="simple group created by OffsetCommit", result=result)
            return None
        validator = group.validate_offset_commit(
            body["memberId"], body.get("groupInstanceId"), generation, False, version
        )
        # Classic members keep their session alive by committing while Stable or PreparingRebalance.
        if isinstance(group, ClassicGroup) and group.state in (STABLE, PREPARING_REBALANCE):
            member = group.member(body["memberId"])
            assert member is not None  # validate_offset_commit checked it
            result.schedule(
                session_timer_key(group_id, member.member_id),
                self.p.clock_ms + member.session_timeout_ms,
                T_SESSION,
                {"groupId": group_id, "memberId": member.member_id},
            )
        return validator

    def _split_unknown_topics(self, topics: list) -> tuple[_ResponseBuilder, list]:
        """KafkaApis.handleOffsetCommitRequest / handleOffsetDeleteRequest: a topic the metadata
        does not know gets UNKNOWN_TOPIC_OR_PARTITION on all its partitions, a partition index the
        topic does not have gets it for itself; the rest (topics with their valid partitions) go to
        the coordinator. Before the first UpdateMetadata every topic is taken to exist (see
        docs/protocol.md, *Internal requests*)."""
        known = self.c.metadata.known_partitions()  # (read once for the request, not per partition)
        answered = _ResponseBuilder()
        valid = []
        for topic in topics:
            name = topic["name"]
            if name.startswith("\x00"):  # v10: an id the metadata does not know
                for part in topic["partitions"]:
                    answered.add(name, part["partitionIndex"], Errors.UNKNOWN_TOPIC_ID)
                continue
            if known is None:
                valid.append(topic)
                continue
            n = known.get(name)
            if n is None:
                for part in topic["partitions"]:
                    answered.add(name, part["partitionIndex"], Errors.UNKNOWN_TOPIC_OR_PARTITION)
                continue
            parts = []
            for part in topic["partitions"]:
                if 0 <= part["partitionIndex"] < n:
                    parts.append(part)
                else:
                    answered.add(name, part["partitionIndex"], Errors.UNKNOWN_TOPIC_OR_PARTITION)
            if len(parts) == len(topic["partitions"]):
                valid.append(topic)  # all there (read only from here on)
            elif parts:
                valid.append({**topic, "partitions": parts})
        return answered, valid

    def _resolve_topic_ids(self, topics: list) -> tuple[list, dict]:
        """v10 (KIP-848): topics are named by id; KafkaApis resolves each with the metadata. A topic
        whose id is unknown keeps a placeholder name (`_unknown_id_key`) that `_split_unknown_topics`
        answers UNKNOWN_TOPIC_ID, in request order with the other rejected topics. Returns the
        topics with names, and name -> id for the answer."""
        metadata = self.c.metadata
        resolved, ids = [], {}
        for topic in topics:
            name = metadata.topic_name(topic["topicId"])
            if name is None:
                name = _unknown_id_key(topic["topicId"])
            else:
                ids[name] = topic["topicId"]
            resolved.append({**topic, "name": name})
        return resolved, ids

    def commit_offset(self, request: Request) -> CoordinatorResult:
        body, version = request.body, request.api_version
        topics = body["topics"]
        ids: dict[str, str] = {}
        if version >= 10:
            topics, ids = self._resolve_topic_ids(topics)
        answered, valid = self._split_unknown_topics(topics)
        if not valid:
            # KafkaApis answers a commit with no partition left without calling the coordinator
            # (no group is created or validated).
            return CoordinatorResult(offset_commit_response(version, _by_id(version, answered.topics, ids)))
        result = CoordinatorResult()
        try:
            coordinator = self._commit_valid_offsets(request, valid, result)
        except ApiError as e:
            # The coordinator's error is reported on the partitions it was asked about (and its
            # result is dropped, as the runtime drops that of a handler that raises).
            result = CoordinatorResult()
            coordinator = [
                {
                    "name": t["name"],
                    "partitions": [
                        {"partitionIndex": p["partitionIndex"], "errorCode": e.error.code} for p in t["partitions"]
                    ],
                }
                for t in valid
            ]
        if answered.topics or len(coordinator) > 1:
            coordinator = answered.merge(coordinator)  # (else merging would copy the one topic)
        result.response = offset_commit_response(version, _by_id(version, coordinator, ids))
        return result

    def _commit_valid_offsets(self, request: Request, valid: list, result: CoordinatorResult) -> list:
        body = request.body
        validator = self.validate_offset_commit(request, result)
        now = self.p.clock_ms
        retention = body.get("retentionTimeMs", DEFAULT_RETENTION_TIME)
        expire = None if retention == DEFAULT_RETENTION_TIME else now + retention
        topics = []
        for topic in valid:
            partitions = []
            for part in topic["partitions"]:
                metadata = part["committedMetadata"]
                if self.is_metadata_invalid(metadata):
                    partitions.append(
                        {"partitionIndex": part["partitionIndex"], "errorCode": Errors.OFFSET_METADATA_TOO_LARGE.code}
                    )
                    continue
                if validator is not None:  # raises for the whole request, as Kafka's does
                    validator(topic["name"], part["partitionIndex"])
                epoch = part.get("committedLeaderEpoch", -1)
                value = OffsetAndMetadata(
                    part["committedOffset"],
                    None if epoch == -1 else epoch,
                    metadata if metadata is not None else "",
                    now,
                    expire,
                )
                result.records.append(
                    self.c.offset_commit_record(body["groupId"], topic["name"], part["partitionIndex"], value)
                )
                partitions.append({"partitionIndex": part["partitionIndex"], "errorCode": Errors.NONE.code})
            topics.append({"name": topic["name"], "partitions": partitions})
        return topics

    # ================================================================ OffsetFetch
    def fetch_offsets(self, request: Request) -> dict:
        body, version = request.body, request.api_version
        require_stable = body.get("requireStable", False)
        groups = []
        for g in request_fetch_groups(version, body):
            if not self.p.owns(g["groupId"]):
                groups.append(fetch_group_error(version, g, Errors.NOT_COORDINATOR))
                continue
            try:
                if g["topics"] is None:
                    answer = self.fetch_all_offsets(version, g, require_stable)
                    if version >= 10:
                        answer["topics"] = self._fetched_by_id(answer["topics"])
                elif version >= 10:
                    answer = self._fetch_by_id(version, g, require_stable)
                else:
                    answer = self.fetch_group_offsets(version, g, require_stable)
                groups.append(answer)
            except ApiError as e:
                groups.append(fetch_group_error(version, g, e.error))
        return offset_fetch_response(version, groups)

    def _fetch_by_id(self, version: int, g: dict, require_stable: bool) -> dict:
        """OffsetFetch v10 for listed topics: ids resolved to names (an id the metadata does not
        know: UNKNOWN_TOPIC_ID on its partitions, offset -1), the answer named by id again."""
        metadata = self.c.metadata
        named, positions = [], []
        for topic in g["topics"]:
            name = metadata.topic_name(topic["topicId"])
            positions.append((topic, name))
            if name is not None:
                named.append({"name": name, "partitionIndexes": topic["partitionIndexes"]})
        answer = self.fetch_group_offsets(version, {**g, "topics": named}, require_stable)
        fetched = iter(answer["topics"])
        topics = []
        for topic, name in positions:
            if name is None:
                topics.append(
                    {
                        "topicId": topic["topicId"],
                        "partitions": [
                            fetch_partition(version, p, error=Errors.UNKNOWN_TOPIC_ID)
                            for p in topic["partitionIndexes"]
                        ],
                    }
                )
            else:
                topics.append({"topicId": topic["topicId"], "partitions": next(fetched)["partitions"]})
        answer["topics"] = topics
        return answer

    def _fetched_by_id(self, topics: list) -> list:
        """OffsetFetch v10 for all topics: each named by its id; offsets of topics the metadata no
        longer knows (deleted) cannot be named by id and are left out."""
        metadata = self.c.metadata
        out = []
        for topic in topics:
            tid = metadata.topic_id(topic["name"])
            if tid is not None and tid != ZERO_UUID:
                out.append({"topicId": tid, "partitions": topic["partitions"]})
        return out

    def _validate_fetch(self, g: dict) -> bool:
        """False when the group is unknown (Kafka's GroupIdNotFoundException); other errors raise."""
        group = self.c.groups.get(g["groupId"])
        if group is None:
            return False
        try:
            group.validate_offset_fetch(g["memberId"], g["memberEpoch"])
        except ApiError as e:
            if e.error is Errors.GROUP_ID_NOT_FOUND:
                return False
            raise
        return True

    def fetch_group_offsets(self, version: int, g: dict, require_stable: bool) -> dict:
        group_id = g["groupId"]
        known = self._validate_fetch(g)
        topics = []
        for topic in g["topics"]:
            partitions = []
            for index in topic["partitionIndexes"]:
                value = self.store.get(group_id, topic["name"], index) if known else None
                if require_stable and self.store.has_pending(group_id, topic["name"], index):
                    partitions.append(fetch_partition(version, index, error=Errors.UNSTABLE_OFFSET_COMMIT))
                elif value is None:
                    partitions.append(fetch_partition(version, index))
                else:
                    partitions.append(
                        fetch_partition(
                            version,
                            index,
                            value.committed_offset,
                            -1 if value.leader_epoch is None else value.leader_epoch,
                            value.metadata,
                        )
                    )
            topics.append({"name": topic["name"], "partitions": partitions})
        return {"groupId": group_id, "topics": topics, "errorCode": Errors.NONE.code}

    def fetch_all_offsets(self, version: int, g: dict, require_stable: bool) -> dict:
        group_id = g["groupId"]
        if not self._validate_fetch(g):
            return {"groupId": group_id, "topics": [], "errorCode": Errors.NONE.code}
        topics = []
        for topic, partitions in (self.store.group_offsets(group_id) or {}).items():
            out = []
            for index, value in partitions.items():
                if require_stable and self.store.has_pending(group_id, topic, index):
                    out.append(fetch_partition(version, index, error=Errors.UNSTABLE_OFFSET_COMMIT))
                else:
                    out.append(
                        fetch_partition(
                            version,
                            index,
                            value.committed_offset,
                            -1 if value.leader_epoch is None else value.leader_epoch,
                            value.metadata,
                        )
                    )
            topics.append({"name": topic, "partitions": out})
        return {"groupId": group_id, "topics": topics, "errorCode": Errors.NONE.code}

    # ================================================================ OffsetDelete
    def delete_offsets(self, request: Request) -> CoordinatorResult:
        body = request.body
        group_id = body["groupId"]
        if group_id == "":
            return CoordinatorResult(offset_delete_response(Errors.INVALID_GROUP_ID))
        group = self.c.groups.get(group_id)
        if group is None:
            raise group_not_found(group_id)
        group.validate_offset_delete()
        # KafkaApis answers unknown topics and partitions itself and merges the coordinator's answer
        # after them (a group-level error above replaces the whole answer, as
        # OffsetDeleteResponse.Builder.merge does).
        answered, valid = self._split_unknown_topics(body["topics"])
        topics, tombstones = [], []
        for topic in valid:
            name = topic["name"]
            if group.is_subscribed_to_topic(name):
                partitions = [
                    {"partitionIndex": p["partitionIndex"], "errorCode": Errors.GROUP_SUBSCRIBED_TO_TOPIC.code}
                    for p in topic["partitions"]
                ]
            else:
                partitions = []
                for p in topic["partitions"]:
                    index = p["partitionIndex"]
                    partitions.append({"partitionIndex": index, "errorCode": Errors.NONE.code})
                    # A tombstone if there is an offset, committed or pending.
                    if self.store.has_committed_offset(group_id, name, index) or self.store.has_pending(
                        group_id, name, index
                    ):
                        tombstones.append((name, index))
            topics.append({"name": name, "partitions": partitions})
        result = CoordinatorResult(offset_delete_response(Errors.NONE, answered.merge(topics)))
        result.records += [self.c.offset_tombstone(group_id, name, index) for name, index in tombstones]
        if tombstones:
            self.c.event(result, group_id, "OffsetsDeleted", partitions=[[t, p] for t, p in tombstones])
        return result

    def delete_all_offsets(self, group_id: str, result: CoordinatorResult) -> int:
        """Tombstones for every offset of the group, committed or pending (DeleteGroups), into
        `result`; returns how many."""
        partitions = [(t, p) for t, p, _ in self.store.iter_group(group_id)]
        partitions += [
            (t, p)
            for t, p in self.store.pending_partitions(group_id)
            if not self.store.has_committed_offset(group_id, t, p)
        ]
        result.records += [self.c.offset_tombstone(group_id, topic, partition) for topic, partition in partitions]
        return len(partitions)

    # ================================================================ expiry
    def cleanup_expired_offsets(self, group_id: str, result: CoordinatorResult) -> bool:
        """Expire the group's offsets whose retention has passed (tombstones into `result`). True if
        no offsets are left and no transaction has pending offsets for the group."""
        offsets = self.store.group_offsets(group_id)
        if offsets is None:
            return not self.store.has_pending(group_id)
        group = self.c.groups[group_id]
        base = group.offset_expiration_base()
        if base is None:
            return False
        now = self.p.clock_ms
        retention_ms = self.config["offsets.retention.minutes"] * 60 * 1000
        all_expired = True
        expired = []
        for topic, partitions in offsets.items():
            if group.is_subscribed_to_topic(topic):
                all_expired = False
                continue
            for partition, value in partitions.items():
                # A partition with a pending transactional offset does not expire yet.
                if value.is_expired(now, retention_ms, base) and not self.store.has_pending(group_id, topic, partition):
                    expired.append((topic, partition))
                else:
                    all_expired = False
        result.records += [self.c.offset_tombstone(group_id, topic, partition) for topic, partition in expired]
        if expired:
            self.c.event(
                result,
                group_id,
                "OffsetsExpired",
                partitions=[[t, p] for t, p in expired],
                retentionMs=retention_ms,
                groupState=group.state_as_string(),
            )
        return all_expired and not self.store.has_pending(group_id)
