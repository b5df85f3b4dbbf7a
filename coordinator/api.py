"""The APIs this service answers, looked up by Kafka's API name (`apiKey` in the envelope, e.g. "JoinGroup").

The APIs are listed once, as data, in coordinator/protocol/table.py (name, key, versions, owning
component, routing field, internal flag, error shape); their fields come from the message JSON
files in coordinator/protocol/messages/. `register` remains for tests that add an API of their own.
"""

from __future__ import annotations

from collections.abc import Callable

from .protocol.spec import ApiSpec, ErrorResponseBuilder, top_level_error
from .protocol.table import API_TABLE

__all__ = ["ApiSpec", "ErrorResponseBuilder", "top_level_error", "register", "unregister", "lookup", "all_apis"]

_REGISTRY: dict[str, ApiSpec] = {spec.name: spec for spec in API_TABLE}


def register(spec: ApiSpec) -> ApiSpec:
    """For tests that add an API of their own (the service's APIs are in the table)."""
    existing = _REGISTRY.get(spec.name)
    if existing is not None and existing != spec:
        raise ValueError(f"API {spec.name} registered twice")
    _REGISTRY[spec.name] = spec
    return spec


def unregister(name: str) -> None:
    """For tests that register an API of their own."""
    _REGISTRY.pop(name, None)


# The registry's own methods (no Python frame: one call per request). `lookup(name)`: the API, or
# None. `registered(name)`: an API that must be registered (a parsed request's): KeyError otherwise.
lookup: Callable[[str], ApiSpec | None] = _REGISTRY.get
registered: Callable[[str], ApiSpec] = _REGISTRY.__getitem__


def all_apis() -> list[ApiSpec]:
    return sorted(_REGISTRY.values(), key=lambda s: s.api_key)
