"""Print a Markdown table of ROUGE F scores from files2rouge outputs.

    python scripts/rouge_table.py bart=runs/rouge-bart.txt LEAD-3=runs/rouge-lead3.txt
"""

import argparse
import re

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


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("systems", nargs="+", metavar="NAME=FILE", help="files2rouge output per system")
    args = parser.parse_args(argv)
    print("| system | ROUGE-1 F | ROUGE-2 F | ROUGE-L F |")
    print("|---|---|---|---|")
    for item in args.systems:
        name, _, path = item.partition("=")
        scores = read_scores(path)
        cells = [f"{scores[k][0]:.2f} ({scores[k][1]:.2f}-{scores[k][2]:.2f})" if k in scores else "-"
                 for k in ("1", "2", "L")]
        print(f"| {name} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
