"""Choosing among a beam's candidates after the search: minimum Bayes risk and repeated phrases.

Minimum Bayes risk decoding (Kumar and Byrne, "Minimum Bayes-Risk Decoding for Statistical
Machine Translation", NAACL 2004; for summaries and modern models, Freitag et al., "High Quality
Rather than High Model Probability: Minimum Bayes Risk Decoding with Neural Metrics", TACL 2022)
picks the candidate with the highest expected utility against the others, the others standing
in for the unknown reference: ``U(c) = sum_j w_j ROUGE-n(c, c_j)`` over the other candidates,
with weights ``w = softmax(score / temperature)`` of the beam's scores (uniform as the
temperature grows).

A document whose summary is written a line at a time (ACLSum's three aspects, each decoded on its
own) can repeat a phrase across its lines that no single search could see. :func:`choose_document`
therefore chooses one candidate per line jointly: the highest total utility minus
``repeat_penalty`` times the word bigrams of the joined summary that repeat an earlier one (the
count of :func:`fairseq_ext.scoring.fluency.repeated_bigrams`).

Utilities use the words ROUGE scores (:func:`fairseq_ext.scoring.rouge.tokenizer.rouge155_tokens`,
no stemming) and the n-gram F-measure with ROUGE-1.5.5's clipped counts.
"""

from __future__ import annotations

import itertools
import math
from collections import Counter
from dataclasses import dataclass
from typing import List, Sequence

from ..scoring.fluency import words
from ..scoring.rouge.tokenizer import rouge155_tokens

#: the most joint choices one document may have (candidates per line multiplied)
MAX_COMBINATIONS = 1 << 16


@dataclass(frozen=True)
class Candidate:
    """One hypothesis of a beam: its score (fairseq's H- score) and its text (words)."""

    score: float
    text: str


def ngrams(tokens: Sequence[str], n: int) -> Counter:
    """The n-grams of ``tokens`` with their counts."""
    return Counter(tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1))


def ngram_f(a: Counter, b: Counter) -> float:
    """ROUGE-n F-measure (alpha 0.5) of two n-gram counts: clipped overlap over each side's total."""
    total_a, total_b = sum(a.values()), sum(b.values())
    if not total_a or not total_b:
        return 0.0
    hits = sum((a & b).values())
    if not hits:
        return 0.0
    precision, recall = hits / total_a, hits / total_b
    return 2 * precision * recall / (precision + recall)


def weights(scores: Sequence[float], temperature: float) -> List[float]:
    """``softmax(score / temperature)``; uniform for an infinite temperature."""
    if not scores:
        return []
    if math.isinf(temperature):
        return [1.0 / len(scores)] * len(scores)
    if temperature <= 0:
        raise ValueError(f"temperature must be positive, got {temperature}")
    top = max(scores)
    exps = [math.exp((s - top) / temperature) for s in scores]
    total = sum(exps)
    return [e / total for e in exps]


def utilities(candidates: Sequence[Candidate], orders: Sequence[int] = (2,),
              temperature: float = math.inf) -> List[float]:
    """Each candidate's expected ROUGE (the mean F of ``orders``) against the other candidates.

    A single candidate has utility 0 (nothing to compare with); the weights of the others are
    renormalized without the candidate itself.
    """
    if not orders or any(n < 1 for n in orders):
        raise ValueError(f"n-gram orders must be at least 1, got {list(orders)}")
    tokens = [rouge155_tokens(c.text) for c in candidates]
    counts = [[ngrams(t, n) for n in orders] for t in tokens]
    w = weights([c.score for c in candidates], temperature)
    result = []
    for i in range(len(candidates)):
        mass = sum(w[j] for j in range(len(candidates)) if j != i)
        if mass <= 0:
            result.append(0.0)
            continue
        total = 0.0
        for j in range(len(candidates)):
            if j != i:
                f = sum(ngram_f(counts[i][k], counts[j][k]) for k in range(len(orders))) / len(orders)
                total += w[j] * f
        result.append(total / mass)
    return result


def repeated_bigram_count(lines: Sequence[str]) -> int:
    """Word bigrams of the lines joined into one summary that repeat an earlier bigram."""
    ws = words(" ".join(lines))
    bigrams = list(zip(ws, ws[1:]))
    return len(bigrams) - len(set(bigrams))


def choose_document(lines: Sequence[Sequence[Candidate]], orders: Sequence[int] = (2,),
                    temperature: float = math.inf, repeat_penalty: float = 0.0,
                    mbr: bool = True) -> List[int]:
    """The index of the chosen candidate of every line of one document.

    ``mbr=False`` ranks by the beam's own score instead of the expected ROUGE (the repeat
    penalty still applies, in the units of the score). Candidates are tried jointly
    (at most :data:`MAX_COMBINATIONS` choices) when ``repeat_penalty`` is set, else line by line.
    Ties keep the beam's order.
    """
    if any(not line for line in lines):
        raise ValueError("every line needs at least one candidate")
    gains = [utilities(line, orders, temperature) if mbr else [c.score for c in line] for line in lines]
    if not repeat_penalty:
        return [max(range(len(g)), key=lambda i, g=g: (g[i], -i)) for g in gains]
    combinations = math.prod(len(line) for line in lines)
    if combinations > MAX_COMBINATIONS:
        raise ValueError(f"{combinations} joint choices in one document (at most {MAX_COMBINATIONS}): "
                         "fewer candidates (--nbest) or fewer lines per document")
    best, best_value = None, -math.inf
    for choice in itertools.product(*(range(len(line)) for line in lines)):
        value = sum(g[i] for g, i in zip(gains, choice))
        value -= repeat_penalty * repeated_bigram_count([line[i].text for line, i in zip(lines, choice)])
        if value > best_value:
            best, best_value = list(choice), value
    return best
