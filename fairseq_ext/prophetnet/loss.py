"""The math of the future n-gram loss (paper section 2.2, equations 3-4): stream ``j`` at position
``i`` predicts target ``i`` from the main stream up to ``i - j``; its first ``j`` positions
(which see only the start token) are no target, and inside pre-training spans no stream
predicts across a span's start.
"""

import torch


def stream_weights(ngram, gamma=1.0, next_token_only=False):
    """``alpha_j = gamma^j / sum_i gamma^i`` for ``j < ngram`` (eq. 4); ``[1, 0, ...]`` when
    training on the next token only."""
    if ngram < 1:
        raise ValueError(f"ngram must be at least 1, got {ngram}")
    if gamma <= 0:
        raise ValueError(f"the attenuation coefficient gamma must be positive, got {gamma}")
    if next_token_only:
        return [1.0] + [0.0] * (ngram - 1)
    powers = [gamma ** j for j in range(ngram)]
    total = sum(powers)
    return [p / total for p in powers]


def ngram_targets(target, ngram, padding_idx, segment_start=None):
    """Per-stream targets ``(B, n, T)`` of a right-padded ``target`` ``(B, T)``.

    Stream ``j`` keeps ``target[:, i]`` where ``i - j >= segment_start[:, i]`` and has
    ``padding_idx`` elsewhere (``segment_start`` defaults to 0: the whole target is one
    segment). For targets ``a b c d </s>`` and n = 3::

        stream 0:  a b c d </s>
        stream 1:  _ b c d </s>
        stream 2:  _ _ c d </s>

    and for two spans ``a b | c d`` (segment starts ``0 0 2 2``) stream 1 is ``_ b _ d``.
    """
    bsz, length = target.shape
    if segment_start is None:
        segment_start = torch.zeros_like(target)
    positions = torch.arange(length, device=target.device)  # (T,)
    offsets = torch.arange(ngram, device=target.device)  # (n,)
    keep = (positions.view(1, 1, -1) - offsets.view(1, -1, 1)) >= segment_start.unsqueeze(1)  # (B, n, T)
    return target.unsqueeze(1).masked_fill(~keep, padding_idx)  # (B, n, T)
