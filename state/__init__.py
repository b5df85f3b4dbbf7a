"""Versioned encoding of a coordinator partition's state (see codec.py)."""

from .codec import CURRENT_FORMAT, StoredState, decode, encode, encode_partition, load_partition

__all__ = ["CURRENT_FORMAT", "StoredState", "decode", "encode", "encode_partition", "load_partition"]
