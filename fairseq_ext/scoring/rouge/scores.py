"""ROUGE-1.5.5 figures computed with Google's ``rouge-score``: its n-gram and summary-level LCS
hits with ROUGE-1.5.5's tokenizer, then the Perl script's rounding, F, ``-a`` average and
bootstrap interval (:mod:`.bootstrap`). Equal to the Perl script's to the last printed digit
(with ``-m``: to the Perl script with an empty WordNet exception database).
"""

from functools import cache
from typing import Sequence

import numpy as np
from rouge_score import rouge_scorer, scoring

from .bootstrap import perl_instance_order, perl_resample_indices, rouge155_average, rouge155_round
from .tokenizer import Rouge155Tokenizer

ROUGE_L = "rougeL"
DEFAULT_EOS = "."
DEFAULT_ALPHA = 0.5  # ROUGE-1.5.5's -p: weight of recall against precision in F
DEFAULT_CONFIDENCE = 95.0  # -c
DEFAULT_RESAMPLES = 1000  # -r
DEFAULT_MAX_N = 2  # -n
MAX_ROUGE_SCORE_N = 9  # rouge-score names n-gram types rouge1..rouge9
PEER_ID = "1"  # pyrouge's system ID, which starts every line files2rouge prints
RESULT_SEPARATOR = "-" * 45  # the line ROUGE-1.5.5 prints before each metric's results
PER_EVAL_SEPARATOR = "." * 45  # and before its per-evaluation scores (-d)


def rouge_keys(max_n: int | None = DEFAULT_MAX_N, rouge_l: bool = True) -> list[str]:
    """``["rouge1", ..., "rouge<max_n>", "rougeL"]``, the order ROUGE-1.5.5 prints them in."""
    keys = [f"rouge{n}" for n in range(1, (max_n or 0) + 1)]
    return keys + [ROUGE_L] if rouge_l else keys


def method_tag(key: str) -> str:
    """ROUGE-1.5.5's label for a key: ``rouge2`` -> ``ROUGE-2``, ``rougeL`` -> ``ROUGE-L``."""
    return "ROUGE-" + key[len("rouge"):]


def split_sentences(text: str, eos: str | None = DEFAULT_EOS) -> list[str]:
    """files2rouge's sentence split: on ``" <eos> "`` (and on newlines); ``eos=None``: newlines only."""
    sentences = text.split("\n")
    if eos:
        sentences = [s for line in sentences for s in line.split(f" {eos} ")]
    return sentences


@cache
def _scorer(keys: tuple[str, ...], use_stemmer: bool) -> rouge_scorer.RougeScorer:
    types = ["rougeLsum" if key == ROUGE_L else key for key in keys]
    return rouge_scorer.RougeScorer(types, tokenizer=Rouge155Tokenizer(use_stemmer))


def _raw_scores(hyp_sentences: Sequence[str], ref_sentences: Sequence[str], keys: tuple[str, ...],
                use_stemmer: bool) -> dict[str, scoring.Score]:
    if any(key != ROUGE_L and int(key[len("rouge"):]) > MAX_ROUGE_SCORE_N for key in keys):
        raise ValueError(f"the rouge-score backend computes ROUGE-N up to n={MAX_ROUGE_SCORE_N}")
    scores = _scorer(keys, use_stemmer).score("\n".join(ref_sentences), "\n".join(hyp_sentences))
    return {key: scores["rougeLsum" if key == ROUGE_L else key] for key in keys}


def rouge155_prf(recall: float, precision: float, alpha: float = DEFAULT_ALPHA) -> tuple[float, float, float]:
    """ROUGE-1.5.5's per-pair ``(R, P, F)``: R, P rounded to 5 decimals, F from the rounded values."""
    recall, precision = rouge155_round(recall), rouge155_round(precision)
    denominator = (1 - alpha) * precision + alpha * recall
    fmeasure = rouge155_round((precision * recall) / denominator) if denominator > 0 else 0.0
    return recall, precision, fmeasure


def pair_scores(hyps: Sequence[Sequence[str]], refs: Sequence[Sequence[str]], use_stemmer: bool = False,
                max_n: int | None = DEFAULT_MAX_N, rouge_l: bool = True,
                alpha: float = DEFAULT_ALPHA) -> dict[str, np.ndarray]:
    """ROUGE-1.5.5's per-pair scores of sentence-split summaries against their references.

    Returns ``{key: (N, 3) array of (R, P, F)}`` for the keys of :func:`rouge_keys`.
    """
    keys = tuple(rouge_keys(max_n, rouge_l))
    table = {key: np.zeros((len(hyps), 3)) for key in keys}  # (N, 3)
    for i, (hyp, ref) in enumerate(zip(hyps, refs, strict=True)):
        for key, score in _raw_scores(hyp, ref, keys, use_stemmer).items():
            table[key][i] = rouge155_prf(score.recall, score.precision, alpha)
    return table


def average_scores(table: dict[str, np.ndarray], line_ids: Sequence[int] | None = None,
                   confidence: float = DEFAULT_CONFIDENCE,
                   resamples: int = DEFAULT_RESAMPLES) -> dict[str, dict[str, object]]:
    """ROUGE-1.5.5's ``-a`` averages and intervals of :func:`pair_scores` output.

    ``line_ids`` (default ``0..N-1``) are the pairs' line numbers, which fix the instance order
    of the bootstrap exactly as files2rouge + ROUGE-1.5.5 would. Returns
    ``{key: {"r", "p", "f": float, "r_conf_int", "p_conf_int", "f_conf_int": (low, high)}}``.
    """
    if not table:  # -x without -n: ROUGE-1.5.5 computes nothing
        return {}
    count = len(next(iter(table.values())))
    order = perl_instance_order(range(count) if line_ids is None else line_ids)
    indices = perl_resample_indices(resamples, count) if resamples > 0 else None  # (R, N)
    averages = {}
    for key, scores in table.items():
        columns = rouge155_average(scores[order], confidence, resamples, indices)
        averages[key] = {}
        for name, (average, low, high) in zip("rpf", columns):
            averages[key][name] = average
            averages[key][f"{name}_conf_int"] = (low, high)
    return averages


def score_corpus(hyps: Sequence[str], refs: Sequence[str], use_stemmer: bool = False,
                 eos: str | None = DEFAULT_EOS, max_n: int = DEFAULT_MAX_N, rouge_l: bool = True,
                 alpha: float = DEFAULT_ALPHA, confidence: float = DEFAULT_CONFIDENCE,
                 resamples: int = DEFAULT_RESAMPLES) -> dict[str, dict[str, object]]:
    """Corpus ROUGE as files2rouge prints it (``-c 95 -r 1000 -n 2 -a``, ``-m`` = ``use_stemmer``).

    One summary per reference; sentences split on ``" <eos> "`` and newlines. Scores are in
    [0, 1]: ``result["rouge1"]["f"]``, ``result["rougeL"]["r_conf_int"]``, ... (see
    :func:`average_scores`). ``resamples=0`` skips the bootstrap and returns plain means.
    """
    if len(hyps) != len(refs):
        raise ValueError(f"{len(hyps)} summaries but {len(refs)} references")
    table = pair_scores([split_sentences(h, eos) for h in hyps], [split_sentences(r, eos) for r in refs],
                        use_stemmer, max_n, rouge_l, alpha)
    return average_scores(table, confidence=confidence, resamples=resamples)


def sentence_rouge(hyp: str, ref: str, use_stemmer: bool = False,
                   eos: str | None = DEFAULT_EOS) -> dict[str, float]:
    """F-measures ``{"rouge1", "rouge2", "rougeL"}`` of one pair, unrounded: for validation in training."""
    keys = tuple(rouge_keys())
    scores = _raw_scores(split_sentences(hyp, eos), split_sentences(ref, eos), keys, use_stemmer)
    return {key: score.fmeasure for key, score in scores.items()}


def format_report(averages: dict[str, dict[str, object]], confidence_label: str = "95",
                  peer_id: str = PEER_ID, per_eval: dict[str, list[tuple[int, tuple]]] | None = None) -> str:
    """The text ROUGE-1.5.5 prints for ``averages`` (``printResults``), ending in a newline.

    ``confidence_label`` is the ``-c`` value as typed. ``per_eval`` (``-d``) maps each key to
    ``[(evalID, (R, P, F)), ...]`` in evalID order.
    """
    lines = []
    for key, scores in averages.items():
        tag = f"{peer_id} {method_tag(key)}"
        lines.append(RESULT_SEPARATOR)
        for name in "RPF":
            low, high = scores[f"{name.lower()}_conf_int"]
            lines.append(f"{tag} Average_{name}: {scores[name.lower()]:7.5f} "
                         f"({confidence_label}%-conf.int. {low:7.5f} - {high:7.5f})")
        if per_eval is not None:
            lines.append(PER_EVAL_SEPARATOR)
            lines.extend(f"{tag} Eval {eval_id}.{peer_id} R:{r:7.5f} P:{p:7.5f} F:{f:7.5f}"
                         for eval_id, (r, p, f) in per_eval[key])
    return "".join(line + "\n" for line in lines)
