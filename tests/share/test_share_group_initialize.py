"""Share-partition initialization before assignment (KIP-932, Kafka 4.1): the group's coordinator
partition records subscribed share-partitions as initializing in ShareGroupStatePartitionMetadata,
has them initialized by their share coordinator partitions over the internal channel, and assigns
them once they are initialized. Ported from GroupMetadataManagerTest
(testShareGroupHeartbeatInitializeOnPartitionUpdate, testShareGroupInitializeSuccess,
testShareGroupInitializeEmptyMap, testSubscribedTopicsChangeMap, testUninitializeTopics,
testShareGroupInitializingClearsCommonDeleting) and GroupCoordinatorServiceTest
(testPersisterInitialize*), through the real core (one partition and across partitions)."""

from __future__ import annotations

from coordinator.records import record_key
from coordinator.result import CoordinatorResult
from coordinator.share.keys import share_partition_key
from tests.consumer.consumer_group_helpers import GROUP, topic_id
from tests.share.share_group_helpers import ShareGroupTestClient

M1, M2 = "m1-uuid-aaaaaaaaaaaaaa", "m2-uuid-bbbbbbbbbbbbbb"
T1, T2, T3 = topic_id("t1"), topic_id("t2"), topic_id("t3")
SPM = record_key("ShareGroupStatePartitionMetadata", GROUP)


def spm_value(initializing=(), initialized=(), deleting=()) -> dict:
    """newShareGroupStatePartitionMetadataRecord: [(name, [partitions])] and deleting [name]."""

    def infos(entries):
        return sorted(
            ({"topicId": topic_id(n), "topicName": n, "partitions": sorted(ps)} for n, ps in entries),
            key=lambda i: i["topicId"],
        )

    return {
        "type": "ShareGroupStatePartitionMetadata",
        "initializingTopics": infos(initializing),
        "initializedTopics": infos(initialized),
        "deletingTopics": sorted(
            ({"topicId": topic_id(n), "topicName": n} for n in deleting), key=lambda i: i["topicId"]
        ),
    }


def spm_records(c: ShareGroupTestClient, start: int) -> list[dict]:
    return [v for k, v in c.records(start) if k == SPM]


def queries(c: ShareGroupTestClient) -> dict:
    """The pending internal InitializeShareGroupState queries: {topicId: {partition: (stateEpoch, startOffset)}}."""
    out: dict = {}
    for _key, envelope in c.d.internal_requests:
        body = envelope["request"]
        assert body["op"] == "initialize" and body["groupId"] == GROUP
        starts = iter(body["startOffsets"])
        for t in body["topics"]:
            for p in t["partitions"]:
                out.setdefault(t["topicId"], {})[p] = (body["stateEpoch"], next(starts))
    return out


def with_group(c: ShareGroupTestClient, **spm) -> None:
    c.inject(
        [
            (record_key("ShareGroupMetadata", GROUP), {"type": "ShareGroupMetadata", "epoch": 0, "metadataHash": 0}),
            (SPM, spm_value(**spm)),
        ]
    )


def test_share_group_heartbeat_initialize_on_partition_update():
    """testShareGroupHeartbeatInitializeOnPartitionUpdate: the first heartbeat records every
    subscribed partition as initializing and sends InitializeShareGroupState (state epoch = group
    epoch, start offset -1); a partition increase initializes only the new partitions."""
    c = ShareGroupTestClient(topics={"t1": 2, "t2": 2})
    start = len(c.d.records)
    r = c.share_heartbeat(M1, 0, topics=["t1", "t2"])
    assert r["memberEpoch"] == 2 and c.assignment(r) == {}  # nothing initialized yet
    assert spm_records(c, start) == [spm_value(initializing=[("t1", [0, 1]), ("t2", [0, 1])])]
    # Every share-partition is initialized, on this partition or by its owner.
    owned_here = {(t, p) for t in (T1, T2) for p in (0, 1) if c.d.partition.owns(share_partition_key(GROUP, t, p))}
    remote = {t: ps for t, ps in queries(c).items()}
    assert {(t, p) for t, ps in remote.items() for p in ps} | owned_here == {(t, p) for t in (T1, T2) for p in (0, 1)}
    assert all(v == (2, -1) for ps in remote.values() for v in ps.values())

    c.inject([(SPM, spm_value(initialized=[("t1", [0, 1]), ("t2", [0, 1])]))])
    c.d.internal_requests.clear()
    c.set_topics({"t1": 4, "t2": 2})  # partition increase
    start = len(c.d.records)
    r = c.share_heartbeat(M1, 2)
    assert r["memberEpoch"] == 3
    assert c.assignment(r) == {"t1": [0, 1], "t2": [0, 1]}  # the new partitions wait for initialization
    [first] = spm_records(c, start)[:1]
    assert first == spm_value(initializing=[("t1", [2, 3])], initialized=[("t1", [0, 1]), ("t2", [0, 1])])
    assert set(queries(c)) <= {T1} and all(v == (3, -1) for ps in queries(c).values() for v in ps.values())
    c.initialize_share_partitions()
    info = c.group().state_partition_metadata
    assert info["initializing"] == {}
    assert {t: v["partitions"] for t, v in info["initialized"].items()} == {T1: [0, 1, 2, 3], T2: [0, 1]}
    # initializedAssignmentPending: the next heartbeat bumps the epoch and assigns them.
    r = c.share_heartbeat(M1, 3)
    assert r["memberEpoch"] == 4 and c.assignment(r) == {"t1": [0, 1, 2, 3], "t2": [0, 1]}
    assert [e["groupEpoch"] for e in c.events("GroupEpochBumped")] == [2, 3, 4]


def test_share_group_initialize_success():
    """testShareGroupInitializeSuccess: initializeShareGroupState moves partitions from initializing
    to initialized in one record."""
    c = ShareGroupTestClient(topics={"t1": 2})
    with_group(c, initializing=[("t1", [0, 1])])
    start = len(c.d.records)
    c.on_manager(lambda m: m.partitions.initialize_share_group_state(GROUP, {T1: [0, 1]}))
    assert spm_records(c, start) == [spm_value(initialized=[("t1", [0, 1])])]


def test_share_group_initialize_empty_map():
    """testShareGroupInitializeEmptyMap: nothing to record."""
    c = ShareGroupTestClient(topics={"t1": 2})
    with_group(c)
    start = len(c.d.records)
    c.on_manager(lambda m: m.partitions.initialize_share_group_state(GROUP, {}))
    c.on_manager(lambda m: m.partitions.initialize_share_group_state(GROUP, None))
    assert spm_records(c, start) == []


def test_subscribed_topics_change_map():
    """testSubscribedTopicsChangeMap: the subscribed partitions neither initialized nor initializing;
    an initializing entry older than 2 x offsets.commit.timeout.ms is retried."""
    c = ShareGroupTestClient(topics={"foo": 1}, **{"offsets_commit_timeout_ms": 10})
    assert c.share_manager().partitions.subscribed_topics_change_map(GROUP, set()) == {}
    assert {
        t: v["partitions"] for t, v in c.share_manager().partitions.subscribed_topics_change_map(GROUP, {"foo"}).items()
    } == {topic_id("foo"): [0]}
    c.set_topics({"foo": 1, "t1": 2, "t2": 2, "t3": 3})
    with_group(c, initializing=[("t1", [0, 1])], initialized=[("t2", [0, 1, 2])])

    def change():
        m = c.share_manager()
        m.p.clock_ms = c.now
        return {
            t: v["partitions"] for t, v in m.partitions.subscribed_topics_change_map(GROUP, {"t1", "t2", "t3"}).items()
        }

    assert change() == {T3: [0, 1, 2]}
    c.sleep(2 * 10 + 1)
    assert change() == {T1: [0, 1], T3: [0, 1, 2]}


def test_uninitialize_topics():
    """testUninitializeTopics: only initializing partitions are cleaned up; nothing without a record."""
    c = ShareGroupTestClient(topics={"t1": 2, "t2": 3})
    start = len(c.d.records)
    c.on_manager(lambda m: m.partitions.uninitialize_share_group_state(GROUP, {T1: [0]}))
    assert spm_records(c, start) == []
    with_group(c, initializing=[("t1", [0, 1]), ("t2", [0, 1])], initialized=[("t2", [2])])
    start = len(c.d.records)
    c.on_manager(lambda m: m.partitions.uninitialize_share_group_state(GROUP, {T1: [0, 1], T2: [0]}))
    assert spm_records(c, start) == [spm_value(initializing=[("t2", [1])], initialized=[("t2", [2])])]


def test_share_group_initializing_clears_common_deleting():
    """testShareGroupInitializingClearsCommonDeleting: a topic being initialized leaves deleting."""
    c = ShareGroupTestClient(topics={"t1": 2})
    with_group(c, deleting=["t1"])
    start = len(c.d.records)
    c.share_heartbeat(M1, 0, topics=["t1"])
    assert spm_records(c, start)[0] == spm_value(initializing=[("t1", [0, 1])])


def test_failed_initialization_is_uninitialized_and_retried():
    """GroupCoordinatorServiceTest.testPersisterInitializeFailure / PartialFailure: an error for one
    partition of an answer uninitializes the answer's partitions; an owner that does not answer in
    share.admin.timeout.ms counts as failed; the next heartbeat asks again."""
    c = ShareGroupTestClient(topics={"t1": 8})
    r = c.share_heartbeat(M1, 0, topics=["t1"])
    pending = queries(c)[T1]
    assert pending  # some partitions live on other coordinator partitions
    c.initialize_share_partitions(fail=True)  # the queries are lost
    c.sleep(c.d.config["share.admin.timeout.ms"] + 1)
    info = c.group().state_partition_metadata
    assert all(p not in set(info["initializing"].get(T1, {}).get("partitions", [])) for p in pending)
    # Retried at the next heartbeat; answered this time.
    r = c.share_heartbeat(M1, r["memberEpoch"])
    assert set(queries(c)[T1]) == set(pending)
    c.initialize_share_partitions()
    r = c.share_heartbeat(M1, r["memberEpoch"])
    assert c.assignment(r) == {"t1": list(range(8))}


def test_error_answer_uninitializes_the_answered_partitions():
    """handlePersisterInitializeResponse: the owner answers an error (here UNKNOWN_TOPIC_OR_PARTITION:
    its metadata has no such partition) and the partitions leave initializing, not assigned."""
    c = ShareGroupTestClient(topics={"t1": 8})
    c.share_heartbeat(M1, 0, topics=["t1"])
    pending = set(queries(c)[T1])
    from coordinator.metadata import BROADCAST_KEY
    from tests.core_driver import CoreDriver

    owners = {}
    for key, _ in c.d.internal_requests:
        owners[key] = CoreDriver(key)
        owners[key].send(
            "UpdateMetadata",
            0,
            {"topicStates": [{"topicName": "t1", "topicId": T1, "numPartitions": 1}]},
            key=BROADCAST_KEY,
        )
    c.owners = owners
    c.initialize_share_partitions()
    info = c.group().state_partition_metadata
    initialized = set(info["initialized"].get(T1, {}).get("partitions", []))
    assert not (initialized & (pending - {0}))
    assert not (set(info["initializing"].get(T1, {}).get("partitions", [])) & pending)


def test_initialization_across_partitions_and_share_state():
    """The owner initializes the share-partition at start offset -1 with the group epoch as state
    epoch (the persister's initializeState); the share consumer resolves -1 with
    share.auto.offset.reset."""
    c = ShareGroupTestClient(topics={"t1": 4})
    r = c.share_join(M1, topics=["t1"])
    assert c.assignment(r) == {"t1": [0, 1, 2, 3]}
    for key, owner in c.__dict__.get("_owners", {}).items():
        state = owner.component("share").states[key]
        assert (state["offset"]["startOffset"], state["offset"]["stateEpoch"]) == (-1, 1)
    # A second member gets partitions at once: nothing new to initialize.
    r2 = c.share_heartbeat(M2, 0, topics=["t1"])
    assert c.d.internal_requests == [] and r2["memberEpoch"] == 4
    # The record survives a rebuild from the state log.
    rebuilt = c.rebuilt().component("groups").groups[GROUP]
    assert {t: v["partitions"] for t, v in rebuilt.state_partition_metadata["initialized"].items()} == {
        T1: [0, 1, 2, 3]
    }


def test_share_group_delete_request_records():
    """testShareGroupDeleteRequestNoDeletingTopics / WithAlreadyDeletingTopics: initialized and
    initializing partitions (and all partitions of a topic already deleting) are to be deleted, and
    one record moves every one of those topics to deleting."""
    c = ShareGroupTestClient(topics={"t1": 2, "t2": 2, "t3": 3})
    with_group(c, initializing=[("t1", [1])], initialized=[("t1", [0]), ("t2", [0, 1])], deleting=["t3"])
    start = len(c.d.records)
    out: list = []

    def build(m):  # its record goes into the result, which on_manager has the runtime apply
        result = CoordinatorResult()
        out.append(m.partitions.share_group_build_partition_delete_request(m.share_group(GROUP), result))
        out.append(list(result.records))
        return result

    c.on_manager(build)
    assert out[0] == {T1: [0, 1], T2: [0, 1], T3: [0, 1, 2]}
    assert [r.value for r in out[1]] == [spm_value(deleting=["t1", "t2", "t3"])]
    assert spm_records(c, start) == [spm_value(deleting=["t1", "t2", "t3"])]
    # Nothing to delete without the record.
    c2 = ShareGroupTestClient(topics={"t1": 2})
    c2.inject(
        [(record_key("ShareGroupMetadata", GROUP), {"type": "ShareGroupMetadata", "epoch": 0, "metadataHash": 0})]
    )
    none: list = []

    def build_none(m):
        result = CoordinatorResult()
        none.append(m.partitions.share_group_build_partition_delete_request(m.share_group(GROUP), result))
        return result

    c2.on_manager(build_none)
    assert none == [None]


def test_persister_initialize_records_every_partition_once_all_owners_answered():
    """GroupCoordinatorService.persisterInitialize: the persister's initializeState completes once
    every share coordinator answered, and handlePersisterInitializeResponse records the whole set
    initialized at once, so one heartbeat bumps the group epoch once and assigns every partition
    (a 4.1.1 broker: member epoch 2 after the join; found by bench/differential.py, where share-
    partitions owned by other coordinator partitions were recorded one owner at a time and the
    group epoch bumped once more)."""
    N = 24  # partitions, owned by several coordinator partitions
    c = ShareGroupTestClient(topics={"t1": N})
    start = len(c.d.records)
    r = c.share_heartbeat(M1, 0, topics=["t1"])
    assert r["memberEpoch"] == 2 and c.assignment(r) == {}
    assert len(c.d.internal_requests) > 1  # several owning coordinator partitions
    # Each owner's answer alone records nothing.
    pending = c.d.internal_requests
    c.d.internal_requests = pending[:1]
    c.initialize_share_partitions()
    assert c.group().state_partition_metadata["initialized"] == {}
    c.d.internal_requests = pending[1:]
    c.initialize_share_partitions()
    info = c.group().state_partition_metadata
    assert info["initialized"][T1]["partitions"] == list(range(N)) and info["initializing"] == {}
    assert [v["initializedTopics"] for v in spm_records(c, start)][-1] == spm_value(initialized=[("t1", range(N))])[
        "initializedTopics"
    ]
    assert sum(1 for v in spm_records(c, start) if v["initializedTopics"]) == 1
    r = c.share_heartbeat(M1, r["memberEpoch"])
    assert r["memberEpoch"] == 3 and c.assignment(r) == {"t1": list(range(N))}
