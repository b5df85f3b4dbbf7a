"""Topic metadata reaches the core as an UpdateMetadata broadcast and is kept per partition."""
from coordinator.runtime import register_component, unregister_component
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


def test_components_hear_about_changes_only():
    seen = []

    class Listener:
        name = "listener"
        handlers: dict = {}
        timer_handlers: dict = {}

        def __init__(self, partition):
            pass

        def on_metadata_change(self, old, new):
            seen.append((old, new))

        def to_json(self):
            return {}

        def load_json(self, d):
            pass

        def replay(self, record):
            return False

        def after_replay(self):
            pass

    register_component(Listener)
    try:
        d = CoreDriver(partition=0)
        d.send("UpdateMetadata", 0, topics(a=1))
        d.send("UpdateMetadata", 0, topics(a=1))
        d.send("UpdateMetadata", 0, topics(a=2))
        assert seen == [({}, {"a": 1}), ({"a": 1}, {"a": 2})]
    finally:
        unregister_component(Listener)
