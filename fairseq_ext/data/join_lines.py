"""Join every N consecutive lines into one: per-aspect summaries -> one summary per document.

A model trained on ``--corpus aclsum_aspects`` writes three summaries per paper (challenge,
approach, outcome, in that order); joined three by three with a space they line up with the
``aclsum`` references, one paper a line::

    python -m fairseq_ext.data.join_lines --every 3 test.aspects.hyp test.hyp
"""

import argparse
from pathlib import Path


def join_lines(lines: list[str], every: int) -> list[str]:
    """``["a", "b", "c", "d"]``, every 2 -> ``["a b", "c d"]``; a count that is not a multiple
    of ``every`` is an error (a summary is missing)."""
    if every < 1:
        raise ValueError(f"--every {every}: join at least one line")
    if len(lines) % every:
        raise ValueError(f"{len(lines)} lines are not groups of {every}: a summary is missing")
    return [" ".join(line.strip() for line in lines[i : i + every]) for i in range(0, len(lines), every)]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
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
