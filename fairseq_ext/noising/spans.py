"""T5 span corruption (Raffel et al. 2020, section 3.1.4), as BART-LS (section 2.2) and Z-Code++
(section 2.1) pre-train with it: ``noise_density`` of a body's tokens, in spans of mean length
``mean_span_length``, each span one sentinel in the source::

    body     a b c d e f g h
    noise    . . x x . . . x        2 spans: clean, noise, clean, noise
    source   a b S0 e f g S1 </s>
    target   S0 c d S1 h </s>       (BART-LS puts <s> before both)

The counts are T5's ``random_spans_noise_mask`` (a clean span first, no ``random_roll``), the
span count capped where T5's rule would ask for more non-empty spans than tokens. Span ``i``
uses sentinel ``i mod len(sentinels)``.
"""

import numpy as np
import torch

#: The shortest body a span corruption can cut (one clean and one noise token).
MIN_BODY_TOKENS = 2


def span_counts(length, noise_density, mean_span_length):
    """``(num_noise_tokens, num_noise_spans)`` of a body of ``length`` tokens; vectorized over
    numpy arrays (``length`` and ``mean_span_length`` broadcast), numpy integers out."""
    if not 0.0 <= noise_density <= 1.0:
        raise ValueError(f"noise density must lie in [0, 1], got {noise_density}")
    mean = np.asarray(mean_span_length, dtype=np.float64)
    if np.any(mean <= 0):
        raise ValueError(f"mean span length must be positive, got {mean_span_length}")
    length = np.asarray(length, dtype=np.int64)
    num_noise = np.clip(np.round(length * noise_density).astype(np.int64), 1, np.maximum(length - 1, 1))
    num_spans = np.round(num_noise / mean).astype(np.int64)
    num_spans = np.minimum(np.maximum(num_spans, 1), np.minimum(num_noise, length - num_noise))
    return num_noise, num_spans


def corrupted_lengths(length, noise_density, mean_span_length, bos=True):
    """``(source, target)`` lengths :func:`corrupt_spans` gives a body of ``length`` tokens
    (``</s>`` included, and ``<s>`` when ``bos``); vectorized like :func:`span_counts`."""
    num_noise, num_spans = span_counts(length, noise_density, mean_span_length)
    specials = 1 + int(bos)
    return np.asarray(length) - num_noise + num_spans + specials, num_noise + num_spans + specials


def _random_segmentation(total, parts, generator):
    """``parts`` positive integers summing to ``total``, every such split equally likely."""
    cuts = torch.randperm(total - 1, generator=generator)[: parts - 1] + 1  # distinct cut points
    bounds = torch.cat([torch.zeros(1, dtype=torch.long), cuts.sort().values, torch.tensor([total])])
    return bounds[1:] - bounds[:-1]  # (parts,)


def random_spans_noise_mask(length, noise_density, mean_span_length, generator=None):
    """(length,) bool, ``True`` on noise tokens, counted by :func:`span_counts`; the body starts
    with a clean span and ends with a noise span. ``generator`` (a ``torch.Generator``) makes
    it reproducible.

    Picture for ``length = 10``, 3 noise tokens in 2 spans: ``. . x . . . . . x x``
    """
    if length < MIN_BODY_TOKENS:
        raise ValueError(f"span corruption needs at least {MIN_BODY_TOKENS} tokens, got {length}")
    num_noise, num_spans = (int(n) for n in span_counts(length, noise_density, mean_span_length))
    noise_lengths = _random_segmentation(num_noise, num_spans, generator)  # (S,)
    clean_lengths = _random_segmentation(length - num_noise, num_spans, generator)  # (S,)
    span_lengths = torch.stack([clean_lengths, noise_lengths], dim=1).reshape(-1)  # (2S,) clean, noise, ...
    is_noise = torch.tensor([False, True]).repeat(num_spans)  # (2S,)
    return is_noise.repeat_interleave(span_lengths)  # (length,)


def span_starts(noise_mask):
    """(..., L) bool: ``True`` where a noise span begins."""
    previous = torch.nn.functional.pad(noise_mask[..., :-1], (1, 0), value=False)
    return noise_mask & ~previous


def corrupt_spans(body, noise_mask, sentinels, eos, bos=None):
    """``(source, target)`` of ``body`` (1-D LongTensor without ``<s>``/``</s>``): each noise
    span of ``noise_mask`` becomes its sentinel in the source; the target is every sentinel
    followed by its span. Both end with ``eos`` and, when ``bos`` is given, start with it."""
    sentinels = torch.as_tensor(sentinels, dtype=body.dtype, device=body.device)
    starts = span_starts(noise_mask)  # (L,)
    span_of = (starts.long().cumsum(0) - 1).clamp(min=0) % len(sentinels)  # (L,)
    # each position emits up to two symbols: its span's sentinel (at a span start) and itself
    pairs = torch.stack([sentinels[span_of], body], dim=1).reshape(-1)  # (2L,)
    source_keep = torch.stack([starts, ~noise_mask], dim=1).reshape(-1)  # (2L,)
    target_keep = torch.stack([starts, noise_mask], dim=1).reshape(-1)  # (2L,)
    head = body.new_tensor([] if bos is None else [bos])
    tail = body.new_tensor([eos])
    return torch.cat([head, pairs[source_keep], tail]), torch.cat([head, pairs[target_keep], tail])


def dynamic_mean_span(span_lengths, count, generator=None):
    """(count,) float64 numpy array of mean span lengths, each drawn uniformly from
    ``span_lengths`` (BART-LS's dynamic variant: {4, 8, 12})."""
    choices = np.asarray(span_lengths, dtype=np.float64)
    return choices[torch.randint(len(choices), (count,), generator=generator).numpy()]
