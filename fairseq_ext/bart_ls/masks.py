"""Masks of BART-LS's block-sparse encoder attention (pure, vectorized).

Every function here is a pure tensor function: no loops over positions, no device moves;
the attention modules in :mod:`fairseq_ext.bart_ls.attention` use the small per-block masks,
and the dense ``(T, T)`` masks are the readable definition of each pattern (and the
reference the tests compare the block-wise modules against). ``True`` means "may attend".
"""

import torch
import torch.nn.functional as F


def effective_block_size(seq_len, block_size):
    """The block actually used for ``seq_len`` tokens: ``block_size``, or ``seq_len`` rounded
    up to even when the whole input fits one block (one block is full attention for every
    mechanism, so nothing changes but the wasted padding)."""
    if seq_len > block_size:
        return block_size
    return seq_len + seq_len % 2


def local_block_mask(seq_len, block_size, device=None):
    """Non-overlapping blocks: token ``i`` attends to token ``j`` iff they share a block.

    seq_len 6, block_size 2::

        1 1 . . . .
        1 1 . . . .
        . . 1 1 . .
        . . 1 1 . .
        . . . . 1 1
        . . . . 1 1

    Returns (T, T) bool.
    """
    block = torch.arange(seq_len, device=device) // block_size  # (T,)
    return block.unsqueeze(1) == block.unsqueeze(0)  # (T, T)


def overlapping_block_mask(seq_len, block_size, device=None):
    """Blocks of ``w`` queries attend to keys ``[start - w/2, end + w/2)``: their own block
    plus the nearer half of each neighbour block.

    seq_len 8, block_size 4 (w/2 = 2)::

        1 1 1 1 1 1 . .
        1 1 1 1 1 1 . .
        1 1 1 1 1 1 . .
        1 1 1 1 1 1 . .
        . . 1 1 1 1 1 1
        . . 1 1 1 1 1 1
        . . 1 1 1 1 1 1
        . . 1 1 1 1 1 1

    Returns (T, T) bool.
    """
    half = block_size // 2
    positions = torch.arange(seq_len, device=device)  # (T,)
    start = (positions // block_size * block_size).unsqueeze(1)  # (T, 1)
    keys = positions.unsqueeze(0)  # (1, T)
    return (keys >= start - half) & (keys < start + block_size + half)  # (T, T)


def global_token_flags(seq_len, block_size, num_global, device=None):
    """(T,) bool: ``True`` for the first ``num_global`` tokens of every block."""
    return torch.arange(seq_len, device=device) % block_size < num_global


def global_block_mask(seq_len, block_size, num_global, device=None):
    """Local blocks plus global tokens: the first ``num_global`` tokens of every block attend
    to every token and every token attends to them.

    seq_len 8, block_size 4, num_global 1 (``g`` = global rows/columns)::

        g g g g g g g g
        g 1 1 1 g . . .
        g 1 1 1 g . . .
        g 1 1 1 g . . .
        g g g g g g g g
        g . . . g 1 1 1
        g . . . g 1 1 1
        g . . . g 1 1 1

    Returns (T, T) bool.
    """
    is_global = global_token_flags(seq_len, block_size, num_global, device)  # (T,)
    local = local_block_mask(seq_len, block_size, device)  # (T, T)
    return local | is_global.unsqueeze(1) | is_global.unsqueeze(0)  # (T, T)


def pooled_key_mask(padding_mask, kernel_size, stride, padding):
    """(B, S) bool: ``True`` for pooled slots that cover at least one real token.

    The pooled keys are ``avg_pool1d`` windows over time; a window made only of padding
    (batch padding or the pool's own zero padding) is masked, any other is kept.
    """
    real = (~padding_mask).unsqueeze(1).float()  # (B, 1, T)
    covered = F.avg_pool1d(real, kernel_size, stride, padding, count_include_pad=True)  # (B, 1, S)
    return covered.squeeze(1) > 0  # (B, S)
