"""Versioned encoding of a coordinator partition's state (see codec.py)."""
from .codec import CURRENT_FORMAT, decode, encode

__all__ = ["CURRENT_FORMAT", "decode", "encode"]
