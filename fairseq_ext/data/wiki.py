"""MediaWiki XML dump -> plain-text articles, with the standard library only.

:func:`iter_articles` streams ``(title, wikitext)`` of main-namespace, non-redirect pages;
:func:`strip_markup` turns wikitext into paragraphs with regular expressions, in this order:
comments and ``<ref>``/``<math>``/... blocks; templates and tables, innermost first; links
(``[[target|label]]`` -> label; file, category and interlanguage links dropped); quotes, HTML
tags, magic words, then entities; headings, back-matter sections (:data:`DROPPED_SECTIONS`),
list markers and lines without a letter or digit dropped.
"""

import bz2
import html
import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Iterator

DROPPED_SECTIONS = frozenset(
    {
        "references", "notes", "footnotes", "citations", "sources", "see also",
        "external links", "further reading", "bibliography", "notes and references",
    }
)  # fmt: skip
"""Back-matter headings (lower case) whose whole section is removed."""

_BLOCKS = re.compile(
    r"<!--.*?-->"
    r"|<ref[^>/]*/>"
    r"|<(ref|math|gallery|timeline|source|syntaxhighlight|pre|score|imagemap)\b[^>]*>.*?</\1\s*>",
    re.DOTALL | re.IGNORECASE,
)
_NOWIKI = re.compile(r"<nowiki>(.*?)</nowiki>", re.DOTALL | re.IGNORECASE)
_TEMPLATE = re.compile(r"\{\{(?:[^{}]|\{(?!\{)|\}(?!\}))*?\}\}")  # innermost; may hold { or }
_TABLE = re.compile(r"\{\|(?:(?!\{\|)[^}]|\}(?<!\|\}))*?\|\}", re.DOTALL)
_LINK = re.compile(r"\[\[((?:[^\[\]]|\[[^\[\]]*\])*)\]\]")  # may hold single [..]
_DROPPED_LINK = re.compile(r"^\s*:?\s*(file|image|category|media|[a-z]{2,3}(-[a-z]+)?)\s*:", re.I)
_EXTERNAL = re.compile(r"\[(?:https?:|ftp:)?//[^\s\]]*\s*([^\]]*)\]")
_QUOTES = re.compile(r"'{2,}")
_TAG = re.compile(r"</?[a-zA-Z][^>]*>")
_MAGIC = re.compile(r"__[A-Z]+__")
_HEADING = re.compile(r"^(=+)\s*(.*?)\s*\1\s*$")
_LIST = re.compile(r"^[*#:;]+\s*")
_TEXT = re.compile(r"\w")


def _repeat(pattern: re.Pattern, repl, text: str) -> str:
    """Apply ``pattern.sub`` until nothing changes (peels nested constructs from inside)."""
    while True:
        text, n = pattern.subn(repl, text)
        if not n:
            return text


def _link(match: re.Match) -> str:
    target, _, label = match.group(1).partition("|")
    if _DROPPED_LINK.match(target):
        return ""
    return (label or target).rsplit("|", 1)[-1]


def strip_markup(wikitext: str) -> list[str]:
    """Plain-text paragraphs of one article's wikitext (see the module docstring)."""
    text = _NOWIKI.sub(r"\1", _BLOCKS.sub("", wikitext))
    text = _repeat(_TEMPLATE, "", text)
    text = _repeat(_TABLE, "", text)
    text = text.replace("{{", "").replace("}}", "")
    text = _repeat(_LINK, _link, text)
    text = _EXTERNAL.sub(r"\1", text)
    text = _MAGIC.sub("", _TAG.sub("", _QUOTES.sub("", text)))
    paragraphs, skipping = [], False
    for line in text.split("\n"):
        line = line.strip()
        heading = _HEADING.match(line)
        if heading:
            skipping = heading.group(2).strip().lower() in DROPPED_SECTIONS
            continue
        if skipping or line.startswith(("|", "!", "{|", "|}")):
            continue
        line = " ".join(html.unescape(_LIST.sub("", line)).split())
        if _TEXT.search(line):
            paragraphs.append(line)
    return paragraphs


def iter_articles(path: str | Path, counts: dict | None = None) -> Iterator[tuple[str, str]]:
    """``(title, wikitext)`` of each main-namespace, non-redirect page of a dump.

    ``counts`` (if given) receives how many pages were skipped as redirects or for being
    outside the main namespace, so nothing is skipped silently.
    """
    counts = {} if counts is None else counts
    opener = bz2.open if str(path).endswith(".bz2") else open
    with opener(path, "rb") as stream:
        for _, elem in ET.iterparse(stream, events=("end",)):
            if elem.tag.rpartition("}")[2] != "page":
                continue
            title = elem.findtext("{*}title", "")
            if elem.findtext("{*}ns", "0") != "0":
                counts["skipped_namespace"] = counts.get("skipped_namespace", 0) + 1
            elif elem.find("{*}redirect") is not None:
                counts["skipped_redirect"] = counts.get("skipped_redirect", 0) + 1
            else:
                yield title, elem.findtext("{*}revision/{*}text", "")
            elem.clear()


def split_documents(documents: list, n_valid: int, n_test: int) -> dict[str, list]:
    """Deterministic split by position: the last ``n_test`` are test, the ``n_valid``
    before them valid, the rest train."""
    n_train = max(len(documents) - n_valid - n_test, 0)
    return {
        "train": documents[:n_train],
        "valid": documents[n_train : n_train + n_valid],
        "test": documents[n_train + n_valid :],
    }
