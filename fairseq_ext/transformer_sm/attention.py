"""Transformer-SM's causal self-attention, with a key/value cache that grows in place.

The parameters are fairseq's ``MultiheadAttention``'s (``q_proj``, ``k_proj``, ``v_proj``,
``out_proj``, the same names and shapes, so every checkpoint loads), and so is the
computation: ``softmax(q k^T / sqrt(D) + mask) v`` per head. What differs is the decoding
cache. fairseq's concatenates the new key to all earlier ones at every step and copies the
whole cache again to reorder it, also when the order has not changed (greedy search, every
beam alive); here the cache is a buffer with room to spare, written in place at each step,
grown by another :attr:`CachedSelfAttention.spare` positions when full, and reordered only
when the order changes:

    step t:   key[:, :, t] = k_t      (no copy of keys 0 .. t-1)
    reorder:  identity -> nothing; else one index_select of the rows' keys 0 .. t
              (into a buffer of the same room, whose unwritten part is never touched)
"""

import torch
import torch.nn as nn
import torch.nn.functional as F
from fairseq.incremental_decoding_utils import with_incremental_state

from ..modules import decoding_layout
from ..modules.decoding_layout import fuse_projections_, fused_projection, store_transposed_
from ..modules.multihead import merge_heads, split_heads

#: The cache's name in fairseq's incremental state (one entry per attention module).
CACHE = "cache"
#: Buffers set aside for the cache before the prompt runs (:meth:`CachedSelfAttention.reserve`).
RESERVED = "reserved"


@with_incremental_state
class CachedSelfAttention(nn.Module):
    """Causal self-attention over ``(T, B, C)`` inputs (fairseq's layout) with an in-place cache.

    ``attn_mask`` is additive ``(T, T)`` (the causal mask of :func:`.layout.causal_mask`) and
    ``key_padding_mask`` ``(B, T)`` is True at padding; once a decoding run has its cache, the
    padding of the keys it holds stays in the cache and new queries see every cached key.
    """

    #: Positions of room after the keys written so far, when the cache starts and when it grows:
    #: a summary's worth, so that a decoding run's keys are copied once every 64 steps and the
    #: unwritten room stays small (with the plugin's allocator a buffer comes from the heap,
    #: whose pages may already be resident, so room that is never written still costs memory).
    spare = 64

    def __init__(self, embed_dim, num_heads, dropout=0.0):
        super().__init__()
        if embed_dim % num_heads:
            raise ValueError(f"width {embed_dim} does not split into {num_heads} heads")
        self.embed_dim, self.num_heads, self.dropout = embed_dim, num_heads, dropout
        self.head_dim = embed_dim // num_heads  # fairseq's decoder block reads it
        self.q_proj = nn.Linear(embed_dim, embed_dim)
        self.k_proj = nn.Linear(embed_dim, embed_dim)
        self.v_proj = nn.Linear(embed_dim, embed_dim)
        self.out_proj = nn.Linear(embed_dim, embed_dim)
        self.reset_parameters()

    def reset_parameters(self):
        """fairseq's initialisation of the same parameters (``MultiheadAttention.reset_parameters``)."""
        for proj in (self.q_proj, self.k_proj, self.v_proj):
            nn.init.xavier_uniform_(proj.weight, gain=2**-0.5)
        nn.init.xavier_uniform_(self.out_proj.weight)
        nn.init.constant_(self.out_proj.bias, 0.0)

    def make_generation_fast_(self, **kwargs):
        """Lay the projections out for decoding's few rows (:mod:`..modules.decoding_layout`):
        q, k and v as one ``(C, 3C)`` product, the output projection as ``(C, C)`` where that pays
        on this machine."""
        fuse_projections_(self.q_proj, self.k_proj, self.v_proj)
        if decoding_layout.transpose_pays(self.out_proj):
            store_transposed_(self.out_proj)

    def forward(self, query, key=None, value=None, key_padding_mask=None, incremental_state=None,
                need_weights=False, attn_mask=None, **unused):
        q, k, v = self._project(query)  # (B, H, T, D) each
        cache = self._get_input_buffer(incremental_state) if incremental_state is not None else {}
        if cache:
            k, v, padding = self._append(cache, k, v)
            mask = None if padding is None else _padding_bias(padding, q.dtype)  # (B, 1, 1, S)
        else:
            if incremental_state is not None:
                self._start(incremental_state, k, v, key_padding_mask)
            mask = _combine(attn_mask, key_padding_mask, q.dtype)  # (B | 1, 1, T, T) or None
        p = self.dropout if self.training else 0.0
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=p)  # (B, H, T, D)
        return self.out_proj(merge_heads(out)).transpose(0, 1), None  # (T, B, C)

    def _project(self, query):
        """``(T, B, C)`` -> q, k, v ``(B, H, T, D)``: one product where q, k and v lie fused."""
        fused = fused_projection(self.q_proj, self.k_proj, self.v_proj)
        if fused is None:
            x = query.transpose(0, 1)  # (B, T, C)
            return tuple(split_heads(proj(x), self.num_heads) for proj in (self.q_proj, self.k_proj, self.v_proj))
        weight, bias = fused  # (C, 3C), (3C,)
        length, bsz, width = query.shape
        rows = query.reshape(length * bsz, width)  # (T * B, C)
        qkv = torch.mm(rows, weight) if bias is None else torch.addmm(bias, rows, weight)  # (T * B, 3C)
        qkv = qkv.view(length, bsz, 3, self.num_heads, self.head_dim)  # (T, B, 3, H, D)
        return qkv.permute(2, 1, 3, 0, 4).unbind(0)  # 3 x (B, H, T, D)

    # ------------------------------------------------------------------ the cache
    def reserve(self, incremental_state, bsz, length, dtype, device):
        """Allocate a decoding run's cache for a ``length``-token prompt before the prompt runs.

        The decoder reserves every layer's cache first, so that the buffers lie together and the
        prompt's large passing buffers (several MB a layer) are freed into one free stretch and
        reused layer after layer; allocated between them, each layer's cache would split that
        stretch and the heap would grow by about a layer's buffers per layer (measured: 50 MB at
        400 tokens, 12 layers, 768 wide, with the plugin's allocator).
        """
        shape = (bsz, self.num_heads, length + self.spare, self.head_dim)  # (B, H, cap, D)
        key = torch.empty(shape, dtype=dtype, device=device)
        self.set_incremental_state(incremental_state, RESERVED, {"key": key, "value": torch.empty_like(key)})

    def _start(self, incremental_state, k, v, key_padding_mask):
        length = k.size(2)
        capacity = length + self.spare
        reserved = self.get_incremental_state(incremental_state, RESERVED)
        if reserved and reserved["key"].shape == (k.size(0), k.size(1), capacity, k.size(3)) \
                and reserved["key"].dtype == k.dtype and reserved["key"].device == k.device:
            key, value = reserved["key"], reserved["value"]
        else:
            key = k.new_empty(k.size(0), k.size(1), capacity, k.size(3))  # (B, H, cap, D)
            value = torch.empty_like(key)
        if reserved:
            self.set_incremental_state(incremental_state, RESERVED, {})
        key[:, :, :length], value[:, :, :length] = k, v
        padding = None
        if key_padding_mask is not None and key_padding_mask.any():
            padding = key_padding_mask.new_zeros(key_padding_mask.size(0), capacity)  # (B, cap)
            padding[:, :length] = key_padding_mask
        self._set_input_buffer(incremental_state, {"key": key, "value": value, "padding": padding,
                                                   "length": torch.tensor(length)})

    def _append(self, cache, k, v):
        """Write ``k``, ``v`` ``(B, H, t, D)`` after the cached keys; the keys so far, as views."""
        start, added = int(cache["length"]), k.size(2)
        if start + added > cache["key"].size(2):
            self._grow(cache, start + added + self.spare)
        cache["key"][:, :, start:start + added] = k
        cache["value"][:, :, start:start + added] = v
        cache["length"] = torch.tensor(start + added)
        end = start + added
        padding = None if cache["padding"] is None else cache["padding"][:, :end]
        return cache["key"][:, :, :end], cache["value"][:, :, :end], padding

    @staticmethod
    def _grow(cache, capacity):
        length = int(cache["length"])
        for name in ("key", "value"):
            old = cache[name]
            cache[name] = old.new_empty(old.size(0), old.size(1), capacity, old.size(3))
            cache[name][:, :, :length] = old[:, :, :length]
        if cache["padding"] is not None:
            old = cache["padding"]
            cache["padding"] = old.new_zeros(old.size(0), capacity)
            cache["padding"][:, :length] = old[:, :length]

    def reorder_incremental_state(self, incremental_state, new_order):
        cache = self._get_input_buffer(incremental_state)
        if not cache:
            return incremental_state
        if keeps_order(cache, new_order):
            return incremental_state  # greedy search, or no beam moved: nothing to copy
        length = int(cache["length"])
        for name in ("key", "value"):  # the keys written so far, not the room to spare after them
            old = cache[name]
            new = old.new_empty(new_order.numel(), *old.shape[1:])  # (B', H, cap, D)
            torch.index_select(old.narrow(2, 0, length), 0, new_order, out=new.narrow(2, 0, length))
            cache[name] = new
        if cache["padding"] is not None:
            cache["padding"] = cache["padding"].index_select(0, new_order)
        return self._set_input_buffer(incremental_state, cache)

    def _get_input_buffer(self, incremental_state):
        return self.get_incremental_state(incremental_state, CACHE) or {}

    def _set_input_buffer(self, incremental_state, buffer):
        return self.set_incremental_state(incremental_state, CACHE, buffer)


def keeps_order(cache, new_order):
    """Whether a reorder to ``new_order`` leaves ``cache``'s rows as they are (the identity)."""
    rows = cache["key"].size(0)
    return new_order.numel() == rows and torch.equal(new_order, torch.arange(rows, device=new_order.device))


def _padding_bias(padding, dtype):
    """``(B, S)`` True at padding -> additive ``(B, 1, 1, S)`` with ``dtype``'s own minimum."""
    return torch.zeros(padding.shape, dtype=dtype, device=padding.device).masked_fill(
        padding, torch.finfo(dtype).min
    )[:, None, None, :]


def _combine(attn_mask, key_padding_mask, dtype):
    """The additive mask of the whole row: the causal ``(T, T)`` and, where rows are padded, the
    padded keys, ``(B, 1, T, T)``."""
    mask = None if attn_mask is None else attn_mask.to(dtype)[None, None]  # (1, 1, T, T)
    if key_padding_mask is not None and key_padding_mask.any():
        padding = _padding_bias(key_padding_mask, dtype)  # (B, 1, 1, T)
        mask = padding if mask is None else (mask + padding).clamp_min(torch.finfo(dtype).min)
    return mask
