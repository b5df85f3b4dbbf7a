"""The share-group offsets admin APIs (DescribeShareGroupOffsets, AlterShareGroupOffsets,
DeleteShareGroupOffsets), DeleteGroups of share groups and a heartbeat's share-partition
initialization: group-coordinator work (Kafka's GroupCoordinatorService) that asks the share
coordinator of each share-partition, through the persister in Kafka, here directly for the
share-partitions this coordinator partition owns and with internal requests for the others.

DescribeShareGroupOffsets (90): a share group's start offsets, read from the share coordinator.

Kafka: the group coordinator of the group turns the request into a ReadShareGroupStateSummary for
the persister, which sends it to the share coordinators of the share-partitions, and answers once
all replied (a share-partition without state, or whose read failed, has start offset -1).
Here: the group's coordinator partition G reads the share-partitions it owns directly and asks the
others with internal requests on the signed channel, one per owning partition
(`ShareStateSummaryQuery`, keyed by one of its share-partition keys); each answers with
`ShareStateSummaryAnswer`, keyed back to G. The request waits in G's state (`pending`, by query id)
until every answer is in, or `share.admin.timeout.ms` passes (the missing partitions then have start
offset -1, as Kafka answers a failed read). Like a parked TxnOffsetCommit, a waiting request lives in
the checkpointed state and not in the state log.

`topics: null` asks for every initialized share-partition of the group (its
ShareGroupStatePartitionMetadata record, as Kafka).

v1's `lag` (KIP-1226): Kafka computes end offset - start offset - deliveryCompleteCount for each
share-partition whose summary is initialized, the end offset from a ListOffsets to the partition's
leader (PartitionMetadataClient.listLatestOffsets). The core has no broker: in the same batch as its
summary queries, G asks the driver's end-offsets responder (streaming/end_offsets.py) with an
internal request keyed `END_OFFSETS_KEY_PREFIX`-G (the query never reaches a coordinator
partition: the query drops it before the state function), for the partitions it may need (its own
initialized ones, every remote one); the responder answers with a signed `ShareEndOffsetsAnswer`
keyed back to G, which the parked request waits for like a summary answer. A v0 request asks for
none (v0 has no lag). No answer by the timeout: REQUEST_TIMED_OUT on those partitions, as Kafka
answers a ListOffsets that timed out.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...api import registered
from ...errors import ApiError, Errors
from ...messages import ReplyTo, Request
from ...metadata import ZERO_UUID
from ...protocol.loader import shape
from ...records import record_key
from ...result import CoordinatorResult
from ...routing import coordinator_partition
from ...timers import Timer
from ..classic.apis import delete_groups_response
from ..consumer._java import order_key
from .group import ShareGroup
from .partition_states import initialized_by_name

if TYPE_CHECKING:
    from ...share.coordinator import ShareCoordinator

T_ADMIN_TIMEOUT = "share-admin-timeout"
# The routing key prefix of the end-offsets queries for the driver's responder (streaming/end_offsets.py).
END_OFFSETS_KEY_PREFIX = "__share_end_offsets__"
END_OFFSETS_QUERY = "ShareEndOffsetsQuery"
# PartitionFactory: the lag of a share-partition whose lag is not computed.
UNINITIALIZED_LAG = -1


# The APIs (DescribeShareGroupOffsets, Alter/DeleteShareGroupOffsets and the internal
# ShareStateSummaryQuery/Answer between coordinator partitions, for which Kafka's persister sends
# ReadShareGroupStateSummary over the network) are in the API table, coordinator/protocol/table.py.
_alter_error = registered("AlterShareGroupOffsets").error_response
_delete_error = registered("DeleteShareGroupOffsets").error_response


def _partition(index: int, start_offset: int = -1, leader_epoch: int = 0, complete: int = -1) -> dict:
    return {
        "partitionIndex": index,
        "startOffset": start_offset,
        "leaderEpoch": leader_epoch,
        # v1 (KIP-1226): set once the end offset is known (`_with_lag`).
        "lag": UNINITIALIZED_LAG,
        "errorCode": 0,
        "errorMessage": None,
        # The summary's deliveryCompleteCount, kept for the lag (not a response field).
        "_complete": complete,
    }


def _lag_computable(p: dict) -> bool:
    """shouldComputeSharePartitionLag: the summary read worked, its start offset and its
    deliveryCompleteCount are initialized."""
    return p["errorCode"] == 0 and p["startOffset"] != -1 and p.get("_complete", -1) != -1


def end_offsets_key(partition_id: int) -> str:
    """The routing key of coordinator partition `partition_id`'s end-offsets queries."""
    return f"{END_OFFSETS_KEY_PREFIX}-{partition_id}"


class ShareOffsetsAdmin:
    """The group coordinator's side of the share-partitions' state: `groups` is the group
    coordinator, `share` the share coordinator of the same coordinator partition (Kafka's
    persister target). Requests waiting for other partitions' answers are kept in the share
    coordinator's admin state (`ShareCoordinator.admin_state`: the persister's pending futures)."""

    def __init__(self, groups, share: ShareCoordinator):  # groups: the GroupCoordinator that owns it
        self.groups = groups
        self.share = share
        self.p = groups.p

    # ------------------------------------------------------------------ the request
    def describe(self, request: Request) -> CoordinatorResult:
        result = CoordinatorResult()
        groups_out: list = []
        remote: dict[int, dict] = {}  # owning partition -> {"key": routing key, "topics": {tid: [p]}}
        # topic name -> partitions whose end offset the lag may need (v1: v0 has no lag)
        ends: dict[str, set[int]] | None = {} if request.api_version >= 1 else None
        meta = self.groups.metadata
        for g in request.body["groups"]:
            group_id = g["groupId"]
            entry = {"groupId": group_id, "topics": [], "errorCode": 0, "errorMessage": None}
            groups_out.append(entry)
            if not self.p.config.get("group.share.enable", True):
                entry["errorCode"] = Errors.UNSUPPORTED_VERSION.code
                continue
            if not self.p.owns(group_id):
                entry["errorCode"], entry["errorMessage"] = Errors.NOT_COORDINATOR.code, Errors.NOT_COORDINATOR.message
                continue
            if not meta.available:
                entry["errorCode"] = Errors.COORDINATOR_NOT_AVAILABLE.code
                continue
            for name, partitions in self._requested(group_id, g["topics"]):
                tid = meta.topic_id(name)
                if tid is None:
                    entry["topics"].append(
                        {"topicName": name, "topicId": ZERO_UUID, "partitions": [_partition(p) for p in partitions]}
                    )
                    continue
                parts = []
                for p in partitions:
                    key = f"{group_id}:{tid}:{p}"
                    if self.p.owns(key):
                        parts.append(_partition(p, *self.share.start_offset(group_id, tid, p)))
                        if ends is not None and _lag_computable(parts[-1]):
                            ends.setdefault(name, set()).add(p)
                    else:
                        parts.append(_partition(p))  # filled in by the answer
                        owner = coordinator_partition(key, self.p.config["coordinator.partitions"])
                        ask = remote.setdefault(owner, {"key": key, "groups": {}})
                        ask["groups"].setdefault(group_id, {}).setdefault(tid, []).append(p)
                        if ends is not None:  # asked now, with the summaries: no extra micro-batch
                            ends.setdefault(name, set()).add(p)
                entry["topics"].append({"topicName": name, "topicId": tid, "partitions": parts})
        response = {"throttleTimeMs": 0, "groups": groups_out}
        if not remote and not ends:
            result.response = _described(request.api_version, response)
            return result
        self._park(result, request.reply, response, remote, end_offsets=ends or None)
        return result

    def _requested(self, group_id: str, topics: list | None) -> list[tuple[str, list[int]]]:
        if topics is not None:
            return [(t["topicName"], list(t["partitions"])) for t in topics]
        group = self.groups.groups.get(group_id)
        if not isinstance(group, ShareGroup):
            return []
        by_topic = initialized_by_name(group)
        return [(t, sorted(by_topic[t])) for t in sorted(by_topic, key=order_key)]

    # ------------------------------------------------------------------ waiting for the answers
    def _park(
        self,
        result: CoordinatorResult,
        reply: ReplyTo,
        response: dict,
        remote: dict,
        op: str = "summary",
        state_epoch: int = 0,
        end_offsets: dict[str, set[int]] | None = None,
    ) -> dict:
        """Ask the owners (`remote`), and the driver's responder for the `end_offsets` of
        {topic name: partitions}, and keep the request waiting in the admin state (what Kafka
        keeps in memory as the persister's pending futures; here checkpointed, never in the log).
        Returns the parked entry."""
        st = self.share.admin_state()
        qid = st.get("nextQueryId", 0)
        st["nextQueryId"] = qid + 1
        waiting = 0
        for _owner, ask in sorted(remote.items()):
            for group_id, topics in ask["groups"].items():
                waiting += 1
                query = {
                    "queryId": qid,
                    "fromPartition": self.p.partition_id,
                    "groupId": group_id,
                    "topics": [
                        {"topicId": t, "partitions": [p if op != "initialize" else p[0] for p in ps]}
                        for t, ps in topics.items()
                    ],
                    "op": op,
                    "stateEpoch": state_epoch,
                    "startOffsets": [p[1] for ps in topics.values() for p in ps] if op == "initialize" else [],
                }
                self._ask(result, ask["key"], query)
        parked: dict[str, Any] = {"reply": reply.to_json(), "response": response, "waiting": waiting}
        if end_offsets:
            self._ask_end_offsets(result, qid, end_offsets)
            parked["waiting"] += 1
            parked["awaitsEndOffsets"] = True
        st.setdefault("pending", {})[str(qid)] = parked
        self._expire(result, qid)
        return parked

    def _ask(self, result: CoordinatorResult, key: str, query: dict) -> None:
        """A ShareStateSummaryQuery to the partition owning share-partition `key`."""
        qid = query["queryId"]
        client_id = f"share-admin-{self.p.partition_id}"
        result.send_request(key, "ShareStateSummaryQuery", 0, query, correlation_id=qid % 2**31, client_id=client_id)

    def _ask_end_offsets(self, result: CoordinatorResult, qid: int, wanted: dict[str, set[int]]) -> None:
        """An end-offsets query for the driver's responder (Kafka: listLatestOffsets)."""
        query = {
            "queryId": qid,
            "fromPartition": self.p.partition_id,
            "topics": [{"topicName": t, "partitions": sorted(wanted[t])} for t in sorted(wanted)],
        }
        client_id = f"share-admin-{self.p.partition_id}"
        result.send_request(
            end_offsets_key(self.p.partition_id),
            END_OFFSETS_QUERY,
            0,
            query,
            correlation_id=qid % 2**31,
            client_id=client_id,
        )

    def on_end_offsets(self, request: Request) -> CoordinatorResult:
        """The responder's ShareEndOffsetsAnswer: the end offsets a parked describe waits for."""
        b = request.body
        result = CoordinatorResult()
        parked = self.share.admin_state().get("pending", {}).get(str(b["queryId"]))
        if parked is None or not parked.pop("awaitsEndOffsets", False):
            return result  # timed out already, or a second answer (a replayed query)
        parked["endOffsets"] = {
            f"{t['topicName']}:{p['partitionIndex']}": [p["offset"], p["errorCode"]]
            for t in b["topics"]
            for p in t["partitions"]
        }
        parked["waiting"] -= 1
        if parked["waiting"] <= 0:
            self._finish(result, b["queryId"])
        return result

    def _expire(self, result: CoordinatorResult, qid: int) -> None:
        """The timer after which query `qid`'s missing answers count as failed."""
        deadline = self.p.clock_ms + self.p.config["share.admin.timeout.ms"]
        result.schedule(record_key(T_ADMIN_TIMEOUT, qid), deadline, T_ADMIN_TIMEOUT, {"queryId": qid})

    def on_answer(self, request: Request) -> CoordinatorResult:
        b = request.body
        result = CoordinatorResult()
        st = self.share.admin_state()
        parked = st.get("pending", {}).get(str(b["queryId"]))
        if parked is None:
            return result  # timed out already
        if "groupInit" in parked:
            self._group_init_answer(result, b["queryId"], parked, b["summaries"])
            return result
        if "deleteGroups" in parked:
            self._delete_groups_answer(parked, b["groupId"], b["summaries"])
            parked["waiting"] -= 1
            if parked["waiting"] <= 0:
                self._finish(result, b["queryId"])
            return result
        found = {(s["topicId"], s["partition"]): s for s in b["summaries"]}
        for t in parked["response"].get("responses", []):  # Alter / DeleteShareGroupOffsets
            if "partitions" not in t:  # DeleteShareGroupOffsets: one error per topic
                for (tid, _), s in found.items():
                    if tid == t["topicId"]:
                        t["_waiting"] -= 1
                        if s["errorCode"] and not t.get("_error"):
                            t["_error"] = s["errorCode"]
                if t.get("_waiting", 0) <= 0 and t["errorCode"] == Errors.REQUEST_TIMED_OUT.code:
                    t["errorCode"] = t.get("_error") or 0
                    t["errorMessage"] = Errors.for_code(t["errorCode"]).message if t["errorCode"] else None
                continue
            for p in t["partitions"]:
                s = found.get((t["topicId"], p["partitionIndex"]))
                if s is not None:
                    p["errorCode"] = s["errorCode"]
                    p["errorMessage"] = Errors.for_code(s["errorCode"]).message if s["errorCode"] else None
        for g in parked["response"].get("groups", []):
            if g["groupId"] != b["groupId"]:
                continue
            for t in g["topics"]:
                for p in t["partitions"]:
                    s = found.get((t["topicId"], p["partitionIndex"]))
                    if s is not None:
                        p["startOffset"], p["leaderEpoch"] = s["startOffset"], s["leaderEpoch"]
                        p["_complete"] = s.get("deliveryCompleteCount", -1)
        parked["waiting"] -= 1
        if parked["waiting"] <= 0:
            self._finish(result, b["queryId"])
        return result

    def on_timeout(self, timer: Timer) -> CoordinatorResult:
        """Answers that did not come are start offset -1, as Kafka reports a failed read."""
        result = CoordinatorResult()
        self._finish(result, timer.payload["queryId"])
        return result

    # ------------------------------------------------------------------ AlterShareGroupOffsets
    def alter(self, request: Request) -> CoordinatorResult:
        """GroupCoordinatorService.alterShareGroupOffsets: the group must be an empty share group;
        each partition of a known topic is initialized at its new start offset with the group epoch
        as state epoch (the persister's InitializeShareGroupState), here or on its owner."""
        body = request.body
        result = CoordinatorResult()
        if not self.p.config.get("group.share.enable", True):
            result.response = _alter_error(0, body, Errors.UNSUPPORTED_VERSION, None)
            return result
        meta = self.groups.metadata
        if not meta.available:
            result.response = _alter_error(
                0, body, Errors.COORDINATOR_NOT_AVAILABLE, Errors.COORDINATOR_NOT_AVAILABLE.message
            )
            return result
        group_id = body["groupId"]
        if group_id == "":
            result.response = _alter_error(0, body, Errors.INVALID_GROUP_ID, Errors.INVALID_GROUP_ID.message)
            return result
        response: dict[str, Any] = {"throttleTimeMs": 0, "errorCode": 0, "errorMessage": None, "responses": []}
        if not body["topics"]:
            result.response = response
            return result
        try:
            group = self.groups.share.share_group(group_id)
            group.validate_empty_group()
        except ApiError as e:
            # AlterShareGroupOffsetsRequest.getErrorResponse(Errors): the error's own message
            result.response = _alter_error(0, body, e.error, e.error.message)
            return result
        staged = self.share.writes(result)
        remote: dict[int, dict] = {}
        for topic in body["topics"]:
            name = topic["topicName"]
            tid = meta.topic_id(name)
            count = meta.topics.get(name)
            entry = {"topicName": name, "topicId": tid or ZERO_UUID, "partitions": []}
            response["responses"].append(entry)
            for p in topic["partitions"]:
                index = p["partitionIndex"]
                out = {"partitionIndex": index, "errorCode": 0, "errorMessage": None}
                entry["partitions"].append(out)
                if tid is None or not 0 <= index < (count or 0):
                    out["errorCode"] = Errors.UNKNOWN_TOPIC_OR_PARTITION.code
                    out["errorMessage"] = Errors.UNKNOWN_TOPIC_OR_PARTITION.message
                    continue
                key = f"{group_id}:{tid}:{index}"
                if self.p.owns(key):
                    code = self.share.initialize_at(staged, group_id, tid, index, group.group_epoch, p["startOffset"])
                    if code:
                        out["errorCode"], out["errorMessage"] = code, Errors.for_code(code).message
                    continue
                # Until its owner answers (REQUEST_TIMED_OUT if it does not in share.admin.timeout.ms).
                out["errorCode"], out["errorMessage"] = Errors.REQUEST_TIMED_OUT.code, Errors.REQUEST_TIMED_OUT.message
                owner = coordinator_partition(key, self.p.config["coordinator.partitions"])
                ask = remote.setdefault(owner, {"key": key, "groups": {}})
                ask["groups"].setdefault(group_id, {}).setdefault(tid, []).append((index, p["startOffset"]))
        result.emit(
            group_id,
            "ShareGroupOffsetsAltered",
            groupId=group_id,
            partitions=sum(len(t["partitions"]) for t in response["responses"]),
        )
        if not remote:
            self._record_altered(result, group_id, response)
            result.response = response
            return result
        parked = self._park(result, request.reply, response, remote, op="initialize", state_epoch=group.group_epoch)
        parked["alterGroup"] = group_id
        return result

    def _record_altered(self, result: CoordinatorResult, group_id: str, response: dict) -> None:
        """completeAlterShareGroupOffsets then handlePersisterInitializeResponse: the share-partitions
        initialized at their new offsets are recorded initialized (ShareGroupStatePartitionMetadata)."""
        done = {
            t["topicId"]: [p["partitionIndex"] for p in t["partitions"] if p["errorCode"] == 0]
            for t in response["responses"]
            if t["topicId"] != ZERO_UUID
        }
        done = {t: ps for t, ps in done.items() if ps}
        if done:
            result.merge(self.groups.share.partitions.initialize_share_group_state(group_id, done))

    # ------------------------------------------------------------------ DeleteShareGroupOffsets
    def delete(self, request: Request) -> CoordinatorResult:
        """GroupCoordinatorService.deleteShareGroupOffsets: an empty share group; the initialized
        share-partitions of each named topic move to deleting (ShareGroupStatePartitionMetadata,
        sharePartitionsEligibleForOffsetDeletion) and their state is deleted, here or by the owner;
        the deleted topics then leave deleting (completeDeleteShareGroupOffsets). A topic without
        initialized share-partitions is UNKNOWN_TOPIC_OR_PARTITION ("There is no offset information
        to delete."). One error per topic."""
        body = request.body
        result = CoordinatorResult()
        meta = self.groups.metadata
        if not self.p.config.get("group.share.enable", True):
            result.response = _delete_error(0, body, Errors.UNSUPPORTED_VERSION, None)
            return result
        if not meta.available:
            result.response = _delete_error(0, body, Errors.COORDINATOR_NOT_AVAILABLE, None)
            return result
        group_id = body["groupId"]
        if group_id == "":
            result.response = _delete_error(0, body, Errors.INVALID_GROUP_ID, None)
            return result
        response: dict[str, Any] = {"throttleTimeMs": 0, "errorCode": 0, "errorMessage": None, "responses": []}
        if not body["topics"]:
            result.response = response
            return result
        manager = self.groups.share
        try:
            manager.share_group(group_id).validate_empty_group()
            to_delete, error_topics, written = manager.partitions.share_partitions_eligible_for_offset_deletion(
                group_id, [t["topicName"] for t in body["topics"]], result
            )
        except ApiError as e:
            result.response = _delete_error(0, body, e.error, e.message)
            return result
        staged = self.share.writes(result)
        remote: dict[int, dict] = {}
        for tid, (name, partitions) in to_delete.items():
            entry = {"topicName": name, "topicId": tid, "errorCode": 0, "errorMessage": None}
            response["responses"].append(entry)
            for index in partitions:
                key = f"{group_id}:{tid}:{index}"
                if self.p.owns(key):
                    code = self.share.delete_one(staged, group_id, tid, index, key, {})["errorCode"]
                    if code and not entry.get("_error"):
                        entry["_error"] = code
                    continue
                # Until every owner answered (REQUEST_TIMED_OUT if one does not in time).
                entry["_waiting"] = entry.get("_waiting", 0) + 1
                entry["errorCode"], entry["errorMessage"] = (
                    Errors.REQUEST_TIMED_OUT.code,
                    Errors.REQUEST_TIMED_OUT.message,
                )
                owner = coordinator_partition(key, self.p.config["coordinator.partitions"])
                ask = remote.setdefault(owner, {"key": key, "groups": {}})
                ask["groups"].setdefault(group_id, {}).setdefault(tid, []).append(index)
        for entry in response["responses"]:
            if not entry.get("_waiting") and entry.get("_error"):
                entry["errorCode"], entry["errorMessage"] = entry["_error"], Errors.for_code(entry["_error"]).message
        response["responses"] += [{"topicId": ZERO_UUID, **e} for e in error_topics]
        if not remote:
            result.response = self._complete_delete_offsets(result, group_id, response, written)
            return result
        parked = self._park(result, request.reply, response, remote, op="delete")
        parked["deleteOffsets"] = group_id
        return result

    def _complete_delete_offsets(
        self, result: CoordinatorResult, group_id: str, response: dict, written: dict | None = None
    ) -> dict:
        """`written`: the group's share-partition metadata as this handler's own record leaves it
        (None when completing later, once that record is replayed)."""
        deleted = [t["topicId"] for t in response["responses"] if t["errorCode"] == 0]
        result.merge(self.groups.share.partitions.complete_delete_share_group_offsets(group_id, deleted, written))
        result.emit(
            group_id,
            "ShareGroupOffsetsDeleted",
            groupId=group_id,
            topics=[t["topicName"] for t in response["responses"] if not t["errorCode"]],
        )
        return _public(response)

    # ------------------------------------------------------------------ DeleteGroups of share groups
    def delete_share_groups(
        self, result: CoordinatorResult, request: Request, results: list, groups: dict
    ) -> dict | None:
        """GroupCoordinatorService.deleteGroups for share groups: the persister deletes the state
        of each group's share-partitions (here, or by their owners with `"op": "delete"`); a group
        whose deletion failed gets the error and is kept, the others are then deleted as usual
        (their tombstones). The request waits for the owners' answers."""
        errors: dict[str, int] = {}
        remote: dict[int, dict] = {}
        staged = self.share.writes(result)
        for group_id, topics in groups.items():
            errors[group_id] = 0
            for tid in sorted(topics):
                for index in sorted(topics[tid]):
                    key = f"{group_id}:{tid}:{index}"
                    if self.p.owns(key):
                        code = self.share.delete_one(staged, group_id, tid, index, key, {})["errorCode"]
                        errors[group_id] = errors[group_id] or code
                        continue
                    owner = coordinator_partition(key, self.p.config["coordinator.partitions"])
                    ask = remote.setdefault(owner, {"key": key, "groups": {}})
                    ask["groups"].setdefault(group_id, {}).setdefault(tid, []).append(index)
        parked: dict[str, Any] = {
            "deleteGroups": {"version": request.api_version, "results": results, "errors": errors, "waitingFor": {}}
        }
        if not remote:
            return self._finish_delete_groups(result, parked, respond=False)
        waiting_for = parked["deleteGroups"]["waitingFor"]
        for ask in remote.values():
            for group_id in ask["groups"]:
                waiting_for[group_id] = waiting_for.get(group_id, 0) + 1
        self._park(result, request.reply, {}, remote, op="delete").update(parked)
        return None

    def _delete_groups_answer(self, parked: dict, group_id: str, summaries: list) -> None:
        state = parked["deleteGroups"]
        for s in summaries:
            if s["errorCode"] and not state["errors"].get(group_id):
                state["errors"][group_id] = s["errorCode"]
        state["waitingFor"][group_id] -= 1

    def _finish_delete_groups(self, result: CoordinatorResult, parked: dict, respond: bool = True) -> dict | None:
        """performShareGroupsDeletion's outcome, then the usual deletion of the groups that did not
        fail (validated again: a member may have joined meanwhile). An owner that did not answer
        is REQUEST_TIMED_OUT for its groups."""
        state = parked["deleteGroups"]
        groups = self.groups
        for entry in state["results"]:
            group_id = entry["groupId"]
            if group_id not in state["errors"]:
                continue
            error = state["errors"][group_id]
            if not error and state["waitingFor"].get(group_id, 0) > 0:
                error = Errors.REQUEST_TIMED_OUT.code
            if not error:
                group = groups.groups.get(group_id)
                try:
                    if group is None:
                        raise ApiError(Errors.GROUP_ID_NOT_FOUND, f"Group {group_id} not found.")
                    group.validate_delete_group()
                    result.merge(groups.delete_group(group, reason="DeleteGroups", with_offsets=True))
                except ApiError as e:
                    error = e.error.code
            entry["errorCode"] = error
        response = delete_groups_response(state["version"], state["results"])
        if not respond:
            return response
        result.reply(ReplyTo.from_json(parked["reply"]), response)
        return None

    # ------------------------------------------------------------------ share group initialization
    def initialize_for_group(
        self,
        result: CoordinatorResult,
        group_id: str,
        group_epoch: int,
        topics: dict,
        group_metadata: dict | None = None,
    ) -> None:
        """The persister's initializeState for a ShareGroupHeartbeat: InitializeShareGroupState with
        start offset -1 and the group epoch as state epoch, here for the share-partitions this
        partition owns and by their owners for the others (`"op": "initialize"`); the outcome goes to
        the group (initializeShareGroupState / uninitializeShareGroupState). A query not answered in
        share.admin.timeout.ms counts as failed, as a persister error does in Kafka."""
        done: dict[str, list] = {}
        failed: dict[str, list] = {}
        remote: dict[int, dict] = {}
        staged = self.share.writes(result)
        for tid in sorted(topics):
            for part in sorted(topics[tid]):
                key = f"{group_id}:{tid}:{part}"
                if self.p.owns(key):
                    code = self.share.initialize_at(staged, group_id, tid, part, group_epoch, -1)
                    (failed if code else done).setdefault(tid, []).append(part)
                    continue
                owner = coordinator_partition(key, self.p.config["coordinator.partitions"])
                ask = remote.setdefault(owner, {"key": key, "topics": {}})
                ask["topics"].setdefault(tid, []).append(part)
        if not remote:
            self._group_init_outcome(result, group_id, *_all_or_nothing(done, failed), group_metadata)
            return
        # One outcome for the whole set, once every owner answered, as Kafka's persister completes
        # initializeState (one ShareGroupStatePartitionMetadata record, one group epoch bump).
        st = self.share.admin_state()
        round_id = str(st.get("nextQueryId", 0))
        st.setdefault("initRounds", {})[round_id] = {
            "groupId": group_id,
            "done": done,
            "failed": failed,
            "waiting": len(remote),
        }
        for _owner, ask in sorted(remote.items()):
            qid = st.get("nextQueryId", 0)
            st["nextQueryId"] = qid + 1
            query = {
                "queryId": qid,
                "fromPartition": self.p.partition_id,
                "groupId": group_id,
                "topics": [{"topicId": t, "partitions": ps} for t, ps in ask["topics"].items()],
                "op": "initialize",
                "stateEpoch": group_epoch,
                "startOffsets": [-1 for ps in ask["topics"].values() for _ in ps],
            }
            self._ask(result, ask["key"], query)
            st.setdefault("pending", {})[str(qid)] = {"groupInit": group_id, "topics": ask["topics"], "round": round_id}
            self._expire(result, qid)

    def _group_init_answer(self, result: CoordinatorResult, qid: int, parked: dict, summaries: list) -> None:
        done: dict[str, list] = {}
        failed: dict[str, list] = {}
        for s in summaries:
            (failed if s["errorCode"] else done).setdefault(s["topicId"], []).append(s["partition"])
        self.share.admin_state()["pending"].pop(str(qid), None)
        result.cancel(record_key(T_ADMIN_TIMEOUT, qid))
        self._group_init_part(result, parked, done, failed)

    def _group_init_part(self, result: CoordinatorResult, parked: dict, done: dict, failed: dict) -> None:
        """One owner's part of a heartbeat's initialization; the outcome once every part is in."""
        rounds = self.share.admin_state().get("initRounds", {})
        r = rounds.get(parked.get("round", ""))
        if r is None:  # a query of a state written before rounds: its own outcome
            self._group_init_outcome(result, parked["groupInit"], *_all_or_nothing(done, failed))
            return
        for total, part in ((r["done"], done), (r["failed"], failed)):
            for t, ps in part.items():
                total.setdefault(t, []).extend(ps)
        r["waiting"] -= 1
        if r["waiting"] <= 0:
            del rounds[parked["round"]]
            self._group_init_outcome(result, r["groupId"], *_all_or_nothing(r["done"], r["failed"]))

    def _group_init_outcome(
        self, result: CoordinatorResult, group_id: str, done: dict, failed: dict, group_metadata: dict | None = None
    ) -> None:
        """`group_metadata`: the group's partition metadata as `result`'s records leave it (a heartbeat's),
        None to read the group's (`_all_or_nothing` leaves only one of done and failed)."""
        m = self.groups.share
        if done:
            result.merge(m.partitions.initialize_share_group_state(group_id, done, group_metadata))
        if failed:
            result.merge(m.partitions.uninitialize_share_group_state(group_id, failed, group_metadata))

    def _finish(self, result: CoordinatorResult, qid: int) -> None:
        parked = self.share.admin_state().get("pending", {}).pop(str(qid), None)
        if parked is None:
            return
        result.cancel(record_key(T_ADMIN_TIMEOUT, qid))
        if "groupInit" in parked:  # timed out: the owner did not answer
            self._group_init_part(result, parked, {}, parked["topics"])
            return
        if "deleteGroups" in parked:
            self._finish_delete_groups(result, parked)
            return
        if "alterGroup" in parked:
            self._record_altered(result, parked["alterGroup"], parked["response"])
        if "deleteOffsets" in parked:
            _public(parked["response"])
            self._complete_delete_offsets(result, parked["deleteOffsets"], parked["response"])
        reply = ReplyTo.from_json(parked["reply"])
        response = parked["response"]
        if "groups" not in response:
            result.reply(reply, _public(response))
            return
        if reply.api_version >= 1:
            _with_lag(response, parked.get("endOffsets"))
        result.reply(reply, _described(reply.api_version, response))


def _described(version: int, response: dict) -> dict:
    """A DescribeShareGroupOffsets answer with its version's fields (v0 has no `lag`; the
    bookkeeping keys "_..." go)."""
    return shape("DescribeShareGroupOffsetsResponse", version, response)


def _with_lag(response: dict, end_offsets: dict | None) -> None:
    """computeShareGroupLagAndBuildResponse: each share-partition whose summary is initialized gets
    end offset - start offset - deliveryCompleteCount; one whose end offset came with an error gets
    that error (start offset and leader epoch 0, lag -1, as Kafka builds that partition), and one
    whose end offset did not come in time (`end_offsets` None: no answer) REQUEST_TIMED_OUT, as
    Kafka's listLatestOffsets whose request timed out (one the answer left out
    UNKNOWN_TOPIC_OR_PARTITION, as Kafka's for a partition its ListOffsets answer leaves out). The
    others keep lag -1."""
    missing = Errors.REQUEST_TIMED_OUT if end_offsets is None else Errors.UNKNOWN_TOPIC_OR_PARTITION
    ends = end_offsets or {}
    for g in response["groups"]:
        for t in g["topics"]:
            for p in t["partitions"]:
                if not _lag_computable(p):
                    continue
                offset, code = ends.get(f"{t['topicName']}:{p['partitionIndex']}", (-1, missing.code))
                if code == 0:
                    p["lag"] = offset - p["startOffset"] - p["_complete"]
                    continue
                error = Errors.for_code(code)
                p.update(
                    startOffset=0,
                    leaderEpoch=0,
                    lag=UNINITIALIZED_LAG,
                    errorCode=error.code,
                    errorMessage=error.message,
                )


def _all_or_nothing(done: dict, failed: dict) -> tuple[dict, dict]:
    """handlePersisterInitializeResponse: one failed partition and every partition of the result is
    uninitialized."""
    if not failed:
        return done, {}
    everything = {t: list(ps) for t, ps in failed.items()}
    for t, ps in done.items():
        everything.setdefault(t, []).extend(ps)
    return {}, everything


def _public(response: dict) -> dict:
    """The response without the bookkeeping of a waiting DeleteShareGroupOffsets (keys "_...")."""
    for t in response.get("responses", []):
        for k in [k for k in t if k.startswith("_")]:
            del t[k]
    return response
