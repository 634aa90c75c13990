"""Line cleaning with counted repairs: nothing is dropped, shifted or changed silently.

=====================  ======================================================  ==============
repair                 what happens                                            ``strict``
=====================  ======================================================  ==============
``invalid_utf8``       undecodable bytes become U+FFFD                         error
``crlf``               the ``\\r`` of a ``\\r\\n`` line ending is dropped        repaired
``nul``                NUL characters removed                                  error
``control``            other control characters and the BOM removed (or a      error
                       space where Python counts them as whitespace)
``empty_pair``         a pair with an empty side is removed (both sides)       error
``empty_line``         (plain text) an empty paragraph line is removed         repaired
``empty_document``     (plain text) a document with no text left is removed    error
``truncated_source``   a source longer than ``max_source_tokens``              repaired
``truncated_target``   whitespace tokens is cut to that length                 repaired
=====================  ======================================================  ==============

Whitespace runs collapse to one space (not counted); :class:`Report` line numbers are 1-based.
"""

import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Sequence

REPAIRS = {
    "invalid_utf8": "lines with invalid UTF-8 (bytes replaced by U+FFFD)",
    "crlf": "lines with a CRLF ending (CR dropped)",
    "nul": "lines with NUL characters (removed)",
    "control": "lines with other control characters (removed)",
    "empty_pair": "pairs removed because source or target was empty",
    "empty_line": "empty paragraph lines removed inside a document",
    "empty_document": "documents removed because no text was left",
    "truncated_source": "sources truncated to --max-source-tokens",
    "truncated_target": "targets truncated to --max-target-tokens",
    "missing_paper": "papers skipped: no json file for the id (aclsum_long)",
    "empty_body": "papers skipped: empty body text (aclsum_long)",
    "empty_abstract": "papers skipped: empty abstract (aclsum_long)",
    "missing_field": "SQuAD entries skipped: a required field missing or of the wrong type",
    "no_answer": "questions skipped: no answer (SQuAD 2.0 unanswerable)",
    "empty_question": "questions skipped: empty question text",
    "answer_offset": "answers whose answer_start missed the text (re-found in the passage)",
    "answer_not_found": "questions skipped: the answer text is not in the passage",
    "answer_too_long": "questions skipped: the answer alone exceeds --max-source-tokens",
    "truncated_passage": "passages cut to --max-source-tokens around the answer's sentence",
    "answer_sentence_cut": "of those, windows too short for the answer's sentence (answer kept)",
}
"""Every repair :func:`clean_pairs` and :func:`clean_documents` can make, with its unit."""

STRICT_ERRORS = ("invalid_utf8", "nul", "control", "empty_pair", "empty_document")
"""Repairs that become a :class:`DataError` under ``strict=True``."""

_NUL = "\x00"
_SURROGATE = re.compile("[\ud800-\udfff]")
# Unicode Cc without tab/newline/NUL, plus the byte-order mark (category Cf).
_CONTROL = re.compile("[\x01-\x08\x0b-\x1f\x7f-\x9f\ufeff]")
# Those of them that str.split() treats as whitespace: they become a space, not nothing.
_CONTROL_SPACE = re.compile("[\x0b-\x0d\x1c-\x1f\x85]")


class DataError(ValueError):
    """Input that cannot be repaired (or, with ``strict``, must not be)."""


class LineCountMismatch(DataError):
    """Source and target files do not have the same number of lines."""


@dataclass
class Report:
    """Counts of every repair made on one split, and where each was made.

    ``counts[repair]`` is exact; ``locations[repair]`` keeps the first ``max_locations``
    places (``"name:line"``) so that a report on a large corpus stays small.
    """

    documents_in: int = 0
    documents_out: int = 0
    counts: Counter = field(default_factory=Counter)
    locations: dict = field(default_factory=dict)
    max_locations: int = 100

    def add(self, repair: str, where: str) -> None:
        self.counts[repair] += 1
        places = self.locations.setdefault(repair, [])
        if len(places) < self.max_locations:
            places.append(where)

    def merge(self, other: "Report") -> "Report":
        """Add ``other``'s repairs (not its document counts) to this report."""
        for repair, count in other.counts.items():
            self.counts[repair] += count
            places = self.locations.setdefault(repair, [])
            room = self.max_locations - len(places)
            places.extend(other.locations.get(repair, [])[:room])
        return self

    def to_dict(self) -> dict:
        return {
            "documents_in": self.documents_in,
            "documents_out": self.documents_out,
            "repairs": dict(sorted(self.counts.items())),
            "locations": {k: v for k, v in sorted(self.locations.items()) if v},
        }


def decode_line(raw: bytes | str, where: str, report: Report, strict: bool = False) -> str:
    """UTF-8 decode one line (``bytes`` without its ``\\n``), dropping a CRLF's ``\\r``. A ``str``
    is taken as decoded, except that lone surrogates (text that is not valid Unicode, e.g. from
    ``errors="surrogateescape"``) are treated as invalid UTF-8."""
    if isinstance(raw, str):
        if not _SURROGATE.search(raw):
            return raw
        if strict:
            at = _SURROGATE.search(raw).start()
            raise DataError(f"{where}: a lone surrogate at character {at} (not valid Unicode); "
                            "drop --strict to replace it with U+FFFD and count it")
        report.add("invalid_utf8", where)
        return _SURROGATE.sub("\ufffd", raw)
    if raw.endswith(b"\r"):
        raw = raw[:-1]
        report.add("crlf", where)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as err:
        if strict:
            raise DataError(
                f"{where}: invalid UTF-8 at byte {err.start} ({raw[err.start:err.end]!r}); "
                "drop --strict to replace it with U+FFFD and count it"
            ) from err
        report.add("invalid_utf8", where)
        return raw.decode("utf-8", errors="replace")


def clean_text(raw: bytes | str, where: str, report: Report, strict: bool = False) -> str:
    """Decode and repair one document or paragraph; every repair is added to ``report``."""
    text = decode_line(raw, where, report, strict)
    for repair, found in (("nul", _NUL in text), ("control", _CONTROL.search(text))):
        if found:
            if strict:
                raise DataError(f"{where}: {repair} character (drop --strict to remove it)")
            report.add(repair, where)
    text = text.replace(_NUL, "")
    text = _CONTROL.sub("", _CONTROL_SPACE.sub(" ", text))
    return " ".join(text.split())


def truncate(text: str, max_tokens: int | None) -> tuple[str, bool]:
    """Cut ``text`` to its first ``max_tokens`` whitespace tokens."""
    if max_tokens is None:
        return text, False
    tokens = text.split(" ")
    if len(tokens) <= max_tokens:
        return text, False
    return " ".join(tokens[:max_tokens]), True


def clean_pairs(
    src_lines: Sequence[bytes | str],
    tgt_lines: Sequence[bytes | str],
    names: tuple[str, str] = ("source", "target"),
    max_source_tokens: int | None = None,
    max_target_tokens: int | None = None,
    strict: bool = False,
) -> tuple[list[tuple[str, str]], Report]:
    """Clean aligned (source, target) documents; return the kept pairs and a :class:`Report`.

    ``src_lines``/``tgt_lines`` are file lines without ``\\n`` (``bytes``, decoded here) or
    already decoded strings; ``names`` (usually the two file paths) label errors and
    report locations. A pair with an empty side is removed as a whole, so the output
    stays aligned. Raises :class:`LineCountMismatch` before doing anything if the counts
    differ, and :class:`DataError` for the ``strict`` cases listed in :data:`STRICT_ERRORS`.
    """
    if len(src_lines) != len(tgt_lines):
        raise LineCountMismatch(
            f"{names[0]} has {len(src_lines)} lines but {names[1]} has {len(tgt_lines)} "
            "lines; source and target must be aligned one document per line"
        )
    report = Report(documents_in=len(src_lines))
    pairs = []
    for lineno, (src_raw, tgt_raw) in enumerate(zip(src_lines, tgt_lines), start=1):
        src_where, tgt_where = f"{names[0]}:{lineno}", f"{names[1]}:{lineno}"
        src = clean_text(src_raw, src_where, report, strict)
        tgt = clean_text(tgt_raw, tgt_where, report, strict)
        if not src or not tgt:
            empty = ", ".join(w for w, t in ((src_where, src), (tgt_where, tgt)) if not t)
            if strict:
                raise DataError(f"{empty}: empty document")
            report.add("empty_pair", empty)
            continue
        src, cut = truncate(src, max_source_tokens)
        if cut:
            report.add("truncated_source", src_where)
        tgt, cut = truncate(tgt, max_target_tokens)
        if cut:
            report.add("truncated_target", tgt_where)
        pairs.append((src, tgt))
    report.documents_out = len(pairs)
    return pairs, report


def clean_documents(
    documents: Iterable[Sequence[bytes | str]], name: str = "text", strict: bool = False
) -> tuple[list[list[str]], Report]:
    """Clean plain-text documents (each a list of paragraph lines) for language modeling.

    Locations are ``"name:document.paragraph"`` (both 1-based). Empty paragraphs are
    removed (``empty_line``); a document left without text is removed (``empty_document``).
    """
    report = Report()
    kept = []
    for doc_no, paragraphs in enumerate(documents, start=1):
        report.documents_in += 1
        lines = []
        for par_no, raw in enumerate(paragraphs, start=1):
            where = f"{name}:{doc_no}.{par_no}"
            text = clean_text(raw, where, report, strict)
            if text:
                lines.append(text)
            else:
                report.add("empty_line", where)
        if not lines:
            if strict:
                raise DataError(f"{name}:{doc_no}: empty document")
            report.add("empty_document", f"{name}:{doc_no}")
            continue
        kept.append(lines)
    report.documents_out = len(kept)
    return kept, report


def read_lines(path) -> list[bytes]:
    """A file's lines as raw bytes, split on ``\\n`` only (a lone ``\\r`` never splits a line)."""
    data = Path(path).read_bytes()
    if not data:
        return []
    lines = data.split(b"\n")
    if data.endswith(b"\n"):
        lines.pop()
    return lines
