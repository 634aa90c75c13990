"""Who sees what in n-stream self-attention (paper section 2.3, figure 2).

Stream ``k >= 1`` at position ``i`` predicts the token ``k - 1`` steps after ``i``: it sees main
positions ``0 .. i - k + 1`` (position 0 always) and its own slot, never another stream; the
main stream is causal. ``x`` = visible, ``.`` = masked, for 4 positions and n = 2::

                  main keys j=0..3   own slot
    stream 0, i=0     x . . .           .
    (main)    i=1     x x . .           .
              i=2     x x x .           .
              i=3     x x x x           .
    stream 1, i=0     x . . .           x      predicts target i (the next token)
              i=1     x x . .           x
              i=2     x x x .           x
              i=3     x x x x           x
    stream 2, i=0     x . . .           x      predicts target i from main 0..i-1
              i=1     x . . .           x
              i=2     x x . .           x
              i=3     x x x .           x

Relative buckets as the public code: a main row measures ``i - j``, a predicting row
``i - j + 1`` to main key ``j`` and 0 to its own slot.
"""

from typing import NamedTuple

import torch

from ..modules.relative_position import t5_relative_bucket

MAIN_STREAM = 0
NEXT_TOKEN_STREAM = 1


class NgramLayout(NamedTuple):
    """Visibility and relative buckets of ``Q`` query rows over ``K`` main-stream keys."""

    allowed: torch.Tensor  # (Q, K) bool: row may attend to main key j
    own_allowed: torch.Tensor  # (Q,) bool: row may attend to its own slot
    buckets: torch.Tensor  # (Q, K) long relative bucket to main key j
    own_buckets: torch.Tensor  # (Q,) long relative bucket to its own slot


def ngram_layout(query_positions, query_streams, num_keys, num_buckets, max_distance):
    """Layout of arbitrary query rows.

    Args:
        query_positions: ``(Q,)`` long time index of every query row.
        query_streams: ``(Q,)`` long stream of every row (0 = main, k = k-th predicting).
        num_keys: number of main-stream keys (positions ``0 .. num_keys - 1``).
    """
    keys = torch.arange(num_keys, device=query_positions.device)  # (K,)
    i = query_positions.unsqueeze(1)  # (Q, 1)
    stream = query_streams.unsqueeze(1)  # (Q, 1)
    is_main = stream == MAIN_STREAM
    causal = keys.unsqueeze(0) <= i  # (Q, K)
    lagged = (keys.unsqueeze(0) <= i - (stream - NEXT_TOKEN_STREAM)) | (keys.unsqueeze(0) == 0)
    allowed = torch.where(is_main, causal, lagged)  # (Q, K)
    distance = i - keys.unsqueeze(0) + (~is_main).long()  # (Q, K)
    buckets = t5_relative_bucket(distance, num_buckets, max_distance)
    own_allowed = query_streams != MAIN_STREAM  # (Q,)
    own_buckets = t5_relative_bucket(torch.zeros_like(query_positions), num_buckets, max_distance)
    return NgramLayout(allowed, own_allowed, buckets, own_buckets)


def full_layout(seq_len, ngram, num_buckets, max_distance, device=None):
    """Rows ``[main (T); stream 1 (T); ...; stream n (T)]`` over ``T`` main keys."""
    positions = torch.arange(seq_len, device=device).repeat(1 + ngram)  # ((1+n)T,)
    streams = torch.arange(1 + ngram, device=device).repeat_interleave(seq_len)  # ((1+n)T,)
    return ngram_layout(positions, streams, seq_len, num_buckets, max_distance)


def step_layout(step, num_buckets, max_distance, device=None):
    """Rows ``[main; stream 1]`` at time ``step`` over main keys ``0 .. step`` (inference)."""
    positions = torch.full((2,), step, dtype=torch.long, device=device)
    streams = torch.tensor([MAIN_STREAM, NEXT_TOKEN_STREAM], device=device)
    return ngram_layout(positions, streams, step + 1, num_buckets, max_distance)
