"""Kafka's transaction coordinator (component "transactions"): InitProducerId, AddPartitionsToTxn,
AddOffsetsToTxn, EndTxn, DescribeTransactions, ListTransactions, and the schemas of the group-side
WriteTxnMarkers and TxnOffsetCommit. Importing this package registers them."""
from . import apis  # noqa: F401  (registers the API specs)
from .coordinator import TransactionCoordinator
from .markers import MARKER_HEADER, parse_marker
from .metadata import IllegalStateError, TransactionMetadata, TransactionState

__all__ = ["IllegalStateError", "MARKER_HEADER", "TransactionCoordinator", "TransactionMetadata",
           "TransactionState", "parse_marker"]
