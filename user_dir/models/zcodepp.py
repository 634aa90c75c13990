"""``zcodepp``: Z-Code++ (He et al., 2022): a disentangled-attention encoder (with
``--fie-chunk-size``, fusion-in-encoder) and fairseq's Transformer decoder, all embeddings
shared. ``--generator-layers N`` adds the phase-one parts (MLM generator, RTD head,
gradient-disentangled embedding sharing); loading such a checkpoint into a model without a
generator folds the delta in and drops the generator, so ``--finetune-from-model PHASE1.pt``
works directly.
"""

import copy
import logging
from dataclasses import asdict, dataclass, field

from fairseq.dataclass import FairseqDataclass
from fairseq.dataclass.utils import gen_parser_from_dataclass
from fairseq.models import register_model, register_model_architecture
from fairseq.models.transformer import TransformerConfig, TransformerDecoderBase, TransformerModel
from fairseq.models.transformer.transformer_legacy import base_architecture

from fairseq_ext.modules.lm_head import MaskedLMHead
from fairseq_ext.modules.table_rows import keep_leading_rows
from fairseq_ext.zcodepp.encoder import ZCodeEncoder
from fairseq_ext.zcodepp.gdes import GDESEmbedding, TiedOutputProjection, fold_gdes_state_dict
from fairseq_ext.zcodepp.heads import Generator, RTDHead

from ..interfaces import ReplacedTokenDetectionModel
from ._sizes import set_defaults

logger = logging.getLogger(__name__)

TABLES = ("encoder.embed_tokens.weight", "decoder.embed_tokens.weight", "decoder.output_projection.weight",
          "decoder.embed_positions.weight")
"""Tables a phase-one checkpoint may have more rows of than a later phase's model."""


@dataclass
class ZCodeppConfig(FairseqDataclass):
    """What Z-Code++ adds to fairseq's Transformer options."""

    relative_buckets: int = field(
        default=256, metadata={"help": "relative position buckets S (table of 2S rows); DeBERTa-v3: 256"}
    )
    relative_max_distance: int = field(
        default=512, metadata={"help": "distance that maps to the last log bucket; DeBERTa-v3: 512"}
    )
    encoder_layer_norm_eps: float = field(
        default=1e-5, metadata={"help": "epsilon of every encoder LayerNorm; DeBERTa-v3 checkpoints: 1e-7 "
                                "(fairseq's 1e-5 is the default, as models trained here use)"}
    )
    fie_chunk_size: int = field(
        default=0, metadata={"help": "fusion-in-encoder chunk size l for the local layers (256 or 512 in "
                             "the paper); 0 = plain encoder"}
    )
    fie_global_layers: int = field(
        default=1, metadata={"help": "number n of global (fusion) layers at the top of the encoder when "
                             "FiE is on; the paper uses the last layer"}
    )
    attention_chunk_size: int = field(
        default=1024, metadata={"help": "encoder layers attending over more tokens than this take the exact, "
                                "memory-efficient path: queries in chunks of this many (same result, memory "
                                "linear in the length); 0 = always materialize the T x T scores"}
    )
    generator_layers: int = field(
        default=0, metadata={"help": "layers of the MLM generator for phase-one pre-training (6 in the "
                             "paper); 0 = no generator (phase two, fine-tuning, generation)"}
    )


@register_model("zcodepp")
class ZCodeppModel(TransformerModel, ReplacedTokenDetectionModel):
    """Disentangled-attention (FiE) encoder + standard decoder; optional pre-training parts."""

    def __init__(self, args, encoder, decoder, generator=None, rtd_head=None):
        super().__init__(args, encoder, decoder)
        self.generator = generator
        self.rtd_head = rtd_head

    @classmethod
    def add_args(cls, parser):
        super().add_args(parser)
        gen_parser_from_dataclass(parser, ZCodeppConfig(), delete_default=True)

    @classmethod
    def build_model(cls, args, task):
        zcodepp_base_architecture(args)
        if task.source_dictionary != task.target_dictionary or not args.share_all_embeddings:
            raise ValueError("zcodepp shares all embeddings: it needs one joined dictionary "
                             "(dict.source.txt == dict.target.txt) and --share-all-embeddings")
        if args.generator_layers < 0:
            raise ValueError(f"--generator-layers must be >= 0, got {args.generator_layers}")
        args.share_decoder_input_output_embed = True  # what --share-all-embeddings implies in fairseq
        cfg = TransformerConfig.from_namespace(args)
        dictionary = task.source_dictionary
        embed_dim = cfg.encoder.embed_dim
        generator = rtd_head = output_projection = None
        if args.generator_layers > 0:
            generator_embed = cls.build_embedding(cfg, dictionary, embed_dim)
            generator_cfg = copy.deepcopy(cfg)
            generator_cfg.encoder.layers = args.generator_layers
            generator_cfg.fie_chunk_size = 0
            generator = Generator(
                ZCodeEncoder(generator_cfg, dictionary, generator_embed), MaskedLMHead(embed_dim, len(dictionary))
            )
            embed = GDESEmbedding(generator_embed)
            output_projection = TiedOutputProjection(embed)
            rtd_head = RTDHead(embed_dim)
        else:
            embed = cls.build_embedding(cfg, dictionary, embed_dim)
        encoder = ZCodeEncoder(cfg, dictionary, embed)
        decoder = TransformerDecoderBase(cfg, dictionary, embed, output_projection=output_projection)
        return cls(args, encoder, decoder, generator, rtd_head)

    # ------------------------------------------------------------- pre-training
    def has_generator(self):
        return self.generator is not None

    def generator_logits(self, tokens, masked):
        """MLM logits (M, V) of the generator at the masked slots (B, T) of ``tokens``."""
        return self.generator(tokens, masked)

    def discriminator_logits(self, tokens):
        """Replaced-token logits (B, T) of the encoder (the discriminator) over ``tokens`` (B, T)."""
        features = self.encoder(tokens)["encoder_out"][0].transpose(0, 1)  # (B, T, C)
        return self.rtd_head(features)  # (B, T)

    # ------------------------------------------------------------- loading
    def upgrade_state_dict_named(self, state_dict, name):
        if not name:
            if self.generator is None and fold_gdes_state_dict(state_dict):
                logger.info("folded the GDES embedding delta into the encoder-decoder embeddings "
                            "and dropped the generator and the RTD head")
            # <mask> and sentinel rows pre-training appends to the dictionary (a summarization
            # task's lacks them); decoder positions beyond a later phase's --max-target-positions
            keep_leading_rows(state_dict, self.state_dict(), TABLES)
        super().upgrade_state_dict_named(state_dict, name)


@register_model_architecture("zcodepp", "zcodepp_base")
def zcodepp_base_architecture(args):
    """T5-base sizes (12 + 12 layers, 768 wide); DeBERTa-v3 encoder conventions."""
    set_defaults(args, **asdict(ZCodeppConfig()))
    set_defaults(args, encoder_embed_dim=768, encoder_ffn_embed_dim=3072, encoder_layers=12, encoder_attention_heads=12,
                 decoder_layers=12)
    set_defaults(args, decoder_attention_heads=args.encoder_attention_heads, decoder_learned_pos=True,
                 activation_fn="gelu", dropout=0.1, attention_dropout=0.1, share_all_embeddings=True)
    set_defaults(args, no_scale_embedding=True, layernorm_embedding=True)  # DeBERTa: LayerNorm, no scaling
    base_architecture(args)


@register_model_architecture("zcodepp", "zcodepp_large")
def zcodepp_large_architecture(args):
    """The paper's Z-Code++ large: 24 + 24 layers, 1024 wide, 16 heads."""
    set_defaults(args, encoder_embed_dim=1024, encoder_ffn_embed_dim=4096, encoder_layers=24,
                 encoder_attention_heads=16, decoder_layers=24)
    zcodepp_base_architecture(args)


@register_model_architecture("zcodepp", "zcodepp_small")
def zcodepp_small_architecture(args):
    """The demo's size, trained from scratch on CPU: 3 + 3 layers, 256 wide, 4 heads, 64 buckets
    up to distance 256."""
    set_defaults(args, encoder_embed_dim=256, encoder_ffn_embed_dim=1024, encoder_layers=3, encoder_attention_heads=4,
                 decoder_layers=3, relative_buckets=64, relative_max_distance=256)
    zcodepp_base_architecture(args)


@register_model_architecture("zcodepp", "zcodepp_tiny")
def zcodepp_tiny_architecture(args):
    """For tests: 2 + 1 layers, 32 wide, 16 buckets up to distance 32 (log buckets in play)."""
    set_defaults(args, encoder_embed_dim=32, encoder_ffn_embed_dim=64, encoder_layers=2, encoder_attention_heads=2,
                 decoder_layers=1, relative_buckets=16, relative_max_distance=32)
    zcodepp_base_architecture(args)
