"""The s2s-ft Transformer seen by fairseq as an encoder and an incremental decoder.

Both halves share one :class:`~.transformer.S2SFTTransformer`. The "encoder" runs the source
rows (bidirectional among themselves, Figure 2) and keeps every layer's keys and values; the
"decoder" runs target rows against them. Because source rows never attend to target rows, this
split gives exactly the hidden states of one pass over ``[source; target]`` under the paper's
masks, and lets fairseq's :class:`~fairseq.sequence_generator.SequenceGenerator` drive decoding
(beam, length penalty, min length, n-gram blocking) with a per-layer key/value cache: each new
token costs one row (two for masked / pseudo-masked: the chosen token and the [P] that predicts
the next one, Section 2.4).

The source's keys, values and states are kept once per source, not once per beam: decoding
rows read them through ``encoder_out["source_rows"]`` (the source of each row), which is all
that a beam reorder changes (:func:`~fairseq_ext.modules.attention.shared_source_attention`);
the per-beam cache holds the target rows alone. Copying and reordering the source for every
beam at every step cost more than the model's forward (``benchmarks/decoding_speed.py``).

Layout of the target rows (``prev_output_tokens = [</s>, t1, ..., t_{T-1}]``, start at the
source length ``n``):

* causal: rows ``prev_output_tokens`` at positions ``n .. n+T-1``, row ``i`` predicts
  ``target_i`` (position shift, Section 2.1);
* masked (training): rows ``target`` with some tokens noised, row ``i`` predicts ``target_i``
  where it was selected (Section 2.2);
* pseudo-masked (and masked at inference): rows ``[t1..t_{T-1}, <pad>; [P] x T]``; ``[P]_i``
  shares position ``n+i`` with ``target_i`` and predicts it (Section 2.3).

:class:`S2SFTEncoderDecoder` puts the two together and adds the fine-tuning objective's noise
(source and teacher-forced target noise; the noised target rows of masked fine-tuning).
"""

from typing import Dict, List, Optional

import torch
from fairseq.models import FairseqEncoder, FairseqEncoderDecoderModel, FairseqIncrementalDecoder

from ..modules.attention import beam_groups, rows_matmul
from ..modules.pointer_generator import Coverage, PointerGenerator, copy_mixture
from ..noising.bert import bert_noise, select_tokens
from ..noising.symbols import MASK_SYMBOLS, find_mask
from .masks import decode_step_mask, pseudo_masked_attention_mask, seq2seq_attention_mask
from .transformer import S2SFTTransformer, SharedSource

METHODS = ("causal", "masked", "pseudo")
SOURCE_TYPE, TARGET_TYPE = 0, 1


def source_positions(tokens: torch.Tensor, pad: int):
    """Position ids counting non-pad tokens (left or right padding) and the lengths.

    ``[pad pad a b c] -> [0 0 0 1 2]``, length 3. Returns ``(positions (B, S), lengths (B,))``.
    """
    nonpad = tokens.ne(pad)  # (B, S)
    positions = (nonpad.long().cumsum(dim=1) - 1).clamp(min=0)  # (B, S)
    return positions, nonpad.sum(dim=1)


class S2SFTEncoder(FairseqEncoder):
    """Source rows of the shared Transformer; returns their per-layer keys and values."""

    def __init__(self, dictionary, body: S2SFTTransformer, prepend_bos: bool = True):
        super().__init__(dictionary)
        self.body = body
        self.prepend_bos = prepend_bos
        self.pad = dictionary.pad()
        self.bos = dictionary.bos()

    def forward(self, src_tokens, src_lengths=None, **kwargs):
        tokens = src_tokens
        if self.prepend_bos:  # BERT's [CLS] (fairseq sources end with </s> = [SEP] already)
            tokens = torch.cat([src_tokens.new_full((src_tokens.size(0), 1), self.bos), src_tokens], dim=1)
        positions, lengths = source_positions(tokens, self.pad)  # (B, S), (B,)
        padding = tokens.eq(self.pad)  # (B, S)
        allowed = ~padding[:, None, None, :]  # (B, 1, 1, S)
        hidden, (keys, values), _ = self.body.extend(tokens, positions, torch.full_like(tokens, SOURCE_TYPE), allowed)
        return {
            # per source (N sources, N = B here): read by row b through source_rows[b]
            "encoder_out": [hidden.transpose(0, 1)],  # (S, N, C), fairseq's layout
            "source_keys": [torch.stack(keys)],  # (L, N, H, S, d)
            "source_values": [torch.stack(values)],  # (L, N, H, S, d)
            # per row
            "source_rows": [torch.arange(tokens.size(0), device=tokens.device)],  # (B,)
            "src_tokens": [tokens],  # (B, S), <s> included: the ids a copy attention points at
            "source_padding_mask": [padding],  # (B, S)
            "source_lengths": [lengths],  # (B,)
        }

    def reorder_encoder_out(self, encoder_out: Dict[str, List[torch.Tensor]], new_order):
        """Reorders the rows; the per-source tensors are copied only when sources leave the
        batch (a finished sentence's beams), to drop them."""
        rows = encoder_out["source_rows"][0].index_select(0, new_order)  # (B',)
        per_source = {name: encoder_out[name][0] for name in ("encoder_out", "source_keys", "source_values")}
        used = torch.unique(rows)  # (N',), sorted
        if used.numel() < per_source["source_keys"].size(1):
            per_source = {name: t.index_select(1, used) for name, t in per_source.items()}
            rows = torch.searchsorted(used, rows)
        per_row = ("src_tokens", "source_padding_mask", "source_lengths")
        return {
            **{name: [t] for name, t in per_source.items()},
            "source_rows": [rows],
            **{name: [encoder_out[name][0].index_select(0, new_order)] for name in per_row},
        }

    def max_positions(self):
        return self.body.cfg.max_positions


class S2SFTDecoder(FairseqIncrementalDecoder):
    """Target rows of the shared Transformer for one fine-tuning ``method``.

    With ``copy_heads`` above 0, a pointer-generator (:mod:`fairseq_ext.modules.pointer_generator`)
    copies source tokens through the last layer's attention over the source rows (its first
    ``copy_heads`` heads averaged, renormalized over the source); with ``copy_attention_dim``
    above 0, through an attention of its own from the output states. ``extra["attn"]`` holds
    that attention and :meth:`get_normalized_probs` returns the mixture. With ``coverage``,
    the copy attention has See et al.'s coverage (:class:`~fairseq_ext.modules.pointer_generator.Coverage`;
    ``extra["coverage"]`` holds the coverage vector each step saw, for the coverage loss); in
    incremental decoding the coverage is kept in the incremental state and follows the beams.
    """

    def __init__(
        self, dictionary, body: S2SFTTransformer, method: str, mask_idx: int, max_target_positions: int,
        copy_heads: int = 0, copy_attention_dim: int = 0, coverage: bool = False,
    ):  # fmt: skip
        super().__init__(dictionary)
        if method not in METHODS:
            raise ValueError(f"unknown s2s-ft method {method!r}; choose one of {METHODS}")
        if not 0 <= copy_heads <= body.cfg.attention_heads:
            raise ValueError(f"--copy-heads {copy_heads}: the model has {body.cfg.attention_heads} heads")
        if copy_heads and copy_attention_dim:
            raise ValueError("copy through the last layer's heads (--copy-heads) or an attention of its own "
                             "(--copy-attention-dim), not both")
        self._shared = (body,)  # registered once, in the encoder: one copy in the state dict
        self.method = method
        self.mask_idx = mask_idx
        self.pad = dictionary.pad()
        self.max_target_positions = max_target_positions
        self.copy_heads = copy_heads
        copies = copy_heads or copy_attention_dim
        self.pointer = PointerGenerator(body.cfg.embed_dim, copy_attention_dim) if copies else None
        if coverage and not copies:
            raise ValueError("--coverage is the copy attention's: give --copy-heads or --copy-attention-dim")
        self.coverage = Coverage(copy_heads or 1) if coverage else None

    @property
    def body(self) -> S2SFTTransformer:
        return self._shared[0]

    def forward(
        self,
        prev_output_tokens,
        encoder_out: Optional[Dict[str, List[torch.Tensor]]] = None,
        incremental_state: Optional[Dict[str, Dict[str, Optional[torch.Tensor]]]] = None,
        target_rows: Optional[torch.Tensor] = None,
        **kwargs,
    ):
        """Logits ``(B, T, V)`` for every target step (or the newest one when decoding with
        ``incremental_state``). ``target_rows`` (masked fine-tuning) replaces the layout."""
        if encoder_out is None:
            raise ValueError("the s2s-ft decoder reads the source through encoder_out")
        if incremental_state is not None:
            return self._step(prev_output_tokens, encoder_out, incremental_state)
        return self._full(prev_output_tokens, encoder_out, target_rows)

    def _full(self, prev_output_tokens, encoder_out, target_rows=None):
        B, T = prev_output_tokens.shape
        src_padding = encoder_out["source_padding_mask"][0]  # (B, S)
        S = src_padding.size(1)
        steps = encoder_out["source_lengths"][0][:, None] + torch.arange(T, device=prev_output_tokens.device)  # (B, T)
        if target_rows is not None or self.method == "causal":
            rows = prev_output_tokens if target_rows is None else target_rows  # (B, T)
            positions = steps
            structure = seq2seq_attention_mask(S, T, rows.device)[S:]  # (T, S+T)
        else:  # pseudo-masked layout: [t1..t_{T-1}, pad; [P] x T]
            pad_column = prev_output_tokens.new_full((B, 1), self.pad)
            context = torch.cat([prev_output_tokens[:, 1:], pad_column], dim=1)  # (B, T)
            rows = torch.cat([context, torch.full_like(context, self.mask_idx)], dim=1)  # (B, 2T)
            positions = torch.cat([steps, steps], dim=1)  # (B, 2T)
            structure = pseudo_masked_attention_mask(S, T, rows.device)[S:]  # (2T, S+2T)
        key_padding = torch.cat([src_padding, src_padding.new_zeros(rows.shape)], dim=1)  # (B, S+R)
        allowed = structure[None, None] & ~key_padding[:, None, None, :]  # (B, 1, R, S+R)
        source_rows = encoder_out["source_rows"][0]  # (B,)
        prefix = tuple(per_row(encoder_out[name][0], source_rows) for name in ("source_keys", "source_values"))
        copy_keys = S if self.copy_heads else 0
        hidden, _, attention = self.body.extend(
            rows, positions, torch.full_like(rows, TARGET_TYPE), allowed, prefix, attention_keys=copy_keys
        )
        hidden = hidden[:, -T:]  # (B, T, C): the [P] rows in the pseudo layout
        return self.body.logits(hidden), self._extra(hidden, attention, encoder_out, T)[0]

    def _step(self, prev_output_tokens, encoder_out, incremental_state):
        cache = self.get_incremental_state(incremental_state, "cache")  # target rows: (L, B, H, t, d)
        committed_rows = 0 if cache is None else cache["keys"].size(3)
        B, step = prev_output_tokens.size(0), prev_output_tokens.size(1) - 1
        start = encoder_out["source_lengths"][0][:, None] + step  # (B, 1)
        source_padding = encoder_out["source_padding_mask"][0]  # (B, S)
        S = source_padding.size(1)
        K = S + committed_rows
        if self.method == "causal":
            rows, positions = prev_output_tokens[:, -1:], start  # (B, 1)
            structure = torch.ones(1, K + 1, dtype=torch.bool, device=rows.device)
            committed = 1
        else:
            predict = prev_output_tokens.new_full((B, 1), self.mask_idx)
            with_context = step > 0
            if with_context:  # the token chosen at the previous step, at its own position
                rows = torch.cat([prev_output_tokens[:, -1:], predict], dim=1)  # (B, 2)
                positions = torch.cat([start - 1, start], dim=1)  # (B, 2)
            else:
                rows, positions = predict, start  # (B, 1)
            structure = decode_step_mask(K, with_context, rows.device)  # (R, K+R)
            committed = 1 if with_context else 0
        R = rows.size(1)
        key_padding = torch.cat([source_padding, source_padding.new_zeros(B, K - S + R)], dim=1)  # (B, K+R)
        allowed = structure[None, None] & ~key_padding[:, None, None, :]  # (B, 1, R, K+R)
        source = shared_source(encoder_out)
        hidden, (keys, values), attention = self.body.step(
            rows, positions, torch.full_like(rows, TARGET_TYPE), allowed, source,
            None if cache is None else (cache["keys"], cache["values"]), source_attention=self.copy_heads > 0,
        )  # fmt: skip
        if committed:
            new = {"keys": torch.stack(keys)[:, :, :, :committed], "values": torch.stack(values)[:, :, :, :committed]}
            cache = new if cache is None else {name: torch.cat([cache[name], new[name]], dim=3) for name in new}
            self.set_incremental_state(incremental_state, "cache", cache)
        hidden = hidden[:, -1:]  # (B, 1, C)
        coverage = None if self.coverage is None else self.get_incremental_state(incremental_state, "coverage")
        extra, coverage = self._extra(hidden, attention, encoder_out, 1, coverage, source[0].groups)
        if self.coverage is not None:
            self.set_incremental_state(incremental_state, "coverage", {"vector": coverage})
        return self.body.logits(hidden), extra  # (B, 1, V)

    def _extra(self, hidden, attention, encoder_out, T: int, coverage=None, groups=None):
        """fairseq's ``extra`` dict, and the coverage after the last row (None without it);
        with the copy mechanism, the copy attention ``attn`` ``(B, T, S)`` of the last ``T``
        rows, their gate ``p_gen`` ``(B, T, 1)``, the source ids ``(B, S)`` it points at and,
        with coverage, the coverage vector ``coverage`` ``(B, T, S)`` each row saw (``coverage``
        given: the incremental state's ``{"vector": (B, S)}`` before these rows). ``groups``: the
        :func:`~fairseq_ext.modules.attention.beam_groups` of the source rows, when known."""
        if self.pointer is None:
            return {"attn": [None], "inner_states": None}, None
        source_hidden = encoder_out["encoder_out"][0]  # (S, N, C)
        rows = encoder_out["source_rows"][0]  # (B,)
        if self.copy_heads:
            heads = attention[:, : self.copy_heads, -T:]  # (B, h, T, S)
        else:
            own_source = per_row(source_hidden, rows, dim=1)  # (S, B, C)
            heads = self.pointer.attention(hidden, own_source, encoder_out["source_padding_mask"][0])[:, None]
        coverages = after = None
        if self.coverage is None:
            attn = heads.mean(dim=1)  # (B, T, S)
        else:
            attn, coverages, after = self.coverage(heads, None if coverage is None else coverage["vector"])
        per_source = source_hidden.transpose(0, 1)[:, None]  # (N, 1, S, C)
        if groups is None:
            groups = beam_groups(rows, per_source.size(0))
        context = rows_matmul(attn[:, None].to(per_source.dtype), per_source, rows, groups)  # (B, 1, T, C)
        p_gen = self.pointer.gate_probability(hidden, context[:, 0])  # (B, T, 1)
        extra = {"attn": [attn], "inner_states": None, "p_gen": p_gen, "src_tokens": encoder_out["src_tokens"][0]}
        if coverages is not None:
            extra["coverage"] = coverages
        return extra, after

    def get_normalized_probs(self, net_output, log_probs: bool, sample=None):
        """The pointer-generator mixture when the copy mechanism is on, else the softmax."""
        if self.pointer is None:
            return super().get_normalized_probs(net_output, log_probs, sample)
        extra = net_output[1] if len(net_output) > 1 else None
        if not extra or "p_gen" not in extra:
            raise ValueError("a copy model's probabilities need the decoder's extra output (p_gen, attn, src_tokens)")
        return copy_mixture(net_output[0], extra["p_gen"], extra["attn"][0], extra["src_tokens"], log_probs)

    def reorder_incremental_state(self, incremental_state, new_order):
        coverage = self.get_incremental_state(incremental_state, "coverage")
        if coverage is not None:
            vector = coverage["vector"].index_select(0, new_order)  # (B', S)
            self.set_incremental_state(incremental_state, "coverage", {"vector": vector})
        cache = self.get_incremental_state(incremental_state, "cache")
        if cache is None:
            return
        cache = {name: t.index_select(1, new_order) for name, t in cache.items()}  # (L, B', H, t, d)
        self.set_incremental_state(incremental_state, "cache", cache)

    def upgrade_state_dict_named(self, state_dict, name):
        """A checkpoint trained without coverage loads into a decoder with it: its coverage
        weights start at 0, where the copy attention is the checkpoint's own."""
        key = f"{name}.coverage.weight" if name else "coverage.weight"
        if self.coverage is not None and key not in state_dict:
            state_dict[key] = torch.zeros_like(self.coverage.weight)
        return super().upgrade_state_dict_named(state_dict, name)

    def max_positions(self):
        return self.max_target_positions


def per_row(per_source, rows, dim: int = 1):
    """A per-source tensor of ``encoder_out`` (sources along ``dim``) seen per row: itself
    when row ``b`` reads source ``b``, else gathered along ``dim``."""
    if per_source.size(dim) == rows.numel() and torch.equal(rows, torch.arange(rows.numel(), device=rows.device)):
        return per_source
    return per_source.index_select(dim, rows)


def shared_source(encoder_out) -> List[SharedSource]:
    """Per layer, the source keys and values of ``encoder_out`` with the source of each row."""
    keys, values = encoder_out["source_keys"][0], encoder_out["source_values"][0]  # (L, N, H, S, d)
    rows = encoder_out["source_rows"][0]  # (B,)
    groups = beam_groups(rows, keys.size(1))
    return [SharedSource(k, v, rows, groups) for k, v in zip(keys, values)]


class S2SFTEncoderDecoder(FairseqEncoderDecoderModel):
    """The shared body seen as encoder + decoder, with the fine-tuning objective's noise.

    ``cfg`` carries the ``s2s_ft`` model's fields (``user_dir/models/s2s_ft.py``) read here:
    ``s2s_method``, ``source_mask_prob``, ``target_mask_prob``, ``random_token_prob``,
    ``leave_unmasked_prob``, ``max_source_positions`` and ``max_target_positions``.
    """

    def __init__(self, cfg, encoder: S2SFTEncoder, decoder: S2SFTDecoder, dictionary):
        super().__init__(encoder, decoder)
        self.cfg = cfg
        self.dictionary = dictionary
        self.mask_idx = decoder.mask_idx

    def _noise(self, tokens, eligible, prob, at_least_one=False):
        """``(noised, selected)``: BERT's 80/10/10 on a ``prob`` share of the ``eligible`` tokens."""
        selected = select_tokens(eligible, prob, at_least_one=at_least_one)
        noised = bert_noise(tokens, selected, self.mask_idx, self.dictionary.nspecial, len(self.dictionary),
                            self.cfg.random_token_prob, self.cfg.leave_unmasked_prob)
        return noised, selected

    def forward(self, src_tokens, src_lengths, prev_output_tokens, target=None, **kwargs):
        """The fine-tuning objective's forward pass.

        Returns ``(logits (B, T, V), extra)`` where ``extra["loss_mask"]`` (bool ``(B, T)``, or
        None for every non-pad target) marks the target positions that are predicted.
        """
        pad = self.dictionary.pad()
        if self.training and self.cfg.source_mask_prob > 0:
            eligible = src_tokens.ge(self.dictionary.nspecial)  # never </s>, <pad>
            src_tokens, _ = self._noise(src_tokens, eligible, self.cfg.source_mask_prob)
        encoder_out = self.encoder(src_tokens, src_lengths=src_lengths)
        if self.cfg.s2s_method == "masked":
            if target is None:
                raise ValueError("masked fine-tuning predicts noised targets: train with --criterion s2s_ft")
            rows, selected = self._noise(target, target.ne(pad), self.cfg.target_mask_prob, at_least_one=True)
            logits, extra = self.decoder(prev_output_tokens, encoder_out, target_rows=rows)
            extra["loss_mask"] = selected
            return logits, extra
        if self.training and self.cfg.target_mask_prob > 0:
            eligible = prev_output_tokens.ne(pad)
            eligible[:, 0] = False  # the start symbol stays
            prev_output_tokens, _ = self._noise(prev_output_tokens, eligible, self.cfg.target_mask_prob)
        logits, extra = self.decoder(prev_output_tokens, encoder_out)
        extra["loss_mask"] = None
        return logits, extra

    def max_positions(self):
        return (self.cfg.max_source_positions, self.cfg.max_target_positions)


def mask_index(dictionary) -> int:
    """Index of the mask / pseudo-mask token: BERT's ``[MASK]``, else ``<mask>``."""
    index = find_mask(dictionary)
    if index is None:
        raise ValueError(
            f"the dictionary has no mask token ({' or '.join(MASK_SYMBOLS)}): train with "
            "--task s2s_ft_summarization, which adds <mask> to a dictionary without one"
        )
    return index
