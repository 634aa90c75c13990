"""The ProphetNet decoder: n-stream self-attention layers (paper section 2.3).

Training runs rows ``[main (T); stream 1 (T); ...; stream n (T)]`` at once; a predicting
stream's input is its stream embedding plus the position embedding of ``position + 1``. Only
the predicting streams are projected to the vocabulary. Inference computes two rows a step,
the new main row (cached) and the stream-1 row that predicts the next token; the last layer
skips the main stream's queries, encoder attention and feed-forward (nothing reads them).
"""

from typing import Dict, Optional

import torch
import torch.nn.functional as F
from fairseq import utils
from fairseq.incremental_decoding_utils import with_incremental_state
from fairseq.models import FairseqIncrementalDecoder
from fairseq.modules import LayerNorm, MultiheadAttention
from torch import Tensor, nn

from ..modules.attention import beam_groups, rows_matmul
from ..modules.multihead import merge_heads, split_heads
from .attention import NgramSelfAttention
from .encoder import source_layout
from .masks import full_layout, step_layout


@with_incremental_state
class NgramDecoderLayer(nn.Module):
    """Post-LN decoder layer: n-stream self-attention, encoder attention, feed-forward.

    In incremental decoding over a reordered :class:`~.encoder.ProphetNetEncoder` output the
    encoder attention keeps its keys and values once per source (:meth:`source_attention`);
    otherwise it is fairseq's :class:`MultiheadAttention`, whose parameters it uses in both cases.
    """

    def __init__(self, embed_dim, ffn_dim, num_heads, num_buckets, relative_max_distance,
                 dropout=0.1, attention_dropout=0.1, activation_dropout=0.1, activation_fn="gelu"):
        super().__init__()
        self.num_buckets = num_buckets
        self.relative_max_distance = relative_max_distance
        self.dropout = dropout
        self.activation_dropout = activation_dropout
        self.activation_fn = utils.get_activation_fn(activation_fn)
        self.self_attn = NgramSelfAttention(embed_dim, num_heads, num_buckets, attention_dropout)
        self.self_attn_layer_norm = LayerNorm(embed_dim)
        self.encoder_attn = MultiheadAttention(
            embed_dim, num_heads, dropout=attention_dropout, encoder_decoder_attention=True
        )
        self.encoder_attn_layer_norm = LayerNorm(embed_dim)
        self.fc1 = nn.Linear(embed_dim, ffn_dim)
        self.fc2 = nn.Linear(ffn_dim, embed_dim)
        self.final_layer_norm = LayerNorm(embed_dim)

    def forward(self, x, layout, num_main, encoder_out=None, encoder_padding_mask=None, incremental_state=None,
                skip_main_queries=False, sources=(None, None)):
        """``x`` (B, Q, C) rows of all streams -> (B, Q, C); ``encoder_out`` is (S, B, C), or
        (S, N, C) one per source with ``sources`` = ``(source_rows (B,), source_ids (N,))``.
        ``skip_main_queries``: the main rows give keys/values only and are not returned."""
        attn = self.self_attn(x, layout, num_main, incremental_state, skip_main_queries)  # (B, Q', C)
        if skip_main_queries:
            x = x[:, num_main:]  # (B, Q', C)
        x = self.self_attn_layer_norm(x + F.dropout(attn, self.dropout, self.training))
        if encoder_out is not None:
            if sources[0] is not None:
                cross = self.source_attention(x, encoder_out, encoder_padding_mask, *sources, incremental_state)
            else:
                cross, _ = self.encoder_attn(
                    query=x.transpose(0, 1), key=encoder_out, value=encoder_out,
                    key_padding_mask=encoder_padding_mask, incremental_state=incremental_state,
                    static_kv=True, need_weights=False,
                )  # (Q, B, C)
                cross = cross.transpose(0, 1)  # (B, Q, C)
            x = self.encoder_attn_layer_norm(x + F.dropout(cross, self.dropout, self.training))
        hidden = F.dropout(self.activation_fn(self.fc1(x)), self.activation_dropout, self.training)
        x = self.final_layer_norm(x + F.dropout(self.fc2(hidden), self.dropout, self.training))
        return x  # (B, Q, C)

    def source_attention(self, x, encoder_out, padding_mask, rows, ids, incremental_state):
        """fairseq's encoder attention (``self.encoder_attn``'s weights and arithmetic) with keys
        and values projected once per source and cached: ``x`` (B, Q, C), ``encoder_out``
        (S, N, C), ``padding_mask`` (N, S) or None, ``rows`` (B,) the source of each row,
        ``ids`` (N,) which sentence each source is -> (B, Q, C). When sources leave the batch
        the cache keeps the rows of those that stay (``ids`` tells which)."""
        mha = self.encoder_attn
        saved = self.get_incremental_state(incremental_state, "source_kv")
        if saved is None or saved["ids"].numel() < ids.numel():
            source = encoder_out.transpose(0, 1)  # (N, S, C)
            keys = split_heads(mha.k_proj(source), mha.num_heads)  # (N, H, S, d)
            values = split_heads(mha.v_proj(source), mha.num_heads)  # (N, H, S, d)
            saved = {"key": keys, "value": values, "ids": ids}
            self.set_incremental_state(incremental_state, "source_kv", saved)
        elif not torch.equal(saved["ids"], ids):  # some sentences finished: keep the others' rows
            keep = torch.searchsorted(saved["ids"], ids)  # (N,)
            saved = {"key": saved["key"].index_select(0, keep), "value": saved["value"].index_select(0, keep),
                     "ids": ids}
            self.set_incremental_state(incremental_state, "source_kv", saved)
        groups = beam_groups(rows, ids.numel())
        q = split_heads(mha.q_proj(x) * mha.scaling, mha.num_heads)  # (B, H, Q, d)
        scores = rows_matmul(q, saved["key"].transpose(-1, -2), rows, groups)  # (B, H, Q, S)
        if padding_mask is not None:
            scores = scores.masked_fill(padding_mask.index_select(0, rows)[:, None, None, :], float("-inf"))
        probs = utils.softmax(scores, dim=-1).type_as(scores)
        probs = F.dropout(probs, p=mha.dropout_module.p, training=self.training)
        out = rows_matmul(probs, saved["value"], rows, groups)  # (B, H, Q, d)
        return mha.out_proj(merge_heads(out))  # (B, Q, C)


class NgramDecoder(FairseqIncrementalDecoder):
    """n-stream Transformer decoder.

    ``forward`` returns ``(next_token_logits (B, T, V), extra)`` where ``extra["ngram_logits"]``
    is ``(B, n, T, V)`` in training (stream k predicts the token k - 1 steps after the
    next) and ``(B, 1, 1, V)`` in incremental decoding.

    Targets must be right-padded (fairseq's default for targets): positions are counted
    from the first column, and position 0 (the start token) is visible to every stream.
    """

    def __init__(self, dictionary, embed_tokens, num_layers, ffn_dim, num_heads, ngram=2,
                 num_buckets=32, relative_max_distance=128, max_target_positions=512,
                 dropout=0.1, attention_dropout=0.1, activation_dropout=0.1, activation_fn="gelu",
                 share_input_output_embed=True):
        super().__init__(dictionary)
        if ngram < 1:
            raise ValueError(f"ngram must be at least 1, got {ngram}")
        embed_dim = embed_tokens.embedding_dim
        self.ngram = ngram
        self.num_buckets = num_buckets
        self.relative_max_distance = relative_max_distance
        self.max_target_positions = max_target_positions
        self.dropout = dropout
        self.padding_idx = embed_tokens.padding_idx
        self.embed_tokens = embed_tokens
        # positions padding_idx + 1 ... ; predicting streams look one position ahead
        self.embed_positions = nn.Embedding(
            max_target_positions + 2 + self.padding_idx, embed_dim, padding_idx=self.padding_idx
        )
        self.ngram_embeddings = nn.Embedding(ngram, embed_dim)
        self.layernorm_embedding = LayerNorm(embed_dim)
        self.layers = nn.ModuleList([
            NgramDecoderLayer(embed_dim, ffn_dim, num_heads, num_buckets, relative_max_distance,
                              dropout, attention_dropout, activation_dropout, activation_fn)
            for _ in range(num_layers)
        ])
        self.output_projection = nn.Linear(embed_dim, len(dictionary), bias=False)
        if share_input_output_embed:
            self.output_projection.weight = embed_tokens.weight

    def max_positions(self):
        return self.max_target_positions

    def _stream_inputs(self, positions, streams):
        """Inputs of predicting streams ``streams`` (long, (n',)) at ``positions`` (B, T)."""
        ahead = self.embed_positions(positions + 1)  # (B, T, C)
        stream = self.ngram_embeddings(streams)  # (n', C)
        return stream[None, :, None, :] + ahead[:, None]  # (B, n', T, C)

    def forward(
        self,
        prev_output_tokens: Tensor,
        encoder_out: Optional[Dict] = None,
        incremental_state: Optional[Dict[str, Dict[str, Optional[Tensor]]]] = None,
        features_only: bool = False,
        **unused,
    ):
        x, extra = self.extract_features(prev_output_tokens, encoder_out, incremental_state)
        if features_only:
            return x, extra
        logits = self.output_projection(x)  # (B, n', T, V)
        extra["ngram_logits"] = logits
        return logits[:, 0], extra

    def extract_features(self, prev_output_tokens, encoder_out=None, incremental_state=None, **unused):
        """Predicting-stream states ``(B, n', T, C)`` (n' = n in training, 1 per decoding step)."""
        bsz, length = prev_output_tokens.shape
        if length > self.max_target_positions:
            raise ValueError(f"target length {length} exceeds --max-target-positions {self.max_target_positions}")
        if incremental_state is not None:
            step = length - 1
            tokens = prev_output_tokens[:, -1:]  # (B, 1)
            positions = torch.full_like(tokens, self.padding_idx + 1 + step)  # (B, 1)
            streams = torch.zeros(1, dtype=torch.long, device=tokens.device)  # stream 1 only
            layout = step_layout(step, self.num_buckets, self.relative_max_distance, tokens.device)
        else:
            if prev_output_tokens[:, 0].eq(self.padding_idx).any():
                raise ValueError("decoder inputs must be right-padded (left_pad_target=False)")
            tokens = prev_output_tokens
            positions = utils.make_positions(tokens, self.padding_idx)  # (B, T)
            streams = torch.arange(self.ngram, device=tokens.device)
            layout = full_layout(length, self.ngram, self.num_buckets, self.relative_max_distance, tokens.device)
        steps = tokens.size(1)
        main = self.embed_tokens(tokens) + self.embed_positions(positions)  # (B, T, C)
        predicting = self._stream_inputs(positions, streams).flatten(1, 2)  # (B, n' T, C)
        x = self.layernorm_embedding(torch.cat([main, predicting], dim=1))  # (B, (1+n') T, C)
        x = F.dropout(x, self.dropout, self.training)

        enc, enc_mask, sources = None, None, (None, None)
        if encoder_out is not None and len(encoder_out["encoder_out"]) > 0:
            enc = encoder_out["encoder_out"][0]  # (S, B, C), or (S, N, C) one per source
            if len(encoder_out["encoder_padding_mask"]) > 0:
                enc_mask = encoder_out["encoder_padding_mask"][0]  # (B, S) or (N, S)
            sources = source_layout(encoder_out)
            if sources[0] is not None and incremental_state is None:  # a full pass: one row each
                rows = sources[0]
                enc = enc.index_select(1, rows)
                enc_mask = None if enc_mask is None else enc_mask.index_select(0, rows)
                sources = (None, None)
        last = len(self.layers) - 1
        for index, layer in enumerate(self.layers):  # nothing reads the main stream's last output
            x = layer(x, layout, steps, enc, enc_mask, incremental_state, skip_main_queries=index == last,
                      sources=sources)
        states = x.view(bsz, len(streams), steps, -1)  # (B, n', T, C)
        return states, {"attn": [None], "inner_states": None}
