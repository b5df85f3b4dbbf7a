"""Timer ties: equal deadlines fire in schedule order (Kafka's timing wheel expires one tick's
tasks in insertion order), and that order survives the snapshot."""

from coordinator.timers import Timers


def pop_all(timers: Timers, now: int) -> list[str]:
    out = []
    while (t := timers.pop_due(now)) is not None:
        out.append(t.key)
    return out


def test_equal_deadlines_fire_in_schedule_order():
    t = Timers()
    t.schedule("z", 100, "k")
    t.schedule("a", 100, "k")
    t.schedule("m", 50, "k")
    assert pop_all(t, 100) == ["m", "z", "a"]


def test_rescheduling_moves_a_timer_behind_equal_deadlines():
    t = Timers()
    t.schedule("a", 100, "k")
    t.schedule("b", 100, "k")
    t.schedule("a", 100, "k")  # rescheduled: now after b
    assert pop_all(t, 100) == ["b", "a"]


def test_schedule_order_survives_the_snapshot():
    t = Timers()
    t.schedule("z", 100, "k")
    t.schedule("a", 100, "k")
    again = Timers.from_json(t.to_json())
    again.schedule("b", 100, "k")
    assert pop_all(again, 100) == ["z", "a", "b"]


def test_snapshot_without_sequence_loads_in_key_order():
    # Old snapshots were written sorted by key: that is their tie order when loaded.
    t = Timers.from_json({"a": [100, "k", {}], "b": [100, "k", {}]})
    assert pop_all(t, 100) == ["a", "b"]
