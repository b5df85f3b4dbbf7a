"""The coordinator core: Kafka's group and transaction coordinators as pure state machines.

No Spark, Kafka or clock: a `CoordinatorPartition` takes requests with their times and returns
responses, events, state-log records and its next deadline. Importing it registers nothing: a
partition builds its coordinators in coordinator/coordinators.py, and the APIs are listed in
coordinator/protocol/table.py.
"""

from .batch import InputRecord, run_batch
from .config import CoordinatorConfig
from .coordinators import CoordinatorPartition
from .errors import ApiError, Error, Errors
from .routing import coordinator_partition, java_string_hashcode

__all__ = [
    "ApiError",
    "CoordinatorConfig",
    "CoordinatorPartition",
    "Error",
    "Errors",
    "InputRecord",
    "coordinator_partition",
    "java_string_hashcode",
    "run_batch",
]
