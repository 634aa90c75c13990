"""Corpus -> cleaned text -> BERT WordPiece -> fairseq binary data (``python -m
preprocess.prepare_wordpiece``), for checkpoints with a BERT vocabulary; ``prepare``'s layout
with WordPiece in place of sentencepiece::

    OUT/raw/{split}.{source,target}        cleaned text, one document per line
    OUT/wordpiece/{split}.{source,target}  space-separated WordPieces
    OUT/bin/                               binarized pairs, dict.{source,target}.txt, vocab.txt
    OUT/vocab.txt, OUT/wordpiece_report.json

``--vocab`` defaults to the installed MiniLM-L6-H384's (BERT uncased, 30,522 pieces).
"""

import json
import logging
import shutil
import tempfile
import time
from pathlib import Path

from .binarize import binarize
from .prepare import PrepareConfig, clean_corpus, clear_outputs, is_pair_corpus, write_raw
from .wordpiece import WordPieceCodec, minilm_dir, read_vocab, write_dictionary

logger = logging.getLogger(__name__)

SIDES = ("source", "target")
OUTPUTS = ("raw", "wordpiece", "bin", "vocab.txt", "wordpiece_report.json")
UNK = "[UNK]"


def prepare_wordpiece(corpus: str, out, vocab=None, limit=None, workers: int = 1) -> dict:
    """Run every stage; returns the report also written to ``OUT/wordpiece_report.json``."""
    started = time.perf_counter()
    out = Path(out)
    vocab = Path(vocab) if vocab else minilm_dir() / "vocab.txt"
    if not is_pair_corpus(corpus):
        raise ValueError(f"--corpus {corpus}: WordPiece preparation takes document/summary pairs only")
    tokens = read_vocab(vocab)  # fail on a bad vocabulary before writing anything
    data, reports, _ = clean_corpus(PrepareConfig(corpus=corpus, out=out, limit=limit))
    if not data.get("train"):
        raise ValueError(f"{corpus}: no training data left after cleaning")
    out.mkdir(parents=True, exist_ok=True)
    clear_outputs(out, OUTPUTS)
    raw_files = write_raw(data, out / "raw", pairs=True)
    codec = WordPieceCodec(vocab)
    (out / "wordpiece").mkdir()
    stats = {}
    for split, files in raw_files.items():
        stats[split] = {"documents": len(data[split])}
        for side, path in zip(SIDES, files):
            lines = path.read_text(encoding="utf-8").splitlines()
            encoded = codec.encode_batch(lines)
            (out / "wordpiece" / path.name).write_text("".join(e + "\n" for e in encoded), encoding="utf-8")
            lengths = [len(e.split()) for e in encoded]
            unk = sum(e.split().count(UNK) for e in encoded)
            stats[split][f"{side}_pieces_avg"] = round(sum(lengths) / max(len(lengths), 1), 1)
            stats[split][f"{side}_pieces_max"] = max(lengths, default=0)
            stats[split][f"{side}_unk_rate"] = round(unk / max(sum(lengths), 1), 5)
    with tempfile.TemporaryDirectory() as tmp:
        dictionary = Path(tmp) / "dict.txt"
        size = write_dictionary(tokens, dictionary)
        argv = binarize(out / "wordpiece", out / "bin", dictionary, list(data), True, workers)
    shutil.copyfile(vocab, out / "vocab.txt")
    shutil.copyfile(vocab, out / "bin" / "vocab.txt")
    report = {
        "corpus": corpus,
        "vocab": str(vocab),
        "dictionary_size": size,
        "limit": limit,
        "splits": {split: {**reports[split].to_dict(), "stats": stats[split]} for split in data},
        "fairseq_preprocess_args": argv,
        "seconds": round(time.perf_counter() - started, 2),
    }
    (out / "wordpiece_report.json").write_text(json.dumps(report, indent=2) + "\n")
    logger.info("wrote %s (%s)", out / "bin", {s: stats[s] for s in stats})
    return report

