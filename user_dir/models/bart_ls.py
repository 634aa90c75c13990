"""``bart_ls``: BART with a long-document encoder (BART-LS, Xiong et al. 2022): block-sparse
self-attention chosen by ``--encoder-attention`` (``block`` | ``overlapping`` | ``global`` |
``full``), pooled attention in the top ``--pooling-layers`` encoder layers, BART's decoder and
weight names (a BART checkpoint converted by ``python -m fairseq_ext.cli.convert bart_ls`` loads
directly). Sizes: ``bart_ls_tiny`` (tests), ``bart_ls_small`` (the demo), ``bart_ls_base``,
``bart_ls_large`` (the paper's: 16K positions, block 1024, pooling in the top 4 layers).
"""

from dataclasses import asdict, dataclass, field

from fairseq.dataclass import ChoiceEnum, FairseqDataclass
from fairseq.dataclass.utils import gen_parser_from_dataclass
from fairseq.models import register_model, register_model_architecture
from fairseq.models.bart.model import BARTModel, bart_base_architecture, bart_large_architecture

from fairseq_ext.bart_ls.attention import ENCODER_ATTENTIONS, check_encoder_options
from fairseq_ext.bart_ls.encoder import BartLSEncoder
from fairseq_ext.modules.table_rows import keep_leading_rows

from ._sizes import set_defaults

EMBEDDING_KEYS = ("encoder.embed_tokens.weight", "decoder.embed_tokens.weight", "decoder.output_projection.weight")


@dataclass
class BartLSConfig(FairseqDataclass):
    """The BART-LS fields added to fairseq's BART arguments."""

    encoder_attention: ChoiceEnum(ENCODER_ATTENTIONS) = field(
        default="block",
        metadata={"help": "encoder self-attention: block (non-overlapping blocks), overlapping "
                  "(a block also sees half of each neighbour), global (first --global-tokens of "
                  "each block are global), full (BART's own attention)"},
    )
    block_size: int = field(
        default=1024, metadata={"help": "tokens per attention block (any input length is padded inside)"}
    )
    global_tokens: int = field(
        default=64, metadata={"help": "global tokens at the start of every block (--encoder-attention global)"}
    )
    pooling_layers: int = field(
        default=4, metadata={"help": "pooling-augmented attention in the top N encoder layers (0: none)"}
    )
    pooling_kernel: int = field(default=18, metadata={"help": "average-pooling kernel over time"})
    pooling_stride: int = field(default=12, metadata={"help": "average-pooling stride over time"})
    pooling_padding: int = field(
        default=9, metadata={"help": "zero padding on both ends before pooling (at most half the kernel)"}
    )


def _check(args):
    check_encoder_options(
        args.encoder_attention, args.block_size, args.global_tokens, args.pooling_layers, args.encoder_layers,
        args.pooling_kernel, args.pooling_stride, args.pooling_padding,
    )


@register_model("bart_ls")
class BartLSModel(BARTModel):
    """BART with a block-sparse, pooling-augmented long-document encoder."""

    @classmethod
    def hub_models(cls):
        return {}

    @staticmethod
    def add_args(parser):
        BARTModel.add_args(parser)
        gen_parser_from_dataclass(parser, BartLSConfig(), delete_default=True)

    @classmethod
    def build_model(cls, args, task):
        bart_ls_base_architecture(args)
        _check(args)
        return super().build_model(args, task)

    @classmethod
    def build_encoder(cls, args, src_dict, embed_tokens):
        return BartLSEncoder(args, src_dict, embed_tokens)

    def upgrade_state_dict_named(self, state_dict, name):
        """Drop sentinel rows a pre-training dictionary added when fine-tuning without them.

        BART-LS pre-training appends sentinel symbols after the data dictionary; a
        summarization task on the same dictionary has no sentinels, so the trailing rows of
        the embeddings are cut (and logged) instead of failing on a size mismatch.
        """
        prefix = name + "." if name else ""
        keep_leading_rows(state_dict, self.state_dict(), EMBEDDING_KEYS, prefix)
        super().upgrade_state_dict_named(state_dict, name)


@register_model_architecture("bart_ls", "bart_ls_base")
def bart_ls_base_architecture(args):
    set_defaults(args, max_source_positions=16384, max_target_positions=1024)
    set_defaults(args, **asdict(BartLSConfig()))
    bart_base_architecture(args)


@register_model_architecture("bart_ls", "bart_ls_large")
def bart_ls_large_architecture(args):
    set_defaults(args, max_source_positions=16384, max_target_positions=1024)
    bart_large_architecture(args)
    bart_ls_base_architecture(args)


@register_model_architecture("bart_ls", "bart_ls_small")
def bart_ls_small_architecture(args):
    """The demo's size, trained from scratch on CPU: 3 + 3 layers, 256 wide, 4 heads, blocks of
    512, pooling in the top layer."""
    set_defaults(
        args, encoder_embed_dim=256, encoder_ffn_embed_dim=1024, encoder_layers=3, encoder_attention_heads=4,
        decoder_embed_dim=256, decoder_ffn_embed_dim=1024, decoder_layers=3, decoder_attention_heads=4,
        max_source_positions=1024, max_target_positions=1024,
        block_size=512, global_tokens=4, pooling_layers=1,
    )
    bart_ls_base_architecture(args)


@register_model_architecture("bart_ls", "bart_ls_tiny")
def bart_ls_tiny_architecture(args):
    set_defaults(
        args, encoder_embed_dim=32, encoder_ffn_embed_dim=64, encoder_layers=2, encoder_attention_heads=2,
        decoder_embed_dim=32, decoder_ffn_embed_dim=64, decoder_layers=1, decoder_attention_heads=2,
        max_source_positions=1024, max_target_positions=1024,
        block_size=16, global_tokens=4, pooling_layers=1, pooling_kernel=6, pooling_stride=4, pooling_padding=3,
    )
    bart_ls_base_architecture(args)
