"""``transformer_sm``: the decoder-only summarizer of Hoang et al. (Transformer-SM); the network
is :mod:`fairseq_ext.transformer_sm.model` (``--task transformer_sm --criterion transformer_sm``).

``transformer_sm_gpt`` is the paper's size (GPT-1: 12 layers, 768, 12 heads, post-LN, 512
positions), ``transformer_sm_gpt2`` GPT-2 small's layout (pre-LN, 1024 positions);
``--no-source-embeddings`` is the paper's Transformer-LM ablation.
"""

from dataclasses import dataclass, field
from typing import Optional

from fairseq import utils
from fairseq.dataclass import ChoiceEnum, FairseqDataclass
from fairseq.models import FairseqEncoderDecoderModel, register_model, register_model_architecture
from omegaconf import II

from fairseq_ext.allocator import release_freed_memory
from fairseq_ext.transformer_sm.layout import POSITION_MODES
from fairseq_ext.transformer_sm.model import ArticleEncoder, TransformerSMDecoder

from ..interfaces import JointRowTask
from ._positions import fill_positions
from ._sizes import set_defaults

DEFAULT_ARTICLE_POSITIONS = 512
DEFAULT_SUMMARY_POSITIONS = 110
"""Article and summary limits when neither the task nor the flags give them (the paper
truncates articles to 512 and summaries to 110 BPE tokens)."""


@dataclass
class TransformerSMConfig(FairseqDataclass):
    embed_dim: int = field(default=768, metadata={"help": "model width (GPT: 768)"})
    ffn_embed_dim: int = field(default=3072, metadata={"help": "feed-forward inner width"})
    layers: int = field(default=12, metadata={"help": "number of transformer blocks"})
    attention_heads: int = field(default=12, metadata={"help": "self-attention heads per block"})
    max_positions: int = field(
        default=512, metadata={"help": "rows of the learned position table (GPT: 512, GPT-2: 1024)"}
    )
    normalize_before: bool = field(
        default=False,
        metadata={"help": "pre-LayerNorm blocks with a final LayerNorm (GPT-2); "
                  "off: post-LayerNorm blocks (GPT-1, the paper's model)"},
    )
    activation_fn: ChoiceEnum(utils.get_available_activation_fns()) = field(
        default="gelu", metadata={"help": "feed-forward activation (GPT-1 and GPT-2: gelu_accurate, the tanh "
                                  "approximation of gelu)"}
    )
    dropout: float = field(default=0.1, metadata={"help": "residual dropout (GPT's resid_pdrop)"})
    attention_dropout: float = field(default=0.1, metadata={"help": "attention dropout (attn_pdrop)"})
    activation_dropout: float = field(default=0.0, metadata={"help": "dropout after the activation"})
    embed_dropout: float = field(default=0.1, metadata={"help": "embedding dropout (embd_pdrop)"})
    init_std: float = field(
        default=0.02, metadata={"help": "std of the normal initialization of token and position embeddings"}
    )
    no_source_embeddings: bool = field(
        default=False, metadata={"help": "no article/summary source embeddings (the Transformer-LM ablation)"}
    )
    source_norm_ratio: float = field(
        default=0.5,
        metadata={"help": "norm of each source embedding at initialization, as a fraction of the "
                  "mean word-embedding norm (the paper: one half)"},
    )
    summary_positions: ChoiceEnum(POSITION_MODES) = field(
        default="restart",
        metadata={"help": "restart: summary positions start again at 0 (public code); "
                  "continue: they follow the article"},
    )
    max_source_positions: Optional[int] = II("task.max_source_positions")
    max_target_positions: Optional[int] = II("task.max_target_positions")


@register_model("transformer_sm", dataclass=TransformerSMConfig)
class TransformerSMModel(FairseqEncoderDecoderModel):
    """Transformer-SM: :class:`ArticleEncoder` + :class:`TransformerSMDecoder` (the GPT)."""

    def __init__(self, cfg, encoder, decoder):
        super().__init__(encoder, decoder)
        self.cfg = cfg

    @classmethod
    def build_model(cls, cfg, task):
        if not isinstance(task, JointRowTask):
            raise ValueError(
                "the transformer_sm model needs the transformer_sm task (article <delim> summary "
                f"layout, right-padded articles); got task {type(task).__name__}"
            )
        if len(task.source_dictionary) != len(task.target_dictionary):
            raise ValueError("transformer_sm needs one joined dictionary for articles and summaries")
        fill_positions(cfg, DEFAULT_ARTICLE_POSITIONS, DEFAULT_SUMMARY_POSITIONS)
        decoder = TransformerSMDecoder(cfg, task.target_dictionary)
        capacity = decoder.summary_capacity(cfg.max_source_positions)
        if cfg.max_source_positions > cfg.max_positions or cfg.max_target_positions > capacity:
            raise ValueError(
                f"--max-source-positions {cfg.max_source_positions} and --max-target-positions "
                f"{cfg.max_target_positions} do not fit {cfg.max_positions} positions in "
                f"'{cfg.summary_positions}' mode"
            )
        encoder = ArticleEncoder(task.source_dictionary, cfg.max_source_positions)
        return cls(cfg, encoder, decoder)

    def forward(self, src_tokens, src_lengths, prev_output_tokens, article_logits=False, **kwargs):
        encoder_out = self.encoder(src_tokens, src_lengths=src_lengths)
        return self.decoder(prev_output_tokens, encoder_out=encoder_out, article_logits=article_logits, **kwargs)

    def make_generation_fast_(self, **kwargs):
        """fairseq's (each module lays its weights out for decoding, see
        ``fairseq_ext/modules/decoding_layout.py``), then the heap's pages that the replaced
        buffers leave are handed back, so that the layout costs no resident memory."""
        super().make_generation_fast_(**kwargs)
        release_freed_memory()

    def max_decoder_positions(self):
        return min(self.cfg.max_target_positions, self.decoder.summary_capacity(self.cfg.max_source_positions))

    def max_positions(self):
        """(article, summary) limits: the summary's is what fits beside the longest article."""
        return (self.encoder.max_positions(), self.max_decoder_positions())


@register_model_architecture("transformer_sm", "transformer_sm_gpt")
def transformer_sm_gpt(args):
    """The paper's size: GPT-1 (12 layers, 768 wide, 12 heads, post-LN, tanh-gelu, 512 positions)."""
    set_defaults(args, embed_dim=768)
    set_defaults(args, ffn_embed_dim=4 * args.embed_dim, layers=12, attention_heads=12, max_positions=512,
                 normalize_before=False, activation_fn="gelu_accurate")  # GPT-1's gelu: the tanh approximation


@register_model_architecture("transformer_sm", "transformer_sm_gpt2")
def transformer_sm_gpt2(args):
    """GPT-2 small layout (pre-LN and a final LayerNorm, tanh gelu, 1024 positions)."""
    set_defaults(args, max_positions=1024, normalize_before=True, activation_fn="gelu_accurate")
    transformer_sm_gpt(args)


@register_model_architecture("transformer_sm", "transformer_sm_small")
def transformer_sm_small(args):
    """A size that trains in minutes on CPU (the demo): 4 layers, 256 wide, 4 heads."""
    set_defaults(args, embed_dim=256, layers=4, attention_heads=4)
    transformer_sm_gpt(args)


@register_model_architecture("transformer_sm", "transformer_sm_tiny")
def transformer_sm_tiny(args):
    """For tests: 2 layers, 32 wide, 2 heads."""
    set_defaults(args, embed_dim=32, ffn_embed_dim=64, layers=2, attention_heads=2)
    transformer_sm_gpt(args)
