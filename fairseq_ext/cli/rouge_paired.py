"""``python -m fairseq_ext.cli.rouge_paired A B REFERENCES``: is system A's ROUGE above system
B's on the same documents? One summary per line in each file; prints the mean F of each, the
difference, its paired bootstrap interval and a sign-flip permutation p-value
(:mod:`fairseq_ext.scoring.rouge.paired`), with a fixed seed."""

import argparse
import sys

from ..scoring.rouge.files import read_lines
from ..scoring.rouge.paired import compare_systems, format_table
from ..scoring.rouge.scores import DEFAULT_EOS, split_sentences


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m fairseq_ext.cli.rouge_paired", description=__doc__.split("\n")[0])
    parser.add_argument("system_a", help="summaries of system A, one a line")
    parser.add_argument("system_b", help="summaries of system B of the same documents, one a line")
    parser.add_argument("reference", help="references, one a line")
    parser.add_argument("--names", nargs=2, default=("A", "B"), metavar=("A", "B"), help="the systems' names")
    parser.add_argument("--resamples", type=int, default=10000, help="bootstrap and permutation rounds")
    parser.add_argument("--confidence", type=float, default=0.95, help="level of the interval")
    parser.add_argument("--seed", type=int, default=1, help="seed of both (fixed: the same files, the same figures)")
    parser.add_argument("-m", "--stem", action="store_true", help="Porter stemming (files2rouge's -m)")
    parser.add_argument("-e", "--eos", default=DEFAULT_EOS, help="sentence separator (files2rouge's -e)")
    args = parser.parse_args(argv)
    try:
        files = [read_lines(path) for path in (args.system_a, args.system_b, args.reference)]
        a, b, refs = ([split_sentences(line, args.eos) for line in lines] for lines in files)
        results = compare_systems(a, b, refs, args.stem, args.resamples, args.confidence, args.seed)
    except (OSError, ValueError) as err:
        print(f"{parser.prog}: error: {err}", file=sys.stderr)
        return 1
    sys.stdout.write(format_table(results, *args.names, confidence=args.confidence))
    return 0


if __name__ == "__main__":
    sys.exit(main())
