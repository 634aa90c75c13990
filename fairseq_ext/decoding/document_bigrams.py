"""Documents summarized a line at a time (ACLSum's three aspects of a paper: ``challenge: <paper>``,
``approach: <paper>``, ``outcome: <paper>``) without a phrase written twice across their lines
(``--no-repeat-document-bigrams`` with ``--lines-per-document N``).

Source lines ``N d .. N d + N - 1`` are one document ``d``; line ``N d + k`` is its turn ``k``.
Batches hold whole documents (:func:`document_batches`), and each batch is decoded in turns
(:func:`decode_in_turns`): turn 0 of its documents, then turn 1 with the word bigrams that turn 0
wrote blocked, and so on, so that a document's lines never repeat a pair of words. Within one
line, fairseq's ``--no-repeat-ngram-size`` already blocks repeated piece n-grams.

:class:`DocumentBigrams` is the rule (:mod:`.rules`) that blocks them. With the word before the
current one ``w1`` and the (partial) current word ``p``, a blocked pair ``(a, b)`` bans::

    a == w1 and b[:-1] == p    b[-1]   the piece that would finish b after a
    a == p  and len(b) == 1    b[0]    the one-piece word b right after a

(the same prefix rule as ``--no-repeat-word``'s, which also bans the piece when ``b`` would go
on into a longer word). Banned tokens get :data:`~.words.LEFT_OUT`.
"""

import logging
from typing import Dict, Iterable, List, Sequence, Set, Tuple

import numpy as np
import torch

from .words import LEFT_OUT, Word, split_words, word_starts

logger = logging.getLogger(__name__)

Bigram = Tuple[Word, Word]


def word_bigrams(words: Sequence[Word]) -> Set[Bigram]:
    return set(zip(words, words[1:]))


class DocumentBigrams:
    """The rule: per sentence a set of word bigrams it may not write (:meth:`expect` before
    each generation, one set per sentence of the batch; none expected: nothing blocked)."""

    def __init__(self, dictionary):
        self._starts = word_starts(dictionary).tolist()
        self.skip = set(range(dictionary.nspecial))
        self.pending: List[Set[Bigram]] | None = None
        self.rows: List[Dict[Tuple[Word, Word], Set[int]]] = []

    def words_of(self, ids: Iterable[int]) -> List[Word]:
        return split_words(ids, self._starts, self.skip)

    def expect(self, blocked: Sequence[Set[Bigram]]):
        """The bigrams each sentence of the next generation may not write, in batch order."""
        self.pending = list(blocked)

    @staticmethod
    def table(bigrams: Set[Bigram]) -> Dict[Tuple[Word, Word], Set[int]]:
        """``{(a, b[:-1]): {b[-1], ...}}``: the piece each blocked pair's last step would write."""
        table: Dict[Tuple[Word, Word], Set[int]] = {}
        for first, second in bigrams:
            table.setdefault((first, second[:-1]), set()).add(second[-1])
        return table

    def start(self, src_tokens: torch.Tensor):
        sentences = src_tokens.size(0)
        pending, self.pending = self.pending, None
        if pending is None:
            pending = [set()] * sentences
        elif len(pending) != sentences:
            raise ValueError(f"{len(pending)} sets of blocked bigrams for a batch of {sentences} sentences")
        self.rows = [self.table(b) for b in pending]

    def reorder(self, new_order: torch.Tensor):
        self.rows = [self.rows[i] for i in new_order.tolist()]

    def banned(self, row: List[int], table) -> Set[int]:
        if not table:
            return set()
        words = self.words_of(row)
        if not words:
            return set()
        partial = words[-1]
        banned = set(table.get((partial, ()), ()))
        if len(words) > 1:
            banned |= table.get((words[-2], partial), set())
        return banned

    def apply(self, tokens: torch.Tensor, lprobs: torch.Tensor, last: bool = False) -> torch.Tensor:
        if not any(self.rows):
            return lprobs
        rows, ids = [], []
        for r, (row, table) in enumerate(zip(tokens.tolist(), self.rows)):
            for token in self.banned(row, table):
                rows.append(r)
                ids.append(token)
        if not rows:
            return lprobs
        lprobs = lprobs.clone()
        lprobs[torch.tensor(rows, device=lprobs.device), torch.tensor(ids, device=lprobs.device)] = LEFT_OUT
        return lprobs


def document_batches(indices: np.ndarray, lines_per_document: int, max_sentences: int | None) -> List[np.ndarray]:
    """Batches of whole documents, in id order: as many documents as fit ``max_sentences``
    lines (at least one), each document's lines in turn order."""
    per_batch = max(1, (max_sentences or lines_per_document) // lines_per_document)
    documents: Dict[int, List[int]] = {}
    for index in sorted(int(i) for i in indices):
        documents.setdefault(index // lines_per_document, []).append(index)
    ordered = [documents[d] for d in sorted(documents)]
    return [np.array([i for doc in ordered[s:s + per_batch] for i in doc], dtype=np.int64)
            for s in range(0, len(ordered), per_batch)]


def select_rows(sample, rows: torch.Tensor, batch_size: int):
    """``sample`` restricted to ``rows`` (every tensor whose first dimension is the batch's)."""
    if isinstance(sample, dict):
        return {k: select_rows(v, rows, batch_size) for k, v in sample.items()}
    if isinstance(sample, torch.Tensor) and sample.dim() > 0 and sample.size(0) == batch_size:
        return sample.index_select(0, rows.to(sample.device))
    return sample


def decode_in_turns(generate, sample, rule: DocumentBigrams, lines_per_document: int,
                    written: Dict[int, Set[Bigram]]):
    """``generate(sub_sample, rows) -> hypotheses`` called once per turn present in ``sample``, in turn
    order, each sentence blocking the bigrams its document wrote before (``written``: document
    -> bigrams, updated with each turn's best hypothesis); the hypotheses in ``sample``'s order."""
    ids = sample["id"].tolist()
    batch_size = len(ids)
    turns = sorted({i % lines_per_document for i in ids})
    results = [None] * batch_size
    for turn in turns:
        rows = [r for r, i in enumerate(ids) if i % lines_per_document == turn]
        documents = [ids[r] // lines_per_document for r in rows]
        if turn == 0:  # a document starts afresh (ids of an earlier run or buffer are forgotten)
            for d in documents:
                written[d] = set()
        rule.expect([written.get(d, set()) for d in documents])
        index = torch.tensor(rows)
        hypotheses = generate(select_rows(sample, index, batch_size), index)
        for r, d, hypos in zip(rows, documents, hypotheses):
            results[r] = hypos
            if hypos:
                written.setdefault(d, set()).update(word_bigrams(rule.words_of(hypos[0]["tokens"].tolist())))
    return results
