"""ProphetNet (Qi et al., 2020) as a fairseq model, ``--arch prophetnet_summ_{tiny,small,base,large}``:
fairseq's Transformer encoder (post-LN, learned positions, embedding LayerNorm, GELU) and the
n-stream decoder of :mod:`fairseq_ext.prophetnet.decoder`; criterion ``ngram_language_loss``.
Base: 6+6 layers, 768 wide (section 3.6); large: 12+12, 1024, 16 heads (section 3.1).
"""

from dataclasses import dataclass, field, fields
from typing import Optional

from fairseq.dataclass import ChoiceEnum, FairseqDataclass
from fairseq.models import FairseqEncoderDecoderModel, register_model, register_model_architecture
from fairseq.modules.transformer_sentence_encoder import init_bert_params
from fairseq.utils import get_available_activation_fns
from omegaconf import II
from torch import nn

from fairseq_ext.compat.flags import add_dataclass_args
from fairseq_ext.modules.table_rows import keep_leading_rows
from fairseq_ext.modules.transformer_config import transformer_config
from fairseq_ext.prophetnet.decoder import NgramDecoder
from fairseq_ext.prophetnet.encoder import ProphetNetEncoder

from ._positions import fill_positions
from ._sizes import set_defaults

PRETRAINING_TABLES = (
    "encoder.embed_tokens.weight", "decoder.embed_tokens.weight", "decoder.output_projection.weight",
    "encoder.embed_positions.weight", "decoder.embed_positions.weight", "decoder.ngram_embeddings.weight",
)
"""Tables a pre-trained checkpoint may have more rows of than a fine-tuned model."""

DEFAULT_POSITIONS = 512
"""Source and target positions when neither the task nor the flags give them (the paper
pre-trains on 512-token inputs)."""


@dataclass
class ProphetNetSummConfig(FairseqDataclass):
    activation_fn: ChoiceEnum(get_available_activation_fns()) = field(
        default="gelu", metadata={"help": "activation function of the feed-forward blocks"}
    )
    dropout: float = field(default=0.1, metadata={"help": "dropout probability"})
    attention_dropout: float = field(default=0.1, metadata={"help": "dropout on attention weights"})
    activation_dropout: float = field(default=0.1, metadata={"help": "dropout after the FFN activation"})
    encoder_embed_dim: int = field(default=1024, metadata={"help": "model width (shared by encoder and decoder)"})
    encoder_ffn_embed_dim: int = field(default=4096, metadata={"help": "encoder FFN width"})
    encoder_layers: int = field(default=12, metadata={"help": "encoder layers"})
    encoder_attention_heads: int = field(default=16, metadata={"help": "encoder attention heads"})
    decoder_embed_dim: int = field(default=1024, metadata={"help": "decoder width (must equal encoder's)"})
    decoder_ffn_embed_dim: int = field(default=4096, metadata={"help": "decoder FFN width"})
    decoder_layers: int = field(default=12, metadata={"help": "decoder layers"})
    decoder_attention_heads: int = field(default=16, metadata={"help": "decoder attention heads"})
    ngram: int = field(default=2, metadata={"help": "number of predicting streams (future tokens per step)"})
    relative_buckets: int = field(default=32, metadata={"help": "relative position buckets of the decoder"})
    relative_max_distance: int = field(
        default=128, metadata={"help": "distance beyond which all relative positions share the last bucket"}
    )
    share_all_embeddings: bool = field(
        default=True, metadata={"help": "share encoder, decoder and output embeddings (needs a joined dictionary)"}
    )
    share_decoder_input_output_embed: bool = field(
        default=True, metadata={"help": "tie the decoder's output projection to its input embedding"}
    )
    max_source_positions: Optional[int] = II("task.max_source_positions")
    max_target_positions: Optional[int] = II("task.max_target_positions")


def _encoder_config(cfg):
    """fairseq's TransformerConfig for a ProphetNet encoder (post-LN, learned positions)."""
    tcfg = transformer_config(
        cfg, "encoder", embed_dim=cfg.encoder_embed_dim, ffn_embed_dim=cfg.encoder_ffn_embed_dim,
        layers=cfg.encoder_layers, attention_heads=cfg.encoder_attention_heads, normalize_before=False,
        learned_pos=True,
    )
    tcfg.max_source_positions = cfg.max_source_positions
    tcfg.no_scale_embedding = True
    tcfg.layernorm_embedding = True
    return tcfg


@register_model("prophetnet_summ", dataclass=ProphetNetSummConfig)
class ProphetNetSummModel(FairseqEncoderDecoderModel):
    """Transformer encoder + n-stream decoder; the decoder's ``extra["ngram_logits"]`` feeds
    the ``ngram_language_loss`` criterion and its first output is the next-token logits."""

    @classmethod
    def add_args(cls, parser):
        """fairseq's flags, with ``--x``/``--no-x`` for booleans that default to on."""
        add_dataclass_args(parser, getattr(cls, "__dataclass")(), delete_default=True)

    @classmethod
    def build_model(cls, cfg, task):
        fill_positions(cfg, DEFAULT_POSITIONS, DEFAULT_POSITIONS)
        src_dict, tgt_dict = task.source_dictionary, task.target_dictionary
        if cfg.encoder_embed_dim != cfg.decoder_embed_dim:
            raise ValueError("ProphetNet shares one width: --encoder-embed-dim must equal --decoder-embed-dim")
        if cfg.share_all_embeddings and src_dict != tgt_dict:
            raise ValueError("--share-all-embeddings needs a joined source/target dictionary")
        encoder_embed = nn.Embedding(len(src_dict), cfg.encoder_embed_dim, padding_idx=src_dict.pad())
        decoder_embed = (
            encoder_embed if cfg.share_all_embeddings
            else nn.Embedding(len(tgt_dict), cfg.decoder_embed_dim, padding_idx=tgt_dict.pad())
        )
        encoder = ProphetNetEncoder(_encoder_config(cfg), src_dict, encoder_embed)
        decoder = NgramDecoder(
            tgt_dict, decoder_embed,
            num_layers=cfg.decoder_layers, ffn_dim=cfg.decoder_ffn_embed_dim,
            num_heads=cfg.decoder_attention_heads, ngram=cfg.ngram, num_buckets=cfg.relative_buckets,
            relative_max_distance=cfg.relative_max_distance, max_target_positions=cfg.max_target_positions,
            dropout=cfg.dropout, attention_dropout=cfg.attention_dropout,
            activation_dropout=cfg.activation_dropout, activation_fn=cfg.activation_fn,
            share_input_output_embed=cfg.share_decoder_input_output_embed,
        )
        model = cls(encoder, decoder)
        model.apply(init_bert_params)
        return model

    def upgrade_state_dict_named(self, state_dict, name):
        """Fit a pre-trained checkpoint to this model, as BART does for its ``<mask>`` row:
        drop embedding rows of symbols the pre-training task added, position rows beyond
        this model's ``--max-*-positions`` (pre-training uses longer targets than summaries)
        and the stream embeddings of streams this model does not have (``--ngram 1``
        fine-tuning of an n-gram pre-trained model keeps stream 1, the next-token stream)."""
        super().upgrade_state_dict_named(state_dict, name)
        prefix = name + "." if name else ""
        keep_leading_rows(state_dict, self.state_dict(), PRETRAINING_TABLES, prefix)


def _fill_defaults(args):
    for f in fields(ProphetNetSummConfig):
        if not isinstance(f.default, str) or not f.default.startswith("${"):
            set_defaults(args, replace_none=True, **{f.name: f.default})


@register_model_architecture("prophetnet_summ", "prophetnet_summ_large")
def prophetnet_summ_large(args):
    """Paper section 3.1: 12+12 layers, 1024 wide, FFN 4096, 16 heads."""
    _fill_defaults(args)


@register_model_architecture("prophetnet_summ", "prophetnet_summ_base")
def prophetnet_summ_base(args):
    """Paper section 3.6: 6+6 layers, 768 wide, 12 heads."""
    set_defaults(args, replace_none=True, encoder_embed_dim=768, encoder_ffn_embed_dim=3072, encoder_layers=6,
                 encoder_attention_heads=12)
    set_defaults(args, replace_none=True, decoder_embed_dim=args.encoder_embed_dim,
                 decoder_ffn_embed_dim=args.encoder_ffn_embed_dim, decoder_layers=args.encoder_layers,
                 decoder_attention_heads=args.encoder_attention_heads)
    prophetnet_summ_large(args)


@register_model_architecture("prophetnet_summ", "prophetnet_summ_small")
def prophetnet_summ_small(args):
    """3+3 layers, 256 wide: trains in minutes on CPU (demo)."""
    set_defaults(args, replace_none=True, encoder_embed_dim=256, encoder_ffn_embed_dim=1024, encoder_layers=3,
                 encoder_attention_heads=4)
    prophetnet_summ_base(args)


@register_model_architecture("prophetnet_summ", "prophetnet_summ_tiny")
def prophetnet_summ_tiny(args):
    """1+1 layers, 32 wide, 16 buckets: for tests."""
    set_defaults(args, replace_none=True, encoder_embed_dim=32, encoder_ffn_embed_dim=64, encoder_layers=1,
                 encoder_attention_heads=2, relative_buckets=16, relative_max_distance=32)
    prophetnet_summ_base(args)
