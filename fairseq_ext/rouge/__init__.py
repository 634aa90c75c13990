"""ROUGE for the project: a drop-in ``files2rouge`` and the Python API behind it.

- :func:`score_corpus`: corpus ROUGE-1/2/L as files2rouge / ROUGE-1.5.5 ``-c 95 -r 1000 -n 2 -a``
  prints it (average over pairs, bootstrap interval).
- :func:`sentence_rouge`: cheap per-pair F-measures, for validation-time ROUGE in training.
- :mod:`.lead`: the LEAD-n baseline (``python -m fairseq_ext.cli.lead``).
- backends ``rouge-score`` (default) and ``perl`` (ROUGE-1.5.5) of ``files2rouge``
  (:mod:`fairseq_ext.cli.files2rouge`).
"""

from .backends import evaluate
from .options import Rouge155Options
from .scoring import score_corpus, sentence_rouge, split_sentences
from .tokenizer import porter_stem, rouge155_tokens

__all__ = [
    "Rouge155Options",
    "evaluate",
    "porter_stem",
    "rouge155_tokens",
    "score_corpus",
    "sentence_rouge",
    "split_sentences",
]
