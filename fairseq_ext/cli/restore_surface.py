"""``python -m fairseq_ext.cli.restore_surface``: summaries of WordPiece data written in their
source's casing and spacing (:mod:`fairseq_ext.data.surface`), for files written without it
(``--no-restore-surface``, or before it existed)::

    python -m fairseq_ext.cli.restore_surface runs/demo/test.pieces.hyp \\
        --source data/aclsum_aspects_wp/raw/test.source > restored.hyp
"""

import argparse
import sys
from pathlib import Path

from ..data.surface import restore_surface

DESCRIPTION = "Restore summaries decoded from uncased WordPieces to their source documents' casing and spacing."


def read_text_lines(path):
    """The lines of a UTF-8 file, split on ``\\n`` only (a document may hold other line breaks)."""
    lines = Path(path).read_text(encoding="utf-8").split("\n")
    return lines[:-1] if lines and lines[-1] == "" else lines


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m fairseq_ext.cli.restore_surface", description=DESCRIPTION)
    parser.add_argument("hypotheses", help="one summary a line (WordPiece text: lower-cased words joined by spaces)")
    parser.add_argument("--source", required=True, help="the documents summarized, one a line, in the same order")
    parser.add_argument("--out", help="write the restored summaries here (default: standard output)")
    args = parser.parse_args(argv)
    try:
        hypotheses, sources = read_text_lines(args.hypotheses), read_text_lines(args.source)
    except (OSError, UnicodeDecodeError) as err:
        parser.error(str(err))
    if len(hypotheses) != len(sources):
        parser.error(f"{args.hypotheses} has {len(hypotheses)} lines but {args.source} has {len(sources)}: "
                     "one document a summary")
    restored = "".join(restore_surface(h, s) + "\n" for h, s in zip(hypotheses, sources))
    if args.out:
        Path(args.out).write_text(restored, encoding="utf-8")
    else:
        sys.stdout.write(restored)


if __name__ == "__main__":
    main()
