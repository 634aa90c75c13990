"""``python -m fairseq_ext.cli.qg``: the command of :mod:`fairseq_ext.scoring.qg`."""

import argparse
import json
import sys

from sacrebleu.metrics.bleu import BLEU

from ..scoring.qg import format_scores, score_files

DESCRIPTION = "Question-generation scores of a hypothesis file against a reference file, one pair a line."


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(prog="python -m fairseq_ext.cli.qg", description=DESCRIPTION)
    parser.add_argument("hypotheses", help="generated questions, one a line")
    parser.add_argument("references", help="reference questions, one a line")
    parser.add_argument("--tokenize", default=None, choices=BLEU.TOKENIZERS,
                        help="sacrebleu tokenizer (default 13a, the command line's)")
    parser.add_argument("--lowercase", action="store_true", help="lower-cased BLEU (sacrebleu -lc)")
    parser.add_argument("--width", type=int, default=2, help="decimals printed (sacrebleu -w)")
    parser.add_argument("--json", help="also write the scores to this JSON file")
    args = parser.parse_args(argv)
    try:
        result = score_files(args.hypotheses, args.references, args.tokenize, args.lowercase)
    except (ValueError, OSError) as error:
        sys.exit(f"error: {error}")
    print(format_scores(result, args.width))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as out:
            json.dump(result, out, indent=2)
            out.write("\n")


if __name__ == "__main__":
    main()
