"""MASS span masking (Song et al. 2019), as ProphetNet pre-trains with it (section 3.1): one
contiguous span of ``mask_prob`` of every chunk, 80/10/10 masked/random/kept, the decoder
predicting the fragments only. Chunks of 5, ``mask_prob`` 0.4::

    block    a b c d e | f g h i j
    spans      ^ ^     |     ^ ^
    source   a M M d e | f g M i j     (M = mask; 10% random, 10% kept: :func:`.bert.bert_noise`)
    target   b c h i </s>              (the fragments, in order, then </s>)
    segment  0 0 2 2 2                 (index in target where each token's span starts)

``segment`` keeps the predicting streams inside a span
(:func:`fairseq_ext.prophetnet.loss.ngram_targets`). A span's length depends on its chunk's
length alone, so target lengths are known before any randomness.
"""

import numpy as np
import torch

from .bert import bert_noise


def span_lengths(length, chunk=64, mask_prob=0.15):
    """Masked-span length of every ``chunk``-token chunk of a ``length``-token block."""
    if chunk < 1 or not 0.0 < mask_prob < 1.0:
        raise ValueError(f"need chunk >= 1 and 0 < mask_prob < 1, got chunk={chunk}, mask_prob={mask_prob}")
    sizes = np.minimum(chunk, length - np.arange(0, length, chunk))  # tokens in each chunk
    return np.maximum(1, np.rint(sizes * mask_prob)).astype(np.int64) * (sizes > 1)  # 1-token chunks unmasked


def target_length(length, chunk=64, mask_prob=0.15):
    """Length of the decoder target (fragments + ``</s>``) of a ``length``-token block."""
    return int(span_lengths(length, chunk, mask_prob).sum()) + 1


def span_mask(tokens, mask_idx, eos, random_low, random_high, chunk=64, mask_prob=0.15,
              random_token_prob=0.1, leave_unmasked_prob=0.1, generator=None):
    """Mask one random span in every ``chunk`` tokens of ``tokens`` (1-D LongTensor).

    Args:
        random_low, random_high: range ``[low, high)`` of random replacement ids (no specials).
        mask_prob: the fraction of each chunk in its span.
        random_token_prob, leave_unmasked_prob: how masked tokens are replaced (the rest
            become ``mask_idx``).
        generator: a ``torch.Generator`` (the caller seeds it per sample and epoch).

    Returns:
        ``(source, target, segment_start)`` LongTensors as in the module docstring.
    """
    length = len(tokens)
    lengths = torch.from_numpy(span_lengths(length, chunk, mask_prob))  # (chunks,)
    chunk_starts = torch.arange(0, length, chunk)  # (chunks,)
    sizes = (length - chunk_starts).clamp(max=chunk)  # (chunks,)
    offsets = torch.rand(len(lengths), generator=generator, dtype=torch.float64)  # (chunks,)
    begins = chunk_starts + (offsets * (sizes - lengths + 1)).floor().long()  # (chunks,)
    begins, lengths = begins[lengths > 0], lengths[lengths > 0]  # (S,)
    first = (lengths.cumsum(0) - lengths).repeat_interleave(lengths)  # (M,) target index of each token's span
    positions = begins.repeat_interleave(lengths) + torch.arange(int(lengths.sum())) - first  # (M,) in order

    selected = torch.zeros(length, dtype=torch.bool)
    selected[positions] = True
    source = bert_noise(tokens, selected, mask_idx, random_low, random_high, random_token_prob,
                        leave_unmasked_prob, generator)
    target = torch.cat([tokens[positions], tokens.new_tensor([eos])])
    last_start = first[-1:] if len(first) else first.new_zeros(1)
    segment_start = torch.cat([first, last_start])  # </s> closes the last span
    return source, target, segment_start
