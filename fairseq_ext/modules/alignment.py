"""Real tokens first: reorder every row along time so that its real tokens come first, in order.

fairseq left-pads sources. Block-sparse attention (BART-LS) and fusion-in-encoder chunks
(Z-Code++) must not move with the amount of padding the batch adds, nor with its side, so both
work on rows whose real tokens start at position 0 and restore the caller's layout at the end::

    padding_mask   P P a b c        a b c P P    (x.gather(1, order): real tokens first)
    order          2 3 4 0 1
    inverse        3 4 0 1 2                     (y.gather(1, inverse): the caller's layout)

Any padding pattern works (a stable sort of the mask), not only padding at one end.
"""

import torch


def real_tokens_first(padding_mask):
    """``(order, inverse)``: gather indices (B, T) that move each row's real tokens to the front.

    Args:
        padding_mask: (B, T) bool, ``True`` at padding.
    Returns:
        ``order`` (B, T) long: ``x.gather(1, order)`` has the real tokens first, in their
        order, then the padding, in its order; ``inverse`` (B, T) long undoes it.
    """
    order = torch.argsort(padding_mask.to(torch.int8), dim=1, stable=True)  # (B, T)
    inverse = torch.argsort(order, dim=1)  # (B, T)
    return order, inverse


def gather_time(x, index):
    """``x`` (B, T, ...) reordered along time by ``index`` (B, T)."""
    expanded = index.view(*index.shape, *([1] * (x.dim() - 2))).expand_as(x)
    return x.gather(1, expanded)
