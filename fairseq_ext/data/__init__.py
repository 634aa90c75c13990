"""Corpus readers, counted cleaning, sentencepiece helpers and the ``prepare`` pipeline.

Pure library: nothing here registers anything in fairseq; ``preprocess/`` holds the CLIs.
"""

from .cleaning import (
    REPAIRS,
    DataError,
    LineCountMismatch,
    Report,
    clean_documents,
    clean_pairs,
    clean_text,
    read_lines,
)
from .corpora import (
    SPLITS,
    PairSplit,
    aclsum_dir,
    load_aclsum,
    load_aclsum_long,
    load_pair_dir,
    load_wiki,
    wiki_dump_path,
)
from .prepare import PrepareConfig, format_summary, prepare
from .spm import (
    DictionaryMismatch,
    check_dictionary,
    encode_file,
    install_spm,
    load_spm,
    train_spm,
    write_dictionary,
)
from .wiki import iter_articles, strip_markup

__all__ = [
    "REPAIRS",
    "SPLITS",
    "DataError",
    "DictionaryMismatch",
    "LineCountMismatch",
    "PairSplit",
    "PrepareConfig",
    "Report",
    "aclsum_dir",
    "check_dictionary",
    "clean_documents",
    "clean_pairs",
    "clean_text",
    "encode_file",
    "format_summary",
    "install_spm",
    "iter_articles",
    "load_aclsum",
    "load_aclsum_long",
    "load_pair_dir",
    "load_spm",
    "load_wiki",
    "prepare",
    "read_lines",
    "strip_markup",
    "train_spm",
    "wiki_dump_path",
    "write_dictionary",
]
