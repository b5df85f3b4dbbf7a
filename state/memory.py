"""Large state payloads and glibc's allocator.

glibc serves an allocation above its mmap threshold (which it never raises past 32 MiB by itself)
with fresh pages from mmap, and gives them back with munmap when it is freed. A partition's payload
above that size is copied into new memory on every batch (our splice, and pyspark's pickling and
Arrow conversion of the state row), each page faulted in and zeroed by the kernel: measured here,
a 39 MB copy cost ~1.4 ms per MB against ~0.1 below 32 MB. `keep_large_blocks` sets the mmap and
trim thresholds so that such blocks come from the heap and are reused batch after batch, as smaller
ones already are. The price: the process keeps the memory of its largest batch (it needs it again
at the next one).
"""

from __future__ import annotations

import ctypes

M_TRIM_THRESHOLD = -1  # mallopt parameters (malloc.h)
M_MMAP_THRESHOLD = -3
LARGE = 1 << 30  # blocks up to 1 GiB come from the heap
PAYLOAD_BYTES_WORTH_IT = 8 << 20  # below this the default thresholds already reuse memory

_done: bool | None = None


def keep_large_blocks() -> bool:
    """Set the thresholds once per process; whether they are set (not on a C library without
    glibc's mallopt, where nothing changes)."""
    global _done
    if _done is None:
        try:
            mallopt = ctypes.CDLL(None).mallopt
        except (OSError, AttributeError):
            _done = False
        else:
            mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
            _done = bool(mallopt(M_MMAP_THRESHOLD, LARGE)) and bool(mallopt(M_TRIM_THRESHOLD, LARGE))
    return _done


def large_payload(size: int) -> None:
    """Called with the size of each payload read or written: tunes the allocator for large ones."""
    if size >= PAYLOAD_BYTES_WORTH_IT and _done is None:
        keep_large_blocks()
