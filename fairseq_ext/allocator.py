"""glibc's allocator told to keep the memory of large per-step buffers instead of returning it.

Decoding frees and reallocates ``(beams, V)`` buffers of several MB every step; above glibc's
mmap threshold each costs fresh pages. :func:`keep_freed_memory` (called when the plugin is
imported) raises the mmap and trim thresholds so they stay in the heap
(``benchmarks/decoding_speed.py``: kernel time 2.2 s -> 0.9 s). A user's ``MALLOC_*`` settings
win; other C libraries are left alone.
"""

import ctypes
import functools
import logging
import os
import platform

logger = logging.getLogger(__name__)

M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3  # glibc's mallopt parameters (malloc.h)
MMAP_THRESHOLD = 32 * 2**20  # glibc's largest on 64-bit (DEFAULT_MMAP_THRESHOLD_MAX)
TRIM_THRESHOLD = 256 * 2**20  # free memory kept at the top of the heap before it is returned
USER_SETTINGS = ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "GLIBC_TUNABLES")

_applied = None


def keep_freed_memory() -> bool:
    """Set glibc's mmap and trim thresholds once per process (see the module docstring);
    returns whether they are set (False on another C library or where the user set them)."""
    global _applied
    if _applied is not None:
        return _applied
    _applied = False
    libc = _glibc()
    if libc is None or any(name in os.environ for name in USER_SETTINGS):
        return _applied
    _applied = bool(libc.mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(
        libc.mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD)
    )
    if not _applied:
        logger.debug("glibc refused the mmap/trim thresholds; the allocator keeps its defaults")
    return _applied


def release_freed_memory() -> bool:
    """Hand the heap's free pages back to the system (glibc's ``malloc_trim(0)``, which also
    releases whole free pages inside the heap); returns whether anything was released.

    For one-off reshuffles of large buffers (a model's weights laid out for decoding): with the
    thresholds above, the buffers they replace would stay resident as holes in the heap.
    """
    libc = _glibc()
    return libc is not None and bool(libc.malloc_trim(0))


@functools.cache
def _glibc():
    """glibc's functions as the process already has them (``CDLL(None)``: no search for the
    library, which runs ``ldconfig``), or ``None`` on another C library."""
    return ctypes.CDLL(None) if platform.libc_ver()[0] == "glibc" else None
