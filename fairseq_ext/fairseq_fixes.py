"""Four fairseq 0.12 bugs that lose, ignore or invert things silently, fixed from the outside.

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

3. **A boolean flag that defaults to on turns it off.** fairseq 0.12.3's
   ``gen_parser_from_dataclass`` makes a bool field defaulting to True a ``store_false`` flag
   of the same name: ``--truncate-source`` (fairseq's BART summarization recipe: "truncate")
   switched truncation off. :func:`add_dataclass_args` registers such a field as ``--x``
   (on, the default) and ``--no-x`` (off); tasks and models call it from ``add_args``.

4. **A beam size of 1 after a larger one crashes.** fairseq 0.12.3's
   ``EnsembleModel.set_decoder_beam_size`` tells the model its beam only when it is above 1,
   so a generator built with ``beam=1`` after one with ``beam=4`` (the hub builds one per call)
   runs BART's "beamable" encoder-decoder attention with the stale size 4 (a reshape error).
   :func:`fix_decoder_beam_size` sets it for every beam size and undoes BART's swap of the
   encoder's ``reorder_encoder_out`` at beam 1; tasks apply it in ``build_generator``.
"""

import argparse
import functools

import numpy as np
from fairseq.dataclass.utils import gen_parser_from_dataclass, interpret_dc_type
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


def fix_decoder_beam_size(generator):
    """Tell every model of a ``SequenceGenerator`` its beam size, 1 included; returns the
    generator."""
    ensemble = getattr(generator, "model", None)
    if generator.beam_size > 1 or ensemble is None:
        return generator  # fairseq set it in SequenceGenerator.__init__
    for model in getattr(ensemble, "models", []):
        if getattr(model, "set_beam_size", None) is None:
            continue
        model.set_beam_size(1)
        encoder = getattr(model, "encoder", None)
        if encoder is not None and "reorder_encoder_out" in vars(encoder):
            del encoder.reorder_encoder_out  # BART's set_beam_size swapped in a no-op reorder
    return generator


def true_boolean_fields(dataclass_instance):
    """Names of the bool fields of a fairseq dataclass that default to True."""
    return [
        name for name in dataclass_instance._get_all_attributes()
        if interpret_dc_type(dataclass_instance._get_type(name)) is bool
        and dataclass_instance._get_default(name) is True
    ]


def add_dataclass_args(parser, dataclass_instance, delete_default=False):
    """fairseq's ``gen_parser_from_dataclass``, except that a bool field defaulting to True
    becomes the pair ``--x`` (on) / ``--no-x`` (off) instead of an inverted ``--x``.
    ``delete_default`` as in fairseq (models: the value is absent unless given, so that
    architecture functions can fill it)."""
    for name in true_boolean_fields(dataclass_instance):
        flag = "--" + name.replace("_", "-")
        default = {} if delete_default else {"default": True}
        help_text = dataclass_instance._get_help(name) or name
        try:
            parser.add_argument(flag, dest=name, action="store_true", help=f"{help_text} (on by default)", **default)
            parser.add_argument("--no-" + flag[2:], dest=name, action="store_false", help=f"turn {flag} off",
                                **default)
        except argparse.ArgumentError:
            pass  # registered elsewhere already (fairseq skips such duplicates the same way)
    gen_parser_from_dataclass(parser, dataclass_instance, delete_default=delete_default)


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
