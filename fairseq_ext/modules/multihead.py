"""Attention heads: a model width ``C`` seen as ``H`` heads of ``D = C / H`` channels.

    (..., T, C)  --split_heads-->  (..., H, T, D)  --merge_heads-->  (..., T, C)

Every family's attention projects ``(B, T, C)`` inputs and works per head on ``(B, H, T, D)``;
a relative-position table ``(2S, C)`` splits the same way into ``(H, 2S, D)``.
"""


def split_heads(x, num_heads):
    """``(..., T, C) -> (..., H, T, C / H)``: a view (no copy)."""
    return x.unflatten(-1, (num_heads, -1)).transpose(-3, -2)


def merge_heads(x):
    """``(..., H, T, D) -> (..., T, H * D)``, the inverse of :func:`split_heads`."""
    return x.transpose(-3, -2).flatten(-2)
