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
* :func:`shared_source_attention`: one decoding step whose keys are a source shared by the
  beams of a sentence (kept once per sentence) followed by each beam's own keys.

Two boolean mask polarities, each named for what ``True`` means: ``allowed``, ``True`` = may
attend, broadcastable to the scores ``(..., Lq, Lk)``; ``key_padding_mask`` ``(B, S)``, ``True``
at padding, as fairseq's encoders give it (the biased cores take that one: their callers hold
fairseq's padding mask).
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


def beam_groups(rows, num_sources: int) -> int:
    """``g`` when ``rows`` ``(B,)`` is beam search's layout over ``num_sources`` sources (rows
    ``i*g .. i*g+g-1`` read source ``i``, ``B = num_sources * g``), else 0."""
    g = rows.numel() // num_sources
    if g * num_sources != rows.numel():
        return 0
    layout = torch.arange(num_sources, device=rows.device).repeat_interleave(g)  # (B,)
    return g if torch.equal(rows, layout) else 0


def rows_matmul(a, shared, rows, groups: int):
    """``a[b] @ shared[rows[b]]`` for every row ``b``, without a per-row copy of ``shared``.

    Args:
        a: (B, H, R, X).
        shared: (N, H, X, Y), one entry per source, read by several rows.
        rows: (B,) long, the source of each row.
        groups: :func:`beam_groups` of ``rows``: with ``g > 0`` the ``g`` rows of a source are
            stacked into one batched matmul ``(N, H, g*R, X) @ (N, H, X, Y)``; with 0 the
            sources are gathered per row.
    Returns:
        (B, H, R, Y).
    """
    if not groups:
        return a @ shared.index_select(0, rows)
    B, H, R, X = a.shape
    N = shared.size(0)
    stacked = a.view(N, groups, H, R, X).transpose(1, 2).reshape(N, H, groups * R, X)
    out = stacked @ shared  # (N, H, g*R, Y)
    return out.view(N, H, groups, R, -1).transpose(1, 2).reshape(B, H, R, -1)


def shared_source_attention(q, source_keys, source_values, rows, groups: int, own_keys, own_values, allowed):
    """One decoding step over ``[source; own]`` keys where the source is shared by beams.

    Beam search runs ``g`` beams of every sentence. Their source keys and values are the same,
    so they are kept once per sentence ``(N, H, S, D)`` and read through ``rows`` (see
    :func:`rows_matmul`) instead of being copied and reordered for every beam at every step;
    each beam's own keys (its target so far and the new rows) come after them.

    Args:
        q: (B, H, R, D) queries of the new rows.
        source_keys, source_values: (N, H, S, D).
        rows, groups: the source of each row and :func:`beam_groups` of it.
        own_keys, own_values: (B, H, T, D).
        allowed: bool broadcastable to (B, 1, R, S + T), True = may attend.
    Returns:
        ``(out (B, H, R, D), source_probs (B, H, R, S))``: the attention output and its
        weights on the source keys (a row's weights over all ``S + T`` keys sum to 1).
    """
    S = source_keys.size(-2)
    scores = torch.cat(
        [rows_matmul(q, source_keys.transpose(-1, -2), rows, groups), q @ own_keys.transpose(-1, -2)], dim=-1
    ) * q.size(-1) ** -0.5  # (B, H, R, S+T)
    probs = torch.softmax(scores.masked_fill_(~ensure_nonempty_rows(allowed), float("-inf")), dim=-1)
    out = rows_matmul(probs[..., :S], source_values, rows, groups) + probs[..., S:] @ own_values  # (B, H, R, D)
    return out, probs[..., :S]
