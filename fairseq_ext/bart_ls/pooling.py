"""Pooling-augmented attention of BART-LS (section 2.1, Figure 1): in the top encoder layers,
``softmax(Q K~^T) V~`` over the block attention's output ``X`` ``(B, T, C)``, with ``K`` and ``V``
average-pooled over time to ``S << T`` slots (``O(T * S)``); the caller adds it to ``X``. As
the public code, padding rows are zeroed before pooling; unlike it, the time axis is extended
by one kernel of zeros, so outputs of real tokens do not depend on the batch's padding.
"""

import torch.nn.functional as F
from torch import nn

from ..modules.attention import fused_attention
from ..modules.multihead import merge_heads, split_heads
from .masks import pooled_key_mask


class PooledAttention(nn.Module):
    """Multi-head attention from every token to average-pooled keys/values of the sequence.

    Args:
        embed_dim: model width ``C``.
        num_heads: attention heads (``C`` must be divisible by it).
        kernel_size, stride, padding: the time-axis ``avg_pool1d`` applied to keys/values.
        dropout: attention-probability dropout.
    """

    def __init__(self, embed_dim, num_heads, kernel_size, stride, padding, dropout=0.0, bias=True):
        super().__init__()
        if embed_dim % num_heads:
            raise ValueError(f"embed_dim {embed_dim} is not divisible by num_heads {num_heads}")
        if not 0 <= 2 * padding <= kernel_size:
            raise ValueError(f"pooling padding {padding} must be between 0 and half the kernel {kernel_size}")
        if stride < 1:
            raise ValueError(f"pooling stride must be positive, got {stride}")
        self.num_heads = num_heads
        self.head_dim = embed_dim // num_heads
        self.kernel_size = kernel_size
        self.stride = stride
        self.padding = padding
        self.dropout = dropout
        self.q_proj = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.k_proj = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.v_proj = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.out_proj = nn.Linear(embed_dim, embed_dim, bias=bias)
        for proj in (self.q_proj, self.k_proj, self.v_proj):
            nn.init.xavier_uniform_(proj.weight, gain=2**-0.5)
        nn.init.xavier_uniform_(self.out_proj.weight)
        if bias:
            nn.init.constant_(self.out_proj.bias, 0.0)

    def _pool(self, x):
        """(B, T, C) -> (B, S, C): average over time windows."""
        return F.avg_pool1d(
            x.transpose(1, 2), self.kernel_size, self.stride, self.padding, count_include_pad=True
        ).transpose(1, 2)

    def forward(self, x, padding_mask):
        """``x`` (B, T, C), ``padding_mask`` (B, T) ``True`` at padding -> (B, T, C)."""
        # a kernel of zero rows on the right makes every window that touches a real token
        # exist whatever the batch padding, so real outputs do not depend on it
        extra = self.kernel_size
        keep = ~padding_mask.unsqueeze(-1)  # (B, T, 1)
        k = F.pad(self.k_proj(x) * keep, (0, 0, 0, extra))  # (B, T', C), padding rows zero
        v = F.pad(self.v_proj(x) * keep, (0, 0, 0, extra))  # (B, T', C)
        slot_pad = F.pad(padding_mask, (0, extra), value=True)  # (B, T')
        allowed = pooled_key_mask(slot_pad, self.kernel_size, self.stride, self.padding)  # (B, S)
        q = split_heads(self.q_proj(x), self.num_heads)  # (B, H, T, D)
        k = split_heads(self._pool(k), self.num_heads)  # (B, H, S, D)
        v = split_heads(self._pool(v), self.num_heads)  # (B, H, S, D)
        out = fused_attention(
            q, k, v, allowed[:, None, None, :], self.dropout if self.training else 0.0
        )  # (B, H, T, D)
        return self.out_proj(merge_heads(out))  # (B, T, C)
