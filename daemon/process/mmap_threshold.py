"""Give memory back after a burst: large blocks come straight from the kernel and go back to it.

A client may send frames of up to 64 KiB, and a multipart message of any number of them; libzmq
buffers the whole message before csd sees it (and refuses it). glibc serves blocks of that size
from its heaps by default and keeps them after they are freed, so one 60 MB message left csd 60
MB larger for good. With mmap's threshold at 32 KiB, such blocks are mapped for themselves and
unmapped when freed; requests and replies (well under that) are unaffected.
"""

from __future__ import annotations

import ctypes
import ctypes.util

M_MMAP_THRESHOLD = -3  # glibc's mallopt parameter number
MMAP_THRESHOLD_BYTES = 32 * 1024


def release_large_blocks() -> bool:
    """Set glibc's mmap threshold; False where the C library has no mallopt (not glibc)."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        return bool(libc.mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES))
    except (OSError, AttributeError):
        return False
