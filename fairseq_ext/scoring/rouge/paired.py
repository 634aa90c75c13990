"""Is one system's ROUGE above another's on the same documents? A paired test of the difference.

Per document ``i``, the F of system A and of system B against the same reference (ROUGE-1.5.5's
per-pair scores, as files2rouge computes them; their mean is its corpus figure, which ROUGE-1.5.5
prints as the mean of its bootstrap means, a few 1e-4 away), and the difference
``d_i = A_i - B_i``. Two views of the mean difference, both with a fixed seed:

* a paired bootstrap interval: documents drawn with replacement, the mean of ``d`` each time,
  the percentile interval (Koehn 2004, "Statistical Significance Tests for Machine Translation
  Evaluation"; Berg-Kirkpatrick et al. 2012, "An Empirical Investigation of Statistical
  Significance in NLP");
* a two-sided sign-flip permutation p-value (approximate randomization: under "no difference"
  each document's two scores could be swapped, so each ``d_i`` keeps its size and takes either
  sign): ``p = (1 + #{|mean of flipped d| >= |mean d|}) / (1 + R)`` (Noreen 1989; Riezler and
  Maxwell 2005, "On Some Pitfalls in Automatic Evaluation and Significance Testing for MT").

An interval of a difference, not the overlap of two systems' own intervals: the same papers are
easy or hard for both, which the pairing removes.
"""

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from .scores import method_tag, pair_scores

F = 2  # column of F in pair_scores' (R, P, F)


@dataclass(frozen=True)
class PairedResult:
    """One ROUGE variant: the two systems' means, their difference, its interval and p-value
    (F in [0, 1])."""

    key: str
    mean_a: float
    mean_b: float
    difference: float
    low: float
    high: float
    p_value: float


def paired_test(a: np.ndarray, b: np.ndarray, resamples: int = 10000, confidence: float = 0.95,
                seed: int = 1, key: str = "") -> PairedResult:
    """The paired bootstrap interval and sign-flip p-value of ``mean(a - b)``; ``a``, ``b``: (N,)
    per-document scores of the same documents."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if a.shape != b.shape or a.ndim != 1 or len(a) == 0:
        raise ValueError(f"paired scores need two equal, non-empty lists, got {a.shape} and {b.shape}")
    d = a - b  # (N,)
    rng = np.random.default_rng(seed)
    means = d[rng.integers(0, len(d), size=(resamples, len(d)))].mean(axis=1)  # (R,)
    tail = (1 - confidence) / 2
    low, high = np.quantile(means, [tail, 1 - tail])
    signs = rng.choice(np.array([-1.0, 1.0]), size=(resamples, len(d)))  # (R, N)
    flipped = np.abs((signs * d).mean(axis=1))  # (R,)
    observed = abs(d.mean())
    extreme = int(np.sum(flipped >= observed - 1e-12))
    p_value = (1 + extreme) / (1 + resamples)
    return PairedResult(key, float(a.mean()), float(b.mean()), float(d.mean()), float(low), float(high), p_value)


def compare_systems(hyps_a: Sequence[Sequence[str]], hyps_b: Sequence[Sequence[str]], refs: Sequence[Sequence[str]],
                    use_stemmer: bool = False, resamples: int = 10000, confidence: float = 0.95,
                    seed: int = 1) -> list:
    """:func:`paired_test` of every ROUGE variant files2rouge reports, for two systems'
    sentence-split summaries of the same documents."""
    if not len(hyps_a) == len(hyps_b) == len(refs):
        raise ValueError(f"{len(hyps_a)} and {len(hyps_b)} summaries of {len(refs)} documents: pair them line by line")
    table_a, table_b = pair_scores(hyps_a, refs, use_stemmer), pair_scores(hyps_b, refs, use_stemmer)
    return [paired_test(table_a[key][:, F], table_b[key][:, F], resamples, confidence, seed, key) for key in table_a]


def format_table(results, name_a="A", name_b="B", confidence=0.95):
    """A markdown table of :func:`compare_systems`' results, in percent."""
    level = f"{confidence * 100:g}%"
    lines = [f"| ROUGE F | {name_a} | {name_b} | difference | {level} interval (paired bootstrap) | p (sign flip) |",
             "|---|---|---|---|---|---|"]
    for r in results:
        lines.append(f"| {method_tag(r.key)} | {100 * r.mean_a:.2f} | {100 * r.mean_b:.2f} | "
                     f"{100 * r.difference:+.2f} | {100 * r.low:+.2f} to {100 * r.high:+.2f} | {r.p_value:.4f} |")
    return "\n".join(lines) + "\n"
