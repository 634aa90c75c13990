"""glibc's thresholds set by the plugin (fairseq_ext/allocator.py): a block of several MB comes
from the heap instead of fresh mmap pages (which a free hands back to the kernel, so that the
next decoding step faults them in again), and a user's own setting wins."""

import os
import subprocess
import sys

import pytest

# a fresh interpreter: allocate 20 MB with malloc and count the blocks glibc served by mmap
PROGRAM = """
import ctypes, sys
from fairseq_ext.allocator import keep_freed_memory
class MallInfo2(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in
                "arena ordblks smblks hblks hblkhd usmblks fsmblks uordblks fordblks keepcost".split()]
libc = ctypes.CDLL("libc.so.6")
libc.mallinfo2.restype = MallInfo2
libc.malloc.restype = ctypes.c_void_p
libc.free.argtypes = [ctypes.c_void_p]
applied = keep_freed_memory() if sys.argv[1] == "on" else False
before = libc.mallinfo2().hblks
block = libc.malloc(20 * 2**20)
print(applied, libc.mallinfo2().hblks - before)
libc.free(block)
"""


def mmapped_blocks(mode, **env):
    environment = {k: v for k, v in os.environ.items() if not k.startswith(("MALLOC_", "GLIBC_TUNABLES"))}
    out = subprocess.run([sys.executable, "-c", PROGRAM, mode], env={**environment, **env},
                         capture_output=True, text=True, check=True).stdout.split()  # fmt: skip
    return out[0] == "True", int(out[1])


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt and mallinfo2")
def test_a_20mb_block_comes_from_the_heap():
    assert mmapped_blocks("off") == (False, 1)  # glibc's default: its own mmap
    assert mmapped_blocks("on") == (True, 0)  # the heap, kept for the next step


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt and mallinfo2")
def test_a_users_own_setting_wins():
    assert mmapped_blocks("on", MALLOC_MMAP_THRESHOLD_="131072") == (False, 1)


# a fresh interpreter: 40 blocks of 4 MB from the heap (the plugin's thresholds), written, the
# first 39 freed (the last keeps them from being the heap's top); resident MB before and after
RELEASE = """
import ctypes, sys
from fairseq_ext.allocator import keep_freed_memory, release_freed_memory
def resident():
    return int(next(l for l in open("/proc/self/status") if l.startswith("VmRSS")).split()[1]) // 1024
libc = ctypes.CDLL("libc.so.6")
libc.malloc.restype = ctypes.c_void_p
libc.free.argtypes = [ctypes.c_void_p]
assert keep_freed_memory()
blocks = [libc.malloc(4 * 2**20) for _ in range(40)]
for block in blocks:
    ctypes.memset(block, 1, 4 * 2**20)
for block in blocks[:-1]:
    libc.free(block)
held = resident()
released = release_freed_memory() if sys.argv[1] == "release" else False
print(released, held - resident())
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc_trim")
def test_freed_heap_blocks_are_handed_back_on_request():
    """What the decoding layout relies on: blocks freed inside the heap stay resident under the
    plugin's thresholds until ``release_freed_memory`` hands their pages back."""
    environment = {k: v for k, v in os.environ.items() if not k.startswith(("MALLOC_", "GLIBC_TUNABLES"))}

    def run(mode):
        out = subprocess.run([sys.executable, "-c", RELEASE, mode], env=environment, capture_output=True,
                             text=True, check=True).stdout.split()
        return out[0] == "True", int(out[1])

    kept, dropped_alone = run("keep")
    released, dropped = run("release")
    assert not kept and dropped_alone < 8  # nothing handed back by itself
    assert released and dropped >= 140  # 39 x 4 MB freed: nearly all of it
