"""T5-style span corruption for BART-LS pre-training (section 2.2, "T5 span denoising").

A fraction ``noise_density`` of a document's tokens, in spans of mean length
``mean_span_length``, is cut out; each span is replaced by a sentinel in the source and the
target lists the spans behind their sentinels (BART-LS public defaults: density 0.0625, mean
span 3; the "dynamic" variant draws the mean span per example from {4, 8, 12})::

    body     a b c d e f g h
    noise    . . x x . . x .        2 spans
    source   <s> a b S0 e f S1 h </s>
    target   <s> S0 c d S1 g </s>

Span ``i`` uses sentinel ``i mod num_sentinels`` (long documents can hold more spans than
sentinels; the order in the target still tells them apart). Everything is vectorized.
"""

import numpy as np
import torch


def noise_counts(length, noise_density, mean_span_length):
    """``(num_noise_tokens, num_noise_spans)`` of a body of ``length`` tokens (T5's rule)."""
    num_noise = int(round(length * noise_density))
    num_noise = min(max(num_noise, 1), length - 1)
    num_spans = max(int(round(num_noise / mean_span_length)), 1)
    return num_noise, min(num_spans, length - num_noise)


def corrupted_lengths(length, noise_density, mean_span_length):
    """Source and target lengths (``<s>``/``</s>`` included) of a body of ``length`` tokens;
    vectorized over numpy arrays, exactly what :func:`corrupt_spans` produces."""
    length = np.asarray(length, dtype=np.int64)
    mean = np.broadcast_to(np.asarray(mean_span_length, dtype=np.float64), length.shape)
    num_noise = np.clip(np.round(length * noise_density).astype(np.int64), 1, np.maximum(length - 1, 1))
    num_spans = np.minimum(np.maximum(np.round(num_noise / mean).astype(np.int64), 1), length - num_noise)
    return length - num_noise + num_spans + 2, num_noise + num_spans + 2


def _random_segmentation(total, parts, generator):
    """``parts`` positive integers summing to ``total``, uniformly at random."""
    cuts = torch.randperm(total - 1, generator=generator)[: parts - 1] + 1  # distinct cut points
    bounds = torch.cat([torch.zeros(1, dtype=torch.long), cuts.sort().values, torch.tensor([total])])
    return bounds[1:] - bounds[:-1]  # (parts,)


def random_spans_noise_mask(length, noise_density, mean_span_length, generator=None):
    """(length,) bool with ``round(length * noise_density)`` noisy tokens in
    ``round(noise / mean_span_length)`` spans; the body always starts with a clean span."""
    if length < 2:
        raise ValueError(f"span corruption needs at least 2 tokens, got {length}")
    num_noise, num_spans = noise_counts(length, noise_density, mean_span_length)
    noise_lengths = _random_segmentation(num_noise, num_spans, generator)  # (S,)
    clean_lengths = _random_segmentation(length - num_noise, num_spans, generator)  # (S,)
    span_lengths = torch.stack([clean_lengths, noise_lengths], dim=1).reshape(-1)  # (2S,) clean, noise, ...
    is_noise = torch.tensor([False, True]).repeat(num_spans)  # (2S,)
    return is_noise.repeat_interleave(span_lengths)  # (length,)


def span_starts(noise_mask):
    """(L,) bool: ``True`` where a noise span begins."""
    previous = torch.cat([noise_mask.new_zeros(1), noise_mask[:-1]])
    return noise_mask & ~previous


def span_ids(noise_mask):
    """(L,) long: the index of the span a noisy token belongs to, -1 on clean tokens."""
    ids = span_starts(noise_mask).long().cumsum(0) - 1
    return ids.masked_fill(~noise_mask, -1)


def corrupt_spans(body, noise_mask, sentinel_ids, bos, eos):
    """``(source, target)`` of a body (1-D LongTensor without ``<s>``/``</s>``): noise spans
    become sentinels in the source; the target is each span behind its sentinel."""
    starts = span_starts(noise_mask)  # (L,)
    sentinels = sentinel_ids[(starts.long().cumsum(0) - 1).clamp(min=0) % len(sentinel_ids)]  # (L,)
    # each position emits up to two symbols: its span's sentinel (at a span start) and itself
    pairs = torch.stack([sentinels, body], dim=1).reshape(-1)  # (2L,)
    source_keep = torch.stack([starts, ~noise_mask], dim=1).reshape(-1)  # (2L,)
    target_keep = torch.stack([starts, noise_mask], dim=1).reshape(-1)  # (2L,)
    bos_t, eos_t = body.new_tensor([bos]), body.new_tensor([eos])
    source = torch.cat([bos_t, pairs[source_keep], eos_t])
    target = torch.cat([bos_t, pairs[target_keep], eos_t])
    return source, target


def dynamic_mean_span(span_lengths, count, rng):
    """Mean span length per example drawn uniformly from ``span_lengths`` (numpy ``rng``)."""
    return rng.choice(np.asarray(span_lengths, dtype=np.float64), size=count)
