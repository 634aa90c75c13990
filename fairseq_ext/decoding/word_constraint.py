"""Decoding that writes only words it has read: every word of a hypothesis is a word of its own
source, or of a list given beside it (``--decode-words source``, ``--decode-words-file``).

At each step beam search is offered only the tokens that keep the word being written a prefix
of an allowed word (a trie of piece ids), and those that start a new allowed word (or end the
hypothesis) once the current word is whole; the others get :data:`~.words.LEFT_OUT`. Words are
told apart as :mod:`.words` says.
"""

import os
from typing import Iterable, List, Optional, Sequence

import torch

from .words import LEFT_OUT, Word, WordTrie, split_words, word_starts


class WordConstraint:
    """The allowed-token mask of each hypothesis: built from the source ids of each sentence
    (:meth:`start`), reordered with the beams (:meth:`reorder`), applied to the next-token
    log-probabilities (:meth:`apply`). ``extra_text``: more allowed text, as lists of words
    (one list per line). ``bigram_bonus``: added to the log-probability of a word's first piece
    when the word before it is followed by such a word somewhere in the source or the extra
    text (a bias towards the source's word pairs; 0: none)."""

    def __init__(self, dictionary, extra_text: Iterable[Sequence[Word]] = (), bigram_bonus: float = 0.0):
        self.starts = word_starts(dictionary)
        self._starts_list = self.starts.tolist()
        self.skip = set(range(dictionary.nspecial))
        self.eos = dictionary.eos()
        self.extra = WordTrie()
        for words in extra_text:
            self.extra.add_text(list(words))
        self.bigram_bonus = bigram_bonus
        self.rows: List[WordTrie] = []
        self.first_masks: Optional[torch.BoolTensor] = None  # (rows, vocab): allowed word starts

    def words_of(self, ids: Iterable[int]) -> List[Word]:
        return split_words(ids, self._starts_list, self.skip)

    def start(self, src_tokens: torch.Tensor):
        """One trie per sentence from its source ids (pad and special symbols ignored)."""
        extra_firsts = list(self.extra.firsts())
        self.rows, masks = [], torch.zeros(src_tokens.size(0), len(self.starts), dtype=torch.bool)
        for row, ids in enumerate(src_tokens.tolist()):
            trie = WordTrie()
            trie.add_text(self.words_of(ids))
            self.rows.append(trie)
            masks[row, list(trie.firsts()) + extra_firsts] = True
        self.first_masks = masks

    def reorder(self, new_order: torch.Tensor):
        order = new_order.tolist()
        self.rows = [self.rows[i] for i in order]
        self.first_masks = self.first_masks.index_select(0, new_order.cpu())

    def partial_word(self, row: List[int]) -> Word:
        """The pieces of the word a hypothesis is writing: from its last word start to its end
        (empty right after the token decoding starts from, ``</s>``, ``<s>`` or a task's own
        such as Transformer-SM's ``<delim>``)."""
        start = len(row) - 1
        while start > 0 and not self._starts_list[row[start]]:
            start -= 1
        if start == 0 or row[start] in self.skip:
            return tuple(row[start + 1:])
        return tuple(row[start:])

    def allowed(self, tokens: torch.Tensor, vocab_size: int, last: bool = False) -> torch.BoolTensor:
        """``(rows, vocab)``: the tokens each hypothesis may write next (``last``: the step at
        the maximum length, where every hypothesis may end)."""
        return self.masks(tokens, vocab_size, last)[0]

    def masks(self, tokens: torch.Tensor, vocab_size: int, last: bool = False):
        """:meth:`allowed`, and ``(rows, vocab)`` True at the first pieces of the words that
        follow each hypothesis's last whole word in the source or extra text (None without a
        bigram bonus)."""
        width = self.first_masks.size(1)
        if vocab_size < width:
            raise ValueError(f"the model scores {vocab_size} tokens, its dictionary has {width}")
        allowed = torch.zeros(self.first_masks.size(0), vocab_size, dtype=torch.bool)
        allowed[:, :width] = self.first_masks  # a model that pads its output never writes the padding
        boosted = torch.zeros_like(allowed) if self.bigram_bonus else None
        for r, row in enumerate(tokens.tolist()):
            prefix = self.partial_word(row)
            trie = self.rows[r]
            following = trie.after(prefix) | self.extra.after(prefix)
            whole = not prefix or trie.is_word(prefix) or self.extra.is_word(prefix)
            if not whole and following:
                allowed[r] = False  # in the middle of a word: only its continuations
            if following:
                allowed[r, list(following)] = True
            allowed[r, self.eos] = whole or not following or last
            if boosted is not None and prefix and whole:
                followers = trie.followers(prefix) | self.extra.followers(prefix)
                boosted[r, list(followers)] = True
        return allowed, boosted

    def apply(self, tokens: torch.Tensor, lprobs: torch.Tensor, last: bool = False) -> torch.Tensor:
        allowed, boosted = self.masks(tokens, lprobs.size(-1), last)
        allowed = allowed.to(lprobs.device)
        if boosted is not None:
            lprobs = lprobs + self.bigram_bonus * (boosted.to(lprobs.device) & allowed).to(lprobs.dtype)
        return lprobs.masked_fill(~allowed, LEFT_OUT)


def read_words_file(path, encode, dictionary) -> List[List[Word]]:
    """The lines of ``path`` (``--decode-words-file``) as lists of words (piece-id tuples),
    each line encoded by ``encode`` (text -> piece ids of ``dictionary``)."""
    if not os.path.isfile(path):
        raise FileNotFoundError(f"--decode-words-file {path}: no such file")
    splitter = WordConstraint(dictionary)
    try:
        with open(path, encoding="utf-8") as f:
            return [splitter.words_of(encode(line.strip())) for line in f if line.strip()]
    except UnicodeDecodeError as err:
        raise ValueError(f"--decode-words-file {path}: not UTF-8 ({err})") from None
