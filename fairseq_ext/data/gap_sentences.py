"""Gap-sentence pairs from the shipped Wikipedia text (PEGASUS, Zhang et al. 2020, section 3.1).

The principal sentence of a window of one article (the highest ROUGE-1 F1 against the rest,
"Ind-Orig") is the target; it stays in the source (``remove=False``: learn to find and copy it)
or is cut out (``remove=True``, PEGASUS's form). Writes ``{train,valid,test}.{source,target}``
(``python -m fairseq_ext.cli.gap_sentences --out DIR``).
"""

from __future__ import annotations

import logging
import re
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

from ..scoring.rouge.tokenizer import rouge155_tokens
from .corpora import load_wiki
from .prepare import check_out_dir

logger = logging.getLogger(__name__)

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[\"'(\[]?[A-Z0-9])")


def split_sentences(paragraph: str) -> list[str]:
    """Sentences of a paragraph: a split after ``.``, ``!`` or ``?`` before a capital or digit."""
    return [s.strip() for s in _SENTENCE_END.split(paragraph) if s.strip()]


def _unigrams(text: str) -> Counter:
    return Counter(rouge155_tokens(text))


def rouge1_f(candidate: Counter, reference: Counter) -> float:
    """ROUGE-1 F1 of two bags of ROUGE-1.5.5 tokens, unstemmed (0 when either is empty)."""
    overlap = sum((candidate & reference).values())
    if overlap == 0:
        return 0.0
    precision, recall = overlap / sum(candidate.values()), overlap / sum(reference.values())
    return 2 * precision * recall / (precision + recall)


def principal_sentence(sentences: Sequence[str], min_words: int, max_words: int) -> int | None:
    """Index of the sentence with the best ROUGE-1 F1 against the others (PEGASUS's Ind-Orig),
    among those of ``min_words``..``max_words`` words; None if none qualifies."""
    bags = [_unigrams(s) for s in sentences]
    total = sum(bags, Counter())
    best, best_score = None, -1.0
    for i, (sentence, bag) in enumerate(zip(sentences, bags)):
        if not min_words <= len(sentence.split()) <= max_words:
            continue
        score = rouge1_f(bag, total - bag)
        if score > best_score:
            best, best_score = i, score
    return best


def windows(paragraphs: Iterable[str], window_words: int) -> Iterator[list[str]]:
    """Consecutive sentences of one article, at most ``window_words`` words each window (a longer
    sentence is a window of its own, which the caller drops)."""
    window, words = [], 0
    for paragraph in paragraphs:
        for sentence in split_sentences(paragraph):
            n = len(sentence.split())
            if window and words + n > window_words:
                yield window
                window, words = [], 0
            window.append(sentence)
            words += n
    if window:
        yield window


def gap_sentence_pairs(articles: Iterable[Sequence[str]], window_words: int = 170, min_words: int = 8,
                       max_words: int = 35, remove: bool = False) -> tuple[list[str], list[str], Counter]:
    """(sources, targets, counts) over all windows of all articles; ``counts`` says how many
    windows became pairs and why the others did not."""
    sources, targets, counts = [], [], Counter()
    for article in articles:
        for window in windows(article, window_words):
            if len(window) < 3:
                counts["windows with fewer than 3 sentences (skipped)"] += 1
                continue
            chosen = principal_sentence(window, min_words, max_words)
            if chosen is None:
                counts[f"windows without a sentence of {min_words}-{max_words} words (skipped)"] += 1
                continue
            kept = [s for i, s in enumerate(window) if not (remove and i == chosen)]
            sources.append(" ".join(kept))
            targets.append(window[chosen])
            counts["pairs"] += 1
    return sources, targets, counts


def write_pairs(out: Path, limit: int | None = None, **options) -> dict[str, Counter]:
    """``out/{split}.{source,target}`` for the wiki corpus's train/valid/test articles."""
    out = Path(out)
    check_out_dir(out)
    out.mkdir(parents=True, exist_ok=True)
    articles, _ = load_wiki(limit)
    report = {}
    for split, docs in articles.items():
        sources, targets, counts = gap_sentence_pairs(docs, **options)
        if not sources:
            raise ValueError(f"wiki[{split}]: no gap-sentence pair (counts: {dict(counts)})")
        (out / f"{split}.source").write_text("".join(s + "\n" for s in sources), encoding="utf-8")
        (out / f"{split}.target").write_text("".join(t + "\n" for t in targets), encoding="utf-8")
        logger.info("wiki[%s]: %s", split, dict(counts))
        report[split] = counts
    return report
