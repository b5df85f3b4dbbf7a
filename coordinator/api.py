"""The API table: each Kafka API this service answers, its versions and request schema.

Components register their APIs here at import time (`register(ApiSpec(...))`); the partition
runtime looks requests up by Kafka's API name (`apiKey` in the envelope, e.g. "JoinGroup").
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from .errors import Error
from .schema import Struct

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


_REGISTRY: dict[str, ApiSpec] = {}


def register(spec: ApiSpec) -> ApiSpec:
    existing = _REGISTRY.get(spec.name)
    if existing is not None and existing != spec:
        raise ValueError(f"API {spec.name} registered twice")
    _REGISTRY[spec.name] = spec
    return spec


def unregister(name: str) -> None:
    """For tests that register an API of their own."""
    _REGISTRY.pop(name, None)


def lookup(name: str) -> ApiSpec | None:
    return _REGISTRY.get(name)


def all_apis() -> list[ApiSpec]:
    return sorted(_REGISTRY.values(), key=lambda s: s.api_key)
