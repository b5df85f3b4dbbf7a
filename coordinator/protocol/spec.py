"""`ApiSpec`: one API as the service answers it (built from the API table, coordinator/protocol/table.py)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ..errors import Error
from ..schema import Struct

# (version, validated body or None, error, message) -> response body
ErrorResponseBuilder = Callable[[int, "dict | None", Error, "str | None"], dict]


def top_level_error(version: int, body: dict | None, error: Error, message: str | None) -> dict:
    return {"throttleTimeMs": 0, "errorCode": error.code, "errorMessage": message}


@dataclass(frozen=True)
class ApiSpec:
    name: str  # Kafka's API name, e.g. "JoinGroup"
    api_key: int  # Kafka's numeric API key, e.g. 11
    min_version: int
    max_version: int
    request: Struct
    component: str  # name of the component that handles it
    # The body field whose value must route to the receiving partition (NOT_COORDINATOR otherwise);
    # None for APIs any partition answers or that check ownership per item.
    routing_field: str | None = None
    error_response: ErrorResponseBuilder = top_level_error
    # Sent only by coordinator partitions to each other (WriteTxnMarkers); clients may still send
    # them, as Kafka brokers accept them, but the docs say they are internal.
    internal: bool = False
