"""MASS-style span masking for ProphetNet pre-training (paper section 3.1).

"The input length of ProphetNet is set to 512. We randomly mask a continuous span in every
64 tokens. 80% of the masked tokens are replaced by [M], 10% replaced by random tokens, and
10% unchanged. The masked length is set to 15% of the total number of tokens. [...] the
decoder only predicts the masked fragment." For a block of 10 tokens, chunks of 5 and a 40%
ratio (two spans of 2)::

    block    a b c d e | f g h i j
    spans      ^ ^     |     ^ ^
    source   a M M d e | f g M i j     (M = mask; 10% random, 10% kept)
    target   b c h i </s>              (the fragments, in order, then </s>)
    segment  0 0 2 2 2                 (index in target where each token's span starts)

The decoder input is ``</s> b c h i``; :func:`fairseq_ext.prophetnet.loss.ngram_targets`
uses ``segment`` so that the predicting streams forecast future tokens inside a span only.
The span length of a chunk depends on the chunk's length alone, so target lengths are known
before any randomness (batching needs them).
"""

import numpy as np


def span_lengths(length, chunk=64, ratio=0.15):
    """Masked-span length of every ``chunk``-token chunk of a ``length``-token block."""
    if chunk < 1 or not 0.0 < ratio < 1.0:
        raise ValueError(f"need chunk >= 1 and 0 < ratio < 1, got chunk={chunk}, ratio={ratio}")
    sizes = np.minimum(chunk, length - np.arange(0, length, chunk))  # tokens in each chunk
    return np.maximum(1, np.rint(sizes * ratio)).astype(np.int64) * (sizes > 1)  # 1-token chunks unmasked


def target_length(length, chunk=64, ratio=0.15):
    """Length of the decoder target (fragments + ``</s>``) of a ``length``-token block."""
    return int(span_lengths(length, chunk, ratio).sum()) + 1


def span_mask(tokens, rng, mask_idx, eos, random_low, random_high, chunk=64, ratio=0.15,
              mask_prob=0.8, random_prob=0.1):
    """Mask one random span in every ``chunk`` tokens of ``tokens`` (1-D int array).

    Args:
        rng: a :class:`numpy.random.Generator` (the caller seeds it per sample and epoch).
        random_low, random_high: range ``[low, high)`` of random replacement ids (no specials).
        mask_prob, random_prob: how masked tokens are replaced (the rest stay unchanged).

    Returns:
        ``(source, target, segment_start)`` int64 arrays as in the module docstring.
    """
    if mask_prob < 0 or random_prob < 0 or mask_prob + random_prob > 1:
        raise ValueError(f"need mask_prob, random_prob >= 0 and a sum <= 1, got {mask_prob}, {random_prob}")
    tokens = np.asarray(tokens, dtype=np.int64)
    length = len(tokens)
    lengths = span_lengths(length, chunk, ratio)  # (chunks,)
    chunk_starts = np.arange(0, length, chunk)
    sizes = np.minimum(chunk, length - chunk_starts)
    begins = chunk_starts + np.floor(rng.random(len(lengths)) * (sizes - lengths + 1)).astype(np.int64)
    begins = begins[lengths > 0]
    lengths = lengths[lengths > 0]
    first = np.repeat(np.cumsum(lengths) - lengths, lengths)  # target index where each token's span starts
    positions = np.repeat(begins, lengths) + np.arange(lengths.sum()) - first  # masked positions, in order

    source = tokens.copy()
    draw = rng.random(len(positions))
    replace_mask = draw < mask_prob
    replace_random = (draw >= mask_prob) & (draw < mask_prob + random_prob)
    source[positions[replace_mask]] = mask_idx
    source[positions[replace_random]] = rng.integers(random_low, random_high, int(replace_random.sum()))

    target = np.concatenate([tokens[positions], [eos]]).astype(np.int64)
    last_start = first[-1] if len(first) else 0
    segment_start = np.concatenate([first, [last_start]]).astype(np.int64)  # </s> closes the last span
    return source, target, segment_start
