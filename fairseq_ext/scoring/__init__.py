"""Scores for generated text beyond ROUGE (:mod:`fairseq_ext.rouge`).

- :mod:`.bleu`: corpus BLEU through sacrebleu, as sufficient statistics that add up over
  batches (validation during training) and equal the ``sacrebleu`` command line.
- :mod:`.meteor`: nltk's METEOR when the WordNet data are installed, else a plain reason.
- :mod:`.qg`: ``python -m fairseq_ext.cli.qg HYP REF``, the question-generation scorer
  (BLEU-4, ROUGE-L, METEOR); not imported here, so that ``-m`` runs it cleanly.
"""

from .bleu import BleuStats, bleu_metric, bleu_signature, corpus_bleu
from .meteor import corpus_meteor, meteor_unavailable_reason

__all__ = [
    "BleuStats",
    "bleu_metric",
    "bleu_signature",
    "corpus_bleu",
    "corpus_meteor",
    "meteor_unavailable_reason",
]
