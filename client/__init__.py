"""Python clients of the coordinator service (kafka-python): requests, events, state log."""
from .request_client import CoordinatorClient, ResponseTimeout, response_partition

__all__ = ["CoordinatorClient", "ResponseTimeout", "response_partition"]
