"""Trigram blocking that works on CPU with fairseq 0.12's SequenceGenerator.

fairseq 0.12 calls its ``NGramRepeatBlock`` with the whole token buffer ``(B*beam, max_len+2)``,
most of it still padding, and the pure-PyTorch path (used whenever the CUDA extension is not
built, e.g. on CPU) takes the n-gram to check from the *end of the buffer*: it compares padding
with the hypothesis and never bans anything, so ``--no-repeat-ngram-size 3`` (the paper's
"trigram trick") silently does nothing. :class:`PrefixNGramRepeatBlock` hands that path only
the tokens generated so far, ``tokens[:, :step + 1]``.
"""

from fairseq.ngram_repeat_block import NGramRepeatBlock


class PrefixNGramRepeatBlock(NGramRepeatBlock):
    """fairseq's n-gram blocker, looking at the hypotheses up to ``step`` only."""

    def forward(self, tokens, lprobs, bsz: int, beam_size: int, step: int):
        if self.use_extension:
            return super().forward(tokens, lprobs, bsz, beam_size, step)
        return super().forward(tokens[:, : step + 1], lprobs, bsz, beam_size, step)


def fix_ngram_blocking(generator):
    """Swap ``generator.repeat_ngram_blocker`` (if any) for :class:`PrefixNGramRepeatBlock`."""
    blocker = getattr(generator, "repeat_ngram_blocker", None)
    if blocker is not None and not isinstance(blocker, PrefixNGramRepeatBlock):
        fixed = PrefixNGramRepeatBlock(blocker.no_repeat_ngram_size, use_extension=blocker.use_extension)
        generator.repeat_ngram_blocker = fixed
    return generator
