"""Python clients of the coordinator service (kafka-python): requests, events, state log,
transactions (a transactional producer and a read_committed consumer of the data topics), a classic
group member, a KIP-848 consumer group member, a KIP-1071 streams group member and a KIP-932 share
consumer."""

from .classic_group import ClassicGroupMember
from .consumer_group import ConsumerGroupMember, TopicNames, new_member_id
from .read_committed import ReadCommittedConsumer, ReadCommittedPartition
from .request_client import CoordinatorClient, ResponseTimeout, ServiceUnavailable, response_partition
from .share_consumer import ShareConsumer, ShareRecord
from .streams_member import StreamsGroupMember
from .transactional_producer import (
    AbortableTransactionError,
    FatalTransactionError,
    ProducerFencedError,
    TransactionalError,
    TransactionalProducer,
)

__all__ = [
    "AbortableTransactionError",
    "ClassicGroupMember",
    "CoordinatorClient",
    "FatalTransactionError",
    "ConsumerGroupMember",
    "ProducerFencedError",
    "ReadCommittedConsumer",
    "ReadCommittedPartition",
    "ResponseTimeout",
    "ServiceUnavailable",
    "ShareConsumer",
    "ShareRecord",
    "StreamsGroupMember",
    "TopicNames",
    "TransactionalError",
    "TransactionalProducer",
    "new_member_id",
    "response_partition",
]
