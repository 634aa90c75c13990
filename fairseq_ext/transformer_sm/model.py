"""The Transformer-SM network as fairseq sees it: an article "encoder" and the GPT decoder.

One causal GPT stack reads ``<s> article <delim> summary`` (paper Sec. 2, :mod:`.layout`),
presented as an encoder-decoder pair so that fairseq-generate and the hub run it:
:class:`ArticleEncoder` only carries the article tokens (no parameters);
:class:`TransformerSMDecoder` is the whole GPT, running ``[article; decoder input]`` as one
causal row at the first step (its keys and values enter the incremental cache) and one summary
token a step after.
"""

import functools

import torch
import torch.nn as nn
import torch.nn.functional as F
from fairseq.models import FairseqEncoder, FairseqIncrementalDecoder
from fairseq.modules import LayerNorm
from fairseq.modules.transformer_layer import TransformerDecoderLayerBase

from ..modules import decoding_layout
from ..modules.decoding_layout import store_transposed_
from ..modules.residual import feed_forward, residual_sublayer
from ..modules.transformer_config import transformer_config
from .attention import CachedSelfAttention, keeps_order
from .embedding import JointEmbedding
from .layout import ARTICLE, SUMMARY, article_positions, causal_mask, summary_positions

#: Up to this many rows (a greedy step's batch), the output layer runs as ``E @ x^T`` where
#: transposed layouts pay (:func:`..modules.decoding_layout.transposed_layout_pays`): one thread
#: of MKL on an AMD EPYC took 3.6 ms for 2 rows by a 8000 x 768 vocabulary as ``x @ E^T`` and
#: 2.3 ms as ``E @ x^T`` (3 rows: 5.4 and 3.0 ms; 4 rows: 3.9 and 2.2 ms), alike for one row and
#: from 5 rows up; on an Intel Xeon (AVX-512) 2 rows took 2.3 ms as ``x @ E^T`` and 4.7 ms as
#: ``E @ x^T`` (benchmarks/RESULTS.md, "Transformer-SM greedy").
FEW_ROWS = 4


class ArticleEncoder(FairseqEncoder):
    """Hands the right-padded article ``<s> a_1 .. a_M`` to the decoder (no parameters).

    fairseq's SequenceGenerator reorders ``encoder_out`` with the beams; the decoder reads the
    article from it at the first step only (afterwards it lives in the key/value cache), and
    ``article_rows`` tells it which rows hold the same article, so that it runs each article
    once, not once per beam.
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
            "article_rows": [torch.arange(src_tokens.size(0), device=src_tokens.device)],  # (B,) which article
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
        self.layers = nn.ModuleList([GPTBlock(layer_cfg, no_encoder_attn=True) for _ in range(cfg.layers)])
        self.layer_norm = LayerNorm(cfg.embed_dim) if cfg.normalize_before else None

    @staticmethod
    def layer_config(cfg):
        """fairseq's :class:`TransformerConfig` for one GPT block of these sizes."""
        return transformer_config(cfg, "decoder", embed_dim=cfg.embed_dim, ffn_embed_dim=cfg.ffn_embed_dim,
                                  attention_heads=cfg.attention_heads, normalize_before=cfg.normalize_before)

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
        if incremental_state is not None and not self._has_cache(incremental_state):
            shared = _shared_prefill(encoder_out, prev_output_tokens)
            if shared is not None:  # a beam's rows hold one article: run it once, then copy its cache
                first, inverse = shared
                narrowed = {key: [value.index_select(0, first) for value in values]
                            for key, values in encoder_out.items()}
                x, extra = self.extract_features(prev_output_tokens.index_select(0, first), narrowed,
                                                 incremental_state)
                for layer in self.layers:
                    layer.self_attn.reorder_incremental_state(incremental_state, inverse)
                return x.index_select(0, inverse), extra
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
            if incremental_state is not None:  # every layer's cache before the prompt's buffers
                for layer in self.layers:
                    layer.self_attn.reserve(incremental_state, tokens.size(0), tokens.size(1), x.dtype, x.device)

        x = x.transpose(0, 1)  # (T, B, C)
        # every layer's output, as fairseq's decoders give it, outside decoding only: a decoding
        # run reads none, and at its first step they are the whole prompt's, once per layer
        inner_states = [x] if incremental_state is None else None
        for layer in self.layers:
            x, _, _ = layer(
                x,
                incremental_state=incremental_state,
                self_attn_mask=attn_mask,
                self_attn_padding_mask=padding_mask,
            )
            if inner_states is not None:
                inner_states.append(x)
        if self.layer_norm is not None:
            x = self.layer_norm(x)
        x = x.transpose(0, 1)  # (B, T, C)
        extra = {"attn": [None], "inner_states": inner_states, "article_features": x[:, :n_article]}
        return x[:, n_article:], extra  # (B, N, C)

    def output_layer(self, features):
        """Logits ``(B, T, V)`` over the tied word embeddings ``(V, C)``. Where transposed layouts
        pay, a decoding step's few rows are multiplied as ``E @ x^T``, which MKL streams at the
        memory's speed there where ``x @ E^T`` takes half as long again (:data:`FEW_ROWS`; same
        multiply-adds)."""
        weight = self.embed.tokens.weight  # (V, C)
        rows = features.numel() // features.size(-1)
        if 1 < rows <= FEW_ROWS and weight.stride(-1) == 1 and decoding_layout.transposed_layout_pays():
            logits = torch.mm(weight, features.reshape(rows, -1).t())  # (V, rows)
            return logits.t().contiguous().view(*features.shape[:-1], -1)  # (B, T, V)
        return F.linear(features, weight)  # (B, T, V)

    def reorder_incremental_state_scripting(self, incremental_state, new_order):
        """Beam search's reorder, called at every step (fairseq's walks every module and each
        cache compares the order): nothing when the rows keep their order, as in greedy search."""
        cache = self.layers[0].self_attn._get_input_buffer(incremental_state)
        if cache and keeps_order(cache, new_order):
            return
        for layer in self.layers:
            layer.self_attn.reorder_incremental_state(incremental_state, new_order)

    def _has_cache(self, incremental_state):
        """Whether the article is already in this decoding run's key/value cache."""
        return bool(self.layers[0].self_attn._get_input_buffer(incremental_state))

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


class GPTBlock(TransformerDecoderLayerBase):
    """fairseq's decoder block (no encoder attention) with :class:`CachedSelfAttention` and, for
    GPT's tanh GELU, torch's own kernel of the same formula.

    The parameters are fairseq's block's (same names); :meth:`forward` is its computation for
    the options this block has (pre- or post-LN, no encoder attention, none of NormFormer's
    extra scales), without the branches for the others: a decoding step runs every block once
    per token, where those branches were a measurable share of the step.
    """

    def __init__(self, cfg, no_encoder_attn=True):
        super().__init__(cfg, no_encoder_attn=no_encoder_attn)
        if cfg.activation_fn == "gelu_accurate":
            self.activation_fn = functools.partial(F.gelu, approximate="tanh")
        extras = [name for name in ("c_attn", "attn_ln", "ffn_layernorm", "w_resid", "encoder_attn")
                  if getattr(self, name, None) is not None]
        if extras or self.cross_self_attention:
            raise ValueError(f"a GPT block has no {extras or ['cross-self-attention']}")

    def build_self_attention(self, embed_dim, cfg, add_bias_kv=False, add_zero_attn=False):
        return CachedSelfAttention(embed_dim, cfg.decoder.attention_heads, dropout=cfg.attention_dropout)

    def make_generation_fast_(self, need_attn=False, **kwargs):
        """fairseq's, and the feed-forward weights laid out for decoding's few rows
        (:mod:`..modules.decoding_layout`, where that pays on this machine); the attention lays
        out its own."""
        super().make_generation_fast_(need_attn=need_attn, **kwargs)
        for linear in (self.fc1, self.fc2):
            if decoding_layout.transpose_pays(linear):
                store_transposed_(linear)

    def forward(self, x, encoder_out=None, encoder_padding_mask=None, incremental_state=None,
                prev_self_attn_state=None, prev_attn_state=None, self_attn_mask=None,
                self_attn_padding_mask=None, need_attn=False, need_head_weights=False):
        """``x`` ``(T, B, C)`` -> ``(T, B, C)``, fairseq's ``(x, attn, None)``; ``attn`` is None
        (fused attention keeps no weights)."""
        if encoder_out is not None or prev_self_attn_state is not None or prev_attn_state is not None:
            raise ValueError("a GPT block attends to its own row only (no encoder states, no given cache)")

        def attend(h):
            return self.self_attn(query=h, key=h, value=h, key_padding_mask=self_attn_padding_mask,
                                  incremental_state=incremental_state, attn_mask=self_attn_mask)[0]

        x = residual_sublayer(self, x, self.self_attn_layer_norm, attend)
        x = residual_sublayer(self, x, self.final_layer_norm, lambda h: feed_forward(self, h))
        return x, None, None


def _shared_prefill(encoder_out, prev_output_tokens):
    """``(first, inverse)`` when several rows hold the same article and decoder input (a beam's
    rows at the first step): rows ``first`` are each distinct one once, ``inverse`` maps every
    row to its entry of ``first``; ``None`` when every row is its own."""
    rows = encoder_out.get("article_rows")
    if not rows:
        return None
    distinct, inverse = torch.unique(rows[0], return_inverse=True)  # (U,), (B,)
    if distinct.numel() == inverse.numel():
        return None
    order = torch.arange(inverse.numel(), device=inverse.device)
    first = torch.full_like(distinct, inverse.numel()).scatter_reduce(0, inverse, order, "amin")  # (U,)
    if not torch.equal(prev_output_tokens.index_select(0, first).index_select(0, inverse), prev_output_tokens):
        return None
    return first, inverse
