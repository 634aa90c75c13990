"""Corpus BLEU with sacrebleu, on detokenized text, exactly as the ``sacrebleu`` command line:
:class:`BleuStats` holds the sufficient statistics (n-gram counts and lengths), which add up
over batches, and the score of their sum equals ``sacrebleu REF -i HYP`` on the concatenated
files (13a, mixed case, exp smoothing, 4-grams, one reference).
"""

from dataclasses import dataclass, field

from sacrebleu.metrics import BLEU

BLEU_ORDER = 4


def bleu_metric(tokenize: str | None = None, lowercase: bool = False) -> BLEU:
    """sacrebleu's BLEU with the command line's defaults (``tokenize=None``: 13a), for one
    reference per hypothesis (what its signature says before anything is scored)."""
    metric = BLEU(tokenize=tokenize, lowercase=lowercase, max_ngram_order=BLEU_ORDER)
    metric.num_refs = 1  # sacrebleu sets it when it first scores; every use here has one
    return metric


def bleu_signature(metric: BLEU) -> str:
    """``nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:2.6.0`` for ``metric``."""
    return metric.get_signature().format()


@dataclass
class BleuStats:
    """Sufficient statistics of corpus BLEU: matching and total n-grams per order, lengths."""

    counts: list[int] = field(default_factory=lambda: [0] * BLEU_ORDER)
    totals: list[int] = field(default_factory=lambda: [0] * BLEU_ORDER)
    sys_len: int = 0
    ref_len: int = 0

    @classmethod
    def of(cls, metric: BLEU, hyps: list[str], refs: list[str]) -> "BleuStats":
        """The statistics of ``hyps`` against ``refs`` (one reference each)."""
        if len(hyps) != len(refs):
            raise ValueError(f"{len(hyps)} hypotheses but {len(refs)} references")
        if not hyps:
            return cls()
        score = metric.corpus_score(list(hyps), [list(refs)])
        return cls(list(score.counts), list(score.totals), score.sys_len, score.ref_len)

    def __add__(self, other: "BleuStats") -> "BleuStats":
        return BleuStats(
            [a + b for a, b in zip(self.counts, other.counts)],
            [a + b for a, b in zip(self.totals, other.totals)],
            self.sys_len + other.sys_len,
            self.ref_len + other.ref_len,
        )

    def score(self, metric: BLEU):
        """sacrebleu's ``BLEUScore`` of these statistics (``.score`` is BLEU x 100)."""
        return metric.compute_bleu(
            self.counts, self.totals, self.sys_len, self.ref_len,
            smooth_method=metric.smooth_method, smooth_value=metric.smooth_value,
            effective_order=metric.effective_order, max_ngram_order=metric.max_ngram_order,
        )  # fmt: skip


def corpus_bleu(hyps: list[str], refs: list[str], tokenize: str | None = None,
                lowercase: bool = False) -> tuple[object, str]:
    """``(BLEUScore, signature)`` of ``hyps`` against ``refs``."""
    metric = bleu_metric(tokenize, lowercase)
    return BleuStats.of(metric, hyps, refs).score(metric), bleu_signature(metric)
