"""Disentangled self-attention (DeBERTa; Z-Code++ Section 2.2).

The score of query ``i`` and key ``j`` sums three terms, each scaled by ``1 / sqrt(3 d)``::

    content-to-content   Q_i . K_j
    content-to-position  Q_i . Kr_{bucket(i - j)}         (c2p)
    position-to-content  K_j . Qr_{bucket(j - i)}         (p2c)

with ``Kr = P W_k`` and ``Qr = P W_q`` (``share_att_key``) over one shared, LayerNormed relative
table ``P`` of ``2 * buckets`` rows, dropped out per module (``pos_dropout``). The position
terms are an additive fp32 bias to softmax attention: :func:`disentangled_attention` computes
the whole of it a batch row at a time (the position terms gathered straight into the scores).
Above ``query_chunk_size`` tokens, queries go in chunks through the shared core
:func:`~fairseq_ext.modules.attention.chunked_biased_attention`, each with the bias of its band
of buckets only (:func:`disentangled_band_bias`): memory linear in ``T``, the same result.
"""

import math

import torch
from torch import nn
from torch.autograd.function import once_differentiable

from ..modules.attention import chunked_biased_attention
from ..modules.multihead import merge_heads, split_heads
from ..modules.relative_position import relative_band, relative_index_rows


def flat_relative_index(position_index, table_rows):
    """``(c2p, p2c)``, each ``(T * T,)`` long: where score ``[i, j]`` reads its two position terms
    in a flattened ``(T, table_rows)`` table (``table_rows = 2S``)::

        c2p[i * T + j] = i * 2S + index[i, j]     row i of  Q Kr^T  (query i)
        p2c[i * T + j] = j * 2S + index[i, j]     row j of  K Qr^T  (key j)

    One gather along the last axis then reads either term straight into the ``(T, T)`` layout of
    the scores (no transposed index, no transposed add)."""
    length = position_index.size(0)
    rows = torch.arange(length, device=position_index.device) * table_rows  # (T,)
    return (position_index + rows[:, None]).view(-1), (position_index + rows[None, :]).view(-1)


class _DisentangledAttention(torch.autograd.Function):
    """:func:`disentangled_attention`'s forward and backward, one batch row at a time.

    Forward, per row: the ``(H, T, 2S)`` tables ``Q Kr^T`` and ``K Qr^T`` (one buffer, reused),
    each gathered into a ``(H, T, T)`` fp32 score buffer (reused), the content scores added in
    place, padded keys masked, softmax, dropout, ``P V``. Only the probabilities (and the dropout
    mask) are kept. Backward, per row: ``dS`` from the softmax backward, the content gradients,
    then ``dS`` summed back onto the table buckets (a scatter-add into the reused table buffer)
    for the position gradients. Every ``T x T`` temporary is one row's, 1/B of the batch's.
    """

    @staticmethod
    def forward(ctx, query, key, value, pos_query, pos_key, position_index, key_padding_mask, dropout_p):
        with torch.autocast(query.device.type, enabled=False):
            batch, heads, length, _ = query.shape
            rows = pos_key.size(-2)
            c2p, p2c = (i.expand(heads, -1) for i in flat_relative_index(position_index, rows))  # (H, T*T)
            table = query.new_empty(heads, length * rows)  # (H, T*2S)
            scores = query.new_empty(heads, length, length, dtype=_score_dtype(query))  # (H, T, T)
            flat_scores = scores.view(heads, length * length)
            context = torch.empty_like(query)  # (B, H, T, D)
            probs, keeps = [], []
            for b in range(batch):
                torch.bmm(query[b], pos_key.transpose(-1, -2), out=table.view(heads, length, rows))  # Q Kr^T
                _gather_into(flat_scores, table, c2p)  # c2p[i, j] = Q_i . Kr_{index[i, j]}
                torch.bmm(key[b], pos_query.transpose(-1, -2), out=table.view(heads, length, rows))  # K Qr^T
                flat_scores.add_(table.gather(-1, p2c))  # p2c[i, j] = K_j . Qr_{index[i, j]}
                _add_matmul(scores, query[b], key[b].transpose(-1, -2))  # + Q K^T
                if key_padding_mask[b].any():
                    scores.masked_fill_(key_padding_mask[b], torch.finfo(scores.dtype).min)
                prob = torch.softmax(scores, dim=-1)  # (H, T, T), the scores' dtype
                probs.append(prob)
                keep = None
                if dropout_p > 0:
                    keep = torch.empty_like(prob, dtype=torch.bool).bernoulli_(1 - dropout_p)
                    keeps.append(keep)
                torch.bmm(_dropped(prob, keep, dropout_p).to(value.dtype), value[b], out=context[b])
        ctx.dropout_p = dropout_p
        ctx.save_for_backward(query, key, value, pos_query, pos_key, position_index, *probs, *keeps)
        return context

    @staticmethod
    @once_differentiable
    def backward(ctx, grad):
        query, key, value, pos_query, pos_key, position_index, *saved = ctx.saved_tensors
        batch, heads, length, _ = query.shape
        rows = pos_key.size(-2)
        probs, keeps = saved[:batch], saved[batch:] or [None] * batch
        with torch.autocast(query.device.type, enabled=False):
            c2p, p2c = (i.expand(heads, -1) for i in flat_relative_index(position_index, rows))  # (H, T*T)
            grad = grad.contiguous()
            grad_query, grad_key, grad_value = torch.empty_like(query), torch.empty_like(key), torch.empty_like(value)
            grad_pos_query, grad_pos_key = torch.zeros_like(pos_query), torch.zeros_like(pos_key)
            table = query.new_empty(heads, length * rows, dtype=_score_dtype(query))  # (H, T*2S)
            bucket_grad = table.view(heads, length, rows)
            for b in range(batch):
                prob, keep = probs[b], keeps[b]
                dropped = _dropped(prob, keep, ctx.dropout_p).to(value.dtype)
                torch.bmm(dropped.transpose(-1, -2), grad[b], out=grad_value[b])
                grad_prob = torch.bmm(grad[b], value[b].transpose(-1, -2)).to(prob.dtype)  # (H, T, T)
                grad_scores = torch._softmax_backward_data(
                    _dropped(grad_prob, keep, ctx.dropout_p), prob, -1, prob.dtype
                )  # (H, T, T); zero at masked keys (their probability is 0)
                grad_low = grad_scores.to(query.dtype)  # the inputs' dtype, for the matmuls
                torch.bmm(grad_low, key[b], out=grad_query[b])
                torch.bmm(grad_low.transpose(-1, -2), query[b], out=grad_key[b])
                flat = grad_scores.view(heads, length * length)
                for index, rows_of, pos, grad_rows, grad_pos in (
                    (c2p, query[b], pos_key, grad_query[b], grad_pos_key),
                    (p2c, key[b], pos_query, grad_key[b], grad_pos_query),
                ):
                    table.zero_().scatter_add_(-1, index, flat)  # dS summed per (row, bucket)
                    bucket = bucket_grad.to(query.dtype)
                    grad_rows.baddbmm_(bucket, pos)
                    grad_pos.baddbmm_(bucket.transpose(-1, -2), rows_of)
        return grad_query, grad_key, grad_value, grad_pos_query, grad_pos_key, None, None, None


def _score_dtype(query):
    """fp32 scores for fp32, fp16 and bf16 inputs (fp16 / bf16 safety, as DeBERTa's code does); fp64 for fp64."""
    return torch.promote_types(query.dtype, torch.float32)


def _gather_into(out, table, index):
    """``out = table.gather(-1, index)``, into ``out`` whatever the two dtypes."""
    if out.dtype == table.dtype:
        torch.gather(table, -1, index, out=out)
    else:
        out.copy_(table.gather(-1, index))


def _add_matmul(out, a, b):
    """``out += a @ b``, in place when the dtypes allow (fp32 scores, fp16 / bf16 inputs)."""
    if out.dtype == a.dtype:
        out.baddbmm_(a, b)
    else:
        out.add_(torch.bmm(a, b))


def _dropped(x, keep, p):
    """``x`` with dropout's ``keep`` mask and ``1 / (1 - p)`` applied (``x`` when no mask)."""
    return x if keep is None else x * keep / (1 - p)


def disentangled_attention(query, key, value, pos_query, pos_key, position_index, key_padding_mask, dropout_p=0.0):
    """``softmax(Q K^T + c2p + p2c) V`` with fp32 scores, ``(B, H, T, D)``.

    ``query`` ``(B, H, T, D)`` scaled by ``1/sqrt(3D)``; ``key``, ``value`` ``(B, H, T, D)``;
    ``pos_query``, ``pos_key`` ``(H, 2S, D)`` (pos_query scaled alike); ``position_index``
    ``(T, T)`` (:func:`~fairseq_ext.modules.relative_position.deberta_relative_index`);
    ``key_padding_mask`` ``(B, T)`` True at padding; dropout on the probabilities::

        c2p[i, j] = Q_i . Kr_{index[i, j]}        p2c[i, j] = K_j . Qr_{index[i, j]}

    (p2c reads ``[j, i]`` of ``K Qr^T`` at ``clamp(-bucket(j - i) + S) = index[i, j]``: the buckets
    are odd-symmetric.) The same function as :func:`~fairseq_ext.modules.attention.biased_attention`
    with the position terms as its bias, computed a batch row at a time
    (:class:`_DisentangledAttention`): a ``T x T`` buffer of one row instead of several of the
    batch, the position terms gathered straight into the scores.
    """
    if dropout_p < 0 or dropout_p >= 1:
        raise ValueError(f"attention dropout must be in [0, 1), got {dropout_p}")
    return _DisentangledAttention.apply(query, key, value, pos_query.to(query.dtype), pos_key.to(query.dtype),
                                        position_index, key_padding_mask, dropout_p)


def disentangled_band_bias(query, p2c_table, pos_key, distance_index, start, end):
    """Rows ``[start, end)`` of the c2p + p2c bias (see :func:`disentangled_attention`), ``(B, H, c, T)``
    fp32, reading only the table rows ``[lo, hi]`` of the chunk's band of distances (:func:`relative_band`)::

        c2p[i, j] = Q_i . Kr[index[i, j]]   =  (Q_chunk Kr[lo:hi+1]^T)[i, index[i, j] - lo]
        p2c[i, j] = K_j . Qr[index[i, j]]   =  p2c_table[j, index[i, j]]  (band columns only)

    ``query`` ``(B, H, c, D)``; ``p2c_table`` ``(B, H, T, 2S)`` = ``K Qr^T`` (once per layer);
    ``pos_key`` ``(H, 2S, D)``; ``distance_index`` ``(2T-1,)``."""
    batch, heads, rows, _ = query.shape
    length = p2c_table.size(2)
    lo, hi = relative_band(distance_index, start, end)
    band_index = relative_index_rows(distance_index, start, end) - lo  # (c, T) in [0, hi - lo]
    c2p = torch.matmul(query, pos_key[:, lo:hi + 1].transpose(-1, -2))  # (B, H, c, R), R = hi - lo + 1
    bias = c2p.gather(-1, band_index.expand(batch, heads, rows, length)).float()  # (B, H, c, T)
    p2c = p2c_table[..., lo:hi + 1]  # (B, H, T, R), a view
    bias += p2c.gather(-1, band_index.t().expand(batch, heads, length, rows)).transpose(-1, -2)
    return bias


class DisentangledSelfAttention(nn.Module):
    """Multi-head disentangled self-attention over (B, T, C) inputs; ``position_dropout`` drops out
    the relative table in every call (DeBERTa's ``pos_dropout``); inputs longer than
    ``query_chunk_size`` (0: never) take the chunked path."""

    SCORE_TERMS = 3  # c2c + c2p + p2c: each term is scaled by 1/sqrt(3 d)

    def __init__(self, embed_dim, num_heads, dropout=0.0, position_dropout=0.0, query_chunk_size=0):
        super().__init__()
        if embed_dim % num_heads != 0:
            raise ValueError(f"embed_dim ({embed_dim}) must be divisible by num_heads ({num_heads})")
        self.embed_dim = embed_dim
        self.num_heads = num_heads
        self.head_dim = embed_dim // num_heads
        self.scaling = 1.0 / math.sqrt(self.head_dim * self.SCORE_TERMS)
        self.q_proj = nn.Linear(embed_dim, embed_dim)
        self.k_proj = nn.Linear(embed_dim, embed_dim)
        self.v_proj = nn.Linear(embed_dim, embed_dim)
        self.out_proj = nn.Linear(embed_dim, embed_dim)
        self.dropout = nn.Dropout(dropout)
        self.position_dropout = nn.Dropout(position_dropout)
        if query_chunk_size < 0:
            raise ValueError(f"--attention-chunk-size must be >= 0 (0 = off), got {query_chunk_size}")
        self.query_chunk_size = query_chunk_size

    def _heads(self, x):
        """(..., L, C) -> (..., H, L, D), contiguous (one copy here, none in the matmuls)."""
        return split_heads(x, self.num_heads).contiguous()

    def forward(self, x, key_padding_mask, rel_embeddings, distance_index):
        """``x`` (B, T, C), ``key_padding_mask`` (B, T) True at padding, ``rel_embeddings`` (2S, C) the
        LayerNormed table, ``distance_index`` (2T-1,) -> (B, T, C)."""
        length = x.size(1)
        query = self._heads(self.q_proj(x) * self.scaling)  # (B, H, T, D)
        key = self._heads(self.k_proj(x))  # (B, H, T, D)
        value = self._heads(self.v_proj(x))  # (B, H, T, D)
        rel_embeddings = self.position_dropout(rel_embeddings)  # (2S, C), this layer's own mask
        pos_query = self._heads(self.q_proj(rel_embeddings) * self.scaling)  # (H, 2S, D)
        pos_key = self._heads(self.k_proj(rel_embeddings))  # (H, 2S, D)
        dropout_p = self.dropout.p if self.training else 0.0
        if 0 < self.query_chunk_size < length:
            p2c_table = torch.matmul(key, pos_query.transpose(-1, -2))  # (B, H, T, 2S)

            def chunk_bias(start, end):  # (B, H, c, T)
                return disentangled_band_bias(query[:, :, start:end], p2c_table, pos_key, distance_index, start, end)

            context = chunked_biased_attention(
                query, key, value, key_padding_mask, chunk_bias, self.query_chunk_size, dropout_p
            )  # (B, H, T, D)
        else:
            position_index = relative_index_rows(distance_index, 0, length)  # (T, T)
            context = disentangled_attention(
                query, key, value, pos_query, pos_key, position_index, key_padding_mask, dropout_p
            )  # (B, H, T, D)
        return self.out_proj(merge_heads(context))  # (B, T, C)
