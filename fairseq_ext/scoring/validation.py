"""Validation ROUGE and BLEU during ``fairseq-train`` (``--eval-rouge``, ``--eval-bleu``), through
fairseq's metrics: each batch logs sums (ROUGE-1/2/L F1 and a count; BLEU's sufficient
statistics under fairseq's ``_bleu_*`` keys), and the logged ``rouge1``/``rouge2``/``rougeL``
(mean F1, percent) and ``bleu`` (corpus BLEU) are derived from the sums over the whole set.
"""

import json

from fairseq.logging import metrics

from .bleu import BLEU_ORDER, BleuStats
from .rouge.scores import sentence_rouge

KEYS = ("_bleu_sys_len", "_bleu_ref_len")
ROUGE_KEYS = ("rouge1", "rouge2", "rougeL")


def bleu_logging_output(metric, hyps: list[str], refs: list[str]) -> dict:
    """The ``_bleu_*`` entries of one validation batch's logging output."""
    stats = BleuStats.of(metric, hyps, refs)
    output = {"_bleu_sys_len": stats.sys_len, "_bleu_ref_len": stats.ref_len}
    for i in range(BLEU_ORDER):
        output[f"_bleu_counts_{i}"] = stats.counts[i]
        output[f"_bleu_totals_{i}"] = stats.totals[i]
    return output


def _sum(logging_outputs, key):
    return sum(int(round(float(log.get(key, 0)))) for log in logging_outputs)


def log_bleu(logging_outputs, metric) -> None:
    """Log the summed statistics and the derived corpus ``bleu`` (nothing when no batch had
    BLEU statistics, e.g. on training batches)."""
    if not any("_bleu_sys_len" in log for log in logging_outputs):
        return
    names = [*KEYS, *(f"_bleu_{kind}_{i}" for kind in ("counts", "totals") for i in range(BLEU_ORDER))]
    for name in names:
        metrics.log_scalar(name, _sum(logging_outputs, name))

    def derive(meters):
        def total(name):
            return int(round(float(meters[name].sum)))

        stats = BleuStats(
            [total(f"_bleu_counts_{i}") for i in range(BLEU_ORDER)],
            [total(f"_bleu_totals_{i}") for i in range(BLEU_ORDER)],
            total("_bleu_sys_len"), total("_bleu_ref_len"),
        )  # fmt: skip
        return round(stats.score(metric).score, 2)

    metrics.log_derived("bleu", derive)


def validation_generation_args(eval_rouge: bool, rouge_args: str, eval_bleu: bool, bleu_args: str) -> dict:
    """The generation arguments of the one validation generation that ROUGE and BLEU share:
    ``--eval-rouge-args`` when ROUGE is on, else ``--eval-bleu-args``. With both on,
    ``--eval-bleu-args`` must be left empty or be the same."""
    rouge, bleu = json.loads(rouge_args or "{}"), json.loads(bleu_args or "{}")
    if eval_rouge and eval_bleu and bleu and bleu != rouge:
        raise ValueError(
            f"--eval-rouge and --eval-bleu share one validation generation, but --eval-rouge-args "
            f"{rouge} and --eval-bleu-args {bleu} differ: give the generation arguments once"
        )
    return rouge if eval_rouge else bleu


def rouge_logging_output(hyps: list[str], refs: list[str]) -> dict:
    """The ``_rouge*`` entries of one validation batch's logging output."""
    output = {"_rouge_count": len(hyps), **{f"_{key}_sum": 0.0 for key in ROUGE_KEYS}}
    for hyp, ref in zip(hyps, refs):
        scores = sentence_rouge(hyp, ref)
        for key in ROUGE_KEYS:
            output[f"_{key}_sum"] += float(scores[key])
    return output


def log_rouge(logging_outputs) -> None:
    """Log the summed ROUGE and derive the mean ``rouge1``, ``rouge2``, ``rougeL`` (nothing
    when no batch had ROUGE entries)."""
    count = sum(log.get("_rouge_count", 0) for log in logging_outputs)
    if count == 0:
        return
    metrics.log_scalar("_rouge_count", count)
    for key in ROUGE_KEYS:
        metrics.log_scalar(f"_{key}_sum", sum(log.get(f"_{key}_sum", 0.0) for log in logging_outputs))

        def derive(meters, key=key):
            return round(100.0 * meters[f"_{key}_sum"].sum / meters["_rouge_count"].sum, 2)

        metrics.log_derived(key, derive)
