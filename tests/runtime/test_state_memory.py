"""Large payloads come from the heap once `state.memory` has tuned glibc's allocator (otherwise
every copy of a payload above 32 MiB goes to fresh mmap'd pages: state/memory.py)."""

from __future__ import annotations

import subprocess
import sys

import pytest

# In a fresh interpreter: the thresholds are process-wide and never set back.
PROBE = """
import ctypes, sys
import state.codec
from state import memory

class MallInfo2(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in
                ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks", "keepcost")]

mallinfo2 = ctypes.CDLL(None).mallinfo2
mallinfo2.restype = MallInfo2
if sys.argv[1] == "tuned":
    memory.large_payload(40 << 20)
payload = bytes(40 << 20)
copy = b"".join([payload[:1], payload[1:]])  # as the splice does: a new 40 MB block
print(mallinfo2().hblkhd >> 20)
"""


def mapped_mb(mode: str) -> int:
    out = subprocess.run([sys.executable, "-c", PROBE, mode], check=True, capture_output=True, text=True)
    return int(out.stdout)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's allocator")
def test_a_large_payload_is_copied_into_heap_memory_not_fresh_mappings():
    assert mapped_mb("default") >= 80  # both 40 MB blocks mmap'd
    assert mapped_mb("tuned") < 40
