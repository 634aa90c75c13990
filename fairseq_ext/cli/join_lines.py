"""``python -m fairseq_ext.cli.join_lines``: the command of :mod:`fairseq_ext.data.join_lines`."""

import argparse
from pathlib import Path

from ..data.join_lines import join_lines

DESCRIPTION = "Join every N consecutive lines into one: per-aspect summaries -> one summary per document."


def main(argv=None):
    parser = argparse.ArgumentParser(description=DESCRIPTION)
    parser.add_argument("input", type=Path, help="one summary a line")
    parser.add_argument("output", type=Path, help="the joined lines")
    parser.add_argument("--every", type=int, required=True, help="lines per document")
    args = parser.parse_args(argv)
    lines = args.input.read_text(encoding="utf-8").splitlines()
    try:
        joined = join_lines(lines, args.every)
    except ValueError as err:
        parser.error(f"{args.input}: {err}")
    args.output.write_text("".join(line + "\n" for line in joined), encoding="utf-8")


if __name__ == "__main__":
    main()
