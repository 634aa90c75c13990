"""``python -m fairseq_ext.cli.gap_sentences``: the command of :mod:`fairseq_ext.data.gap_sentences`."""

import argparse
import logging
from pathlib import Path

from ..data.gap_sentences import write_pairs

DESCRIPTION = ("Gap-sentence pairs from the shipped Wikipedia text or from the full text of ACLSum's training "
               "papers: a summarization-shaped pre-training task.")


def main(argv=None):
    parser = argparse.ArgumentParser(description=DESCRIPTION)
    parser.add_argument("--out", required=True, type=Path, help="directory for {split}.{source,target}")
    parser.add_argument("--corpus", choices=("wiki", "aclsum"), default="wiki",
                        help="wiki: the shipped Wikipedia articles (train, valid, test); aclsum: the full text of "
                             "ACLSum's training papers (train, and valid from held-out training papers)")
    parser.add_argument("--valid-papers", type=int, default=10,
                        help="aclsum: the last N training papers give the validation pairs")
    parser.add_argument("--window-words", type=int, default=170, help="words per source window at most")
    parser.add_argument("--min-words", type=int, default=8, help="shortest principal sentence, in words")
    parser.add_argument("--max-words", type=int, default=35, help="longest principal sentence, in words")
    parser.add_argument("--remove", action="store_true", help="cut the principal sentence out of its source")
    parser.add_argument("--limit", type=int, default=None,
                        help="only the first LIMIT articles of each split (aclsum: of the training papers)")
    args = parser.parse_args(argv)
    logging.basicConfig(format="%(asctime)s | %(levelname)s | %(name)s | %(message)s", level=logging.INFO)
    if not 0 < args.min_words <= args.max_words:
        parser.error("need 0 < --min-words <= --max-words")
    write_pairs(args.out, args.limit, corpus=args.corpus, valid_papers=args.valid_papers,
                window_words=args.window_words, min_words=args.min_words, max_words=args.max_words,
                remove=args.remove)


if __name__ == "__main__":
    main()
