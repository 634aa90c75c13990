"""Every metric of the project: the place a new one goes.

- :mod:`.rouge`: ROUGE as ROUGE-1.5.5 computes it (files2rouge's backends, validation's
  per-pair F); not imported here.
- :mod:`.fluency`: back-to-back repeats and repeated bigrams of summaries.
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
