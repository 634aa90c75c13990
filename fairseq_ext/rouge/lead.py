"""LEAD-n: the first n sentences of each source document, the standard extractive baseline.

Sources come one document per line, pre-tokenized (ACLSum, CNN/DM's tokenized release): a
sentence ends at a standalone ``.``, ``?`` or ``!`` token, unless the next token starts with a
lowercase letter or is ``,`` ``;`` ``:`` ``)`` ``]`` -- which keeps ``( Blei et al . , 2004 )``
and ``etc . )`` inside their sentence. Untokenized text (``end. Next``) is not split::

    python -m fairseq_ext.cli.lead --source test.source --n 3 --out lead3.hyp

ACLSum ships its own sentence segmentation, which cuts a few sentences where no terminator
stands (4 of the 100 test papers); ``--aclsum test`` takes the first n of those sentences
(abstract, introduction, conclusion), which is how the published LEAD-3 figures are made::

    python -m fairseq_ext.cli.lead --aclsum test --n 3 --out lead3.hyp
"""

import re
from typing import Sequence

DEFAULT_LEAD = 3
# whitespace after a standalone terminator token, not followed by a continuation
SENTENCE_BOUNDARY = re.compile(r"(?<=(?<!\S)[.?!])\s+(?![a-z,;:)\]])")


def split_document(text: str) -> list[str]:
    """The sentences of one pre-tokenized document (see the module docstring for the rule).

    >>> split_document("It works . Does it ? ( Lin et al . , 2004 ) say so .")
    ['It works .', 'Does it ?', '( Lin et al . , 2004 ) say so .']
    """
    return [s for s in SENTENCE_BOUNDARY.split(text.strip()) if s]


def lead_n(sentences: Sequence[str], n: int = DEFAULT_LEAD) -> str:
    """The first ``n`` sentences joined by spaces, on one line."""
    return " ".join(sentences[:n])


def lead_lines(documents: Sequence[str], n: int = DEFAULT_LEAD) -> list[str]:
    """LEAD-``n`` of each one-line document."""
    return [lead_n(split_document(document), n) for document in documents]


if __name__ == "__main__":  # what scripts/run_demo.sh runs (edited elsewhere): fairseq_ext.cli.lead
    from ..cli.lead import main

    main()
