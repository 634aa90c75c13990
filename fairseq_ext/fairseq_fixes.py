"""Two fairseq 0.12 bugs that lose or ignore things silently, fixed from the outside.

1. **n-gram blocking does nothing on CPU.** ``SequenceGenerator`` hands its
   ``NGramRepeatBlock`` the whole token buffer ``(bsz * beam, max_len + 2)``; without the CUDA
   extension the Python path takes the n-gram to check from the *end of the buffer* (still
   padding), so ``--no-repeat-ngram-size`` never bans anything. :class:`PrefixNGramRepeatBlock`
   hands it only the tokens generated so far; tasks install it through ``build_generator``::

       buffer  : </s> a b a b <pad> <pad> ...     step 4
       fairseq : last 2 = (<pad>, <pad>)  -> nothing banned
       prefix  : last 2 = (a, b)          -> bans "a" (seen after "a b")

2. **The last batch is dropped.** fairseq 0.12.3's ``data_utils.batch_by_size`` (both Python
   3.11 forks) drops the final batch when its size is not a multiple of
   ``--required-batch-size-multiple`` (default 8): ``fairseq-generate`` on 12 documents prints
   8 hypotheses, and training skips up to 7 examples an epoch, without a word.
   :func:`keep_last_batch` wraps it so that the remainder comes back as a last, smaller batch,
   as fairseq 0.12.2 did (batches are consecutive runs of ``indices``).
"""

import functools

import numpy as np
from fairseq.ngram_repeat_block import NGramRepeatBlock


class PrefixNGramRepeatBlock(NGramRepeatBlock):
    """fairseq's n-gram blocker, looking at the hypotheses up to ``step`` only."""

    def forward(self, tokens, lprobs, bsz: int, beam_size: int, step: int):
        if self.use_extension:  # the CUDA kernel reads the buffer with ``step`` itself
            return super().forward(tokens, lprobs, bsz, beam_size, step)
        return super().forward(tokens[:, : step + 1], lprobs, bsz, beam_size, step)


def fix_ngram_blocking(generator):
    """Give a ``SequenceGenerator`` a working CPU n-gram blocker (nothing to do without
    ``--no-repeat-ngram-size``); returns the generator."""
    blocker = getattr(generator, "repeat_ngram_blocker", None)
    if blocker is not None and not isinstance(blocker, PrefixNGramRepeatBlock):
        generator.repeat_ngram_blocker = PrefixNGramRepeatBlock(
            blocker.no_repeat_ngram_size, use_extension=blocker.use_extension
        )
    return generator


def keep_last_batch(batch_by_size):
    """Wrap fairseq's ``batch_by_size`` so that no index is left out of the batches."""
    if getattr(batch_by_size, "_fairseq_ext_keeps_last_batch", False):
        return batch_by_size

    @functools.wraps(batch_by_size)
    def wrapped(indices, *args, **kwargs):
        batches = batch_by_size(indices, *args, **kwargs)
        indices = np.asarray(indices) if not isinstance(indices, np.ndarray) else indices
        covered = sum(len(batch) for batch in batches)
        if covered == len(indices):
            return batches
        if covered and not np.array_equal(np.concatenate(batches), indices[:covered]):
            return batches  # not the consecutive-runs layout this fix knows (fixed shapes)
        return list(batches) + [indices[covered:]]

    wrapped._fairseq_ext_keeps_last_batch = True
    return wrapped


def install():
    """Apply :func:`keep_last_batch` to ``fairseq.data.data_utils.batch_by_size`` (idempotent).
    The n-gram blocker is installed per task, in ``build_generator``."""
    from fairseq.data import data_utils

    data_utils.batch_by_size = keep_last_batch(data_utils.batch_by_size)
