"""fairseq 0.12.3's decoding and its input: the CPU n-gram blocker, the beam size kept to generation,
the last batch ``batch_by_size`` drops, and fairseq-interactive's undecodable lines.
"""

import functools
import logging
import sys

import numpy as np
from fairseq.ngram_repeat_block import NGramRepeatBlock

logger = logging.getLogger(__name__)


class PrefixNGramRepeatBlock(NGramRepeatBlock):
    """fairseq's n-gram blocker, looking at the hypotheses up to ``step`` only.

    ``SequenceGenerator`` hands its blocker the whole token buffer ``(bsz * beam, max_len + 2)``;
    without the CUDA extension fairseq takes the n-gram to check from the end of the buffer
    (still padding)::

        buffer  : </s> a b a b <pad> <pad> ...     step 4
        fairseq : last 2 = (<pad>, <pad>)  -> nothing banned
        prefix  : last 2 = (a, b)          -> bans "a" (seen after "a b")
    """

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
    """Make a ``SequenceGenerator`` tell its models their beam size only while it generates:
    beam 1 (the model as trained) before and after, its own beam (1 included) during; returns
    the generator.

    fairseq's ``SequenceGenerator.__init__`` sets the beam of beamable encoder-decoder attention
    (BART's ``set_beam_size``) on the models themselves, for good, and only above 1. A model
    shared with training and the validation loss (``--eval-rouge`` builds its generator with
    the model) then folds every ``beam`` rows of the keys into one in its teacher-forced forward::

        keys (T, 6, C), beam 3  ->  (T, 2, C): rows 0 and 3 stand for all six   (wrong loss)
        keys (T, 6, C), beam 4  ->  view error                                   (crash)

    and a generator of beam 1 built after one of a larger beam (the hub builds one per call)
    kept the larger one."""
    ensemble = getattr(generator, "model", None)
    models = list(getattr(ensemble, "models", []))
    if not models or getattr(generator, "_beam_while_generating", False):
        return generator
    beam, generate = generator.beam_size, generator._generate
    set_beam_size(models, 1)

    @functools.wraps(generate)
    def generating(*args, **kwargs):
        set_beam_size(models, beam)
        try:
            return generate(*args, **kwargs)
        finally:
            set_beam_size(models, 1)

    generator._generate = generating
    generator._beam_while_generating = True
    return generator


def set_beam_size(models, beam):
    """Tell every model that has beamable attention its beam size, 1 included (BART's
    ``set_beam_size`` swaps in a no-op encoder reorder for a beam above 1; at 1 the encoder's own
    reorder is put back)."""
    for model in models:
        if getattr(model, "set_beam_size", None) is None:
            continue
        model.set_beam_size(beam)
        encoder = getattr(model, "encoder", None)
        if beam == 1 and encoder is not None and "reorder_encoder_out" in vars(encoder):
            del encoder.reorder_encoder_out


def keep_last_batch(batch_by_size):
    """Wrap fairseq's ``batch_by_size`` so that no index is left out of the batches."""

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

    return wrapped


def repaired_lines(stream, source="<stdin>"):
    """Lines of ``stream`` (bytes, or text that may hold the surrogate escapes of undecodable
    bytes) as text: invalid UTF-8 becomes U+FFFD, each repaired line logged with its number, and
    the count at the end; no line stops the run."""
    repaired = 0
    for number, raw in enumerate(stream, 1):
        if isinstance(raw, str):
            try:
                raw = raw.encode("utf-8", errors="surrogateescape")
            except UnicodeEncodeError:
                raw = raw.encode("utf-8", errors="surrogatepass")
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as err:
            line = raw.decode("utf-8", errors="replace")
            repaired += 1
            logger.warning(f"{source} line {number}: invalid UTF-8 at byte {err.start} replaced by U+FFFD")
        yield line
    if repaired:
        logger.warning(f"{source}: {repaired} line(s) of invalid UTF-8 repaired (U+FFFD)")


def repairing_buffered_read(buffered_read):
    """Replace ``fairseq_cli.interactive.buffered_read``: the same buffers of stripped lines,
    read as bytes and decoded by :func:`repaired_lines`. fairseq reads stdin as text, so a line
    of invalid UTF-8 reached sentencepiece as lone surrogates (a pybind11 cast error) or raised
    UnicodeDecodeError, and the lines after it got no output."""

    @functools.wraps(buffered_read)
    def wrapped(input, buffer_size):
        stdin = getattr(sys.stdin, "buffer", sys.stdin)  # a text stream where stdin was replaced
        stream = stdin if input == "-" else open(input, "rb")
        buffer = []
        try:
            for line in repaired_lines(stream, "<stdin>" if input == "-" else input):
                buffer.append(line.strip())
                if len(buffer) >= buffer_size:
                    yield buffer
                    buffer = []
        finally:
            if stream is not stdin:
                stream.close()
        if buffer:
            yield buffer

    return wrapped
