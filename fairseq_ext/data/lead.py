"""LEAD-n: the first n sentences of each source document, the standard extractive baseline.

Sources are pre-tokenized, one document a line: a sentence ends at a standalone ``.``, ``?``
or ``!`` unless the next token starts lower-case or is ``,`` ``;`` ``:`` ``)`` ``]`` (which
keeps ``( Blei et al . , 2004 )`` whole). ACLSum's own segmentation: ``--aclsum SPLIT`` of
:mod:`fairseq_ext.cli.lead`.
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
