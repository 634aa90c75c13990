"""Relative position buckets of the ProphetNet decoder (paper section 2.3, after T5).

A query at position ``i`` looking at a key at position ``j`` gets a learned bias chosen by
the bucket of the distance ``max(i - j, 0)`` (unidirectional: keys in the future all share
bucket 0). Distances below ``num_buckets // 2`` have a bucket each; larger ones share
log-spaced buckets up to ``max_distance``, and everything beyond falls in the last bucket::

    distance:  0 1 2 ... 15 | 16 ... 22 | 23 ... 31 | ... | >= 128
    bucket:    0 1 2 ... 15 | 16        | 17 ...    | ... | 31        (32 buckets, max 128)

The bias itself is a per-query table (a linear map of the query's input hidden state to
``num_buckets * heads`` values, as in the public ProphetNet code) gathered by bucket; see
:func:`gather_relative_bias`.
"""

import math

import torch


def relative_bucket(distance, num_buckets, max_distance):
    """Bucket index (long, same shape) of non-negative integer ``distance`` values.

    Negative distances (keys after the query) are clamped to 0, as in the unidirectional
    scheme of the public ProphetNet code.
    """
    if num_buckets < 2:
        raise ValueError(f"num_buckets must be at least 2, got {num_buckets}")
    max_exact = num_buckets // 2
    if max_distance <= max_exact:
        raise ValueError(f"relative max distance {max_distance} must exceed num_buckets // 2 = {max_exact}")
    distance = distance.clamp(min=0)
    is_small = distance < max_exact
    # log(0) is never selected (is_small covers it); clamp keeps the unused branch finite
    scaled = torch.log(distance.clamp(min=max_exact).float() / max_exact) / math.log(max_distance / max_exact)
    large = (max_exact + scaled * (num_buckets - max_exact)).long().clamp(max=num_buckets - 1)
    return torch.where(is_small, distance, large).long()


def gather_relative_bias(table, buckets, num_heads):
    """Per-query relative bias picked by bucket.

    Args:
        table: ``(B, Q, num_buckets * heads)``, the output of the relative linear layer,
            laid out bucket-major (``feature = bucket * heads + head``) like the public code.
        buckets: ``(Q, K)`` long bucket index of every (query row, key) pair.
        num_heads: number of attention heads.

    Returns:
        ``(B, heads, Q, K)`` bias to add to the attention scores.
    """
    bsz, num_rows, features = table.shape
    num_buckets = features // num_heads
    table = table.view(bsz, num_rows, num_buckets, num_heads).permute(0, 3, 1, 2)  # (B, H, Q, buckets)
    index = buckets.unsqueeze(0).unsqueeze(0).expand(bsz, num_heads, -1, -1)  # (B, H, Q, K)
    return torch.gather(table, dim=-1, index=index)  # (B, H, Q, K)
