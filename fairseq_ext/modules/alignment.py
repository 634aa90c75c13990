"""Real tokens first: reorder every row along time so that its real tokens come first, in order,
so that blocks (BART-LS) and chunks (Z-Code++ FiE) do not move with the batch's padding::

    padding_mask   P P a b c        a b c P P    (x.gather(1, order): real tokens first)
    order          2 3 4 0 1
    inverse        3 4 0 1 2                     (y.gather(1, inverse): the caller's layout)
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
