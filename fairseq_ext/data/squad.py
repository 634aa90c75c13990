"""SQuAD v1.1 JSON -> answer-aware question generation pairs (``answer [SEP] passage`` -> question).

Both question-generation set-ups this project follows pack one example as
``answer [SEP] passage`` -> ``question`` (ProphetNet, Qi et al. 2020, section 3.3: the answer
first, so that truncating the passage never drops it; UniLM/s2s-ft feed the same two parts).
One question of SQuAD is one example; its first answer is used (the dev set has several
annotators' answers, the train set one).

How the splits are formed (``--squad-json``, ``--split-json``, ``--split-titles``, held-out
articles), how a passage is truncated around its answer and what is repaired:
docs/question_generation.md. Every repair is counted in the split's
:class:`~.cleaning.Report`.
"""

import json
import logging
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote

from .cleaning import DataError, Report
from .corpora import SPLITS, PairSplit

logger = logging.getLogger(__name__)

CORPUS = "squad"
SEPARATOR = "[SEP]"
"""Between the answer and the passage; kept whole by sentencepiece (a user-defined symbol) and
binarized as fairseq's ``</s>`` (BERT's ``[SEP]``) in WordPiece data."""
HELDOUT_FRACTION = 0.1
"""Articles held out for a split that no file names (Du et al. hold out whole articles)."""
HELD_OUT_SPLITS = ("test", "valid")  # in the order they take articles from the end
STRICT_REPAIRS = ("missing_field", "empty_question", "answer_offset", "answer_not_found")
READER_REPAIRS = (
    "missing_field", "no_answer", "empty_question", "answer_offset", "answer_not_found",
    "answer_too_long", "truncated_passage", "answer_sentence_cut",
)  # fmt: skip
_SENTENCE_END = re.compile(r"[.!?][\"')\]]*$")
_WORD = re.compile(r"\S+")


@dataclass
class SquadSource:
    """Where each split of a SQuAD corpus comes from (see the module docstring)."""

    squad_json: Path
    split_json: dict[str, Path] = field(default_factory=dict)
    split_titles: dict[str, Path] = field(default_factory=dict)
    heldout_articles: int | None = None


def parse_split_files(values: list[str] | None, flag: str) -> dict[str, Path]:
    """``["valid=dev.json", ...]`` -> ``{"valid": Path("dev.json")}``; ``train`` is not allowed
    (it is ``--squad-json``) and a split may be named once."""
    parsed = {}
    for value in values or ():
        split, sep, path = value.partition("=")
        if not sep or split not in SPLITS[1:] or not path:
            raise DataError(f"{flag} {value!r}: expected valid=FILE or test=FILE")
        if split in parsed:
            raise DataError(f"{flag}: split {split} given twice")
        parsed[split] = Path(path)
    return parsed


def read_squad_file(path: Path, report: Report, strict: bool = False) -> list[dict]:
    """The ``data`` list (articles) of a SQuAD JSON file.

    Invalid UTF-8 is replaced (U+FFFD) and counted per line of the file (an error under
    ``strict``); a file that is not JSON, or has no ``data`` list, is a :class:`DataError`.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"missing SQuAD file: {path}")
    raw = path.read_bytes()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        for lineno, line in enumerate(raw.split(b"\n"), start=1):
            try:
                line.decode("utf-8")
            except UnicodeDecodeError as err:
                if strict:
                    raise DataError(f"{path}:{lineno}: invalid UTF-8 at byte {err.start} "
                                    "(drop --strict to replace it with U+FFFD and count it)") from err
                report.add("invalid_utf8", f"{path}:{lineno}")
        text = raw.decode("utf-8", errors="replace")
    try:
        corpus = json.loads(text)
    except json.JSONDecodeError as err:
        raise DataError(f"{path}: not valid JSON (line {err.lineno}, column {err.colno}: {err.msg})") from err
    if not isinstance(corpus, dict) or not isinstance(corpus.get("data"), list):
        raise DataError(f"{path}: not a SQuAD file (expected an object with a 'data' list of articles)")
    return corpus["data"]


def _skip(report: Report, repair: str, where: str, why: str, strict: bool) -> None:
    if strict and repair in STRICT_REPAIRS:
        raise DataError(f"{where}: {why} (drop --strict to skip and count it)")
    report.add(repair, f"{where}: {why}")


def _answer_span(context: str, answer: dict, where: str, report: Report, strict: bool):
    """``(start, text)`` of the answer in ``context``, its offset repaired when wrong; ``None``
    when the answer is unusable (counted)."""
    text, start = answer.get("text"), answer.get("answer_start")
    if not isinstance(text, str) or not isinstance(start, int) or isinstance(start, bool):
        _skip(report, "missing_field", where, "answer without a 'text' string and an integer 'answer_start'", strict)
        return None
    start += len(text) - len(text.lstrip())  # the offset counts the text's leading spaces
    text = text.strip()
    if not text:
        _skip(report, "missing_field", where, "empty answer text", strict)
        return None
    if context[start : start + len(text)] == text:
        return start, text
    found = [m.start() for m in re.finditer(re.escape(text), context)]
    if not found:
        _skip(report, "answer_not_found", where, f"answer {text!r} is not in the passage", strict)
        return None
    nearest = min(found, key=lambda s: abs(s - start))
    _skip(report, "answer_offset", where, f"answer_start {start} -> {nearest}", strict)
    return nearest, text


def _sentence_bounds(words: list[str], first: int, last: int) -> tuple[int, int]:
    """Word indices of the first and last word of the sentence(s) holding words first..last."""
    start = first
    while start > 0 and not _SENTENCE_END.search(words[start - 1]):
        start -= 1
    end = last
    while end < len(words) - 1 and not _SENTENCE_END.search(words[end]):
        end += 1
    return start, end


def _centred(first: int, last: int, budget: int, total: int) -> int:
    """Start of a ``budget``-word window over ``total`` words centred on words first..last."""
    start = first - (budget - (last - first + 1)) // 2
    return max(0, min(start, total - budget))


def passage_window(context: str, start: int, length: int, budget: int) -> tuple[str, bool, bool]:
    """At most ``budget`` whitespace words of ``context`` around the answer at characters
    ``start .. start+length``: ``(text, cut, sentence_kept)``.

    The whole passage when it fits; else the first ``budget`` words when they hold the answer's
    sentence, else a window centred on that sentence, else (the sentence alone is longer than
    ``budget``) centred on the answer span, which the caller guarantees fits.
    """
    spans = [(m.start(), m.end()) for m in _WORD.finditer(context)]
    words = [context[a:b] for a, b in spans]
    if len(words) <= budget:
        return " ".join(words), False, True
    end = start + length
    first = next(i for i, (a, b) in enumerate(spans) if b > start)
    last = max(i for i, (a, b) in enumerate(spans) if a < end)
    s0, s1 = _sentence_bounds(words, first, last)
    if s1 - s0 + 1 <= budget:
        left = 0 if s1 < budget else _centred(s0, s1, budget, len(words))
        return " ".join(words[left : left + budget]), True, True
    left = _centred(first, last, budget, len(words))
    return " ".join(words[left : left + budget]), True, False


def squad_examples(articles: list, name: str, report: Report, max_source_tokens: int | None = None,
                   strict: bool = False, limit: int | None = None) -> tuple[list[str], list[str]]:
    """``(sources, targets)`` of the usable questions of ``articles``, the first ``limit`` of
    them (raw strings; the foundation's :func:`~.cleaning.clean_pairs` cleans them next).
    ``report.documents_in`` grows by the questions read; every skip and truncation is counted
    (see the module docstring)."""
    sources, targets = [], []
    for i, article in enumerate(articles):
        paragraphs = article.get("paragraphs") if isinstance(article, dict) else None
        if not isinstance(paragraphs, list):
            _skip(report, "missing_field", f"{name}:data[{i}]", "article without a 'paragraphs' list", strict)
            continue
        for j, paragraph in enumerate(paragraphs):
            where_p = f"{name}:data[{i}].paragraphs[{j}]"
            qas = paragraph.get("qas") if isinstance(paragraph, dict) else None
            if not isinstance(qas, list):
                _skip(report, "missing_field", where_p, "paragraph without a 'qas' list", strict)
                continue
            context = paragraph.get("context")
            for k, qa in enumerate(qas):
                if limit is not None and len(sources) >= limit:
                    return sources, targets
                where = f"{where_p}.qas[{k}]"
                report.documents_in += 1
                if not isinstance(context, str) or not context.strip():
                    _skip(report, "missing_field", where, "its paragraph has no 'context' text", strict)
                    continue
                question = qa.get("question") if isinstance(qa, dict) else None
                answers = qa.get("answers") if isinstance(qa, dict) else None
                if not isinstance(question, str) or not isinstance(answers, list):
                    what = "question without a 'question' string and an 'answers' list"
                    _skip(report, "missing_field", where, what, strict)
                    continue
                if not question.strip():
                    _skip(report, "empty_question", where, "empty question", strict)
                    continue
                if not answers:
                    report.add("no_answer", f"{where}: no answer (unanswerable)")
                    continue
                span = _answer_span(context, answers[0] if isinstance(answers[0], dict) else {}, where, report, strict)
                if span is None:
                    continue
                start, answer = span
                answer = " ".join(answer.split())
                budget = None if max_source_tokens is None else max_source_tokens - len(answer.split(" ")) - 1
                if budget is not None and budget < 1:
                    report.add("answer_too_long", f"{where}: the answer alone has {len(answer.split(' '))} words")
                    continue
                passage, cut, sentence_kept = passage_window(context, start, len(answer), budget or math.inf)
                if cut:
                    report.add("truncated_passage", where)
                    if not sentence_kept:
                        report.add("answer_sentence_cut", where)
                sources.append(f"{answer} {SEPARATOR} {passage}")
                targets.append(question)
    return sources, targets


def _title(article, index: int) -> str:
    title = article.get("title") if isinstance(article, dict) else None
    return title if isinstance(title, str) else f"<untitled article {index}>"


def _take_titles(articles: list, titles_file: Path, squad_json: Path) -> tuple[list, list]:
    """``(taken, rest)``: the articles listed in ``titles_file`` (matched exactly or
    URL-decoded) and the others; a listed title missing from ``squad_json`` is an error."""
    if not Path(titles_file).is_file():
        raise FileNotFoundError(f"missing titles file: {titles_file}")
    wanted = {}
    for lineno, line in enumerate(Path(titles_file).read_text(encoding="utf-8").splitlines(), start=1):
        if line.strip():
            wanted.setdefault(unquote(line.strip()), lineno)
    taken, rest = [], []
    for index, article in enumerate(articles):
        title = unquote(_title(article, index))
        (taken if title in wanted else rest).append(article)
        wanted.pop(title, None)
    if wanted:
        missing = ", ".join(f"{t!r} (line {n})" for t, n in list(wanted.items())[:5])
        raise DataError(f"{titles_file}: {len(wanted)} listed titles are not articles of {squad_json}: {missing}")
    return taken, rest


def split_articles(
    source: SquadSource, reports: dict[str, Report], strict: bool = False
) -> dict[str, tuple[list, str]]:
    """``{split: (articles, name)}`` for train, valid and test (see the module docstring)."""
    train = read_squad_file(source.squad_json, reports["train"], strict)
    splits = {}
    for split in SPLITS[1:]:
        if split in source.split_json and split in source.split_titles:
            raise DataError(f"split {split} is given by both --split-json and --split-titles")
        if split in source.split_json:
            path = source.split_json[split]
            splits[split] = (read_squad_file(path, reports[split], strict), str(path))
        elif split in source.split_titles:
            taken, train = _take_titles(train, source.split_titles[split], source.squad_json)
            splits[split] = (taken, f"{source.squad_json}[{Path(source.split_titles[split]).name}]")
    missing = [split for split in HELD_OUT_SPLITS if split not in splits]
    if missing:
        count = source.heldout_articles or max(1, round(HELDOUT_FRACTION * len(train)))
        if len(train) <= count * len(missing):
            raise DataError(
                f"{source.squad_json}: {len(train)} articles cannot give {count} held-out article(s) "
                f"to each of {', '.join(missing)} and keep some for training; give --split-json "
                "or --split-titles for them, or a smaller --heldout-articles"
            )
        for split in missing:
            train, held = train[:-count], train[-count:]
            splits[split] = (held, f"{source.squad_json}[held-out {split}]")
            titles = ", ".join(_title(a, i) for i, a in enumerate(held))
            logger.info("%s: held out the last %d article(s) of %s: %s", split, count, source.squad_json, titles)
    splits["train"] = (train, str(source.squad_json))
    return {split: splits[split] for split in SPLITS}


def load_squad(source: SquadSource, max_source_tokens: int | None = None, strict: bool = False,
               limit: int | None = None) -> dict[str, PairSplit]:
    """The three splits of a SQuAD corpus as raw ``(answer [SEP] passage, question)`` pairs;
    ``limit`` keeps the first ``limit`` examples of each."""
    reports = {split: Report() for split in SPLITS}
    pairs = {}
    for split, (articles, name) in split_articles(source, reports, strict).items():
        sources, targets = squad_examples(articles, name, reports[split], max_source_tokens, strict, limit)
        if not sources:
            raise DataError(f"{name}: no usable question for the {split} split")
        names = (f"{name}[{split}.source]", f"{name}[{split}.target]")
        pairs[split] = PairSplit(sources, targets, names, reports[split])
        logger.info("%s: %d articles, %d of %d questions usable", split, len(articles),
                    len(sources), reports[split].documents_in)  # fmt: skip
    return pairs
