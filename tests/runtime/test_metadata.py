"""Topic metadata reaches the core as an UpdateMetadata broadcast and is kept per partition."""

from coordinator.result import CoordinatorResult
from tests.core_driver import CoreDriver


def topics(**counts):
    return {"topicStates": [{"topicName": t, "numPartitions": n} for t, n in counts.items()]}


def test_unknown_until_the_first_update_then_exact():
    d = CoreDriver(partition=3)
    meta = d.component("metadata")
    assert not meta.available and meta.exists("anything", 99)
    assert d.send("UpdateMetadata", 0, topics(orders=3, payments=1)) is None  # no answer to a broadcast
    meta = d.component("metadata")
    assert meta.available and meta.partitions("orders") == 3
    assert meta.exists("orders", 2) and not meta.exists("orders", 3) and not meta.exists("nope")


def test_listeners_hear_about_changes_only():
    """The metadata's listeners (the group coordinator's onMetadataUpdate) run when the topics
    change, not when the same metadata arrives again; what they return is applied."""
    seen = []

    def listener(old, new):
        seen.append((old, new))
        return CoordinatorResult().emit("x", "Heard", topics=sorted(new))

    d = CoreDriver(partition=0, roundtrip=False)
    d.partition.component("metadata").listeners.append(listener)
    d.send("UpdateMetadata", 0, topics(a=1))
    d.send("UpdateMetadata", 0, topics(a=1))
    d.send("UpdateMetadata", 0, topics(a=2))
    assert seen == [({}, {"a": 1}), ({"a": 1}, {"a": 2})]
    assert [e["topics"] for e in d.events if e["event"] == "Heard"] == [["a"], ["a"]]
