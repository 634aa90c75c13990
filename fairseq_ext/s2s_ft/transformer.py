"""The shared bidirectional Transformer of s2s-ft, laid out as HF ``BertModel`` +
``BertOnlyMLMHead`` (post-LN, learned positions and token types, tied MLM head) so that
pretrained weights load one-to-one. Keys and values are exposed per layer, so one sequence is
computed in pieces (the source once, then target rows against the cache) with the results of
one pass over the packed sequence (:meth:`S2SFTTransformer.forward_packed`).
"""

from dataclasses import dataclass
from typing import List, NamedTuple, Optional, Tuple

import torch
import torch.nn.functional as F
from torch import nn

from ..modules.attention import fused_attention, shared_source_attention
from ..modules.lm_head import MaskedLMHead
from ..modules.multihead import merge_heads, split_heads


@dataclass
class S2SFTTransformerConfig:
    """Sizes of :class:`S2SFTTransformer` (the fields of a HF ``BertConfig``)."""

    vocab_size: int
    padding_idx: int
    embed_dim: int = 768
    layers: int = 12
    attention_heads: int = 12
    ffn_embed_dim: int = 3072
    max_positions: int = 512
    type_vocab_size: int = 2
    dropout: float = 0.1
    attention_dropout: float = 0.1
    layer_norm_eps: float = 1e-12
    init_std: float = 0.02


class S2SFTEmbeddings(nn.Module):
    """word + position + token type, then LayerNorm and dropout (BERT's embedding block)."""

    def __init__(self, cfg: S2SFTTransformerConfig):
        super().__init__()
        self.word = nn.Embedding(cfg.vocab_size, cfg.embed_dim, padding_idx=cfg.padding_idx)
        self.position = nn.Embedding(cfg.max_positions, cfg.embed_dim)
        self.token_type = nn.Embedding(cfg.type_vocab_size, cfg.embed_dim)
        self.layer_norm = nn.LayerNorm(cfg.embed_dim, eps=cfg.layer_norm_eps)
        self.dropout = nn.Dropout(cfg.dropout)

    def forward(self, tokens, positions, token_types):
        """``(B, T)`` tokens, position ids and token types -> ``(B, T, C)``."""
        longest = int(positions.max()) if positions.numel() else 0
        if longest >= self.position.num_embeddings:
            raise ValueError(
                f"position {longest} needs more than the model's {self.position.num_embeddings} "
                "positions: lower --max-source-positions/--max-target-positions (source + target "
                "must fit) or use an architecture with more --max-positions"
            )
        x = self.word(tokens) + self.position(positions) + self.token_type(token_types)  # (B, T, C)
        return self.dropout(self.layer_norm(x))


class S2SFTLayer(nn.Module):
    """One post-LN Transformer layer whose keys/values may come from elsewhere."""

    def __init__(self, cfg: S2SFTTransformerConfig):
        super().__init__()
        if cfg.embed_dim % cfg.attention_heads:
            raise ValueError(f"embed_dim {cfg.embed_dim} is not a multiple of {cfg.attention_heads} heads")
        self.heads = cfg.attention_heads
        self.query = nn.Linear(cfg.embed_dim, cfg.embed_dim)
        self.key = nn.Linear(cfg.embed_dim, cfg.embed_dim)
        self.value = nn.Linear(cfg.embed_dim, cfg.embed_dim)
        self.attn_out = nn.Linear(cfg.embed_dim, cfg.embed_dim)
        self.attn_layer_norm = nn.LayerNorm(cfg.embed_dim, eps=cfg.layer_norm_eps)
        self.ffn_in = nn.Linear(cfg.embed_dim, cfg.ffn_embed_dim)
        self.ffn_out = nn.Linear(cfg.ffn_embed_dim, cfg.embed_dim)
        self.ffn_layer_norm = nn.LayerNorm(cfg.embed_dim, eps=cfg.layer_norm_eps)
        self.dropout = nn.Dropout(cfg.dropout)
        self.attention_dropout = cfg.attention_dropout

    def keys_values(self, x) -> Tuple[torch.Tensor, torch.Tensor]:
        """``(B, T, C)`` layer input -> keys and values ``(B, H, T, d)`` of these rows."""
        return split_heads(self.key(x), self.heads), split_heads(self.value(x), self.heads)

    def attention_probs(self, x, keys, allowed):
        """The attention weights of rows ``x`` ``(B, T, C)`` over ``keys`` ``(B, H, K, d)``
        where ``allowed`` ``(B or 1, 1, T, K)``: ``(B, H, T, K)``, each row summing to 1
        (without dropout; :meth:`forward` computes the same weights inside its fused core)."""
        q = split_heads(self.query(x), self.heads)  # (B, H, T, d)
        scores = q @ keys.transpose(-1, -2) * q.size(-1) ** -0.5  # (B, H, T, K)
        return torch.softmax(scores.masked_fill(~allowed, float("-inf")), dim=-1)

    def forward(self, x, keys, values, allowed):
        """Rows ``x`` ``(B, T, C)`` attend to ``keys``/``values`` ``(B, H, K, d)`` where
        ``allowed`` ``(B or 1, 1, T, K)`` says so; returns the layer output ``(B, T, C)``."""
        q = split_heads(self.query(x), self.heads)  # (B, H, T, d)
        p = self.attention_dropout if self.training else 0.0
        return self._finish(x, fused_attention(q, keys, values, allowed, p))

    def step(self, x, source, own_keys, own_values, allowed):
        """:meth:`forward` for decoding rows ``x`` ``(B, R, C)`` over keys ``[source; own]``,
        the source shared by beams (``source``: a :class:`SharedSource` of this layer).
        Returns the layer output ``(B, R, C)`` and the attention weights on the source
        ``(B, H, R, S)``."""
        q = split_heads(self.query(x), self.heads)  # (B, H, R, d)
        a, source_probs = shared_source_attention(
            q, source.keys, source.values, source.rows, source.groups, own_keys, own_values, allowed
        )  # fmt: skip
        return self._finish(x, a), source_probs

    def _finish(self, x, a):
        """The rest of the layer after attention ``a`` ``(B, H, T, d)``: output projection,
        residual and LayerNorm, feed-forward, residual and LayerNorm -> ``(B, T, C)``."""
        x = self.attn_layer_norm(x + self.dropout(self.attn_out(merge_heads(a))))
        h = self.ffn_out(F.gelu(self.ffn_in(x)))  # (B, T, C)
        return self.ffn_layer_norm(x + self.dropout(h))


Cache = Tuple[List[torch.Tensor], List[torch.Tensor]]  # per layer keys, values (B, H, K, d)


class SharedSource(NamedTuple):
    """One layer's source keys and values kept once per source, ``(N, H, S, d)``, read by
    decoding rows through ``rows`` ``(B,)`` (``groups``: :func:`~fairseq_ext.modules.attention.beam_groups`)."""

    keys: torch.Tensor
    values: torch.Tensor
    rows: torch.Tensor
    groups: int


class S2SFTTransformer(nn.Module):
    """Embeddings, ``layers`` post-LN layers and the MLM head of s2s-ft (Section 2)."""

    def __init__(self, cfg: S2SFTTransformerConfig):
        super().__init__()
        self.cfg = cfg
        self.embeddings = S2SFTEmbeddings(cfg)
        self.layers = nn.ModuleList(S2SFTLayer(cfg) for _ in range(cfg.layers))
        # BERT's MLM head, tied to the word embeddings (its state dict lists lm_head.weight)
        self.lm_head = MaskedLMHead(
            cfg.embed_dim, cfg.vocab_size, cfg.layer_norm_eps, tied_weight=self.embeddings.word.weight
        )
        self.apply(self._init_weights)

    def _init_weights(self, module):
        """BERT's initialization: normal(0, init_std) weights, zero biases, unit LayerNorm."""
        if isinstance(module, (nn.Linear, nn.Embedding)):
            nn.init.normal_(module.weight, std=self.cfg.init_std)
        if isinstance(module, nn.Linear) and module.bias is not None:
            nn.init.zeros_(module.bias)
        if isinstance(module, nn.Embedding) and module.padding_idx is not None:
            nn.init.zeros_(module.weight[module.padding_idx])
        if isinstance(module, nn.LayerNorm):
            nn.init.ones_(module.weight)
            nn.init.zeros_(module.bias)

    def forward_packed(self, tokens, positions, token_types, allowed):
        """One pass over a packed sequence (e.g. ``[source; target; pseudo]``): ``(B, T)`` tokens,
        positions and token types, ``allowed`` ``(B or 1, 1, T, T)`` -> last hidden states ``(B, T, C)``."""
        x = self.embeddings(tokens, positions, token_types)  # (B, T, C)
        for layer in self.layers:
            k, v = layer.keys_values(x)  # (B, H, T, d)
            x = layer(x, k, v, allowed)
        return x

    def extend(
        self, tokens, positions, token_types, allowed, prefix: Optional[Cache] = None, attention_keys: int = 0
    ):
        """New rows ``(B, T)`` against the cached keys and values of earlier rows (``prefix``, per layer
        ``(B, H, K, d)``, or None); ``allowed`` ``(B or 1, 1, T, K + T)``. Returns ``(hidden (B, T, C),
        (keys, values) of the new rows per layer, attention)``, ``attention`` being the last layer's
        weights over the first ``attention_keys`` prefix keys alone, renormalized, or None."""
        if attention_keys and prefix is None:
            raise ValueError("attention over prefix keys needs a prefix")
        x = self.embeddings(tokens, positions, token_types)  # (B, T, C)
        new_keys, new_values, attention = [], [], None
        for i, layer in enumerate(self.layers):
            k, v = layer.keys_values(x)  # (B, H, T, d)
            new_keys.append(k)
            new_values.append(v)
            if prefix is not None:
                if attention_keys and i == len(self.layers) - 1:
                    attention = layer.attention_probs(
                        x, prefix[0][i][:, :, :attention_keys], allowed[..., :attention_keys]
                    )  # (B, H, T, attention_keys)
                k = torch.cat([prefix[0][i], k], dim=2)  # (B, H, K+T, d)
                v = torch.cat([prefix[1][i], v], dim=2)
            x = layer(x, k, v, allowed)
        return x, (new_keys, new_values), attention

    def step(self, tokens, positions, token_types, allowed, source: List[SharedSource], cached: Optional[Cache],
             source_attention: bool = False):  # fmt: skip
        """One cached decoding step: :meth:`extend` with the source keys and values (``source``, per
        layer, shared by beams) and the committed target rows (``cached``, per layer ``(B, H, T, d)``,
        or None) as its prefix; ``allowed`` ``(B or 1, 1, R, S + T + R)``. With ``source_attention``
        also the last layer's attention over the source keys alone, renormalized, ``(B, H, R, S)``."""
        x = self.embeddings(tokens, positions, token_types)  # (B, R, C)
        new_keys, new_values, attention = [], [], None
        for i, layer in enumerate(self.layers):
            k, v = layer.keys_values(x)  # (B, H, R, d)
            new_keys.append(k)
            new_values.append(v)
            if cached is not None:
                k = torch.cat([cached[0][i], k], dim=2)  # (B, H, T+R, d)
                v = torch.cat([cached[1][i], v], dim=2)
            x, source_probs = layer.step(x, source[i], k, v, allowed)
            if source_attention and i == len(self.layers) - 1:
                attention = source_probs / source_probs.sum(dim=-1, keepdim=True)  # (B, H, R, S)
        return x, (new_keys, new_values), attention

    def logits(self, hidden):
        """``(B, T, C)`` -> vocabulary logits ``(B, T, V)``."""
        return self.lm_head(hidden)
