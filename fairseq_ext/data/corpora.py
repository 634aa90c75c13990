"""Readers for the corpora ``preprocess.prepare`` knows, returning raw (uncleaned) documents.

Pair corpora yield a :class:`PairSplit` per split, plain-text corpora a list of documents
(lists of paragraphs); splits are ``train``/``valid``/``test``. What each corpus holds
(``aclsum``, ``aclsum_abstract``, ``aclsum_aspects``, ``aclsum_long``, ``wiki``, a directory of
``{train,valid,test}.{source,target}``): docs/guide.md.
"""

import importlib.util
import json
from dataclasses import dataclass, field
from pathlib import Path

from .cleaning import Report, read_lines
from .wiki import iter_articles, split_documents, strip_markup

SPLITS = ("train", "valid", "test")
ACLSUM_SPLIT_FILES = {"train": "train", "valid": "val", "test": "test"}
ACLSUM_SOURCE_SECTIONS = ("abstract", "introduction", "conclusion")
ACLSUM_TARGET_ASPECTS = ("challenge", "approach", "outcome")
WIKI_DUMP = "test/test_data/enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2"
WIKI_HELD_OUT = 4
"""Articles in each of wiki's valid and test splits (the last 8 articles of the dump)."""


@dataclass
class PairSplit:
    """Raw aligned documents of one split; ``names`` label the two sides in reports."""

    sources: list
    targets: list
    names: tuple[str, str]
    report: Report = field(default_factory=Report)  # what the reader already skipped


def _package_dir(package: str) -> Path:
    spec = importlib.util.find_spec(package)
    if spec is None:
        raise FileNotFoundError(f"package {package!r} is not installed (pip install {package})")
    return Path(next(iter(spec.submodule_search_locations)))


def aclsum_dir() -> Path:
    """The ``dataset`` directory of the installed ``aclsum`` package."""
    return _package_dir("aclsum") / "dataset"


def wiki_dump_path() -> Path:
    """The Wikipedia dump inside the installed gensim wheel (found without importing it)."""
    return _package_dir("gensim") / WIKI_DUMP


def _existing(path: Path) -> Path:
    if not path.is_file():
        raise FileNotFoundError(f"missing input file: {path}")
    return path


def read_aclsum_records(split: str, limit: int | None = None) -> list[dict]:
    """The json records of one aclsum split (``valid`` reads ``val.jsonl``)."""
    path = _existing(aclsum_dir() / f"{ACLSUM_SPLIT_FILES[split]}.jsonl")
    with path.open(encoding="utf-8") as lines:
        records = [json.loads(line) for line in lines if line.strip()]
    return records[:limit]


def _aclsum_source(record: dict, sections=ACLSUM_SOURCE_SECTIONS) -> str:
    return " ".join(s for section in sections for s in record["sentences"][section])


def load_aclsum(split: str, limit: int | None = None, sections=ACLSUM_SOURCE_SECTIONS) -> PairSplit:
    records = read_aclsum_records(split, limit)
    sources = [_aclsum_source(r, sections) for r in records]
    targets = [" ".join(r["summary"][aspect] for aspect in ACLSUM_TARGET_ASPECTS) for r in records]
    name = f"aclsum/{ACLSUM_SPLIT_FILES[split]}.jsonl"
    return PairSplit(sources, targets, (f"{name}[source]", f"{name}[target]"))


def load_aclsum_abstract(split: str, limit: int | None = None) -> PairSplit:
    """ACLSum with the abstract alone as the source (about 145 words instead of 1,000)."""
    return load_aclsum(split, limit, sections=("abstract",))


def load_aclsum_aspects(split: str, limit: int | None = None) -> PairSplit:
    """One pair per paper and aspect (``limit`` counts papers): the aspect's name as an
    instruction before the source, its summary as the target."""
    sources, targets = [], []
    for record in read_aclsum_records(split, limit):
        source = _aclsum_source(record)
        for aspect in ACLSUM_TARGET_ASPECTS:
            sources.append(f"{aspect}: {source}")
            targets.append(record["summary"][aspect])
    name = f"aclsum/{ACLSUM_SPLIT_FILES[split]}.jsonl"
    return PairSplit(sources, targets, (f"{name}[aspect: source]", f"{name}[aspect summary]"))


def load_aclsum_long(split: str, limit: int | None = None) -> PairSplit:
    """Full papers of an aclsum split; unusable papers are counted, never silently dropped."""
    papers = aclsum_dir() / "paper_jsons"
    if not papers.is_dir():
        raise FileNotFoundError(f"missing input directory: {papers}")
    report = Report()
    sources, targets = [], []
    for record in read_aclsum_records(split, limit):
        path = papers / f"{record['id']}.json"
        report.documents_in += 1
        if not path.is_file():
            report.add("missing_paper", str(path))
            continue
        paper = json.loads(path.read_text(encoding="utf-8"))
        body = " ".join(p["text"] for p in paper["pdf_parse"]["body_text"]).strip()
        abstract = (paper.get("abstract") or "").strip()
        if not body or not abstract:
            report.add("empty_body" if not body else "empty_abstract", str(path))
            continue
        sources.append(body)
        targets.append(abstract)
    name = f"aclsum/paper_jsons[{split}]"
    return PairSplit(sources, targets, (f"{name}.body", f"{name}.abstract"), report)


def load_pair_dir(directory: str | Path, split: str, limit: int | None = None) -> PairSplit | None:
    """``split.source``/``split.target`` of a user corpus as raw bytes lines.

    Returns ``None`` for an absent ``test`` split; any other missing file is an error.
    """
    directory = Path(directory)
    paths = [directory / f"{split}.{side}" for side in ("source", "target")]
    if split == "test" and not any(p.exists() for p in paths):
        return None
    sources, targets = (read_lines(_existing(p)) for p in paths)
    if len(sources) == len(targets):  # else clean_pairs reports the full counts
        sources, targets = sources[:limit], targets[:limit]
    return PairSplit(sources, targets, (str(paths[0]), str(paths[1])))


def load_wiki(
    limit: int | None = None, n_valid: int = WIKI_HELD_OUT, n_test: int = WIKI_HELD_OUT
) -> tuple[dict[str, list[list[str]]], dict]:
    """Wiki articles (lists of paragraphs) per split, and the dump's skip counts.

    ``limit`` keeps the first ``limit`` articles of each split after splitting.
    """
    path = _existing(wiki_dump_path())
    skipped = {}
    articles = [strip_markup(text) for _, text in iter_articles(path, skipped)]
    splits = split_documents(articles, n_valid, n_test)
    return {name: docs[:limit] for name, docs in splits.items()}, skipped
