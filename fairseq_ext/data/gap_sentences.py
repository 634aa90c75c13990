"""Gap-sentence pairs (PEGASUS, Zhang et al. 2020, section 3.1) from the shipped Wikipedia text
or from the full text of ACLSum's training papers (in-domain pre-training without labels: PEGASUS's
ablation of the pre-training corpus found text of the task's own domain to help).

The principal sentence of a window of one article (the highest ROUGE-1 F1 against the rest,
"Ind-Orig") is the target; it stays in the source (``remove=False``: learn to find and copy it)
or is cut out (``remove=True``, PEGASUS's form). Writes ``{train,valid,test}.{source,target}``
for Wikipedia, ``{train,valid}.{source,target}`` for ACLSum, whose validation pairs come from
training papers held out of the pre-training: no text of ACLSum's validation or test papers is
read (``python -m fairseq_ext.cli.gap_sentences --out DIR [--corpus aclsum]``).
"""

from __future__ import annotations

import json
import logging
import re
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

from ..scoring.rouge.tokenizer import rouge155_tokens
from .corpora import aclsum_dir, load_wiki, read_aclsum_records
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


def aclsum_training_papers(limit: int | None = None,
                           valid_papers: int = 10) -> tuple[dict[str, list[list[str]]], Counter]:
    """The full text (abstract, then the body's paragraphs) of ACLSum's training papers, the last
    ``valid_papers`` of them held out as ``valid``; ``limit`` keeps the first papers of the split.
    Papers without a parse or without text are counted, not silently dropped."""
    papers, counts = [], Counter()
    for record in read_aclsum_records("train", limit):
        path = aclsum_dir() / "paper_jsons" / f"{record['id']}.json"
        if not path.is_file():
            counts["papers without a parse (skipped)"] += 1
            continue
        paper = json.loads(path.read_text(encoding="utf-8"))
        # the parse keeps the PDF's line breaks inside paragraphs: one space each, one pair a line
        paragraphs = [paper.get("abstract") or ""] + [p["text"] for p in paper["pdf_parse"]["body_text"]]
        paragraphs = [" ".join(p.split()) for p in paragraphs if p and not p.isspace()]
        if not paragraphs:
            counts["papers without text (skipped)"] += 1
            continue
        papers.append(paragraphs)
    if not 0 < valid_papers < len(papers):
        raise ValueError(f"aclsum: {len(papers)} training papers with text; --valid-papers {valid_papers} must "
                         f"leave at least one on each side")
    counts["papers"] = len(papers)
    return {"train": papers[:-valid_papers], "valid": papers[-valid_papers:]}, counts


def write_pairs(out: Path, limit: int | None = None, corpus: str = "wiki", valid_papers: int = 10,
                **options) -> dict[str, Counter]:
    """``out/{split}.{source,target}`` for the wiki corpus's train/valid/test articles, or for
    ACLSum's training papers (``corpus="aclsum"``: train and valid, both from the training split)."""
    out = Path(out)
    check_out_dir(out)
    out.mkdir(parents=True, exist_ok=True)
    if corpus == "wiki":
        articles, _ = load_wiki(limit)
    elif corpus == "aclsum":
        articles, papers = aclsum_training_papers(limit, valid_papers)
        logger.info("aclsum training papers: %s", dict(papers))
    else:
        raise ValueError(f"unknown corpus {corpus!r}: wiki or aclsum")
    report = {}
    for split, docs in articles.items():
        sources, targets, counts = gap_sentence_pairs(docs, **options)
        if not sources:
            raise ValueError(f"{corpus}[{split}]: no gap-sentence pair (counts: {dict(counts)})")
        (out / f"{split}.source").write_text("".join(s + "\n" for s in sources), encoding="utf-8")
        (out / f"{split}.target").write_text("".join(t + "\n" for t in targets), encoding="utf-8")
        logger.info("%s[%s]: %s", corpus, split, dict(counts))
        report[split] = counts
    return report
