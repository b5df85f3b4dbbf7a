"""Python clients of the coordinator service (kafka-python): requests, events, state log, and
transactions (a transactional producer and a read_committed consumer of the data topics)."""
from .read_committed import ReadCommittedConsumer, ReadCommittedPartition
from .request_client import CoordinatorClient, ResponseTimeout, response_partition
from .transactional_producer import (AbortableTransactionError, FatalTransactionError, ProducerFencedError,
                                     TransactionalError, TransactionalProducer)

__all__ = ["AbortableTransactionError", "CoordinatorClient", "FatalTransactionError", "ProducerFencedError",
           "ReadCommittedConsumer", "ReadCommittedPartition", "ResponseTimeout", "TransactionalError",
           "TransactionalProducer", "response_partition"]
