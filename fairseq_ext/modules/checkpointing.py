"""Activation checkpointing: recompute a function's activations in backward instead of keeping them.

    forward:   out = f(x)          keeps x only (not f's intermediates)
    backward:  f(x) is run again   its intermediates live for one backward step at a time

The one switch every family uses (``--checkpoint-activations`` on encoder layers, query chunks
of memory-efficient attention): ``torch.utils.checkpoint`` in its non-reentrant form, which
keeps the RNG state (dropout masks repeat exactly), reaches tensors captured by closures, and
nests.
"""

import torch
from torch.utils.checkpoint import checkpoint


def checkpointed(function, *args, enabled=True):
    """``function(*args)``, under activation checkpointing when ``enabled`` and gradients are on."""
    if enabled and torch.is_grad_enabled():
        return checkpoint(function, *args, use_reentrant=False)
    return function(*args)
