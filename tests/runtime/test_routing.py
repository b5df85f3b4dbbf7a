"""Coordinator routing must equal Kafka's: Utils.abs(javaStringHashCode(key)) % partitions."""

import pytest

from coordinator.routing import coordinator_partition, java_string_hashcode, kafka_abs, key_for_partition

VECTORS = [
    ("test-group", 12),
    ("my-group", 12),
    ("groupId", 18),
    ("tx-1", 20),
    ("orders-consumer", 40),
    ("支付组", 39),
    ("😀-group", 43),
]


@pytest.mark.parametrize("key,partition", VECTORS)
def test_issue_vectors_with_50_partitions(key, partition):
    assert coordinator_partition(key, 50) == partition


def test_java_string_hashcode_known_values():
    assert java_string_hashcode("") == 0
    assert java_string_hashcode("a") == 97
    assert java_string_hashcode("hello") == 99162322
    assert java_string_hashcode("Aa") == java_string_hashcode("BB") == 2112  # classic collision
    # Supplementary characters hash as two UTF-16 code units (surrogates), as in Java.
    assert java_string_hashcode("😀") == 0xD83D * 31 + 0xDE00


def test_utils_abs_maps_min_value_to_zero():
    assert java_string_hashcode("polygenelubricants") == -(2**31)
    assert kafka_abs(-(2**31)) == 0 and kafka_abs(-5) == 5
    assert coordinator_partition("polygenelubricants", 50) == 0


def test_null_key_routes_like_the_empty_string():
    assert coordinator_partition(None, 50) == coordinator_partition("", 50) == 0


def test_key_for_partition_lands_on_its_partition():
    for p in range(50):
        assert coordinator_partition(key_for_partition(p), 50) == p
