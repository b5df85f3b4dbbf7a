"""The coordinator core: Kafka's group and transaction coordinators as pure state machines.

No Spark, Kafka or clock: a `CoordinatorPartition` takes requests with their times and returns
responses, events, state-log records and its next deadline. Importing this package registers
every component; the APIs are listed in coordinator/protocol/table.py.
"""
from . import find_coordinator  # noqa: F401  (the FindCoordinator component)
from . import metadata  # noqa: F401  (the topic metadata component)
from . import group  # noqa: F401  (registers the group coordinator: classic groups and offsets)
from . import txn  # noqa: F401  (registers the transaction coordinator)
from . import share  # noqa: F401  (registers the share coordinator: share-partition state, KIP-932)
from . import metrics  # noqa: F401  (registers the metrics component)
from .batch import InputRecord, run_batch
from .config import CoordinatorConfig
from .errors import ApiError, Error, Errors
from .routing import coordinator_partition, java_string_hashcode
from .runtime import CoordinatorPartition

__all__ = ["ApiError", "CoordinatorConfig", "CoordinatorPartition", "Error", "Errors", "InputRecord",
           "coordinator_partition", "java_string_hashcode", "run_batch"]
