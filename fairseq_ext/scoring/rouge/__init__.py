"""ROUGE for the project: :func:`score_corpus` (corpus ROUGE-1/2/L as ROUGE-1.5.5 ``-c 95 -r 1000
-n 2 -a`` prints it), :func:`sentence_rouge` (per-pair F, for validation) and the backends of
``files2rouge`` (``rouge-score``, ``perl``).
"""

from .backends import evaluate
from .options import Rouge155Options
from .scores import score_corpus, sentence_rouge, split_sentences
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
