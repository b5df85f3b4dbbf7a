"""The metadata hash of KIP-848 groups is Kafka 4.1's exact value (Utils.computeTopicHash /
computeGroupHash: streaming XXH3-64), and a group stored with another hash (a state written before
this change, or by Kafka 4.0 without one) bumps its epoch once, at its first metadata refresh."""

from __future__ import annotations

from coordinator.group.modern.hashing import group_hash, topic_hash
from tests.consumer.consumer_group_helpers import ConsumerGroupTestClient, mock_assignor, topic_id
from tests.consumer.test_consumer_group_heartbeat import rk, stable_member

__all__ = ["mock_assignor"]  # the fixture

# Computed by Kafka 4.1.1's own Utils.computeTopicHash / computeGroupHash (kafka-group-coordinator
# 4.1.1 and hash4j 0.22.0 jars, a MetadataImage built with TopicRecord / PartitionRecord as
# MetadataImageBuilder does, brokers without racks).
KAFKA_TOPIC_HASHES = [
    ("foo", "p4V5YvKHQ2W7i1pD0aCrxA", 2, -2708468212878497599),
    ("bar", "AAAAAAAAAAAAAAAAAAAAAQ", 3, -6272130457538006008),
    ("zäöü\U0001f600", "Zm9vYmFyYmF6cXV4MTIzNA", 1, 1674091894712103549),
    ("Bar", "_____________________w", 6, 1027645554086164959),
]


def test_compute_topic_hash():
    """UtilsTest.testComputeTopicHash, against values from Kafka's code (a non-ASCII name and a
    surrogate pair exercise hash4j's putString: UTF-16 code units, then the length)."""
    for name, tid, partitions, expected in KAFKA_TOPIC_HASHES:
        assert topic_hash(name, tid, partitions) == expected


def test_compute_group_hash():
    """UtilsTest.testComputeGroupHash*: 0 without topics, topic hashes in topic-name order."""
    hashes = {name: h for name, _, _, h in KAFKA_TOPIC_HASHES}
    assert group_hash({}) == 0
    assert group_hash({"foo": hashes["foo"], "bar": hashes["bar"]}) == 4526198630101449795
    assert group_hash(hashes) == 3767383488365094212  # "Bar" < "bar" < "foo" < "zäöü😀" (Java order)


def test_subscription_metadata_refreshed_after_group_is_loaded(mock_assignor):
    """GroupMetadataManagerTest.testSubscriptionMetadataRefreshedAfterGroupIsLoaded, with the stored
    hash one this service wrote before it computed Kafka's (SHA-256 based): the first heartbeat
    after the load bumps the epoch once with Kafka's hash, the next ones do not."""
    c = ConsumerGroupTestClient(topics={"foo": 6}, group_consumer_assignors=["mock"])
    assigned = {"foo": frozenset({0, 1, 2, 3, 4, 5})}
    c.inject_group(10, [stable_member("m", 10, assigned, topics=("foo",))], metadata_hash=-1234567890123456789)
    mock_assignor.prepare({"m": {"foo": set(range(6))}})
    mark = len(c.records())
    resp = c.heartbeat("m", 10)
    assert (resp["errorCode"], resp["memberEpoch"]) == (0, 11)
    expected_hash = group_hash({"foo": topic_hash("foo", topic_id("foo"), 6)})
    records = c.records(mark)
    # The target does not change (no member record), its epoch and the member's do.
    assert [k for k, _ in records] == [
        rk("ConsumerGroupMetadata"),
        rk("ConsumerGroupTargetAssignmentMetadata"),
        rk("ConsumerGroupCurrentMemberAssignment", "m"),
    ]
    assert records[0][1] == {"type": "ConsumerGroupMetadata", "epoch": 11, "metadataHash": expected_hash}
    assert c.group().metadata_hash == expected_hash
    mark = len(c.records())
    assert c.heartbeat("m", 11)["memberEpoch"] == 11
    assert c.records(mark) == []


def test_compute_topic_hash_with_racks():
    """UtilsTest.testComputeTopicHash with racks: each partition's replicas' racks in Java string
    order, as length + string (value from Kafka 4.1.1's code: brokers 0-3 on racks "rack0",
    "räck1", "rack😀", "a", partition i on brokers (i+1)%4, i%4 and 7, which is not registered)."""
    racks = [["räck1", "rack0"], ["rack\U0001f600", "räck1"], ["rack\U0001f600", "a"]]
    assert topic_hash("foo", "p4V5YvKHQ2W7i1pD0aCrxA", 3, racks) == -5170899082081913356
    assert topic_hash("foo", "p4V5YvKHQ2W7i1pD0aCrxA", 3, None) != topic_hash("foo", "p4V5YvKHQ2W7i1pD0aCrxA", 3, racks)


def test_racks_are_in_the_group_metadata_hash():
    """UpdateMetadata's partitionRacks: a change of racks changes the hash and bumps the epoch at
    the next heartbeat, as in Kafka."""
    from coordinator.envelope import BROADCAST_KEY

    c = ConsumerGroupTestClient(topics={"foo": 2})
    assert c.join("m", ["foo"])["memberEpoch"] == 2
    c.d.send(
        "UpdateMetadata",
        0,
        {
            "topicStates": [
                {
                    "topicName": "foo",
                    "topicId": topic_id("foo"),
                    "numPartitions": 2,
                    "partitionRacks": [["r1", "r0"], ["r2"]],
                }
            ]
        },
        key=BROADCAST_KEY,
    )
    assert c.heartbeat("m", 2)["memberEpoch"] == 3
    assert c.group().metadata_hash == group_hash({"foo": topic_hash("foo", topic_id("foo"), 2, [["r0", "r1"], ["r2"]])})
    assert c.heartbeat("m", 3)["memberEpoch"] == 3
    assert c.d.partition.component("metadata").topic_racks == {"foo": [["r1", "r0"], ["r2"]]}


def test_the_publisher_reads_replica_racks():
    """streaming/metadata_publisher.read_topic_metadata on kafka-python's describe_cluster /
    describe_topics shapes: racks per partition from its replicas' brokers; none without racks."""
    from streaming.metadata_publisher import read_topic_metadata

    class Admin:
        def __init__(self, racks):
            self.racks = racks

        def describe_cluster(self):
            return {"brokers": [{"broker_id": b, "rack": r} for b, r in self.racks.items()]}

        def describe_topics(self):
            return [
                {
                    "name": "foo",
                    "topic_id": None,
                    "error_code": 0,
                    "is_internal": False,
                    "partitions": [
                        {"partition_index": 1, "replica_nodes": [2, 1, 9]},
                        {"partition_index": 0, "replica_nodes": [1]},
                    ],
                }
            ]

    [foo] = read_topic_metadata(Admin({1: "b", 2: "a"}))
    assert foo["partitionRacks"] == [["b"], ["a", "b"]]
    [foo] = read_topic_metadata(Admin({1: None, 2: None}))
    assert "partitionRacks" not in foo and foo["numPartitions"] == 2
