"""Ports of Kafka 4.1's InternalTopicManagerTest (streams/topics/InternalTopicManagerTest.java), plus
cases of RepartitionTopicsTest, CopartitionedTopicsEnforcerTest and ChangelogTopicsTest through the
same entry point (configure_topics = InternalTopicManager.configureTopics)."""

from __future__ import annotations

import pytest

from coordinator.group.streams.topology import (
    INCORRECTLY_PARTITIONED_TOPICS,
    MISSING_INTERNAL_TOPICS,
    MISSING_SOURCE_TOPICS,
    StreamsInvalidTopologyError,
    configure_topics,
    topology_record_value,
)

SOURCE_TOPIC_1, SOURCE_TOPIC_2 = "source_topic1", "source_topic2"
REPARTITION_TOPIC = "repartition_topic"
STATE_CHANGELOG_TOPIC_1, STATE_CHANGELOG_TOPIC_2 = "state_changelog_topic1", "state_changelog_topic2"
SUBTOPOLOGY_1, SUBTOPOLOGY_2 = "subtopology1", "subtopology2"
CONFIG_KEY, CONFIG_VALUE = "cleanup.policy", "compact"


def info(name, partitions=0, rf=0, configs=None):
    return {
        "name": name,
        "partitions": partitions,
        "replicationFactor": rf,
        "topicConfigs": [{"key": k, "value": v} for k, v in (configs or {}).items()],
    }


def sub(sid, source=(), sink=(), rsource=(), changelog=(), copartition=()):
    return {
        "subtopologyId": sid,
        "sourceTopics": list(source),
        "sourceTopicRegex": [],
        "repartitionSinkTopics": list(sink),
        "repartitionSourceTopics": list(rsource),
        "stateChangelogTopics": list(changelog),
        "copartitionGroups": list(copartition),
    }


def make_test_topology():
    """InternalTopicManagerTest.makeTestTopology."""
    return topology_record_value(
        {
            "epoch": 3,
            "subtopologies": [
                sub(
                    SUBTOPOLOGY_1,
                    source=[SOURCE_TOPIC_1],
                    sink=[REPARTITION_TOPIC],
                    changelog=[info(STATE_CHANGELOG_TOPIC_1, configs={CONFIG_KEY: CONFIG_VALUE})],
                ),
                sub(
                    SUBTOPOLOGY_2,
                    source=[SOURCE_TOPIC_2],
                    rsource=[info(REPARTITION_TOPIC, rf=3)],
                    changelog=[info(STATE_CHANGELOG_TOPIC_2)],
                    copartition=[{"sourceTopics": [0], "sourceTopicRegex": [], "repartitionSourceTopics": [0]}],
                ),
            ],
        }
    )


def test_testConfigureTopicsSetsConfigurationExceptionWhenSourceTopicIsMissing():
    t = configure_topics(make_test_topology(), 0, {SOURCE_TOPIC_1: 2})
    assert t.subtopologies is None
    assert t.status == MISSING_SOURCE_TOPICS
    assert t.status_detail == f"Source topics {SOURCE_TOPIC_2} are missing."
    assert not t.is_ready()


def test_testConfigureTopics():
    t = configure_topics(make_test_topology(), 0, {SOURCE_TOPIC_1: 2, SOURCE_TOPIC_2: 2, STATE_CHANGELOG_TOPIC_2: 2})
    assert t.internal_topics_to_create == {
        REPARTITION_TOPIC: {"name": REPARTITION_TOPIC, "numPartitions": 2, "replicationFactor": 3, "configs": []},
        STATE_CHANGELOG_TOPIC_1: {
            "name": STATE_CHANGELOG_TOPIC_1,
            "numPartitions": 2,
            "replicationFactor": -1,
            "configs": [{"name": CONFIG_KEY, "value": CONFIG_VALUE}],
        },
    }
    assert t.status == MISSING_INTERNAL_TOPICS
    s1, s2 = t.subtopologies[SUBTOPOLOGY_1], t.subtopologies[SUBTOPOLOGY_2]
    assert (
        s1.number_of_tasks,
        set(s1.source_topics),
        dict(s1.repartition_source_topics),
        set(s1.repartition_sink_topics),
        dict(s1.state_changelog_topics),
    ) == (2, {SOURCE_TOPIC_1}, {}, {REPARTITION_TOPIC}, {STATE_CHANGELOG_TOPIC_1: 2})
    assert (
        s2.number_of_tasks,
        set(s2.source_topics),
        dict(s2.repartition_source_topics),
        set(s2.repartition_sink_topics),
        dict(s2.state_changelog_topics),
    ) == (2, {SOURCE_TOPIC_2}, {REPARTITION_TOPIC: 2}, set(), {STATE_CHANGELOG_TOPIC_2: 2})


def test_ready_once_every_internal_topic_exists():
    t = configure_topics(
        make_test_topology(),
        7,
        {
            SOURCE_TOPIC_1: 2,
            SOURCE_TOPIC_2: 2,
            STATE_CHANGELOG_TOPIC_2: 2,
            STATE_CHANGELOG_TOPIC_1: 2,
            REPARTITION_TOPIC: 2,
        },
    )
    assert t.is_ready() and t.status is None and not t.internal_topics_to_create and t.metadata_hash == 7


def test_existing_internal_topic_with_other_partition_count_is_incorrectly_partitioned():
    """InternalTopicManager.missingInternalTopics."""
    t = configure_topics(make_test_topology(), 0, {SOURCE_TOPIC_1: 2, SOURCE_TOPIC_2: 2, STATE_CHANGELOG_TOPIC_2: 5})
    assert t.status == INCORRECTLY_PARTITIONED_TOPICS
    assert t.status_detail == (
        f"Existing topic {STATE_CHANGELOG_TOPIC_2} has different number of partitions: expected 2, found 5"
    )


def test_copartitioned_source_topics_with_different_partition_counts():
    """CopartitionedTopicsEnforcerTest.shouldThrowTopicConfigurationExceptionIfNoPartitionsFoundForCoPartitionedTopic
    (the enforcer's getSamePartitions message)."""
    topo = topology_record_value(
        {
            "epoch": 1,
            "subtopologies": [
                sub(
                    "0",
                    source=["a", "b"],
                    copartition=[{"sourceTopics": [0, 1], "sourceTopicRegex": [], "repartitionSourceTopics": []}],
                )
            ],
        }
    )
    t = configure_topics(topo, 0, {"a": 2, "b": 3})
    assert t.status == INCORRECTLY_PARTITIONED_TOPICS
    assert t.status_detail == "Following topics do not have the same number of partitions: [{a=2, b=3}]"


def test_repartition_topic_never_written_is_an_invalid_topology():
    """RepartitionTopicsTest.shouldThrowStreamsInvalidTopologyExceptionIfPartitionCountCannotBeComputedForAllRepartitionTopics."""
    topo = topology_record_value({"epoch": 1, "subtopologies": [sub("0", source=["a"], rsource=[info("r")])]})
    with pytest.raises(StreamsInvalidTopologyError):
        configure_topics(topo, 0, {"a": 2})


def test_repartition_partitions_follow_the_writing_subtopology_and_changelogs_the_task_count():
    """RepartitionTopicsTest.shouldSetupRepartitionTopics / ChangelogTopicsTest.shouldOnlyContainStatefulChangelogTopics:
    an undefined repartition topic takes the partition count of the subtopology writing it; a
    changelog topic gets its subtopology's number of tasks."""
    topo = topology_record_value(
        {
            "epoch": 1,
            "subtopologies": [
                sub("0", source=["in"], sink=["app-rep"]),
                sub("1", rsource=[info("app-rep")], changelog=[info("app-store-changelog")]),
            ],
        }
    )
    t = configure_topics(topo, 0, {"in": 6})
    assert t.internal_topics_to_create["app-rep"]["numPartitions"] == 6
    assert t.internal_topics_to_create["app-store-changelog"]["numPartitions"] == 6
    assert t.subtopologies["1"].number_of_tasks == 6


def test_summarize_topics_shows_three_names_then_a_count():
    """InternalTopicManager.summarizeTopics (Kafka 4.2+): the status details name at most three
    topics, then "and N additional topics"; 4.1.1 printed the whole set in brackets."""
    from coordinator.group.streams.topology import _summarize_topics

    assert _summarize_topics([]) == "<none>"
    assert _summarize_topics(["b", "a"]) == "a, b"
    assert _summarize_topics(["d", "c", "b", "a", "e"]) == "a, b, c and 2 additional topics"
