"""Print a Markdown table of ROUGE F scores from files2rouge outputs, with fluency beside them.

    python scripts/rouge_table.py bart=runs/rouge-bart.txt LEAD-3=runs/rouge-lead3.txt
    python scripts/rouge_table.py model=runs/rouge-model.txt LEAD-3=runs/rouge-lead3.txt \\
        --summaries model=runs/test.hyp --summaries LEAD-3=runs/lead3.hyp --references runs/test.ref

With ``--summaries`` the table gains the fluency columns of :mod:`fairseq_ext.scoring.fluency`
(share of summaries with a word repeated back to back, share of repeated word bigrams), and
``--references`` adds the references' own figures as a last row.
"""

import argparse
import re

from fairseq_ext.scoring.fluency import HEADER, cells, fluency_of_file

LINE = re.compile(r"^\d+ ROUGE-(\w+) Average_F: ([\d.]+) \(95%-conf\.int\. ([\d.]+) - ([\d.]+)\)")


def read_scores(path):
    """``{"1": (F, low, high), "2": ..., "L": ...}`` from a files2rouge output file."""
    scores = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            match = LINE.match(line.strip())
            if match:
                scores[match.group(1)] = tuple(100 * float(x) for x in match.groups()[1:])
    if not scores:
        raise ValueError(f"{path}: no 'ROUGE-N Average_F' lines (is it files2rouge output?)")
    return scores


def named(items, parser, flag=""):
    """``NAME=FILE`` items -> ``[(name, path)]``."""
    pairs = []
    for item in items:
        name, sep, path = item.partition("=")
        if not sep or not path:
            parser.error(f"{flag}{item!r}: expected NAME=FILE")
        pairs.append((name, path))
    return pairs


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("systems", nargs="+", metavar="NAME=FILE", help="files2rouge output per system")
    parser.add_argument("--summaries", action="append", default=[], metavar="NAME=FILE",
                        help="the summaries a system's row was scored on (one a line): adds fluency columns")
    parser.add_argument("--references", metavar="FILE", help="the references (one a line): a fluency row of their own")
    args = parser.parse_args(argv)
    summaries = dict(named(args.summaries, parser, "--summaries "))
    fluent = bool(summaries or args.references)
    header = ["system", "ROUGE-1 F", "ROUGE-2 F", "ROUGE-L F", *(HEADER if fluent else ())]
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    rows = [(name, read_scores(path), summaries.get(name)) for name, path in named(args.systems, parser)]
    if args.references:
        rows.append(("references", {}, args.references))
    for name, scores, hyp in rows:
        row = [f"{scores[k][0]:.2f} ({scores[k][1]:.2f}-{scores[k][2]:.2f})" if k in scores else "-"
               for k in ("1", "2", "L")]
        if fluent:
            row += cells(fluency_of_file(hyp)) if hyp else ["-"] * len(HEADER)
        print(f"| {name} | " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()
