"""Decoding rules: what beam search may write next, one hypothesis a row.

A rule has the shape of Hugging Face's ``LogitsProcessor`` plus beam reorders:

* ``start(src_tokens)``: read the batch's sources ``(bsz, S)`` (once, before the first step);
* ``reorder(new_order)``: follow the beams ``(rows,)`` when beam search reorders them;
* ``apply(tokens, lprobs, last) -> lprobs``: the step's ``(rows, V)`` log-probabilities after
  the rule, given the hypotheses so far ``(rows, step + 1)`` (``last``: the maximum length).

:class:`~.ensemble.RuledEnsemble` runs them in order. The rules here work on whole words of
WordPiece and sentencepiece hypotheses (:mod:`.words`); :class:`~.word_constraint.WordConstraint`
is the one that reads the sources:

* :class:`NoRepeatWord` (``--no-repeat-word``): never a word twice in a row. With the current
  (partial) word ``p`` and the whole word ``w`` before it::

      p = (s,)               block s        "translation" then "translation"
      p = w[:-1], |w| >= 2   block w[-1]    "termin ##ological termin" then "##ological"

* :class:`EndAtSentence` (``--end-at-sentence``): after a standalone ``.``, ``?`` or ``!`` (not
  after a number) only ``</s>``; the other tokens get
  :data:`~.words.LEFT_OUT`, so ``--min-len`` still holds.

A few ``(B, L)`` tensor operations per step, no state: beam reorders need nothing.
"""

import torch

from .words import LEFT_OUT, SPM_WORD_START, word_starts

SENTENCE_ENDS = (".", "?", "!")


class StatelessRule:
    """A rule that reads nothing from the sources and follows beams for free."""

    def start(self, src_tokens: torch.Tensor):
        pass

    def reorder(self, new_order: torch.Tensor):
        pass

    @staticmethod
    def on(table: torch.Tensor, device) -> torch.Tensor:
        return table if table.device == device else table.to(device)


class NoRepeatWord(StatelessRule):
    """Never the same word twice in a row (see the module docstring)."""

    def __init__(self, dictionary):
        self.starts = word_starts(dictionary)  # (V,) True where a symbol starts a word
        self.special = torch.zeros(len(dictionary), dtype=torch.bool)  # (V,)
        self.special[: dictionary.nspecial] = True

    def blocked(self, tokens: torch.Tensor):
        """``(mask (B, 2), ids (B, 2))``: per row, the tokens to block and whether to."""
        B, L = tokens.shape
        starts, special = self.on(self.starts, tokens.device), self.on(self.special, tokens.device)
        is_start = starts[tokens]  # (B, L)
        is_start[:, 0] = True  # decoding starts from </s> (or a task's own start symbol)
        pos = torch.arange(L, device=tokens.device)  # (L,)
        last = torch.where(is_start, pos, -1).amax(dim=1)  # (B,) the partial word's first piece
        prev = torch.where(is_start & (pos < last[:, None]), pos, -1).amax(dim=1)  # (B,) the word before it
        partial_is_word = ~special[tokens.gather(1, last[:, None])[:, 0]]  # (B,)
        # the partial word is one piece s: s may not start the next word
        one_piece = partial_is_word & (last == L - 1)  # (B,)
        # the partial word is the word before minus its last piece: that piece may not follow
        span = last - prev  # (B,) pieces of the word before
        prev_is_word = (prev >= 0) & ~special[tokens.gather(1, prev.clamp(min=0)[:, None])[:, 0]]
        shifted = tokens.gather(1, (pos[None] - span[:, None]).clamp(min=0))  # (B, L) piece one word back
        same = ((tokens == shifted) | (pos[None] < last[:, None])).all(dim=1)  # (B,)
        finishing = partial_is_word & prev_is_word & (span >= 2) & (L - last == span - 1) & same
        ids = torch.stack([tokens[:, -1], tokens.gather(1, (last - 1).clamp(min=0)[:, None])[:, 0]], dim=1)  # (B, 2)
        return torch.stack([one_piece, finishing], dim=1), ids

    def apply(self, tokens: torch.Tensor, lprobs: torch.Tensor, last: bool = False) -> torch.Tensor:
        mask, ids = self.blocked(tokens)  # (B, 2)
        ids = ids.to(lprobs.device)
        current = lprobs.gather(1, ids)  # (B, 2)
        blocked = torch.where(mask.to(lprobs.device), torch.full_like(current, float("-inf")), current)
        return lprobs.scatter(1, ids, blocked)


class EndAtSentence(StatelessRule):
    """After a sentence end, only ``</s>`` (see the module docstring)."""

    def __init__(self, dictionary, ends=SENTENCE_ENDS):
        symbols = [s.removeprefix(SPM_WORD_START) for s in dictionary.symbols]
        special = set(range(dictionary.nspecial))
        self.ends = torch.tensor([i not in special and s in ends for i, s in enumerate(symbols)])  # (V,)
        self.digits = torch.tensor([s.removeprefix("##").isdigit() for s in symbols])  # (V,)
        self.eos = dictionary.eos()

    def ended(self, tokens: torch.Tensor) -> torch.Tensor:
        """``(B,)``: True where the hypothesis has just written a sentence end."""
        ended = self.on(self.ends, tokens.device)[tokens[:, -1]]  # (B,)
        if tokens.size(1) > 1:
            ended &= ~self.on(self.digits, tokens.device)[tokens[:, -2]]
        return ended

    def apply(self, tokens: torch.Tensor, lprobs: torch.Tensor, last: bool = False) -> torch.Tensor:
        ended = self.ended(tokens).to(lprobs.device)  # (B,)
        if not bool(ended.any()):
            return lprobs
        others = torch.ones(lprobs.size(-1), dtype=torch.bool, device=lprobs.device)  # (V,)
        others[self.eos] = False
        return lprobs.masked_fill(ended[:, None] & others[None], LEFT_OUT)
