"""BART-LS encoder self-attention (Xiong et al. 2022, section 2.1): BART's projections around a
block-sparse core, one class per mechanism.

* :class:`BlockAttention` -- non-overlapping blocks of ``block_size`` tokens;
* :class:`OverlappingBlockAttention` -- also half of the left and right neighbour blocks;
* :class:`GlobalBlockAttention` -- the first ``num_global`` tokens of every block attend to,
  and are attended by, every token.

A core maps ``(q, k, v, padding_mask, block_size) -> out`` on ``(B, H, T, D)``.
:class:`BlockSparseSelfAttention` owns the projections (fairseq's names), aligns real tokens to
position 0, pads to a block multiple and optionally adds :mod:`fairseq_ext.bart_ls.pooling`.
"""

import torch
import torch.nn.functional as F
from torch import nn

from ..modules.alignment import gather_time, real_tokens_first
from ..modules.attention import fused_attention
from ..modules.blocking import pad_to_multiple, split_blocks
from ..modules.multihead import merge_heads, split_heads
from .masks import effective_block_size


class _BlockCore(nn.Module):
    """A block core: ``(q, k, v, padding_mask, block_size) -> out`` with dropout on the weights."""

    def __init__(self, dropout=0.0):
        super().__init__()
        self.dropout = dropout

    def _dropout_p(self):
        return self.dropout if self.training else 0.0


class BlockAttention(_BlockCore):
    """Attention within non-overlapping blocks (the paper's "block" / public
    ``block_noglobal``): token ``i`` sees token ``j`` iff ``i // w == j // w``.

    Cost per layer is ``O(T * w)`` time and memory instead of ``O(T^2)``.
    """

    def forward(self, q, k, v, padding_mask, block_size):
        allowed = ~split_blocks(padding_mask, block_size)[:, None, :, None, :]  # (B, 1, n, 1, w)
        out = fused_attention(
            split_blocks(q, block_size, dim=2), split_blocks(k, block_size, dim=2),
            split_blocks(v, block_size, dim=2), allowed, self._dropout_p(),
        )  # (B, H, n, w, D)
        return out.flatten(2, 3)  # (B, H, T, D)


class OverlappingBlockAttention(_BlockCore):
    """Blocks of ``w`` queries attend to keys ``[start - w/2, end + w/2)`` (the paper's
    overlapping windows, a blocked version of Longformer's sliding window).

    Keys outside the sequence count as padding. ``block_size`` must be even.
    """

    def forward(self, q, k, v, padding_mask, block_size):
        if block_size % 2:
            raise ValueError(f"overlapping blocks need an even block size, got {block_size}")
        half = block_size // 2
        window = 2 * block_size

        def windows(x):  # (B, H, T, D) -> (B, H, n, 2w, D)
            padded = F.pad(x, (0, 0, half, half))  # (B, H, T + w, D)
            return padded.unfold(2, window, block_size).transpose(-1, -2)

        key_pad = F.pad(padding_mask, (half, half), value=True)  # (B, T + w)
        allowed = ~key_pad.unfold(1, window, block_size).unsqueeze(1).unsqueeze(3)  # (B, 1, n, 1, 2w)
        out = fused_attention(
            split_blocks(q, block_size, dim=2), windows(k), windows(v), allowed, self._dropout_p()
        )  # (B, H, n, w, D)
        return out.flatten(2, 3)  # (B, H, T, D)


class GlobalBlockAttention(_BlockCore):
    """Block attention plus global tokens: the first ``num_global`` tokens of every block
    attend to all tokens, and all tokens attend to them (projections shared).

    Regular queries attend to their own block and to the global tokens of the other blocks
    (their own block's globals are already in the block); global queries attend to all
    ``T`` keys. With ``n = T / w`` blocks the cost is ``O(T * (w + n * g))``.
    """

    def __init__(self, num_global, dropout=0.0):
        super().__init__(dropout)
        if num_global < 1:
            raise ValueError(f"global attention needs at least one global token per block, got {num_global}")
        self.num_global = num_global

    def forward(self, q, k, v, padding_mask, block_size):
        batch, heads, length, dim = q.shape
        n_blocks = length // block_size
        n_global = min(self.num_global, block_size)
        if n_global == block_size:
            # every token is global (a block no longer than the global count, e.g. a short
            # input's single block): full attention, and no regular queries left to attend
            return fused_attention(q, k, v, ~padding_mask[:, None, None, :], self._dropout_p())
        blocked_pad = split_blocks(padding_mask, block_size)  # (B, n, w)
        qb, kb, vb = (split_blocks(x, block_size, dim=2) for x in (q, k, v))  # (B, H, n, w, D)

        # global keys/values of all blocks, shown to every block's regular queries
        k_glob = kb[:, :, :, :n_global].reshape(batch, heads, n_blocks * n_global, dim)  # (B, H, n*g, D)
        v_glob = vb[:, :, :, :n_global].reshape(batch, heads, n_blocks * n_global, dim)  # (B, H, n*g, D)
        expand = (batch, heads, n_blocks, n_blocks * n_global, dim)
        keys = torch.cat([kb, k_glob.unsqueeze(2).expand(expand)], dim=3)  # (B, H, n, w + n*g, D)
        values = torch.cat([vb, v_glob.unsqueeze(2).expand(expand)], dim=3)  # (B, H, n, w + n*g, D)
        glob_pad = blocked_pad[:, :, :n_global].reshape(batch, 1, n_blocks * n_global)  # (B, 1, n*g)
        glob_block = torch.arange(n_blocks, device=q.device).repeat_interleave(n_global)  # (n*g,)
        other_block = glob_block.unsqueeze(0) != torch.arange(n_blocks, device=q.device).unsqueeze(1)  # (n, n*g)
        allowed = torch.cat(
            [~blocked_pad, ~glob_pad & other_block.unsqueeze(0)], dim=2
        ).view(batch, 1, n_blocks, 1, block_size + n_blocks * n_global)  # (B, 1, n, 1, w + n*g)
        out_regular = fused_attention(
            qb[:, :, :, n_global:], keys, values, allowed, self._dropout_p()
        )  # (B, H, n, w - g, D)

        q_glob = qb[:, :, :, :n_global].reshape(batch, heads, n_blocks * n_global, dim)  # (B, H, n*g, D)
        out_glob = fused_attention(q_glob, k, v, ~padding_mask[:, None, None, :], self._dropout_p())  # (B, H, n*g, D)
        out = torch.cat(
            [out_glob.view(batch, heads, n_blocks, n_global, dim), out_regular], dim=3
        )  # (B, H, n, w, D)
        return out.flatten(2, 3)  # (B, H, T, D)


MECHANISMS = ("block", "overlapping", "global")
#: ``--encoder-attention`` choices: the block cores, or BART's own full attention.
ENCODER_ATTENTIONS = MECHANISMS + ("full",)


def check_encoder_options(encoder_attention, block_size, global_tokens, pooling_layers, encoder_layers,
                          pooling_kernel, pooling_stride, pooling_padding):
    """Raise ``ValueError`` naming the flag when BART-LS encoder options do not make a model.

    Called where a model is built and where a checkpoint is converted, so that a bad value
    fails at once instead of when the checkpoint is loaded (e.g. ``--pooling-layers`` above the
    encoder depth would name negative layers)."""
    if encoder_attention not in ENCODER_ATTENTIONS:
        raise ValueError(f"--encoder-attention {encoder_attention!r}: choose one of {ENCODER_ATTENTIONS}")
    if block_size < 1:
        raise ValueError(f"--block-size must be positive, got {block_size}")
    if not 0 <= pooling_layers <= encoder_layers:
        raise ValueError(
            f"--pooling-layers {pooling_layers} must be between 0 and --encoder-layers {encoder_layers}"
        )
    if encoder_attention == "full" and pooling_layers:
        raise ValueError("--encoder-attention full is BART's encoder; use --pooling-layers 0 with it")
    if encoder_attention == "overlapping" and block_size % 2:
        raise ValueError(f"--encoder-attention overlapping needs an even --block-size, got {block_size}")
    if encoder_attention == "global" and not 0 < global_tokens < block_size:
        raise ValueError(f"--global-tokens {global_tokens} must be in [1, --block-size {block_size})")
    if pooling_layers:
        if pooling_kernel < 1 or pooling_stride < 1:
            raise ValueError(f"--pooling-kernel {pooling_kernel} and --pooling-stride {pooling_stride} "
                             "must be positive")
        if not 0 <= 2 * pooling_padding <= pooling_kernel:
            raise ValueError(f"--pooling-padding {pooling_padding} must be between 0 and half "
                             f"--pooling-kernel {pooling_kernel}")


def build_block_core(mechanism, num_global=64, dropout=0.0):
    """The attention core named by ``mechanism`` (one of :data:`MECHANISMS`)."""
    if mechanism == "block":
        return BlockAttention(dropout)
    if mechanism == "overlapping":
        return OverlappingBlockAttention(dropout)
    if mechanism == "global":
        return GlobalBlockAttention(num_global, dropout)
    raise ValueError(f"unknown block attention {mechanism!r}; choose one of {MECHANISMS}")


class BlockSparseSelfAttention(nn.Module):
    """Encoder self-attention with BART's projections and a block-sparse core.

    Called like fairseq's ``MultiheadAttention`` by ``TransformerEncoderLayer``
    (``query`` (T, B, C), ``key_padding_mask`` (B, T) with ``True`` at padding) and returns
    ``(out, None)``. Any length works: every row's real tokens are moved to the front
    (:func:`~fairseq_ext.modules.alignment.real_tokens_first`) and padded to a block multiple
    here, so the output at real tokens does not depend on how much padding the batch carries.
    With ``pooling`` (a :class:`~.pooling.PooledAttention`) the pooled attention over this
    module's output is added to it (the paper's Figure 1).
    """

    def __init__(self, embed_dim, num_heads, core, block_size, pooling=None, bias=True):
        super().__init__()
        if embed_dim % num_heads:
            raise ValueError(f"embed_dim {embed_dim} is not divisible by num_heads {num_heads}")
        if block_size < 1:
            raise ValueError(f"block_size must be positive, got {block_size}")
        self.embed_dim = embed_dim
        self.num_heads = num_heads
        self.head_dim = embed_dim // num_heads
        self.block_size = block_size
        self.k_proj = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.v_proj = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.q_proj = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.out_proj = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.core = core
        self.pooling = pooling
        self.reset_parameters()

    def reset_parameters(self):
        """fairseq's ``MultiheadAttention`` initialization (self-attention case)."""
        for proj in (self.k_proj, self.v_proj, self.q_proj):
            nn.init.xavier_uniform_(proj.weight, gain=2**-0.5)
        nn.init.xavier_uniform_(self.out_proj.weight)
        if self.out_proj.bias is not None:
            nn.init.constant_(self.out_proj.bias, 0.0)

    def forward(self, query, key=None, value=None, key_padding_mask=None, need_weights=False,
                attn_mask=None, **unused):
        if attn_mask is not None:
            raise ValueError("block-sparse encoder attention takes no attn_mask; it builds its own")
        if key is not None and key is not query:
            raise ValueError("block-sparse attention is self-attention only (key must be query)")
        length, batch, _ = query.shape
        padding_mask = (
            key_padding_mask.bool() if key_padding_mask is not None
            else query.new_zeros(batch, length, dtype=torch.bool)
        )  # (B, T)
        order, inverse = real_tokens_first(padding_mask)  # (B, T), (B, T)
        x = gather_time(query.transpose(0, 1), order)  # (B, T, C), real tokens first
        padding_mask = padding_mask.gather(1, order)  # (B, T)

        block = effective_block_size(length, self.block_size)
        x_padded, pad_padded = pad_to_multiple(x, padding_mask, block)  # (B, L, C), (B, L)
        q = split_heads(self.q_proj(x_padded), self.num_heads)  # (B, H, L, D)
        k = split_heads(self.k_proj(x_padded), self.num_heads)  # (B, H, L, D)
        v = split_heads(self.v_proj(x_padded), self.num_heads)  # (B, H, L, D)
        out = self.core(q, k, v, pad_padded, block)  # (B, H, L, D)
        out = self.out_proj(merge_heads(out)[:, :length])  # (B, T, C)
        if self.pooling is not None:
            out = out + self.pooling(out, padding_mask)  # (B, T, C)
        out = out.masked_fill(padding_mask.unsqueeze(-1), 0.0)  # (B, T, C)
        return gather_time(out, inverse).transpose(0, 1), None  # (T, B, C), the caller's layout
