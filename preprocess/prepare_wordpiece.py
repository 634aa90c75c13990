"""Corpus -> cleaned text -> BERT WordPiece -> fairseq binary data (one command).

    python -m preprocess.prepare_wordpiece --corpus {aclsum,aclsum_long,DIR} --out OUT \\
        [--vocab VOCAB_TXT] [--limit N] [--workers N]

For checkpoints with a BERT vocabulary: s2s-ft from BERT/MiniLM, converted ProphetNet. See
:mod:`fairseq_ext.data.prepare_wordpiece` for the output layout and
:mod:`fairseq_ext.data.wordpiece` for the dictionary's layout.
"""

import argparse
import logging
from pathlib import Path

from fairseq_ext.data.prepare_wordpiece import prepare_wordpiece


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--corpus", required=True, help="aclsum, aclsum_long or a {split}.{source,target} directory")
    parser.add_argument("--out", required=True, type=Path, help="output directory (its outputs are replaced)")
    parser.add_argument("--vocab", type=Path, help="WordPiece vocab.txt (default: the installed MiniLM's)")
    parser.add_argument("--limit", type=int, help="keep only the first N documents of each split")
    parser.add_argument("--workers", type=int, default=1, help="processes for fairseq-preprocess")
    args = parser.parse_args(argv)
    logging.basicConfig(format="%(asctime)s | %(levelname)s | %(name)s | %(message)s", level=logging.INFO)
    prepare_wordpiece(args.corpus, args.out, args.vocab, args.limit, args.workers)


if __name__ == "__main__":
    main()
