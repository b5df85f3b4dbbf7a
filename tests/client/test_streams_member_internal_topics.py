"""The streams member's internal-topic creation reads the partition counts the coordinator's
describe gives, or, for a group not configured yet (its describe shows the topology as the member
sent it, partitions 0: Kafka 4.2+), derives them as Kafka's InternalTopicManager does."""

from client.streams_member import _internal_topic_partitions


def sub(sid, sources, changelogs=(), repartition=()):
    return {
        "subtopologyId": sid,
        "sourceTopics": list(sources),
        "repartitionSinkTopics": [],
        "stateChangelogTopics": [{"name": n, "partitions": p} for n, p in changelogs],
        "repartitionSourceTopics": [{"name": n, "partitions": p} for n, p in repartition],
    }


def test_a_configured_topology_gives_the_counts():
    subs = [sub("0", ["in"], changelogs=[("app-store-changelog", 4)])]
    assert _internal_topic_partitions(subs, {"in": 4}) == {"app-store-changelog": 4}


def test_an_unconfigured_topology_takes_the_subtopology_task_count():
    subs = [
        sub("0", ["in", "other"], changelogs=[("app-a-changelog", 0)]),
        sub("1", [], changelogs=[("app-b-changelog", 0)], repartition=[("app-repartition", 0)]),
    ]
    assert _internal_topic_partitions(subs, {"in": 3, "other": 6}) == {
        "app-a-changelog": 6,
        "app-repartition": 6,
        "app-b-changelog": 6,
    }


def test_no_source_topic_yet_means_nothing_to_create():
    subs = [sub("0", ["missing"], changelogs=[("app-store-changelog", 0)])]
    assert _internal_topic_partitions(subs, {}) == {"app-store-changelog": 0}
