"""The BERT-uncased WordPiece dictionary of the released ProphetNet checkpoints, in fairseq form.

fairseq's :class:`~fairseq.data.Dictionary` puts its four special symbols first (bos, pad,
eos, unk); ProphetNet's vocabulary (``prophetnet.tokenizer`` / ``vocab.txt``, one WordPiece a
line, id = line number) has them at BERT's ids. The roles map as the public ProphetNet code
maps them: ``[CLS]`` = bos, ``[PAD]`` = pad, ``[SEP]`` = eos (also the decoder's start
token), ``[UNK]`` = unk. :func:`fairseq_order` gives, for every fairseq index, the BERT id of
the same symbol, which is how the converter permutes embedding rows.
"""

from fairseq.data import Dictionary

SPECIAL_ROLES = (("bos", "[CLS]"), ("pad", "[PAD]"), ("eos", "[SEP]"), ("unk", "[UNK]"))


def read_vocab(path):
    """WordPiece vocabulary file -> list of tokens in id order."""
    with open(path, encoding="utf-8") as f:
        tokens = [line.rstrip("\n") for line in f]
    while tokens and tokens[-1] == "":
        tokens.pop()
    missing = [tok for _, tok in SPECIAL_ROLES if tok not in tokens]
    if missing:
        raise ValueError(f"{path} is not a BERT WordPiece vocabulary: no {', '.join(missing)}")
    if len(set(tokens)) != len(tokens):
        raise ValueError(f"{path} lists some tokens twice")
    if any(not tok or any(ch.isspace() for ch in tok) for tok in tokens):
        raise ValueError(f"{path} has an empty token or one with whitespace")
    return tokens


def build_dictionary(tokens):
    """fairseq Dictionary with the BERT specials in fairseq's special slots."""
    roles = dict(SPECIAL_ROLES)
    dictionary = Dictionary(bos=roles["bos"], pad=roles["pad"], eos=roles["eos"], unk=roles["unk"])
    specials = set(roles.values())
    for tok in tokens:
        if tok not in specials:
            dictionary.add_symbol(tok, n=1)
    return dictionary


def write_dictionary(tokens, path):
    """``dict.txt`` that ``Dictionary.load`` (and fairseq-preprocess --srcdict) reads back to
    the same indices: every non-special token in BERT order. (Loaded dictionaries name the
    special slots ``<s> <pad> </s> <unk>``; their roles, not their spellings, matter.)"""
    specials = {tok for _, tok in SPECIAL_ROLES}
    with open(path, "w", encoding="utf-8") as f:
        for tok in tokens:
            if tok not in specials:
                f.write(f"{tok} 1\n")


def fairseq_order(tokens):
    """``order[i]`` = BERT id of fairseq index ``i`` (a permutation of ``range(len(tokens))``)."""
    bert_id = {tok: i for i, tok in enumerate(tokens)}
    dictionary = build_dictionary(tokens)
    return [bert_id[dictionary[i]] for i in range(len(dictionary))]
