"""Corpus -> cleaned text -> sentencepiece -> fairseq binary data (one command).

    python -m preprocess.prepare --corpus {aclsum,aclsum_long,wiki,DIR} --out OUT \\
        [--vocab-size N] [--spm-type {unigram,bpe}] [--spm-model M --srcdict D] \\
        [--max-source-tokens N] [--strict] [--workers N] [--limit N]
    python -m preprocess.prepare --corpus squad --squad-json TRAIN.json --out OUT \\
        [--split-json valid=DEV.json] [--split-titles test=DOCLIST.txt] [--heldout-articles N]

DIR holds ``{train,valid,test}.{source,target}``, one document per line (``test``
optional). ``squad`` reads SQuAD v1.1 JSON into ``answer [SEP] passage`` -> question pairs
(:mod:`fairseq_ext.data.squad`: how the splits are formed, passage windows, repairs). See
:mod:`fairseq_ext.data.prepare` for the output layout and :mod:`fairseq_ext.data.cleaning`
for what is repaired and counted.
"""

import argparse
import logging
import os
import sys
from pathlib import Path

from fairseq_ext.data import DataError, DictionaryMismatch, PrepareConfig, prepare


def get_parser() -> argparse.ArgumentParser:
    defaults = PrepareConfig(corpus="", out=Path())
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--corpus", required=True,
                        help="aclsum, aclsum_long, wiki, squad (with --squad-json), or a "
                             "directory of {train,valid,test}.{source,target} files")  # fmt: skip
    parser.add_argument("--out", required=True, type=Path, help="output directory (overwritten)")
    parser.add_argument("--vocab-size", type=int, default=defaults.vocab_size,
                        help="sentencepiece vocabulary (capped to what a small corpus supports)")
    parser.add_argument("--spm-type", choices=("unigram", "bpe"), default=defaults.spm_type,
                        help="sentencepiece model type")
    parser.add_argument("--spm-model", type=Path,
                        help="reuse this sentencepiece model instead of training one")
    parser.add_argument("--srcdict", type=Path,
                        help="reuse this fairseq dictionary (checked against the model)")
    parser.add_argument("--max-source-tokens", type=int,
                        help="truncate sources to this many whitespace tokens (counted)")
    parser.add_argument("--max-target-tokens", type=int,
                        help="truncate targets to this many whitespace tokens (counted)")
    parser.add_argument("--strict", action="store_true",
                        help="fail on invalid UTF-8, control characters and empty documents "
                             "instead of repairing and counting them")
    parser.add_argument("--workers", type=int, default=defaults.workers,
                        help="processes for fairseq-preprocess, threads for sentencepiece")
    parser.add_argument("--limit", type=int,
                        help="keep only the first N documents of each split (tests, demos)")
    parser.add_argument("--max-unk-rate", type=float, default=defaults.max_unk_rate,
                        help="with --srcdict: fail when more of the encoded tokens are <unk>")
    squad = parser.add_argument_group("--corpus squad (question generation)")
    squad.add_argument("--squad-json", type=Path,
                       help="SQuAD v1.1 JSON whose articles form train (and held-out splits)")
    squad.add_argument("--split-json", action="append", metavar="SPLIT=FILE",
                       help="read valid or test from its own SQuAD JSON (repeatable)")
    squad.add_argument("--split-titles", action="append", metavar="SPLIT=FILE",
                       help="move the articles titled in FILE (one a line, e.g. Du et al.'s "
                            "doclist-test.txt) from --squad-json to valid or test (repeatable)")
    squad.add_argument("--heldout-articles", type=int,
                       help="articles held out from the end of --squad-json for each split given "
                            "neither way (default: 10%% of them)")
    parser.add_argument("--character-coverage", type=float,
                        default=defaults.character_coverage,
                        help="sentencepiece character coverage")
    return parser  # fmt: skip


def main(argv: list[str] | None = None) -> None:
    logging.basicConfig(
        format="%(asctime)s | %(levelname)s | %(name)s | %(message)s",
        datefmt="%Y-%m-%d %H:%M:%S",
        level=os.environ.get("LOGLEVEL", "INFO").upper(),
        stream=sys.stdout,
    )
    args = get_parser().parse_args(argv)
    try:
        prepare(PrepareConfig(**vars(args)))
    except (DataError, DictionaryMismatch, FileNotFoundError, ValueError) as err:
        sys.exit(f"error: {err}")


if __name__ == "__main__":
    main()
