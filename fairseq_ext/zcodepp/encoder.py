"""The Z-Code++ encoder: disentangled attention (Section 2.2) and fusion-in-encoder (Section 2.3).

A fairseq :class:`TransformerEncoderBase` whose layers use :class:`DisentangledSelfAttention`
and one shared, LayerNormed relative table; no absolute positions, so any input length works.
With ``fie_chunk_size > 0`` the first ``L - fie_global_layers`` layers attend within chunks and
the last ones globally, with the same weights (a checkpoint trained without FiE is used as is).
Global layers over more than ``attention_chunk_size`` tokens take the memory-efficient path.
The extra config fields are listed in ``user_dir/models/zcodepp.py``.
"""

from fairseq.models.transformer import TransformerEncoderBase
from fairseq.modules import LayerNorm
from fairseq.modules.transformer_layer import TransformerEncoderLayerBase
from torch import nn

from ..modules.alignment import gather_time, real_tokens_first
from ..modules.checkpointing import checkpointed
from ..modules.relative_position import deberta_distance_index
from ..modules.residual import feed_forward, residual_sublayer
from .disentangled_attention import DisentangledSelfAttention
from .fie import merge_chunks, split_chunks


class DisentangledEncoderLayer(TransformerEncoderLayerBase):
    """fairseq's encoder layer (post- or pre-LayerNorm, FFN) around disentangled attention.

    Works on (B, T, C); takes the relative table and position index from the encoder. Its
    LayerNorms use ``cfg.encoder_layer_norm_eps``.
    """

    def __init__(self, cfg):
        super().__init__(cfg)
        self.self_attn_layer_norm = LayerNorm(self.embed_dim, eps=cfg.encoder_layer_norm_eps, export=cfg.export)
        self.final_layer_norm = LayerNorm(self.embed_dim, eps=cfg.encoder_layer_norm_eps, export=cfg.export)

    def build_self_attention(self, embed_dim, cfg):
        return DisentangledSelfAttention(
            embed_dim, cfg.encoder.attention_heads, dropout=cfg.attention_dropout, position_dropout=cfg.dropout,
            query_chunk_size=cfg.attention_chunk_size,
        )

    def forward(self, x, padding_mask, rel_embeddings, distance_index):
        """x (B, T, C), padding_mask (B, T) True at padding, distance_index (2T-1,) -> (B, T, C)."""
        x = residual_sublayer(self, x, self.self_attn_layer_norm,
                              lambda h: self.self_attn(h, padding_mask, rel_embeddings, distance_index))
        return residual_sublayer(self, x, self.final_layer_norm, lambda h: feed_forward(self, h))


class ZCodeEncoder(TransformerEncoderBase):
    """Disentangled-attention encoder with optional fusion-in-encoder."""

    def __init__(self, cfg, dictionary, embed_tokens):
        if cfg.encoder.layerdrop > 0 or cfg.offload_activations:
            raise ValueError("the Z-Code++ encoder supports neither --encoder-layerdrop nor "
                             "--offload-activations (--checkpoint-activations it does)")
        super().__init__(cfg, dictionary, embed_tokens)
        self.checkpoint_activations = cfg.checkpoint_activations
        self.embed_positions = None  # relative positions only
        if cfg.fie_chunk_size < 0:
            raise ValueError(f"--fie-chunk-size must be >= 0 (0 = off), got {cfg.fie_chunk_size}")
        if cfg.fie_chunk_size and not 0 <= cfg.fie_global_layers <= cfg.encoder.layers:
            raise ValueError(
                f"--fie-global-layers ({cfg.fie_global_layers}) must be between 0 and the encoder's "
                f"{cfg.encoder.layers} layers"
            )
        self.relative_buckets = cfg.relative_buckets
        self.relative_max_distance = cfg.relative_max_distance
        self.attention_heads = cfg.encoder.attention_heads
        self.layer_norm_eps = cfg.encoder_layer_norm_eps
        self.activation_fn_name = cfg.activation_fn
        self.fie_chunk_size = cfg.fie_chunk_size
        self.fie_global_layers = cfg.fie_global_layers
        embed_dim = embed_tokens.embedding_dim
        if self.layernorm_embedding is not None:
            self.layernorm_embedding = LayerNorm(embed_dim, eps=self.layer_norm_eps, export=cfg.export)
        if self.layer_norm is not None:
            self.layer_norm = LayerNorm(embed_dim, eps=self.layer_norm_eps, export=cfg.export)
        self.rel_embeddings = nn.Embedding(2 * cfg.relative_buckets, embed_dim)  # (2S, C)
        self.rel_layer_norm = LayerNorm(embed_dim, eps=self.layer_norm_eps, export=cfg.export)

    def build_encoder_layer(self, cfg):
        return DisentangledEncoderLayer(cfg)  # checkpointed in forward, not wrapped (fairseq's wrapper is reentrant)

    @property
    def num_local_layers(self):
        return self.num_layers - self.fie_global_layers if self.fie_chunk_size else 0

    def _distance_index(self, length, device):
        return deberta_distance_index(length, self.relative_buckets, self.relative_max_distance, device)  # (2T-1,)

    def _local(self, layer, x, padding_mask, rel_embeddings):
        """One local FiE layer: attention within chunks of ``x`` (B, T, C), real tokens first."""
        batch, length, _ = x.shape
        chunk_size = min(self.fie_chunk_size, length)
        chunks, chunk_padding, keep = split_chunks(x, padding_mask, chunk_size)  # (N, l, C)
        index = self._distance_index(chunk_size, x.device)
        chunks = checkpointed(layer, chunks, chunk_padding, rel_embeddings, index, enabled=self.checkpoint_activations)
        return merge_chunks(chunks, keep, batch, length)  # (B, T, C)

    def forward(self, src_tokens, src_lengths=None, return_all_hiddens: bool = False, token_embeddings=None):
        """Same contract as fairseq's encoder: ``encoder_out`` is (T, B, C)."""
        padding_mask = src_tokens.eq(self.padding_idx)  # (B, T)
        x, embedding = self.forward_embedding(src_tokens, token_embeddings)  # (B, T, C)
        x = x.masked_fill(padding_mask.unsqueeze(-1), 0.0)
        order, inverse = real_tokens_first(padding_mask)
        x = gather_time(x, order)  # (B, T, C), real tokens first
        aligned_padding = padding_mask.gather(1, order)  # (B, T)
        rel_embeddings = self.rel_layer_norm(self.rel_embeddings.weight)  # (2S, C); each layer drops out its own
        global_index = None

        states = []
        for i, layer in enumerate(self.layers):
            if i < self.num_local_layers:
                x = self._local(layer, x, aligned_padding, rel_embeddings)
            else:
                if global_index is None:
                    global_index = self._distance_index(x.size(1), x.device)  # (2T-1,)
                x = checkpointed(layer, x, aligned_padding, rel_embeddings, global_index,
                                 enabled=self.checkpoint_activations)
            if return_all_hiddens:
                states.append(gather_time(x, inverse).transpose(0, 1))  # (T, B, C)
        if self.layer_norm is not None:
            x = self.layer_norm(x)
        x = gather_time(x, inverse).transpose(0, 1)  # (T, B, C), the caller's layout

        return {
            "encoder_out": [x],
            "encoder_padding_mask": [padding_mask],
            "encoder_embedding": [embedding],
            "encoder_states": states,
            "fc_results": [],
            "src_tokens": [],
            "src_lengths": [src_lengths] if src_lengths is not None else [],
        }
