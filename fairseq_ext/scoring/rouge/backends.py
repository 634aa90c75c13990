"""files2rouge's two ways to score: ``rouge-score`` in Python (default) and the Perl ROUGE-1.5.5.

Both take sentence-split summaries and references plus their line numbers and return the text
ROUGE-1.5.5 prints. ``auto`` is the rouge-score backend; ask for ``perl`` to run the original.
"""

import sys
from typing import Sequence

from .bootstrap import perl_eval_order
from .options import Rouge155Options
from .perl import perl_report
from .scores import average_scores, format_report, pair_scores

BACKENDS = ("auto", "rouge-score", "perl")


def resolve_backend(name: str) -> str:
    """The backend ``name`` stands for: ``auto`` is ``rouge-score``."""
    if name not in BACKENDS:
        raise ValueError(f"unknown ROUGE backend {name!r}; choose from {', '.join(BACKENDS)}")
    return "rouge-score" if name == "auto" else name


def check_supported(options: Rouge155Options, backend: str) -> None:
    """Raise ``ValueError`` when ``backend`` cannot honour ``options`` (Perl honours them all)."""
    unsupported = options.unsupported_by_rouge_score()
    if resolve_backend(backend) == "rouge-score" and unsupported:
        raise ValueError(f"the rouge-score backend does not implement ROUGE option(s) "
                         f"{' '.join(unsupported)}: use --backend perl")


def rouge_score_report(hyps: Sequence[Sequence[str]], refs: Sequence[Sequence[str]], line_ids: Sequence[int],
                       options: Rouge155Options) -> str:
    """ROUGE-1.5.5's output for these pairs, computed with rouge-score (see :mod:`.scoring`)."""
    check_supported(options, "rouge-score")
    table = pair_scores(hyps, refs, options.stemming, options.max_n, options.rouge_l, options.alpha)
    averages = average_scores(table, line_ids, options.confidence, options.resamples)
    per_eval = None
    if options.per_eval:
        by_eval = perl_eval_order(line_ids)
        per_eval = {key: [(eval_id, tuple(scores[pos])) for eval_id, pos in enumerate(by_eval, start=1)]
                    for key, scores in table.items()}
    return format_report(averages, options.confidence_label, per_eval=per_eval)


def evaluate(hyps: Sequence[Sequence[str]], refs: Sequence[Sequence[str]], line_ids: Sequence[int] | None = None,
             options: Rouge155Options | None = None, backend: str = "auto", verbose: bool = False) -> str:
    """Score sentence-split ``hyps`` against ``refs`` with ``backend``; return ROUGE-1.5.5's output.

    ``line_ids`` default to ``0..N-1``; ``options`` to files2rouge's ``-c 95 -r 1000 -n 2 -a``.
    """
    if len(hyps) != len(refs):
        raise ValueError(f"{len(hyps)} summaries but {len(refs)} references")
    if not hyps:
        raise ValueError("no summary/reference pair to score")
    line_ids = list(range(len(hyps))) if line_ids is None else list(line_ids)
    options = options or Rouge155Options.parse()
    if resolve_backend(backend) == "perl":
        return perl_report(hyps, refs, line_ids, options, verbose=verbose)
    if verbose:
        print("scoring with rouge-score and ROUGE-1.5.5's tokenizer and bootstrap", file=sys.stderr)
    return rouge_score_report(hyps, refs, line_ids, options)
