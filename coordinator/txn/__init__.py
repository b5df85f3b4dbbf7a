"""Kafka's transaction coordinator (component "transactions"): InitProducerId, AddPartitionsToTxn,
AddOffsetsToTxn, EndTxn, DescribeTransactions, ListTransactions, and the schemas of the group-side
WriteTxnMarkers and TxnOffsetCommit. Importing this package registers them.

    coordinator.py     TransactionCoordinator: API and timer handlers (the component)
    state_manager.py   TransactionStateManager: transactional id -> metadata, replay, load, timers
    marker_channel.py  TransactionMarkerChannelManager: markers out, Complete* once they are written
    metadata.py        TransactionState, TransactionMetadata, TxnTransitMetadata (the state machine)
    log.py             the TransactionLog and ProducerIdBlock records
    markers.py         the marker record format (read by clients and the stream too)
    pid.py             ProducerIdManager: producer-id blocks
    apis.py            the API specs
"""

from . import apis  # noqa: F401  (registers the API specs)
from .coordinator import TransactionCoordinator
from .markers import MARKER_HEADER, parse_marker
from .metadata import IllegalStateError, TransactionMetadata, TransactionState

__all__ = [
    "IllegalStateError",
    "MARKER_HEADER",
    "TransactionCoordinator",
    "TransactionMetadata",
    "TransactionState",
    "parse_marker",
]
