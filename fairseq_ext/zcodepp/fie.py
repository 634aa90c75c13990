"""Fusion-in-encoder chunking (Z-Code++ Section 2.3, Appendix A.3): pure, vectorized functions.

A local layer attends within chunks of ``l`` tokens; a global layer attends over the whole
concatenation. To make chunks depend on the document only (not on how much padding the batch
adds, nor on which side), the encoder first moves every row's real tokens to the front
(:func:`right_align`), chunks them, and restores the caller's layout at the end.

    left-padded rows            right_align              split_chunks (l = 3)
    _ _ a b c d e      ->      a b c d e _ _     ->     [a b c] [d e _]       (row 0)
    _ _ _ _ _ f g              f g _ _ _ _ _             [f g _]               (row 1)
                                                         all-padding chunks dropped
"""

import torch
import torch.nn.functional as F


def right_align(padding_mask):
    """``(order, inverse)``: gather indices (B, T) that move real tokens to the front, in order.

    ``x.gather(1, order)`` right-pads every row; ``y.gather(1, inverse)`` restores the layout.
    """
    order = torch.argsort(padding_mask.to(torch.int8), dim=1, stable=True)  # (B, T)
    inverse = torch.argsort(order, dim=1)  # (B, T)
    return order, inverse


def gather_time(x, index):
    """``x`` (B, T, ...) reordered along time by ``index`` (B, T)."""
    expanded = index.view(*index.shape, *([1] * (x.dim() - 2))).expand_as(x)
    return x.gather(1, expanded)


def split_chunks(x, padding_mask, chunk_size):
    """Cut right-aligned ``x`` (B, T, C) into chunks of ``chunk_size`` along time.

    Returns ``(chunks (N, l, C), chunk_padding (N, l), keep (B * ceil(T/l),))``: the chunks that
    hold at least one real token, their padding masks, and which of all chunks they are. Time is
    padded up to a multiple of ``l`` inside; any length works.
    """
    batch, length, dim = x.shape
    n_chunks = -(-length // chunk_size)
    extra = n_chunks * chunk_size - length
    x = F.pad(x, (0, 0, 0, extra))  # (B, n*l, C)
    padding_mask = F.pad(padding_mask, (0, extra), value=True)  # (B, n*l)
    chunks = x.view(batch * n_chunks, chunk_size, dim)  # (B*n, l, C)
    chunk_padding = padding_mask.view(batch * n_chunks, chunk_size)  # (B*n, l)
    keep = ~chunk_padding.all(dim=1)  # (B*n,)
    return chunks[keep], chunk_padding[keep], keep


def merge_chunks(chunks, keep, batch, length):
    """Inverse of :func:`split_chunks`: (N, l, C) -> (B, T, C), zeros where chunks were dropped."""
    _, chunk_size, dim = chunks.shape
    full = chunks.new_zeros(keep.numel(), chunk_size, dim)  # (B*n, l, C)
    full[keep] = chunks
    return full.view(batch, -1, dim)[:, :length]  # (B, T, C)
