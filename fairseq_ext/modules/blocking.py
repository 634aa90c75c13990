"""Blocks along time: pad to a block multiple inside the module, then view as blocks.

    x (B, T, C), w = 3, T = 7     pad_to_multiple          split_blocks(dim=1)
    a b c d e f g           ->    a b c d e f g 0 0   ->   [a b c] [d e f] [g 0 0]   (B, 3, w, C)
    padding_mask            ->    . . . . . . . P P        (the added slots are padding)

Any input length works: callers never have to hand in a multiple of the block size.
"""

import torch.nn.functional as F


def pad_to_multiple(x, padding_mask, multiple):
    """Right-pad ``x`` (B, T, ...) with zeros and ``padding_mask`` (B, T) with ``True`` along
    time to the next multiple of ``multiple``; returns both, (B, L, ...) and (B, L)."""
    extra = -padding_mask.size(1) % multiple
    if not extra:
        return x, padding_mask
    pad = [0, 0] * (x.dim() - 2) + [0, extra]
    return F.pad(x, pad), F.pad(padding_mask, (0, extra), value=True)


def split_blocks(x, block_size, dim=1):
    """View axis ``dim`` of length ``n * w`` as ``(n, w)``: e.g. (B, H, T, D) -> (B, H, n, w, D)
    with ``dim=2``. The length must be a multiple of ``block_size`` (see :func:`pad_to_multiple`)."""
    return x.unflatten(dim, (-1, block_size))
