"""Activation checkpointing: recompute a function's activations in backward instead of keeping
them (``--checkpoint-activations``, memory-efficient attention's chunks)::

    forward:   out = f(x)          keeps x only (not f's intermediates)
    backward:  f(x) is run again   its intermediates live for one backward step at a time

``torch.utils.checkpoint``, non-reentrant: dropout masks repeat, closures work, calls nest.
"""

import torch
from torch.utils.checkpoint import checkpoint


def checkpointed(function, *args, enabled=True):
    """``function(*args)``, under activation checkpointing when ``enabled`` and gradients are on."""
    if enabled and torch.is_grad_enabled():
        return checkpoint(function, *args, use_reentrant=False)
    return function(*args)
