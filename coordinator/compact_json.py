"""Compact JSON text: what `json.JSONEncoder(separators=(",", ":"), ensure_ascii=...).encode` returns,
without its cost per call (it builds json's C encoder anew for every value).

The one difference: a value that contains itself raises RecursionError rather than ValueError
("Circular reference detected"), as the encoder keeps no record of the containers it is inside (a
record kept across calls could outlive a failed call and misreport a later value). Nothing the
service encodes refers to itself: its values are trees built for the occasion.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from json import encoder as _json_encoder
from typing import Any


def compact_encoder(ensure_ascii: bool) -> Callable[[Any], str]:
    chunks = compact_chunks(ensure_ascii)

    def encode(value: Any) -> str:
        return "".join(chunks(value, 0))

    return encode


def compact_chunks(ensure_ascii: bool) -> Callable[[Any, int], Any]:
    """The text of `value` in pieces, `chunks(value, 0)` (json's C encoder, called as
    JSONEncoder.iterencode calls it), for a caller that joins them itself: ``"".join(chunks(value,
    0))`` is ``compact_encoder(ensure_ascii)(value)``, a str at the top included."""
    reference = json.JSONEncoder(separators=(",", ":"), ensure_ascii=ensure_ascii)
    make = getattr(_json_encoder, "c_make_encoder", None)
    if make is None:  # no C accelerator: one chunk, json's own text
        return lambda value, _level: (reference.encode(value),)
    quote = _json_encoder.encode_basestring_ascii if ensure_ascii else _json_encoder.encode_basestring
    # The arguments JSONEncoder.iterencode passes (markers None: see the module's docstring).
    return make(None, reference.default, quote, None, ":", ",", False, False, True)
