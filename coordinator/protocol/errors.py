"""One error-response builder for every API, driven by data (Kafka's `AbstractRequest.getErrorResponse`).

An `ErrorShape` says where an API's error goes: the top-level `errorCode` (and `errorMessage`)
where the version has them, and items of the response that echo the request's items (OffsetCommit
per partition, DeleteGroups per group, ...), each with its error fields set. The response is then
shaped for the version (`loader.shape`): fields absent from the version are dropped, the others
not set are at their default.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..errors import Error
from .loader import shape

# Error fields set on the top level and on every echoed item whose version has them.
ERROR_CODE_FIELDS = ("errorCode", "partitionErrorCode")


@dataclass(frozen=True)
class Echo:
    """Response list `response` echoes request list `request`: one entry per request item.

    `copy` maps response field -> request item field (None: the item itself, for lists of ids);
    `children` echo nested lists of the item; `versions` limits the rule (inclusive range)."""

    request: str
    response: str
    copy: dict[str, str | None] = field(default_factory=dict)
    children: tuple[Echo, ...] = ()
    versions: tuple[int, int | None] = (0, None)
    fill: dict[str, Any] = field(default_factory=dict)  # values other than the file's defaults

    def applies(self, version: int) -> bool:
        lo, hi = self.versions
        return version >= lo and (hi is None or version <= hi)


@dataclass(frozen=True)
class ErrorShape:
    echo: tuple[Echo, ...] = ()
    fill: dict[str, Any] = field(default_factory=dict)  # top-level values other than the defaults
    # Whether echoed items carry the error message (Kafka's per-item errorMessage), or null.
    item_message: bool = True
    # Named hooks (small, Kafka's per-request rules): (version, error) -> the error to report;
    # (version, body) -> the body to echo; (version, body, error, message) -> extra top-level values.
    map_error: Callable[[int, Error], Error] | None = None
    prepare: Callable[[int, dict], dict] | None = None
    extra: Callable[[int, dict | None, Error, str | None], dict] | None = None


def _item(rule: Echo, version: int, item: Any, error: Error, message: str | None, with_message: bool) -> dict:
    out: dict = {}
    for name in ERROR_CODE_FIELDS:
        out[name] = error.code
    out["errorMessage"] = message if with_message else None
    out.update(rule.fill)
    for dst, src in rule.copy.items():
        out[dst] = item if src is None else (item.get(src) if isinstance(item, dict) else None)
    for child in rule.children:
        if child.applies(version):
            out[child.response] = [
                _item(child, version, x, error, message, with_message)
                for x in (item.get(child.request) or [] if isinstance(item, dict) else [])
            ]
    return out


def build_error_response(
    response: str, shape_spec: ErrorShape, version: int, body: dict | None, error: Error, message: str | None
) -> dict:
    """The error response of message `response` ("JoinGroupResponse") for `version`."""
    if shape_spec.map_error is not None:
        error = shape_spec.map_error(version, error)
    if body is not None and shape_spec.prepare is not None:
        body = shape_spec.prepare(version, body)
    out: dict = {"errorCode": error.code, "errorMessage": message}
    out.update(shape_spec.fill)
    for rule in shape_spec.echo:
        if rule.applies(version):
            out[rule.response] = [
                _item(rule, version, x, error, message, shape_spec.item_message)
                for x in (body or {}).get(rule.request) or []
            ]
    if shape_spec.extra is not None:
        out.update(shape_spec.extra(version, body, error, message))
    return shape(response, version, out)


def error_builder(response: str, shape_spec: ErrorShape):
    """The `ApiSpec.error_response` of an API: (version, body, error, message) -> response body."""

    def build(version: int, body: dict | None, error: Error, message: str | None) -> dict:
        return build_error_response(response, shape_spec, version, body, error, message)

    build.__qualname__ = build.__name__ = f"error_response[{response}]"
    return build
