"""The text codec of binarized data: where its file is, and the codec built from it.

A data directory written by ``python -m preprocess.prepare`` holds a sentencepiece model
(``spm.model``), one written by ``prepare_wordpiece`` a BERT ``vocab.txt``; both go in
``OUT/`` and ``OUT/bin/``. The codec turns raw text into the dictionary's pieces and back
(``encode``/``decode``, like a fairseq BPE).
"""

import os
from argparse import Namespace

from fairseq.data import encoders

from .spm import load_spm
from .wordpiece import WordPieceCodec

#: The codec files, by kind, in the order they are looked for in each directory.
CODEC_FILES = (("wordpiece", "vocab.txt"), ("sentencepiece", "spm.model"))


def codec_candidates(data_dir, spm_model=None, wordpiece_vocab=None, extra=()):
    """``(kind, path)`` places of the codec, in the order they are tried: the files given, else
    ``vocab.txt`` then ``spm.model`` in ``data_dir`` and in its parent, then ``extra``."""
    given = [(kind, path) for kind, path in (("sentencepiece", spm_model), ("wordpiece", wordpiece_vocab)) if path]
    if given:
        return given
    directories = [data_dir, os.path.dirname(os.path.abspath(data_dir))]
    return [(kind, os.path.join(d, name)) for d in directories for kind, name in CODEC_FILES] + list(extra)


def find_codec(candidates):
    """The first existing ``(kind, path)`` of ``candidates``; a :class:`FileNotFoundError`
    listing every place tried when there is none."""
    for kind, path in candidates:
        if path and os.path.isfile(path):
            return kind, path
    raise FileNotFoundError(
        "no sentencepiece model or WordPiece vocabulary for this data: tried "
        + ", ".join(str(path) for _, path in candidates)
        + " (give --spm-model or --wordpiece-vocab; the hub takes spm_model=...)"
    )


def load_codec(kind, path):
    """The codec of ``kind`` in ``path``: :class:`WordPieceCodec`, or fairseq's sentencepiece
    BPE (an empty or non-model file is refused naming it)."""
    if kind == "wordpiece":
        return WordPieceCodec(path)
    load_spm(path)
    return encoders.build_bpe(Namespace(bpe="sentencepiece", sentencepiece_model=path))
