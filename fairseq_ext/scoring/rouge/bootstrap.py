"""ROUGE-1.5.5's averaging and bootstrap confidence intervals, reproduced bit for bit.

ROUGE-1.5.5 (``computeAverages``, ``bootstrapResampling``) reports, for each of R, P and F,
the mean of ``-r`` bootstrap means (not the plain mean) and the ``-c``% interval read off the
sorted bootstrap means. Resample ``i`` draws its instance indices as ``int(rand(N))`` after
``srand(i)``; Perl's ``rand`` is its built-in drand48 (Perl >= 5.20 on every platform), so the
draws, and with them the printed figures, are reproducible and are reproduced here exactly.
The instances are taken in Perl's order: their ``"evalID.peerID"`` keys sorted as strings.
"""

from typing import Sequence

import numpy as np

# Perl_drand48_r: a 48-bit linear congruential generator seeded as FreeBSD's srand48.
DRAND48_MULTIPLIER = 0x5DEECE66D
DRAND48_ADDEND = 0xB
DRAND48_MASK = (1 << 48) - 1
DRAND48_SEED_LOW = 0x330E
DRAND48_BITS = 48


def perl_resample_indices(resamples: int, count: int) -> np.ndarray:
    """Instance indices of ROUGE-1.5.5's bootstrap: row ``i`` is ``srand(i)`` then ``count`` draws.

    Returns an int64 array of shape ``(resamples, count)``.
    """
    state = (np.arange(resamples, dtype=np.uint64) << np.uint64(16)) | np.uint64(DRAND48_SEED_LOW)
    multiplier, addend, mask = (np.uint64(x) for x in (DRAND48_MULTIPLIER, DRAND48_ADDEND, DRAND48_MASK))
    indices = np.empty((resamples, count), dtype=np.int64)  # (R, N)
    for k in range(count):
        state = (state * multiplier + addend) & mask  # wraps modulo 2**64, then keeps 48 bits
        uniform = np.ldexp(state.astype(np.float64), -DRAND48_BITS)  # exact, as Perl's ldexp
        indices[:, k] = np.floor(uniform * count)  # int(rand(N)) = trunc(N * drand48())
    return indices


def perl_eval_order(line_ids: Sequence[int]) -> list[int]:
    """Positions of ``line_ids`` by evaluation ID: entry ``t - 1`` is evaluation ``t``.

    files2rouge names the files after the 0-based line numbers and pyrouge numbers the
    evaluations 1..K in the sorted order of those names (``s.10.txt`` before ``s.2.txt``).
    """
    return sorted(range(len(line_ids)), key=lambda pos: str(line_ids[pos]))


def perl_instance_order(line_ids: Sequence[int]) -> list[int]:
    """Positions of ``line_ids`` in the order ROUGE-1.5.5 averages and resamples them.

    ROUGE-1.5.5 sorts the ``"evalID.peerID"`` keys as strings, i.e. the evaluation IDs as strings.
    """
    by_eval = perl_eval_order(line_ids)
    return [by_eval[eval_id - 1] for eval_id in sorted(range(1, len(line_ids) + 1), key=str)]


def _perl_index(values: Sequence[float], index: int) -> float:
    """``$array[$index]`` in Perl: negative indices count from the end, a missing element is 0."""
    return values[index] if -len(values) <= index < len(values) else 0.0


def rouge155_average(scores: np.ndarray, confidence: float = 95.0, resamples: int = 1000,
                     indices: np.ndarray | None = None) -> list[tuple[float, float, float]]:
    """ROUGE-1.5.5's reported average and confidence interval of each column of ``scores``.

    ``scores`` is ``(N, C)``: per-instance scores (already rounded to 5 decimals as ROUGE-1.5.5
    rounds them) in Perl's instance order. Returns ``(average, low, high)`` per column, each
    rounded to 5 decimals. ``indices`` (from :func:`perl_resample_indices`) may be shared
    between calls on the same instances. ``resamples=0`` gives the plain mean and no interval
    (``low == high == average``); ROUGE-1.5.5 itself needs at least one resample.
    """
    count, columns = scores.shape
    if count == 0:
        raise ValueError("ROUGE needs at least one summary/reference pair")
    if resamples == 0:
        means = [rouge155_round(_sequential_sum(scores[:, c]) / count) for c in range(columns)]
        return [(m, m, m) for m in means]
    if indices is None:
        indices = perl_resample_indices(resamples, count)
    sample_sums = np.zeros((resamples, columns))  # (R, C)
    for k in range(count):  # sequential sums, as Perl adds: same floating-point result
        sample_sums += scores[indices[:, k]]
    sample_means = sample_sums / count  # (R, C)

    delta = resamples * ((100 - confidence) / 2.0) / 100.0
    upper_low = int(resamples - delta - 1)
    lower_low = int(delta)
    ratio = resamples - delta - 1 - upper_low  # ROUGE-1.5.5 uses the upper ratio for both ends
    results = []
    for c in range(columns):
        ranked = sorted(sample_means[:, c].tolist())
        average = rouge155_round(_sequential_sum(ranked) / resamples)
        low_a, low_b = _perl_index(ranked, lower_low), _perl_index(ranked, lower_low + 1)
        high_a, high_b = _perl_index(ranked, upper_low), _perl_index(ranked, upper_low + 1)
        results.append((average, rouge155_round(low_a + (low_b - low_a) * ratio),
                        rouge155_round(high_a + (high_b - high_a) * ratio)))
    return results


def _sequential_sum(values) -> float:
    """Left-to-right float sum (``sum`` and numpy may compensate or pair up terms)."""
    total = 0.0
    for value in values:
        total += float(value)
    return total


def rouge155_round(value: float) -> float:
    """Perl's ``sprintf("%7.5f", value)`` read back as a number: how ROUGE-1.5.5 rounds scores."""
    return float(f"{value:7.5f}")
