"""Recovery drill helpers for the tests: the product's (client/drill/), re-exported."""

from __future__ import annotations

from client.drill.load import Load
from client.drill.reference import client_requests, logical, reference_states, request_log

__all__ = ["Load", "client_requests", "logical", "reference_states", "request_log"]
