"""Words of WordPiece and sentencepiece hypotheses: which symbols start a word (WordPiece's
``##`` continues one, sentencepiece's ``▁`` starts one; special symbols are never part of a
word), a sequence of ids split into words, and a trie of allowed words."""

from typing import Dict, Iterable, List, Sequence, Set, Tuple

import torch

Word = Tuple[int, ...]

LEFT_OUT = -1e4
"""The log-probability given to the tokens a hypothesis may not write: not ``-inf``, so that a
hypothesis with no allowed token left goes on at that cost (with ``-inf`` beam search can run
short of hypotheses and fairseq asserts ``step < max_len``)."""
SPM_WORD_START = "\u2581"
WORDPIECE_CONTINUATION = "##"


def word_starts(dictionary) -> torch.BoolTensor:
    """``(len(dictionary),)``: True where a symbol starts a word (special symbols count as
    starts: no word runs through them); a :class:`ValueError` for a dictionary whose symbols
    mark no word boundaries (neither WordPiece nor sentencepiece)."""
    symbols = dictionary.symbols
    special = set(range(dictionary.nspecial))
    if any(s.startswith(SPM_WORD_START) for s in symbols):
        starts = [i in special or s.startswith(SPM_WORD_START) for i, s in enumerate(symbols)]
    elif any(s.startswith(WORDPIECE_CONTINUATION) for s in symbols):
        starts = [i in special or not s.startswith(WORDPIECE_CONTINUATION) for i, s in enumerate(symbols)]
    else:
        raise ValueError("--decode-words needs WordPiece (##) or sentencepiece (\u2581) symbols to tell "
                         "words apart; this dictionary has neither")
    return torch.tensor(starts, dtype=torch.bool)


def split_words(ids: Iterable[int], starts: Sequence[bool], skip: Set[int]) -> List[Word]:
    """The words of a sequence of ids: runs of a start piece and its continuing pieces; ids in
    ``skip`` (special symbols) end a word and belong to none; continuing pieces with no start
    before them are dropped."""
    words, current = [], []
    for i in ids:
        if i in skip:
            if current:
                words.append(tuple(current))
            current = []
        elif starts[i]:
            if current:
                words.append(tuple(current))
            current = [i]
        elif current:
            current.append(i)
    if current:
        words.append(tuple(current))
    return words


class WordTrie:
    """Allowed words as piece-id sequences: :meth:`after` gives the pieces that may follow a
    prefix, :meth:`is_word` whether a prefix is a whole word; words added as running text
    (:meth:`add_text`) also remember which words followed which (:meth:`followers`)."""

    def __init__(self, words: Iterable[Word] = ()):
        self.next: Dict[Word, Set[int]] = {}
        self.words: Set[Word] = set()
        self.follow: Dict[Word, Set[int]] = {}  # word -> first pieces of the words seen after it
        for word in words:
            self.add(word)

    def add_text(self, words: Sequence[Word]):
        """The words of one text, in order: each word, and each pair of neighbours."""
        for word in words:
            self.add(word)
        for word, following in zip(words, words[1:]):
            self.follow.setdefault(word, set()).add(following[0])

    def followers(self, word: Word) -> Set[int]:
        return self.follow.get(word, set())

    def add(self, word: Word):
        if not word or word in self.words:
            return
        self.words.add(word)
        for end in range(len(word)):
            self.next.setdefault(word[:end], set()).add(word[end])

    def after(self, prefix: Word) -> Set[int]:
        return self.next.get(prefix, set())

    def is_word(self, prefix: Word) -> bool:
        return prefix in self.words

    def firsts(self) -> Set[int]:
        return self.after(())

    def __len__(self):
        return len(self.words)
