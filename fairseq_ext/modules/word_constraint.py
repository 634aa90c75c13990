"""Decoding that writes only words it has read: every word of a hypothesis is a word of its own
source, or of a list given beside it (``--decode-words source``, ``--decode-words-file``).

At each step beam search is offered only the tokens that keep the word being written a prefix
of an allowed word (a trie of piece ids), and those that start a new allowed word (or end the
hypothesis) once the current word is whole. The tokens left out get :data:`LEFT_OUT`
(-10,000), not ``-inf``: a hypothesis with no allowed token left goes on at that cost, where
``-inf`` would leave beam search short of hypotheses (fairseq asserts ``step < max_len``).
Words are told apart by WordPiece's ``##`` and sentencepiece's ``▁``; special symbols are never
part of a word.
"""

import os
from typing import Dict, Iterable, List, Optional, Sequence, Set, Tuple

import torch
from fairseq.sequence_generator import EnsembleModel

Word = Tuple[int, ...]

LEFT_OUT = -1e4
"""The log-probability given to the tokens a hypothesis may not write."""
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


class RuledEnsemble(EnsembleModel):
    """fairseq's :class:`EnsembleModel` whose next-token log-probabilities go through
    ``rules`` in order: objects with ``start(src_tokens)`` (read the sources, in
    ``forward_encoder``), ``reorder(new_order)`` (follow the beams, in
    ``reorder_encoder_out``) and ``apply(tokens, lprobs, last) -> lprobs`` (``last``: the step
    at the maximum length). ``max_len_a``, ``max_len_b`` and ``max_len`` are the generator's,
    to know its last step.

    It also leaves the encoder outputs as they are when beam search only reorders the beams
    of each sentence (``beam_size``, the generator's): the ``beam_size`` rows of a sentence
    hold the same encoder output (one source, expanded), so such a reorder changes no value,
    and fairseq's copy of every encoder tensor at every step (``(S, rows, C)`` states and
    embeddings) is skipped. A reorder that drops finished sentences is done as before."""

    def __init__(self, models, rules, max_len_a=0.0, max_len_b=200, max_len=None, beam_size=1):
        super().__init__(models)
        self.rules = list(rules)
        self.max_len_a, self.max_len_b = max_len_a, max_len_b
        self.max_len = max_len or self.max_decoder_positions()
        self.last_step = None
        self.beam_size = beam_size
        self.rows = None  # rows of the encoder outputs (None: not expanded to beams yet)

    def forward_encoder(self, net_input: Dict[str, torch.Tensor]):
        src_tokens = net_input["src_tokens"]
        for rule in self.rules:
            rule.start(src_tokens.cpu())
        # as SequenceGenerator._generate sets its maximum length (on the padded source length)
        self.last_step = min(int(self.max_len_a * src_tokens.size(1) + self.max_len_b), self.max_len - 1)
        self.rows = None
        return super().forward_encoder(net_input)

    def reorder_encoder_out(self, encoder_outs, new_order):
        for rule in self.rules:
            rule.reorder(new_order)
        if self.within_sentences(new_order):
            return encoder_outs
        self.rows = new_order.numel()
        return super().reorder_encoder_out(encoder_outs, new_order)

    def within_sentences(self, new_order) -> bool:
        """Whether ``new_order`` keeps the rows and moves each only among its sentence's beams."""
        rows = new_order.numel()
        if self.beam_size < 2 or rows != self.rows:
            return False
        block = torch.arange(rows, device=new_order.device) // self.beam_size  # (rows,)
        return torch.equal(torch.div(new_order, self.beam_size, rounding_mode="floor"), block)

    def forward_decoder(self, tokens, encoder_outs, incremental_states, temperature: float = 1.0):
        lprobs, attn = super().forward_decoder(tokens, encoder_outs, incremental_states, temperature)
        last = tokens.size(1) - 1 >= self.last_step
        for rule in self.rules:
            lprobs = rule.apply(tokens, lprobs, last)
        return lprobs, attn


def with_rules(generator, rules):
    """Make a ``SequenceGenerator`` apply ``rules`` (see :class:`RuledEnsemble`) after the
    ones it has (none: only the encoder outputs left as they are within sentences); returns
    the generator."""
    if isinstance(generator.model, RuledEnsemble):
        generator.model.rules.extend(rules)
        return generator
    models = list(generator.model.models)
    generator.model = RuledEnsemble(
        models, rules, generator.max_len_a, generator.max_len_b, generator.max_len, generator.beam_size
    )
    generator.model.eval()
    return generator


class WordConstrainedEnsemble(RuledEnsemble):
    """A :class:`RuledEnsemble` whose first rule is a :class:`WordConstraint`: the sources are
    read in ``forward_encoder`` and follow the beams through ``reorder_encoder_out``, as the
    encoder outputs do."""

    def __init__(self, models, constraint: WordConstraint, max_len_a=0.0, max_len_b=200, max_len=None, beam_size=1):
        super().__init__(models, [constraint], max_len_a, max_len_b, max_len, beam_size)
        self.constraint = constraint


def constrain_words(generator, dictionary, extra_text: Iterable[Sequence[Word]] = (), bigram_bonus: float = 0.0):
    """Make a ``SequenceGenerator`` write only words of each source and of ``extra_text`` (lists
    of words), with ``bigram_bonus`` (see :class:`WordConstraint`); returns the generator."""
    models = list(generator.model.models)
    constraint = WordConstraint(dictionary, extra_text, bigram_bonus)
    generator.model = WordConstrainedEnsemble(
        models, constraint, generator.max_len_a, generator.max_len_b, generator.max_len, generator.beam_size
    )
    generator.model.eval()
    return generator


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
