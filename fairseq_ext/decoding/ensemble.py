"""The one ensemble of the plugin's beam search: fairseq's :class:`EnsembleModel` that runs
the decoding rules (:mod:`.rules`) on every step's log-probabilities and leaves the encoder
outputs alone when beam search only reorders a sentence's beams. :func:`with_rules` is the one
way the plugin replaces a generator's model."""

from typing import Dict

import torch
from fairseq.sequence_generator import EnsembleModel


class RuledEnsemble(EnsembleModel):
    """fairseq's :class:`EnsembleModel` whose next-token log-probabilities go through
    ``rules`` in order: objects with ``start(src_tokens)`` (read the sources, in
    ``forward_encoder``), ``reorder(new_order)`` (follow the beams, in
    ``reorder_encoder_out``) and ``apply(tokens, lprobs, last) -> lprobs`` (``last``: the step
    at the maximum length). ``max_len_a``, ``max_len_b`` and ``max_len`` are the generator's,
    to know its last step.

    It also leaves the encoder outputs as they are when beam search only reorders the beams
    of each sentence (``beam_size``, the generator's): the ``beam_size`` rows of a sentence
    hold the same encoder output (one source, expanded), so such a reorder changes no value,
    and fairseq's copy of every encoder tensor at every step (``(S, rows, C)`` states and
    embeddings) is skipped. A reorder that drops finished sentences is done as before."""

    def __init__(self, models, rules, max_len_a=0.0, max_len_b=200, max_len=None, beam_size=1):
        super().__init__(models)
        self.rules = list(rules)
        self.max_len_a, self.max_len_b = max_len_a, max_len_b
        self.max_len = max_len or self.max_decoder_positions()
        self.last_step = None
        self.beam_size = beam_size
        self.rows = None  # rows of the encoder outputs (None: not expanded to beams yet)

    def forward_encoder(self, net_input: Dict[str, torch.Tensor]):
        src_tokens = net_input["src_tokens"]
        for rule in self.rules:
            rule.start(src_tokens.cpu())
        # as SequenceGenerator._generate sets its maximum length (on the padded source length)
        self.last_step = min(int(self.max_len_a * src_tokens.size(1) + self.max_len_b), self.max_len - 1)
        self.rows = None
        return super().forward_encoder(net_input)

    def reorder_encoder_out(self, encoder_outs, new_order):
        for rule in self.rules:
            rule.reorder(new_order)
        if self.within_sentences(new_order):
            return encoder_outs
        self.rows = new_order.numel()
        return super().reorder_encoder_out(encoder_outs, new_order)

    def within_sentences(self, new_order) -> bool:
        """Whether ``new_order`` keeps the rows and moves each only among its sentence's beams."""
        rows = new_order.numel()
        if self.beam_size < 2 or rows != self.rows:
            return False
        block = torch.arange(rows, device=new_order.device) // self.beam_size  # (rows,)
        return torch.equal(torch.div(new_order, self.beam_size, rounding_mode="floor"), block)

    def forward_decoder(self, tokens, encoder_outs, incremental_states, temperature: float = 1.0):
        lprobs, attn = super().forward_decoder(tokens, encoder_outs, incremental_states, temperature)
        last = tokens.size(1) - 1 >= self.last_step
        for rule in self.rules:
            lprobs = rule.apply(tokens, lprobs, last)
        return lprobs, attn


def with_rules(generator, rules):
    """Make a ``SequenceGenerator`` apply ``rules`` (see :class:`RuledEnsemble`) after the
    ones it has (none: only the encoder outputs left as they are within sentences); returns
    the generator. The one place the plugin replaces ``generator.model``."""
    if isinstance(generator.model, RuledEnsemble):
        generator.model.rules.extend(rules)
        return generator
    models = list(generator.model.models)
    generator.model = RuledEnsemble(
        models, rules, generator.max_len_a, generator.max_len_b, generator.max_len, generator.beam_size
    )
    generator.model.eval()
    return generator
