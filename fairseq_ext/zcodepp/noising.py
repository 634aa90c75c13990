"""Phase-one corruptions (Z-Code++ Section 2.1): MLM masking for the generator, replaced-token
sampling for the discriminator, and T5-style corrupted spans for the encoder-decoder.

    original          a  b  c  d  e  f  g  h  i  j
    MLM (15%)         a  b  M  d  e  f  g  M  i  j        generator predicts c, h
    RTD               a  b  c' d  e  f  g  h  i  j        c' ~ generator; label 1 iff c' != c
    CSP source        a  b  S0 e  f  g  S1 j               spans of mean length 3, 15% of tokens
    CSP target        S0 c  d  S1 h  i  </s>

The numpy functions take a ``numpy.random.Generator`` so that a dataset seeded by
``(seed, epoch, index)`` corrupts the same example the same way on every run.
"""

import numpy as np
import torch


def mlm_mask(candidates, mask_prob, rng):
    """Boolean mask choosing ``round(mask_prob * n)`` (at least one) of the ``n`` True entries
    of ``candidates`` (a boolean array), uniformly without replacement."""
    positions = np.flatnonzero(candidates)
    mask = np.zeros(len(candidates), dtype=bool)
    if len(positions) == 0:
        return mask
    count = min(len(positions), max(1, int(round(mask_prob * len(positions)))))
    mask[rng.choice(positions, size=count, replace=False)] = True
    return mask


def _random_segmentation(num_items, num_segments, rng):
    """Lengths of a uniformly random split of ``num_items`` into ``num_segments`` non-empty parts."""
    starts = np.zeros(num_items, dtype=np.int64)
    starts[1 + rng.choice(num_items - 1, size=num_segments - 1, replace=False)] = 1
    return np.bincount(np.cumsum(starts), minlength=num_segments)


def span_count(length, noise_density, mean_span_length):
    """How many noise spans :func:`random_spans_noise_mask` makes for ``length`` tokens."""
    num_noise = min(max(int(round(length * noise_density)), 1), length - 1)
    return max(1, min(int(round(num_noise / mean_span_length)), num_noise, length - num_noise))


def random_spans_noise_mask(length, noise_density, mean_span_length, rng):
    """T5's span corruption mask: ``round(density * length)`` noisy tokens in spans averaging
    ``mean_span_length``, alternating with clean spans and starting with a clean one.

    Picture for ``length = 10``, 3 noisy tokens, 1 span: ``. . . x x x . . . .``
    Needs ``length >= 2`` (one clean and one noisy token).
    """
    if length < 2:
        raise ValueError(f"span corruption needs at least 2 tokens, got {length}")
    num_noise = min(max(int(round(length * noise_density)), 1), length - 1)
    num_spans = span_count(length, noise_density, mean_span_length)
    noise_lengths = _random_segmentation(num_noise, num_spans, rng)
    clean_lengths = _random_segmentation(length - num_noise, num_spans, rng)
    interleaved = np.stack([clean_lengths, noise_lengths], axis=1).reshape(-1)  # clean, noise, ...
    is_noise = np.tile([False, True], num_spans)
    return np.repeat(is_noise, interleaved)  # (length,)


def corrupt_spans(tokens, noise_mask, sentinels, eos):
    """``(source, target)`` LongTensors: each noisy span of ``tokens`` replaced by the next
    sentinel in the source; the target lists every sentinel followed by its span, then ``eos``."""
    noise = torch.from_numpy(noise_mask)
    span_start = noise & ~torch.cat([noise.new_zeros(1), noise[:-1]])  # (T,)
    span_id = torch.cumsum(span_start.long(), 0) - 1  # (T,) index of the span a token is in
    if int(span_start.sum()) > len(sentinels):
        raise ValueError(f"{int(span_start.sum())} spans but only {len(sentinels)} sentinels")
    sentinels = torch.as_tensor(sentinels, dtype=tokens.dtype)
    eos_t = tokens.new_tensor([eos])

    source = tokens.clone()
    source[span_start] = sentinels[span_id[span_start]]
    source = torch.cat([source[~noise | span_start], eos_t])

    target = torch.full((2 * len(tokens),), -1, dtype=tokens.dtype)
    # each noisy token is preceded by its span's sentinel when it opens the span
    order = torch.arange(len(tokens)) + torch.cumsum(span_start.long(), 0)  # slot of every token
    target[order[noise]] = tokens[noise]
    target[order[span_start] - 1] = sentinels[span_id[span_start]]
    target = torch.cat([target[target.ge(0)], eos_t])
    return source, target


def sample_replacements(logits, temperature=1.0, blocked_ids=None):
    """Tokens (M,) sampled from ``softmax(logits / temperature)`` (M, V); ``blocked_ids`` (pad,
    ``<mask>``, sentinels, ...) are never drawn. No gradient flows back into ``logits``."""
    logits = logits.detach().float() / temperature
    if blocked_ids is not None:
        logits[:, blocked_ids] = float("-inf")
    return torch.multinomial(torch.softmax(logits, dim=-1), 1).squeeze(1)  # (M,)
