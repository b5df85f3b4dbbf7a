"""The share coordinator's key: `groupId:topicId:partition` (Kafka's SharePartitionKey)."""

from __future__ import annotations


def share_partition_key(group_id: str, topic_id: str, partition: int) -> str:
    """SharePartitionKey.asCoordinatorKey(): the routing key."""
    return f"{group_id}:{topic_id}:{partition}"


def parse_share_partition_key(key: str) -> tuple[str, str, int]:
    """SharePartitionKey.validate + getInstance: `groupId:topicId:partition`; ValueError if not."""
    parts = key.split(":")
    if len(parts) != 3:
        raise ValueError(f"Invalid key format: expected - groupId:topicId:partition, found -  {key}")
    group_id, topic_id, partition = parts
    if not group_id.strip():
        raise ValueError("Group id cannot be null or empty")
    if len(topic_id) != 22:
        raise ValueError(f"Invalid topic id {topic_id}")
    try:
        return group_id, topic_id, int(partition)
    except ValueError:
        raise ValueError(f"Invalid partition {partition}") from None
