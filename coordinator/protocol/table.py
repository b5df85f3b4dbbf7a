"""The API table: every API the service answers, in one place.

One row per API: Kafka's name and key, the versions the service accepts (narrower than the
message file's `validVersions` for some APIs: docs/protocol.md), the component that handles it, the
body field that must route to the receiving partition (None: any partition answers, or ownership is
checked per item), whether it is internal (sent only by the service itself, on its signed channel),
and where its errors go (`ErrorShape`, Kafka's `getErrorResponse`). The fields of each version come
from the message JSON files (messages/kafka/: Kafka 4.4.0's; messages/service/: the service's own).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from ..schema import Struct
from . import hooks
from .errors import Echo, ErrorShape, error_builder
from .loader import load, request_struct
from .spec import ApiSpec

INT32_MIN = -(2**31)
GROUPS, TRANSACTIONS, SHARE = "groups", "transactions", "share"

# Where the service is more lenient than Kafka's file: fields it lets a request omit (Kafka's
# converter would reject the body), with the value used then.
REQUEST_DEFAULTS: dict[str, dict[str, object]] = {
    "DescribeGroups": {"includeAuthorizedOperations": False},
}


@dataclass(frozen=True)
class Api:
    name: str
    key: int
    min_version: int
    max_version: int
    component: str
    routing_field: str | None = None
    internal: bool = False
    errors: ErrorShape | None = None  # None: top-level throttleTimeMs, errorCode, errorMessage


_GROUP_IDS = Echo("groupIds", "groups", copy={"groupId": None})  # the KIP-848 describes

# ---------------------------------------------------------------------------- the table
APIS: tuple[Api, ...] = (
    # ------------------------------------------------------------------ internal
    Api("UpdateMetadata", 6, 0, 0, "metadata", internal=True),
    # The broker's ACLs, the whole snapshot, from the ACL publisher only (coordinator/acl_state.py).
    Api("UpdateAcls", 1020, 0, 0, "acls", internal=True),
    # ------------------------------------------------------------------ classic groups, offsets
    Api(
        "OffsetCommit",
        8,
        2,
        10,
        GROUPS,
        "groupId",
        errors=ErrorShape(
            echo=(
                Echo(
                    "topics",
                    "topics",
                    copy={"name": "name", "topicId": "topicId"},
                    children=(Echo("partitions", "partitions", copy={"partitionIndex": "partitionIndex"}),),
                ),
            )
        ),
    ),
    # v8+ names several groups: ownership is checked per group (NOT_COORDINATOR per group).
    # OffsetFetchResponse.groupError: before v2 a group error can only be reported on every partition.
    Api(
        "OffsetFetch",
        9,
        1,
        10,
        GROUPS,
        errors=ErrorShape(
            echo=(
                Echo(
                    "topics",
                    "topics",
                    copy={"name": "name"},
                    versions=(0, 1),
                    children=(
                        Echo(
                            "partitionIndexes",
                            "partitions",
                            copy={"partitionIndex": None},
                            fill={"committedOffset": -1, "metadata": ""},
                        ),
                    ),
                ),
                Echo("groups", "groups", copy={"groupId": "groupId"}, versions=(8, None)),
            )
        ),
    ),
    Api(
        "FindCoordinator",
        10,
        0,
        6,
        "find_coordinator",
        errors=ErrorShape(
            fill={"nodeId": -1, "host": "", "port": -1},
            extra=hooks.find_coordinator_message,
            echo=(
                Echo(
                    "coordinatorKeys", "coordinators", copy={"key": None}, fill={"nodeId": -1, "host": "", "port": -1}
                ),
            ),
        ),
    ),
    Api("JoinGroup", 11, 0, 9, GROUPS, "groupId", errors=ErrorShape(extra=hooks.join_group_member_id)),
    Api("Heartbeat", 12, 0, 4, GROUPS, "groupId", errors=ErrorShape()),
    Api("LeaveGroup", 13, 0, 5, GROUPS, "groupId", errors=ErrorShape()),
    Api("SyncGroup", 14, 0, 5, GROUPS, "groupId", errors=ErrorShape(fill={"protocolType": None, "protocolName": None})),
    Api(
        "DescribeGroups",
        15,
        0,
        6,
        GROUPS,
        errors=ErrorShape(item_message=False, echo=(Echo("groups", "groups", copy={"groupId": None}),)),
    ),
    Api("ListGroups", 16, 0, 5, GROUPS, errors=ErrorShape()),
    # ------------------------------------------------------------------ transactions
    Api(
        "InitProducerId",
        22,
        0,
        5,
        TRANSACTIONS,
        errors=ErrorShape(map_error=hooks.producer_fenced_before(4), fill={"producerId": -1, "producerEpoch": -1}),
    ),
    Api(
        "AddPartitionsToTxn",
        24,
        0,
        5,
        TRANSACTIONS,
        errors=ErrorShape(
            map_error=hooks.producer_fenced_before(2),
            prepare=hooks.add_partitions_topics,
            echo=(
                Echo(
                    "v3AndBelowTopics",
                    "resultsByTopicV3AndBelow",
                    copy={"name": "name"},
                    versions=(0, 3),
                    children=(Echo("partitions", "resultsByPartition", copy={"partitionIndex": None}),),
                ),
            ),
        ),
    ),
    Api("AddOffsetsToTxn", 25, 0, 4, TRANSACTIONS, errors=ErrorShape(map_error=hooks.producer_fenced_before(2))),
    Api("EndTxn", 26, 0, 5, TRANSACTIONS, errors=ErrorShape(map_error=hooks.producer_fenced_before(2))),
    # Handled by the group side (it writes the markers to its offsets); the transaction
    # coordinator only sends it.
    Api(
        "WriteTxnMarkers",
        27,
        1,
        2,
        GROUPS,
        internal=True,
        errors=ErrorShape(
            echo=(
                Echo(
                    "markers",
                    "markers",
                    copy={"producerId": "producerId"},
                    children=(
                        Echo(
                            "topics",
                            "topics",
                            copy={"name": "name"},
                            children=(Echo("partitionIndexes", "partitions", copy={"partitionIndex": None}),),
                        ),
                    ),
                ),
            )
        ),
    ),
    # Version 5 (KIP-890 part 2) asks the group coordinator to add the offsets partition to the
    # transaction itself; v0-4 have it verified (TxnVerification, coordinator/group/txn_offsets.py).
    # Version 6 (KIP-1319, Kafka 4.4) names topics by id.
    Api(
        "TxnOffsetCommit",
        28,
        0,
        6,
        GROUPS,
        "groupId",
        errors=ErrorShape(
            map_error=hooks.producer_fenced_before(3),
            echo=(
                Echo(
                    "topics",
                    "topics",
                    copy={"name": "name", "topicId": "topicId"},
                    children=(Echo("partitions", "partitions", copy={"partitionIndex": "partitionIndex"}),),
                ),
            ),
        ),
    ),
    # ------------------------------------------------------------------ group configs, admin
    Api(
        "DescribeConfigs",
        32,
        1,
        4,
        GROUPS,
        errors=ErrorShape(
            echo=(Echo("resources", "results", copy={"resourceType": "resourceType", "resourceName": "resourceName"}),)
        ),
    ),
    # Version 3 (Kafka 4.4.0) adds a per-group errorMessage: Kafka's shard and its
    # getErrorResponse leave it null; only its topology-description plugin (not served) sets one.
    Api(
        "DeleteGroups",
        42,
        0,
        3,
        GROUPS,
        errors=ErrorShape(item_message=False, echo=(Echo("groupsNames", "results", copy={"groupId": None}),)),
    ),
    # Names several groups: ownership is checked per resource (NOT_COORDINATOR per resource).
    Api(
        "IncrementalAlterConfigs",
        44,
        0,
        1,
        GROUPS,
        errors=ErrorShape(
            echo=(
                Echo("resources", "responses", copy={"resourceType": "resourceType", "resourceName": "resourceName"}),
            )
        ),
    ),
    Api("OffsetDelete", 47, 0, 0, GROUPS, "groupId", errors=ErrorShape()),
    Api(
        "DescribeTransactions",
        65,
        0,
        0,
        TRANSACTIONS,
        errors=ErrorShape(echo=(Echo("transactionalIds", "transactionStates", copy={"transactionalId": None}),)),
    ),
    # Version 2 (KIP-1152): transactionalIdPattern, an RE2/J regular expression.
    Api("ListTransactions", 66, 0, 2, TRANSACTIONS, errors=ErrorShape()),
    # ------------------------------------------------------------------ KIP-848 consumer groups
    Api("ConsumerGroupHeartbeat", 68, 0, 1, GROUPS, "groupId", errors=ErrorShape()),
    Api("ConsumerGroupDescribe", 69, 0, 1, GROUPS, errors=ErrorShape(echo=(_GROUP_IDS,))),
    # ------------------------------------------------------------------ KIP-932 share groups
    Api("ShareGroupHeartbeat", 76, 1, 1, GROUPS, "groupId", errors=ErrorShape()),
    Api("ShareGroupDescribe", 77, 1, 1, GROUPS, errors=ErrorShape(echo=(_GROUP_IDS,))),
    # The share coordinator's state APIs: several share-partitions per request, each answered on its
    # own (ownership per partition). Version 1 of Write and ReadSummary (KIP-1226, Kafka 4.2) carries
    # deliveryCompleteCount.
    *(
        Api(
            name,
            key,
            0,
            top,
            SHARE,
            errors=ErrorShape(
                echo=(
                    Echo(
                        "topics",
                        "results",
                        copy={"topicId": "topicId"},
                        children=(Echo("partitions", "partitions", copy={"partition": "partition"}),),
                    ),
                )
            ),
        )
        for name, key, top in (
            ("InitializeShareGroupState", 83, 0),
            ("ReadShareGroupState", 84, 0),
            ("WriteShareGroupState", 85, 1),
            ("DeleteShareGroupState", 86, 0),
            ("ReadShareGroupStateSummary", 87, 1),
        )
    ),
    # ------------------------------------------------------------------ KIP-1071 streams groups
    Api("StreamsGroupHeartbeat", 88, 0, 1, GROUPS, "groupId", errors=ErrorShape()),
    Api("StreamsGroupDescribe", 89, 0, 1, GROUPS, errors=ErrorShape(echo=(_GROUP_IDS,))),
    # ------------------------------------------------------------------ share group offsets (admin)
    # Version 1 (KIP-1226) adds each partition's lag, from the partitions' end offsets that the
    # driver's responder answers (ShareEndOffsetsAnswer, below).
    Api(
        "DescribeShareGroupOffsets",
        90,
        0,
        1,
        GROUPS,
        errors=ErrorShape(echo=(Echo("groups", "groups", copy={"groupId": "groupId"}),)),
    ),
    Api("AlterShareGroupOffsets", 91, 0, 0, GROUPS, "groupId", errors=ErrorShape()),
    Api("DeleteShareGroupOffsets", 92, 0, 0, GROUPS, "groupId", errors=ErrorShape()),
    # KIP-1331: answered as a 4.4.0 broker without a topology-description plugin does.
    # Any partition answers: the refusal does not depend on the group (Kafka refuses before routing).
    Api("StreamsGroupTopologyDescriptionUpdate", 93, 0, 0, GROUPS, errors=ErrorShape()),
    # ------------------------------------------------------------------ internal, between partitions
    # KIP-890 verification (Kafka's group coordinator sends AddPartitionsToTxn v4+ to the
    # transaction coordinator's broker; here question and answer are internal requests).
    Api("TxnVerification", 1001, 0, 0, TRANSACTIONS, internal=True),
    Api("TxnVerificationResult", 1002, 0, 0, GROUPS, internal=True),
    # AddOffsetsToTxn's notice to the group partition, so its TxnOffsetCommit verifies locally.
    Api("TxnOffsetsAdded", 1003, 0, 0, GROUPS, internal=True),
    # The group side (the share-group offsets admin, DeleteGroups, a heartbeat's initialization)
    # asking the share coordinator of other partitions' share-partitions, and its answer.
    Api("ShareStateSummaryQuery", 1011, 0, 0, SHARE, internal=True),
    Api("ShareStateSummaryAnswer", 1012, 0, 0, GROUPS, internal=True),
    # The driver's end-offsets responder (streaming/end_offsets.py) answering the group side's
    # end-offsets query for DescribeShareGroupOffsets v1's lag (Kafka: a ListOffsets from the broker).
    Api("ShareEndOffsetsAnswer", 1013, 0, 0, GROUPS, internal=True),
)


def _request(api: Api) -> Struct:
    struct = request_struct(api.name + "Request")
    defaults = REQUEST_DEFAULTS.get(api.name)
    if not defaults:
        return struct
    return Struct(
        *(dataclasses.replace(f, default=defaults[f.name]) if f.name in defaults else f for f in struct.fields)
    )


def _spec(api: Api) -> ApiSpec:
    request, response = load(api.name + "Request"), load(api.name + "Response")
    assert request.api_key == api.key == response.api_key, api.name
    kw = {}
    if api.errors is not None:
        kw["error_response"] = error_builder(api.name + "Response", api.errors)
    return ApiSpec(
        name=api.name,
        api_key=api.key,
        min_version=api.min_version,
        max_version=api.max_version,
        request=_request(api),
        component=api.component,
        routing_field=api.routing_field,
        internal=api.internal,
        **kw,
    )


API_TABLE: tuple[ApiSpec, ...] = tuple(_spec(api) for api in APIS)
