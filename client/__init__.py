"""Python clients of the coordinator service (kafka-python): requests, events, state log,
transactions (a transactional producer and a read_committed consumer of the data topics), and a
KIP-848 consumer group member."""
from .consumer_group import GroupMember, TopicNames, new_member_id
from .read_committed import ReadCommittedConsumer, ReadCommittedPartition
from .request_client import CoordinatorClient, ResponseTimeout, response_partition
from .transactional_producer import (AbortableTransactionError, FatalTransactionError, ProducerFencedError,
                                     TransactionalError, TransactionalProducer)

__all__ = ["AbortableTransactionError", "CoordinatorClient", "FatalTransactionError", "GroupMember",
           "ProducerFencedError", "ReadCommittedConsumer", "ReadCommittedPartition", "ResponseTimeout",
           "TopicNames", "TransactionalError", "TransactionalProducer", "new_member_id", "response_partition"]
