"""n-gram blocking that works on CPU with fairseq 0.12's SequenceGenerator.

fairseq's ``NGramRepeatBlock`` receives the generator's whole token buffer
``(bsz * beam, max_len + 2)``; without the CUDA extension its Python path compares the last
``n - 1`` slots of that buffer (still padding) with every earlier n-gram, so on CPU it never
bans anything and ``--no-repeat-ngram-size`` silently does nothing. :class:`PrefixNGramRepeatBlock`
hands it only the tokens generated so far, ``tokens[:, :step + 1]``::

    buffer  : </s> a b a b <pad> <pad> ...     step 4
    fairseq : last 2 = (<pad>, <pad>)  -> nothing banned
    prefix  : last 2 = (a, b)          -> bans "a" (seen after "a b")
"""

from fairseq.ngram_repeat_block import NGramRepeatBlock


class PrefixNGramRepeatBlock(NGramRepeatBlock):
    """fairseq's n-gram blocker on the generated prefix only (CPU path)."""

    def forward(self, tokens, lprobs, bsz: int, beam_size: int, step: int):
        if self.use_extension:  # the CUDA kernel reads the buffer with ``step`` itself
            return super().forward(tokens, lprobs, bsz, beam_size, step)
        return super().forward(tokens[:, : step + 1], lprobs, bsz, beam_size, step)


def fix_ngram_blocking(generator):
    """Give a :class:`~fairseq.sequence_generator.SequenceGenerator` a working CPU n-gram
    blocker (a no-op without ``--no-repeat-ngram-size``); returns the generator."""
    blocker = getattr(generator, "repeat_ngram_blocker", None)
    if blocker is not None and not isinstance(blocker, PrefixNGramRepeatBlock):
        generator.repeat_ngram_blocker = PrefixNGramRepeatBlock(
            blocker.no_repeat_ngram_size, use_extension=blocker.use_extension
        )
    return generator
