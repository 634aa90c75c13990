"""Attention cores: ``(q, k, v, mask[, bias]) -> out`` on per-head tensors, no projections.

Two cores serve every family that does not need a private key per query (ProphetNet's own
slot, :mod:`fairseq_ext.prophetnet.attention`):

* :func:`fused_attention`: torch's fused ``scaled_dot_product_attention`` with a boolean mask
  (s2s-ft, BART-LS block and pooled attention); scores are never materialized by us.
* :func:`biased_attention`: materialized fp32 scores plus an additive fp32 bias, the core of
  position schemes that add score terms (Z-Code++'s disentangled c2p + p2c terms).
* :func:`chunked_biased_attention`: the same, exactly, for chunks of queries at a time, the
  bias of each chunk built by a callback: ``(B, H, c, S)`` scores at a time, so memory grows
  linearly in the length for a fixed chunk (backward too: each chunk is recomputed).

Masks are boolean, ``True`` = may attend, broadcastable to the scores ``(..., Lq, Lk)``.
"""

import torch
import torch.nn.functional as F

from .checkpointing import checkpointed


def ensure_nonempty_rows(allowed):
    """Let rows that may attend to nothing (queries in all-padding blocks) attend to
    everything instead, so that softmax stays finite; their outputs are to be discarded."""
    return allowed | ~allowed.any(dim=-1, keepdim=True)


def fused_attention(q, k, v, allowed=None, dropout_p=0.0):
    """``softmax(q k^T / sqrt(D)) v`` by torch's fused kernel, over any leading dims.

    Args:
        q: (..., Lq, D); k, v: (..., Lk, D), the same leading dims (e.g. (B, H) or (B, H, n)).
        allowed: bool broadcastable to (..., Lq, Lk), or None (no mask). A mask that allows
            everything is dropped (the unmasked kernels are the fastest); a row that allows
            nothing attends to every key instead (finite output, which the caller discards).
        dropout_p: dropout on the attention weights (pass 0.0 outside training).
    Returns:
        (..., Lq, D).

    More than four dims are flattened to four: torch's fused (memory-efficient) CPU and GPU
    kernels take 4-D inputs only, and 5-D inputs would fall back to materialized scores.
    """
    if allowed is not None:
        allowed = None if bool(allowed.all()) else ensure_nonempty_rows(allowed)
    if q.dim() == 4:
        return F.scaled_dot_product_attention(q, k, v, attn_mask=allowed, dropout_p=dropout_p)
    lead = q.shape[:-2]
    q4 = q.reshape(-1, 1, q.size(-2), q.size(-1))  # (N, 1, Lq, D)
    k4 = k.reshape(-1, 1, k.size(-2), k.size(-1))  # (N, 1, Lk, D)
    v4 = v.reshape(-1, 1, v.size(-2), v.size(-1))  # (N, 1, Lk, D)
    if allowed is not None:
        rows, cols = allowed.size(-2), allowed.size(-1)
        allowed = allowed.expand(*lead, rows, cols).reshape(-1, 1, rows, cols)  # (N, 1, Lq or 1, Lk)
    out = F.scaled_dot_product_attention(q4, k4, v4, attn_mask=allowed, dropout_p=dropout_p)  # (N, 1, Lq, D)
    return out.view(*lead, q.size(-2), v.size(-1))


def masked_softmax(scores, key_padding_mask):
    """Softmax over the last axis of fp32 ``scores`` (B, H, T, S), ignoring padded keys.

    ``key_padding_mask`` is (B, S), True at padding. The detached row maximum over the allowed
    keys is subtracted first; padded keys get exactly zero weight (their scores sit at the fp32
    minimum), and an input made only of padding gets finite uniform weights, never NaN.
    ``scores`` is overwritten (pass a fresh tensor).
    """
    blocked = key_padding_mask[:, None, None, :]  # (B, 1, 1, S)
    scores = scores.masked_fill_(blocked, torch.finfo(scores.dtype).min)
    scores = scores.sub_(scores.amax(dim=-1, keepdim=True).detach())
    return torch.softmax(scores, dim=-1)  # (B, H, T, S)


def biased_attention(query, key, value, key_padding_mask, bias=None, dropout_p=0.0):
    """``softmax(query key^T + bias) value`` with the scores materialized in fp32.

    Args:
        query: (B, H, T, D), already scaled (the scale depends on how many score terms the
            bias adds); key, value: (B, H, S, D).
        key_padding_mask: (B, S) bool, True at padding.
        bias: (B, H, T, S) fp32 additive score terms, a fresh tensor: the content scores are
            summed into it in place (no second fp32 (T, S) tensor is held), so the caller must
            not reuse it. None: content scores only.
        dropout_p: dropout on the attention weights (pass 0.0 outside training).
    Returns:
        (B, H, T, D) in ``value``'s dtype.

    The scores and the softmax are fp32 whatever the input dtype (fp16/bf16 safety, as
    DeBERTa's public code does); see :func:`masked_softmax`.
    """
    content = torch.matmul(query, key.transpose(-1, -2))  # (B, H, T, S)
    if bias is None:
        scores = content.float()
    else:
        if bias.dtype != torch.float32:
            raise ValueError(f"the score bias must be fp32, got {bias.dtype}")
        scores = bias.add_(content)  # (B, H, T, S), fp32
    del content
    probs = masked_softmax(scores, key_padding_mask).to(value.dtype)  # (B, H, T, S)
    probs = F.dropout(probs, p=dropout_p, training=dropout_p > 0)
    return torch.matmul(probs, value)  # (B, H, T, D)


def chunked_biased_attention(query, key, value, key_padding_mask, chunk_bias, chunk_size, dropout_p=0.0):
    """:func:`biased_attention` for query rows ``[start, start + chunk_size)`` at a time.

    Args:
        query: (B, H, T, D), already scaled; key, value: (B, H, S, D).
        key_padding_mask: (B, S) bool, True at padding.
        chunk_bias: ``(start, end) -> (B, H, end - start, S)`` fp32 bias of query rows
            ``[start, end)``, a fresh tensor.
        chunk_size: query rows per chunk c (> 0); the last chunk may be shorter.
        dropout_p: dropout on the attention weights (pass 0.0 outside training).
    Returns:
        (B, H, T, D), equal to :func:`biased_attention` with the whole bias (rows are softmaxed
        independently).

    With gradients on, each chunk runs under ``torch.utils.checkpoint`` (non-reentrant, RNG
    state kept): its ``(B, H, c, S)`` scores are recomputed in backward, one chunk at a time,
    instead of being kept for all ``T`` rows.
    """
    if chunk_size <= 0:
        raise ValueError(f"the attention chunk size must be positive, got {chunk_size}")

    def attend(start, end):  # -> (B, H, end - start, D)
        bias = chunk_bias(start, end)  # (B, H, c, S)
        return biased_attention(query[:, :, start:end], key, value, key_padding_mask, bias, dropout_p)

    outputs = []
    for start in range(0, query.size(2), chunk_size):
        outputs.append(checkpointed(attend, start, min(start + chunk_size, query.size(2))))
    return torch.cat(outputs, dim=2)  # (B, H, T, D)
