"""glibc's thresholds set by the plugin (fairseq_ext/allocator.py): a buffer of several MB
allocated and freed at every step stops costing page faults, and a user's own setting wins."""

import os
import subprocess
import sys

import pytest

STEPS = 50
PROGRAM = f"""
import resource, sys, torch
import fairseq_ext.allocator as allocator
applied = allocator.keep_freed_memory() if sys.argv[1] == "on" else False
def step():  # buffers of 16 and 24 MB alive together, as a decoding step's vocabulary tensors
    a = torch.ones(4 * 2**20)
    b = torch.ones(6 * 2**20)
    return float(a.sum() + b.sum())
for _ in range(3):  # let glibc's own thresholds adapt as far as they do
    step()
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range({STEPS}):
    step()
print(applied, resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


def faults(mode, **env):
    environment = {k: v for k, v in os.environ.items() if not k.startswith(("MALLOC_", "GLIBC_TUNABLES"))}
    out = subprocess.run([sys.executable, "-c", PROGRAM, mode], env={**environment, **env},
                         capture_output=True, text=True, check=True).stdout.split()  # fmt: skip
    return out[0] == "True", int(out[1])


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt")
def test_freed_buffers_stay_in_the_heap():
    applied, with_setting = faults("on")
    _, without = faults("off")
    assert applied
    assert without > STEPS * 256  # glibc's defaults: fresh pages at every step (measured: ~900 a step)
    assert with_setting < without / 3  # kept in the heap (measured: 12,288 against 44,960 in all)


def test_a_users_own_setting_wins():
    applied, _ = faults("on", MALLOC_MMAP_THRESHOLD_="131072")
    assert not applied
