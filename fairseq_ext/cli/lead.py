"""``python -m fairseq_ext.cli.lead``: the command of :mod:`fairseq_ext.data.lead`."""

import argparse

from ..data.corpora import ACLSUM_SOURCE_SECTIONS, read_aclsum_records
from ..data.lead import DEFAULT_LEAD, lead_lines, lead_n
from ..scoring.rouge.files import read_lines

DESCRIPTION = "LEAD-n: the first n sentences of each source document, the standard extractive baseline."


def aclsum_lead_lines(split: str, n: int = DEFAULT_LEAD) -> list[str]:
    """LEAD-``n`` of an ACLSum split from the dataset's own sentence lists."""
    return [
        lead_n([s for section in ACLSUM_SOURCE_SECTIONS for s in record["sentences"][section]], n)
        for record in read_aclsum_records(split)
    ]


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=DESCRIPTION)
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
