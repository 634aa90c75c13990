"""Disentangled self-attention (DeBERTa; Z-Code++ Section 2.2).

The score of query ``i`` and key ``j`` sums three terms, each scaled by ``1 / sqrt(3 d)``::

    content-to-content   Q_i . K_j
    content-to-position  Q_i . Kr_{bucket(i - j)}         (c2p)
    position-to-content  K_j . Qr_{bucket(j - i)}         (p2c)

with ``Kr = P W_k`` and ``Qr = P W_q`` (``share_att_key``) over one shared, LayerNormed relative
table ``P`` of ``2 * buckets`` rows, dropped out per module (``pos_dropout``). The position
terms are an additive fp32 bias (:func:`disentangled_position_bias`) to the shared core
:func:`~fairseq_ext.modules.attention.biased_attention`. Above ``query_chunk_size`` tokens,
queries go in chunks, each with the bias of its band of buckets only
(:func:`disentangled_band_bias`): memory linear in ``T``, the same result.
"""

import math

import torch
from torch import nn

from ..modules.attention import biased_attention, chunked_biased_attention
from ..modules.multihead import merge_heads, split_heads
from ..modules.relative_position import relative_band, relative_index_rows


def disentangled_position_bias(query, key, pos_query, pos_key, position_index):
    """The c2p + p2c score terms, fp32 ``(B, H, T, T)``: ``query``, ``key`` ``(B, H, T, D)`` (query
    scaled by ``1/sqrt(3D)``), ``pos_query``, ``pos_key`` ``(H, 2S, D)`` (pos_query scaled alike),
    ``position_index`` ``(T, T)`` (:func:`~fairseq_ext.modules.relative_position.deberta_relative_index`)."""
    batch, heads, length, _ = query.shape
    index = position_index.expand(batch, heads, length, length)  # (B, H, T, T), a view
    c2p = torch.matmul(query, pos_key.transpose(-1, -2))  # (B, H, T, 2S)
    bias = c2p.gather(-1, index).float()  # c2p[b, h, i, j] = Q_i . Kr_{index[i, j]}
    # p2c: [j, i] of K Qr^T read at clamp(-bucket(j - i) + S) = index[i, j] (odd-symmetric buckets)
    p2c = torch.matmul(key, pos_query.transpose(-1, -2))  # (B, H, T, 2S)
    bias += p2c.gather(-1, index.transpose(-1, -2)).transpose(-1, -2)
    return bias


def disentangled_band_bias(query, p2c_table, pos_key, distance_index, start, end):
    """Rows ``[start, end)`` of :func:`disentangled_position_bias`, ``(B, H, c, T)`` fp32, reading only
    the table rows ``[lo, hi]`` of the chunk's band of distances (:func:`relative_band`)::

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
            bias = disentangled_position_bias(query, key, pos_query, pos_key, position_index)  # (B, H, T, T)
            context = biased_attention(query, key, value, key_padding_mask, bias, dropout_p)  # (B, H, T, D)
        return self.out_proj(merge_heads(context))  # (B, T, C)
