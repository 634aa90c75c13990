"""``transformer_sm``: the decoder-only summarizer of Hoang et al. (Transformer-SM).

One GPT-style stack of masked self-attention blocks reads ``<s> article <delim> summary``
with fully causal attention (paper Sec. 2; the public code's layout, see
``fairseq_ext.transformer_sm``). To run under stock ``fairseq-generate`` and the hub, the model
is presented to fairseq as an encoder-decoder pair:

* :class:`ArticleEncoder` only carries the (right-padded) article tokens through the
  SequenceGenerator, which reorders them with the beams; it has no parameters.
* :class:`TransformerSMDecoder` is the whole GPT. In training (and at the first decoding step)
  it runs ``[article; decoder input]`` as one causal row, so every layer's keys and values of
  the article enter fairseq's incremental-state cache exactly as a language model would compute
  them; later steps feed one summary token against that cache. Since attention is causal, the
  summary scores are those of one forward pass over the joint sequence.

Sizes: ``transformer_sm_gpt`` is the paper's (GPT-1: 12 layers, 768, 12 heads, post-LN, tanh-gelu,
512 positions); ``transformer_sm_gpt2`` the GPT-2 small layout (pre-LN with a final LayerNorm,
tanh-gelu, 1024 positions) for converted GPT-2 weights; ``--no-source-embeddings`` is the
paper's Transformer-LM ablation. Positions of the summary restart at 0 by default, as in the
public code (``--summary-positions continue`` numbers them after the article, the paper's
Eq. 1 read literally).
"""

from dataclasses import dataclass, field
from typing import Optional

import torch
import torch.nn as nn
import torch.nn.functional as F
from fairseq import utils
from fairseq.dataclass import ChoiceEnum, FairseqDataclass
from fairseq.models import (
    FairseqEncoder,
    FairseqEncoderDecoderModel,
    FairseqIncrementalDecoder,
    register_model,
    register_model_architecture,
)
from fairseq.models.transformer import TransformerConfig
from fairseq.modules import LayerNorm
from fairseq.modules.transformer_layer import TransformerDecoderLayerBase
from omegaconf import II

from fairseq_ext.transformer_sm import ARTICLE, SUMMARY, JointEmbedding, causal_mask, summary_positions
from fairseq_ext.transformer_sm.layout import POSITION_MODES, article_positions

from ._positions import fill_positions

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


class ArticleEncoder(FairseqEncoder):
    """Hands the right-padded article ``<s> a_1 .. a_M`` to the decoder (no parameters).

    fairseq's SequenceGenerator reorders ``encoder_out`` with the beams; the decoder reads the
    article from it at the first step only (afterwards it lives in the key/value cache).
    """

    def __init__(self, dictionary, max_positions):
        super().__init__(dictionary)
        self.padding_idx = dictionary.pad()
        self._max_positions = max_positions

    def forward(self, src_tokens, src_lengths=None, **kwargs):
        if src_tokens.size(1) > 0 and src_tokens[:, 0].eq(self.padding_idx).any():
            raise ValueError(
                "Transformer-SM needs right-padded articles: use the transformer_sm task "
                "(or --left-pad-source False)"
            )
        return {
            "src_tokens": [src_tokens],  # (B, M)
            "src_lengths": [src_tokens.ne(self.padding_idx).sum(dim=1)],  # (B,)
        }

    def reorder_encoder_out(self, encoder_out, new_order):
        return {key: [value.index_select(0, new_order) for value in values] for key, values in encoder_out.items()}

    def max_positions(self):
        return self._max_positions


class TransformerSMDecoder(FairseqIncrementalDecoder):
    """The GPT stack over the joint sequence; output projection tied to the word embeddings."""

    def __init__(self, cfg, dictionary):
        super().__init__(dictionary)
        if cfg.layers < 1:
            raise ValueError("transformer_sm needs at least one layer")
        self.padding_idx = dictionary.pad()
        self.position_mode = cfg.summary_positions
        self.max_positions_ = cfg.max_positions
        self.embed = JointEmbedding(
            len(dictionary),
            cfg.embed_dim,
            self.padding_idx,
            cfg.max_positions,
            source_embeddings=not cfg.no_source_embeddings,
            dropout=cfg.embed_dropout,
            init_std=cfg.init_std,
            source_norm_ratio=cfg.source_norm_ratio,
        )
        layer_cfg = self.layer_config(cfg)
        self.layers = nn.ModuleList(
            [TransformerDecoderLayerBase(layer_cfg, no_encoder_attn=True) for _ in range(cfg.layers)]
        )
        self.layer_norm = LayerNorm(cfg.embed_dim) if cfg.normalize_before else None

    @staticmethod
    def layer_config(cfg):
        """fairseq's :class:`TransformerConfig` for one GPT block of these sizes."""
        layer_cfg = TransformerConfig()
        layer_cfg.dropout = cfg.dropout
        layer_cfg.attention_dropout = cfg.attention_dropout
        layer_cfg.activation_dropout = cfg.activation_dropout
        layer_cfg.activation_fn = cfg.activation_fn
        layer_cfg.decoder.embed_dim = cfg.embed_dim
        layer_cfg.decoder.ffn_embed_dim = cfg.ffn_embed_dim
        layer_cfg.decoder.attention_heads = cfg.attention_heads
        layer_cfg.decoder.normalize_before = cfg.normalize_before
        return layer_cfg

    # ------------------------------------------------------------------ forward
    def forward(
        self,
        prev_output_tokens,
        encoder_out,
        incremental_state=None,
        features_only=False,
        article_logits=False,
        **kwargs,
    ):
        """Summary logits ``(B, N, V)`` for the decoder input ``<delim> s_1 .. s_{N-1}``.

        With ``article_logits`` (domain-adaptive training) ``extra["article_logits"]`` holds the
        next-token logits of the article positions, ``(B, M, V)``.
        """
        x, extra = self.extract_features(prev_output_tokens, encoder_out, incremental_state)
        if features_only:
            return x, extra
        if article_logits:
            extra["article_logits"] = self.output_layer(extra["article_features"])
        return self.output_layer(x), extra

    def extract_features(self, prev_output_tokens, encoder_out, incremental_state=None, **kwargs):
        article = encoder_out["src_tokens"][0]  # (B, M)
        article_lengths = encoder_out["src_lengths"][0]  # (B,)
        if incremental_state is not None and self._has_cache(incremental_state):
            step = prev_output_tokens.size(1) - 1
            self._check_positions(article.size(1), step + 1)
            tokens = prev_output_tokens[:, -1:]  # (B, 1)
            positions = summary_positions(article_lengths, step, 1, self.position_mode)  # (B, 1)
            x = self.embed(tokens, positions, SUMMARY)  # (B, 1, C)
            n_article, attn_mask, padding_mask = 0, None, None
        else:
            n_article, n_summary = article.size(1), prev_output_tokens.size(1)
            self._check_positions(n_article, n_summary)
            tokens = torch.cat([article, prev_output_tokens], dim=1)  # (B, M + N)
            positions = torch.cat(
                [
                    article_positions(article),
                    summary_positions(article_lengths, 0, n_summary, self.position_mode),
                ],
                dim=1,
            )  # (B, M + N)
            sources = torch.full_like(tokens[0], SUMMARY)  # (M + N,)
            sources[:n_article] = ARTICLE
            x = self.embed(tokens, positions, sources.expand_as(tokens))  # (B, M + N, C)
            attn_mask = causal_mask(tokens.size(1), device=x.device, dtype=x.dtype)  # (M + N, M + N)
            padding_mask = tokens.eq(self.padding_idx)  # (B, M + N)
            if not padding_mask.any():
                padding_mask = None

        x = x.transpose(0, 1)  # (T, B, C)
        inner_states = [x]
        for layer in self.layers:
            x, _, _ = layer(
                x,
                incremental_state=incremental_state,
                self_attn_mask=attn_mask,
                self_attn_padding_mask=padding_mask,
            )
            inner_states.append(x)
        if self.layer_norm is not None:
            x = self.layer_norm(x)
        x = x.transpose(0, 1)  # (B, T, C)
        extra = {"attn": [None], "inner_states": inner_states, "article_features": x[:, :n_article]}
        return x[:, n_article:], extra  # (B, N, C)

    def output_layer(self, features):
        return F.linear(features, self.embed.tokens.weight)  # (B, T, V)

    def _has_cache(self, incremental_state):
        """Whether the article is already in this decoding run's key/value cache."""
        buffer = self.layers[0].self_attn._get_input_buffer(incremental_state)
        return "prev_key" in buffer

    def _check_positions(self, n_article, n_summary):
        """Raise a clear error (instead of an index error) when the row does not fit."""
        if self.position_mode == "restart":
            needed = max(n_article, n_summary)
        else:
            needed = n_article + n_summary
        if needed > self.max_positions_:
            raise ValueError(
                f"an article of {n_article} and a summary of {n_summary} tokens need {needed} "
                f"positions ({self.position_mode} mode) but the model has {self.max_positions_}; "
                "lower --max-source-positions/--max-target-positions"
            )

    def summary_capacity(self, max_source_positions):
        """The longest decoder input that fits beside an article of ``max_source_positions``."""
        if self.position_mode == "restart":
            return self.max_positions_
        return self.max_positions_ - max_source_positions

    def max_positions(self):
        return self.max_positions_


@register_model("transformer_sm", dataclass=TransformerSMConfig)
class TransformerSMModel(FairseqEncoderDecoderModel):
    """Transformer-SM; see the module docstring."""

    def __init__(self, cfg, encoder, decoder):
        super().__init__(encoder, decoder)
        self.cfg = cfg

    @classmethod
    def build_model(cls, cfg, task):
        if not hasattr(task, "delimiter_index"):
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

    def max_decoder_positions(self):
        return min(self.cfg.max_target_positions, self.decoder.summary_capacity(self.cfg.max_source_positions))

    def max_positions(self):
        """(article, summary) limits: the summary's is what fits beside the longest article."""
        return (self.encoder.max_positions(), self.max_decoder_positions())


def _set_default(args, name, value):
    setattr(args, name, getattr(args, name, value))




@register_model_architecture("transformer_sm", "transformer_sm_gpt")
def transformer_sm_gpt(args):
    """The paper's size: GPT-1 (12 layers, 768 wide, 12 heads, post-LN, tanh-gelu, 512 positions)."""
    _set_default(args, "embed_dim", 768)
    _set_default(args, "ffn_embed_dim", 4 * args.embed_dim)
    _set_default(args, "layers", 12)
    _set_default(args, "attention_heads", 12)
    _set_default(args, "max_positions", 512)
    _set_default(args, "normalize_before", False)
    _set_default(args, "activation_fn", "gelu_accurate")  # GPT-1's gelu is the tanh approximation


@register_model_architecture("transformer_sm", "transformer_sm_gpt2")
def transformer_sm_gpt2(args):
    """GPT-2 small layout (pre-LN and a final LayerNorm, tanh gelu, 1024 positions)."""
    _set_default(args, "max_positions", 1024)
    _set_default(args, "normalize_before", True)
    _set_default(args, "activation_fn", "gelu_accurate")
    transformer_sm_gpt(args)


@register_model_architecture("transformer_sm", "transformer_sm_small")
def transformer_sm_small(args):
    """A size that trains in minutes on CPU (the demo): 4 layers, 256 wide, 4 heads."""
    _set_default(args, "embed_dim", 256)
    _set_default(args, "layers", 4)
    _set_default(args, "attention_heads", 4)
    transformer_sm_gpt(args)


@register_model_architecture("transformer_sm", "transformer_sm_tiny")
def transformer_sm_tiny(args):
    """For tests: 2 layers, 32 wide, 2 heads."""
    _set_default(args, "embed_dim", 32)
    _set_default(args, "ffn_embed_dim", 64)
    _set_default(args, "layers", 2)
    _set_default(args, "attention_heads", 2)
    transformer_sm_gpt(args)
