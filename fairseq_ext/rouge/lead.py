"""LEAD-n: the first n sentences of each source document, the standard extractive baseline.

Sources come one document per line, pre-tokenized (ACLSum, CNN/DM's tokenized release): a
sentence ends at a standalone ``.``, ``?`` or ``!`` token, unless the next token starts with a
lowercase letter or is ``,`` ``;`` ``:`` ``)`` ``]`` -- which keeps ``( Blei et al . , 2004 )``
and ``etc . )`` inside their sentence. Untokenized text (``end. Next``) is not split::

    python -m fairseq_ext.rouge.lead --source test.source --n 3 --out lead3.hyp

ACLSum ships its own sentence segmentation, which cuts a few sentences where no terminator
stands (4 of the 100 test papers); ``--aclsum test`` takes the first n of those sentences
(abstract, introduction, conclusion), which is how the published LEAD-3 figures are made::

    python -m fairseq_ext.rouge.lead --aclsum test --n 3 --out lead3.hyp
"""

import argparse
import re
from typing import Sequence

from .files import read_lines

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


def aclsum_lead_lines(split: str, n: int = DEFAULT_LEAD) -> list[str]:
    """LEAD-``n`` of an ACLSum split from the dataset's own sentence lists."""
    from fairseq_ext.data.corpora import ACLSUM_SOURCE_SECTIONS, read_aclsum_records

    return [
        lead_n([s for section in ACLSUM_SOURCE_SECTIONS for s in record["sentences"][section]], n)
        for record in read_aclsum_records(split)
    ]


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    inputs = parser.add_mutually_exclusive_group(required=True)
    inputs.add_argument("--source", help="source documents, one per line (UTF-8)")
    inputs.add_argument("--aclsum", metavar="SPLIT", choices=("train", "valid", "test"),
                        help="an ACLSum split, with the dataset's own sentence segmentation")
    parser.add_argument("--n", type=int, default=DEFAULT_LEAD, help="number of leading sentences to keep")
    parser.add_argument("--out", required=True, help="output file: one LEAD-n summary per line")
    parser.add_argument("--limit", type=int, help="only the first N documents (as prepare --limit N)")
    args = parser.parse_args(argv)
    if args.n < 1:
        parser.error("--n must be at least 1")
    if args.limit is not None and args.limit < 1:
        parser.error("--limit must be at least 1")
    try:
        if args.aclsum:
            lines = aclsum_lead_lines(args.aclsum, args.n)
        else:
            lines = lead_lines(read_lines(args.source), args.n)
    except (ValueError, OSError) as error:
        parser.exit(1, f"lead: error: {error}\n")
    with open(args.out, "w", encoding="utf-8") as out:
        out.writelines(line + "\n" for line in lines[: args.limit])


if __name__ == "__main__":
    main()
