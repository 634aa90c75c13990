"""The BART-LS encoder: fairseq's ``TransformerEncoder`` whose layers (through its
``build_encoder_layer`` / ``build_self_attention`` hooks) use
:class:`~.attention.BlockSparseSelfAttention` around the core ``--encoder-attention`` names,
the top ``--pooling-layers`` adding :class:`~.pooling.PooledAttention` (section 2.1,
Figure 1). Projections keep BART's names, so BART's weights load unchanged.
"""

from fairseq.distributed import fsdp_wrap
from fairseq.models.transformer import TransformerConfig, TransformerEncoder
from fairseq.modules.transformer_layer import TransformerEncoderLayerBase

from ..modules.checkpointing import checkpointed
from .attention import BlockSparseSelfAttention, build_block_core
from .pooling import PooledAttention


class BartLSEncoderLayer(TransformerEncoderLayerBase):
    """fairseq's encoder layer with BART-LS self-attention (projections keep BART's names)."""

    def __init__(self, cfg, args, with_pooling):
        self.bart_ls_args = args
        self.with_pooling = with_pooling
        super().__init__(cfg)
        self.checkpoint_activations = cfg.checkpoint_activations

    def forward(self, x, encoder_padding_mask, attn_mask=None):
        """x (T, B, C), encoder_padding_mask (B, T) -> (T, B, C), recomputed in backward with
        ``--checkpoint-activations``."""
        return checkpointed(super().forward, x, encoder_padding_mask, attn_mask, enabled=self.checkpoint_activations)

    def build_self_attention(self, embed_dim, cfg):
        args = self.bart_ls_args
        if args.encoder_attention == "full":
            return super().build_self_attention(embed_dim, cfg)
        pooling = None
        if self.with_pooling:
            pooling = PooledAttention(
                embed_dim, cfg.encoder.attention_heads, args.pooling_kernel, args.pooling_stride,
                args.pooling_padding, dropout=cfg.attention_dropout,
            )
        core = build_block_core(args.encoder_attention, args.global_tokens, cfg.attention_dropout)
        return BlockSparseSelfAttention(
            embed_dim, cfg.encoder.attention_heads, core, args.block_size, pooling=pooling
        )


class BartLSEncoder(TransformerEncoder):
    """BART's encoder with :class:`BartLSEncoderLayer` layers; the top ``pooling_layers``
    of them carry pooled attention."""

    def __init__(self, args, dictionary, embed_tokens):
        self.layers_built = 0
        super().__init__(args, dictionary, embed_tokens)

    def build_encoder_layer(self, args):
        index = self.layers_built
        self.layers_built += 1
        cfg = TransformerConfig.from_namespace(args)
        if cfg.offload_activations:
            raise ValueError("the BART-LS encoder does not support --offload-activations "
                             "(--checkpoint-activations it does)")
        layer = BartLSEncoderLayer(cfg, args, with_pooling=index >= args.encoder_layers - args.pooling_layers)
        return fsdp_wrap(layer, min_num_params=cfg.min_params_to_wrap if not cfg.checkpoint_activations else 0)
