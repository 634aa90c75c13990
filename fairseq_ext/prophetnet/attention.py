"""n-stream self-attention (paper section 2.3, equations 5-7): :func:`own_slot_attention` lets
every query attend to the main-stream keys plus one private key (a predicting stream's own
slot), under the layout of :mod:`.masks` and a T5-bucket bias; :class:`NgramSelfAttention`
holds the shared projections and a cache of main-stream keys/values only.
"""

from typing import Dict, Optional

import torch
import torch.nn.functional as F
from fairseq.incremental_decoding_utils import with_incremental_state
from torch import Tensor, nn

from ..modules.multihead import merge_heads, split_heads
from ..modules.relative_position import gather_relative_bias


def own_slot_attention(q, k, v, k_own, v_own, bias, own_bias, dropout_p=0.0, training=False):
    """Softmax attention over ``[shared keys; the row's own key]``.

    Args:
        q: ``(B, H, Q, d)`` queries; k, v: ``(B, H, K, d)`` shared (main-stream) keys/values.
        k_own, v_own: ``(B, H, Q, d)``, the private key/value of every query row.
        bias: ``(B, H, Q, K)`` additive bias, masked entries already at the dtype's minimum.
        own_bias: ``(B, H, Q, 1)`` the same for the own slot.

    Every row must see at least one key (the layouts guarantee it). In fp16/bf16 the queries
    are scaled before the products (so that ``q . k`` stays in range) and the scores, biases
    and softmax are fp32: a masked entry sits at the input dtype's minimum, which fp32 holds
    without overflowing when a score is added to it.
    """
    q = q * q.size(-1) ** -0.5
    scores = torch.matmul(q, k.transpose(-1, -2)).float() + bias.float()  # (B, H, Q, K) fp32
    own = (q.float() * k_own.float()).sum(-1, keepdim=True) + own_bias.float()  # (B, H, Q, 1) fp32
    probs = torch.softmax(torch.cat([scores, own], dim=-1), dim=-1).type_as(q)
    probs = F.dropout(probs, p=dropout_p, training=training)  # (B, H, Q, K + 1)
    num_keys = k.size(2)
    return torch.matmul(probs[..., :num_keys], v) + probs[..., num_keys:] * v_own  # (B, H, Q, d)


@with_incremental_state
class NgramSelfAttention(nn.Module):
    """Self-attention of the main stream and the predicting streams with shared weights.

    The input ``x`` stacks query rows along time, main-stream rows first: ``(B, Q, C)`` with
    ``Q = (1 + n) T`` in training and ``Q = 2`` (new main row, stream-1 row) per decoding step.
    The relative bias table is ``Linear(C, num_buckets * heads)`` of the attention input, as
    in the public ProphetNet code.
    """

    def __init__(self, embed_dim, num_heads, num_buckets, attention_dropout=0.0):
        super().__init__()
        if embed_dim % num_heads:
            raise ValueError(f"embed_dim {embed_dim} is not divisible by num_heads {num_heads}")
        self.embed_dim = embed_dim
        self.num_heads = num_heads
        self.head_dim = embed_dim // num_heads
        self.num_buckets = num_buckets
        self.attention_dropout = attention_dropout
        self.q_proj = nn.Linear(embed_dim, embed_dim)
        self.k_proj = nn.Linear(embed_dim, embed_dim)
        self.v_proj = nn.Linear(embed_dim, embed_dim)
        self.out_proj = nn.Linear(embed_dim, embed_dim)
        self.relative_proj = nn.Linear(embed_dim, num_buckets * num_heads)

    def forward(
        self,
        x: Tensor,
        layout,
        num_main: int,
        incremental_state: Optional[Dict[str, Dict[str, Optional[Tensor]]]] = None,
        skip_main_queries: bool = False,
    ) -> Tensor:
        """``x`` (B, Q, C) -> (B, Q, C); the first ``num_main`` rows are main-stream rows.

        With ``skip_main_queries`` (the last layer, whose main-stream output nothing reads)
        the main rows only provide keys/values and the output has the other rows only.
        """
        k = split_heads(self.k_proj(x), self.num_heads)  # (B, H, Q, d)
        v = split_heads(self.v_proj(x), self.num_heads)  # (B, H, Q, d)
        k_main, v_main = k[:, :, :num_main], v[:, :, :num_main]  # (B, H, T, d)
        if skip_main_queries:
            x, k, v = x[:, num_main:], k[:, :, num_main:], v[:, :, num_main:]
            layout = type(layout)(*(field[num_main:] for field in layout))
        q = split_heads(self.q_proj(x), self.num_heads)  # (B, H, Q', d)
        if incremental_state is not None:
            saved = self.get_incremental_state(incremental_state, "main_kv") or {}
            if "prev_key" in saved:
                k_main = torch.cat([saved["prev_key"], k_main], dim=2)  # (B, H, t+1, d)
                v_main = torch.cat([saved["prev_value"], v_main], dim=2)
            self.set_incremental_state(incremental_state, "main_kv", {"prev_key": k_main, "prev_value": v_main})

        table = self.relative_proj(x)  # (B, Q', buckets * H)
        lowest = torch.finfo(table.dtype).min
        bias = gather_relative_bias(table, layout.buckets, self.num_heads)  # (B, H, Q, K)
        bias = bias.masked_fill(~layout.allowed, lowest)
        own_bias = gather_relative_bias(table, layout.own_buckets.unsqueeze(1), self.num_heads)  # (B, H, Q, 1)
        own_bias = own_bias.masked_fill(~layout.own_allowed.unsqueeze(1), lowest)

        out = own_slot_attention(
            q, k_main, v_main, k, v, bias, own_bias, self.attention_dropout, self.training
        )  # (B, H, Q, d)
        return self.out_proj(merge_heads(out))  # (B, Q, C)

    def reorder_incremental_state(self, incremental_state, new_order):
        """Follow the beam: reorder the cached main-stream keys/values along the batch."""
        saved = self.get_incremental_state(incremental_state, "main_kv")
        if saved is not None:
            saved = {name: value.index_select(0, new_order) for name, value in saved.items()}
            self.set_incremental_state(incremental_state, "main_kv", saved)
        return incremental_state
