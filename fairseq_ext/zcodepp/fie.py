"""Fusion-in-encoder chunking (Z-Code++ Section 2.3, Appendix A.3): pure, vectorized functions.

A local layer attends within chunks of ``l`` tokens; a global layer attends over the whole
concatenation. To make chunks depend on the document only (not on how much padding the batch
adds, nor on which side), the encoder first moves every row's real tokens to the front
(:func:`~fairseq_ext.modules.alignment.real_tokens_first`), chunks them, and restores the
caller's layout at the end.

    left-padded rows         real_tokens_first           split_chunks (l = 3)
    _ _ a b c d e      ->      a b c d e _ _     ->     [a b c] [d e _]       (row 0)
    _ _ _ _ _ f g              f g _ _ _ _ _             [f g _]               (row 1)
                                                         all-padding chunks dropped
"""

from ..modules.blocking import pad_to_multiple, split_blocks


def split_chunks(x, padding_mask, chunk_size):
    """Cut ``x`` (B, T, C), real tokens first, into chunks of ``chunk_size`` along time.

    Returns ``(chunks (N, l, C), chunk_padding (N, l), keep (B * ceil(T/l),))``: the chunks that
    hold at least one real token, their padding masks, and which of all chunks they are. Time is
    padded up to a multiple of ``l`` inside; any length works.
    """
    x, padding_mask = pad_to_multiple(x, padding_mask, chunk_size)  # (B, n*l, C), (B, n*l)
    chunks = split_blocks(x, chunk_size).flatten(0, 1)  # (B*n, l, C)
    chunk_padding = split_blocks(padding_mask, chunk_size).flatten(0, 1)  # (B*n, l)
    keep = ~chunk_padding.all(dim=1)  # (B*n,)
    return chunks[keep], chunk_padding[keep], keep


def merge_chunks(chunks, keep, batch, length):
    """Inverse of :func:`split_chunks`: (N, l, C) -> (B, T, C), zeros where chunks were dropped."""
    _, chunk_size, dim = chunks.shape
    full = chunks.new_zeros(keep.numel(), chunk_size, dim)  # (B*n, l, C)
    full[keep] = chunks
    return full.view(batch, -1, dim)[:, :length]  # (B, T, C)
