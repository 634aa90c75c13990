"""Corpus -> cleaned text -> sentencepiece -> fairseq binary data, with a repair report.

:func:`prepare` writes this layout (other code depends on it)::

    OUT/raw/{split}.{source,target}   cleaned text, one document per line (pairs)
    OUT/raw/{split}.txt               or paragraphs, blank line between documents (text)
    OUT/spm.model, OUT/spm.vocab      sentencepiece model (trained, or a copy of --spm-model)
    OUT/spm/{split}.{source,target}   space-separated pieces (or .txt)
    OUT/bin/                          fairseq-preprocess output + a copy of spm.model
    OUT/preprocess_report.json        repairs per split, statistics, model and dictionary

It is built beside OUT and moved in only when every stage succeeded.
"""

import json
import logging
import shutil
import tempfile
import time
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path

from . import squad
from .binarize import binarize
from .cleaning import REPAIRS, DataError, Report, clean_documents, clean_pairs
from .corpora import (
    SPLITS,
    PairSplit,
    load_aclsum,
    load_aclsum_abstract,
    load_aclsum_aspects,
    load_aclsum_long,
    load_pair_dir,
    load_wiki,
)
from .spm import check_dictionary, encode_file, install_spm, train_spm, write_dictionary

logger = logging.getLogger(__name__)

PAIR_CORPORA = {
    "aclsum": load_aclsum,
    "aclsum_abstract": load_aclsum_abstract,
    "aclsum_aspects": load_aclsum_aspects,
    "aclsum_long": load_aclsum_long,
}
TEXT_CORPORA = ("wiki",)
PAIR_REPAIRS = (
    "invalid_utf8", "crlf", "nul", "control", "empty_pair", "truncated_source", "truncated_target",
)  # fmt: skip
TEXT_REPAIRS = ("invalid_utf8", "crlf", "nul", "control", "empty_line", "empty_document")
READER_REPAIRS = {
    "aclsum_long": ("missing_paper", "empty_body", "empty_abstract"),
    squad.CORPUS: squad.READER_REPAIRS,
}
SEPARATORS = (squad.SEPARATOR,)
"""Markers kept as one sentencepiece piece (a user-defined symbol) when the training sources
hold them, e.g. question generation's ``answer [SEP] passage``."""
PAIR_SIDES = ("source", "target")
OUTPUTS = ("raw", "spm", "bin", "spm.model", "spm.vocab", "preprocess_report.json")


@dataclass
class PrepareConfig:
    """Options of :func:`prepare` (the CLI flags of ``python -m preprocess.prepare``)."""

    corpus: str
    out: Path
    vocab_size: int = 8000
    spm_type: str = "unigram"
    spm_model: Path | None = None
    srcdict: Path | None = None
    max_source_tokens: int | None = None
    max_target_tokens: int | None = None
    strict: bool = False
    workers: int = 1
    limit: int | None = None
    max_unk_rate: float = 0.01
    character_coverage: float = 1.0
    spm_max_chunks: int = 2_000_000
    squad_json: Path | None = None
    split_json: list[str] | None = None
    split_titles: list[str] | None = None
    heldout_articles: int | None = None


def is_pair_corpus(corpus: str) -> bool:
    return corpus not in TEXT_CORPORA


def dictionary_name(pairs: bool) -> str:
    """The dictionary fairseq-preprocess writes in ``bin/`` (pairs also get an identical
    ``dict.target.txt``)."""
    return "dict.source.txt" if pairs else "dict.txt"


def load_pairs(corpus: str, limit: int | None = None) -> dict[str, PairSplit]:
    """Raw splits of a named pair corpus or of a ``{split}.{source,target}`` directory."""
    if corpus in PAIR_CORPORA:
        return {split: PAIR_CORPORA[corpus](split, limit) for split in SPLITS}
    directory = Path(corpus)
    if not directory.is_dir():
        known = ", ".join([*PAIR_CORPORA, *TEXT_CORPORA])
        raise FileNotFoundError(f"--corpus {corpus}: not a known corpus ({known}) nor a directory")
    splits = {split: load_pair_dir(directory, split, limit) for split in SPLITS}
    return {split: data for split, data in splits.items() if data is not None}


def squad_source(cfg: PrepareConfig) -> squad.SquadSource | None:
    """The SQuAD files of ``--corpus squad`` (``None`` for other corpora, which take none)."""
    given = [f for f, v in (("--squad-json", cfg.squad_json), ("--split-json", cfg.split_json),
                            ("--split-titles", cfg.split_titles), ("--heldout-articles", cfg.heldout_articles)) if v]
    if cfg.corpus != squad.CORPUS:
        if given:
            raise DataError(f"{', '.join(given)}: only for --corpus {squad.CORPUS}")
        return None
    if not cfg.squad_json:
        raise DataError(f"--corpus {squad.CORPUS} needs --squad-json FILE (SQuAD v1.1 JSON)")
    return squad.SquadSource(
        Path(cfg.squad_json),
        squad.parse_split_files(cfg.split_json, "--split-json"),
        squad.parse_split_files(cfg.split_titles, "--split-titles"),
        cfg.heldout_articles,
    )


def clean_corpus(cfg: PrepareConfig) -> tuple[dict, dict[str, Report], dict]:
    """Load and clean every split: ``(data, reports, source_info)``; ``data[split]`` is a
    list of ``(source, target)`` pairs or of documents (lists of paragraphs)."""
    data, reports, info = {}, {}, {}
    if is_pair_corpus(cfg.corpus):
        source = squad_source(cfg)
        raw_splits = (
            squad.load_squad(source, cfg.max_source_tokens, cfg.strict, cfg.limit)
            if source else load_pairs(cfg.corpus, cfg.limit)
        )
        for split, raw in raw_splits.items():
            pairs, report = clean_pairs(
                raw.sources, raw.targets, raw.names,
                cfg.max_source_tokens, cfg.max_target_tokens, cfg.strict,
            )  # fmt: skip
            if raw.report.documents_in:  # the reader already skipped some documents
                report.merge(raw.report).documents_in = raw.report.documents_in
            if not pairs:
                _empty_split(split, " / ".join(raw.names), report)
            data[split], reports[split] = pairs, report
            logger.info("%s: %d -> %d pairs", split, report.documents_in, len(pairs))
    else:
        documents, info = load_wiki(cfg.limit)
        logger.info("wiki dump: %s", info)
        for split, docs in documents.items():
            data[split], reports[split] = clean_documents(docs, f"wiki[{split}]", cfg.strict)
            if not data[split]:
                _empty_split(split, f"{cfg.corpus}[{split}]", reports[split])
            logger.info("%s: %d -> %d documents", split, len(docs), len(data[split]))
    return data, reports, info


def _empty_split(split: str, where: str, report: Report) -> None:
    """A split without documents cannot be binarized usefully: fairseq-preprocess writes an
    empty file that fairseq-train cannot even open ("cannot mmap an empty file")."""
    if report.documents_in == 0:
        reason = "no documents (empty file or --limit 0)"
    else:
        reason = f"none of its {report.documents_in} documents is left after cleaning"
    raise DataError(f"{split} split is empty: {where}: {reason}")


def check_config(cfg: PrepareConfig) -> None:
    """Refuse options that would fail deep inside sentencepiece or the file system."""
    for flag, value, least in (
        ("--vocab-size", cfg.vocab_size, 1), ("--workers", cfg.workers, 1), ("--limit", cfg.limit, 1),
        ("--max-source-tokens", cfg.max_source_tokens, 1), ("--max-target-tokens", cfg.max_target_tokens, 1),
    ):  # fmt: skip
        if value is not None and value < least:
            raise ValueError(f"{flag} must be at least {least}, got {value}")
    if not 0 < cfg.character_coverage <= 1:
        raise ValueError(f"--character-coverage must be in (0, 1], got {cfg.character_coverage}")
    check_out_dir(Path(cfg.out))


def check_out_dir(out: Path) -> None:
    """Refuse an output directory that is a file or lies under one, naming which."""
    for path in (out, *out.parents):
        if path.exists():
            if not path.is_dir():
                what = "--out" if path == out else f"--out {out}: its parent"
                raise ValueError(f"{what} {path} is a file, not a directory")
            break


def write_raw(data: dict, raw_dir: Path, pairs: bool) -> dict[str, list[Path]]:
    """Write cleaned splits; returns each split's text files."""
    raw_dir.mkdir(parents=True)
    files = {}
    for split, items in data.items():
        if pairs:
            files[split] = [raw_dir / f"{split}.source", raw_dir / f"{split}.target"]
            for side, path in enumerate(files[split]):
                path.write_text("".join(pair[side] + "\n" for pair in items), encoding="utf-8")
        else:
            files[split] = [raw_dir / f"{split}.txt"]
            text = "\n".join("".join(line + "\n" for line in doc) for doc in items)
            files[split][0].write_text(text, encoding="utf-8")
    return files


def clear_outputs(out: Path, names=OUTPUTS) -> None:
    """Remove the previous run's ``names`` (files or directories) from ``out``."""
    for name in names:
        path = out / name
        if path.is_dir():
            shutil.rmtree(path)
        elif path.exists():
            path.unlink()


def _stats(data: list, piece_counts: list[Counter], pairs: bool) -> dict:
    """Documents and average lengths (whitespace words, sentencepiece pieces) of a split."""
    n = max(len(data), 1)
    if not pairs:
        words = sum(len(line.split(" ")) for doc in data for line in doc)
        pieces = sum(piece_counts[0].values())
        return {
            "documents": len(data),
            "lines": sum(len(doc) for doc in data),
            "words": words,
            "pieces": pieces,
            "words_per_document_avg": round(words / n, 1),
            "pieces_per_document_avg": round(pieces / n, 1),
        }
    stats = {"documents": len(data)}
    for i, side in enumerate(PAIR_SIDES):
        lengths = [len(pair[i].split(" ")) for pair in data]
        stats[f"{side}_words_avg"] = round(sum(lengths) / n, 1)
        stats[f"{side}_words_max"] = max(lengths, default=0)
        stats[f"{side}_pieces_avg"] = round(sum(piece_counts[i].values()) / n, 1)
    return stats


def format_summary(reports: dict[str, Report], repairs: tuple[str, ...] = ()) -> str:
    """A table of the ``repairs`` and any other repair made (rows) per split (columns),
    zeros included."""
    repairs = list(repairs)
    repairs += sorted({r for rep in reports.values() for r in rep.counts} - set(repairs))
    splits = list(reports)
    width = max(len(r) for r in repairs + ["documents out"])
    head = f"{'repair':<{width}}  " + "  ".join(f"{s:>7}" for s in splits) + "    total"
    rows = [head, "-" * len(head)]
    for name, values in [
        ("documents in", [r.documents_in for r in reports.values()]),
        *[(repair, [r.counts[repair] for r in reports.values()]) for repair in repairs],
        ("documents out", [r.documents_out for r in reports.values()]),
    ]:
        cells = "  ".join(f"{v:>7}" for v in values)
        note = f"  {REPAIRS[name]}" if name in REPAIRS else ""
        rows.append(f"{name:<{width}}  {cells}  {sum(values):>7}{note}")
    return "\n".join(rows)


def _final_argv(argv: list[str], stage: Path, out: Path, pairs: bool) -> list[str]:
    """The fairseq-preprocess arguments as they read once the outputs are in ``out`` (the
    dictionary given to it is byte for byte the one fairseq saved in ``bin/``)."""
    final = [arg.replace(str(stage), str(out)) for arg in argv]
    final[final.index("--srcdict") + 1] = str(out / "bin" / dictionary_name(pairs))
    return final


def _build(cfg: PrepareConfig, data: dict, stage: Path, lap) -> dict:
    """Stages 2-5 into the empty directory ``stage``; returns what the report needs."""
    pairs = is_pair_corpus(cfg.corpus)
    raw_files = write_raw(data, stage / "raw", pairs)
    lap("write_raw")

    logger.info("[2/5] sentencepiece model")
    symbols = separators_in(data["train"]) if pairs else []
    if cfg.spm_model:
        model = install_spm(cfg.spm_model, stage / "spm")
        check_symbols(model, symbols, cfg.spm_model)
    else:
        if symbols:
            logger.info("sentencepiece: %s kept as one piece (user-defined symbols)", " ".join(symbols))
        model = train_spm(
            raw_files["train"], stage / "spm", cfg.vocab_size, cfg.spm_type,
            cfg.character_coverage, cfg.spm_max_chunks, num_threads=cfg.workers,
            user_defined_symbols=symbols,
        )  # fmt: skip
    lap("spm_train")

    logger.info("[3/5] encoding %s with %d pieces", ", ".join(data), model.get_piece_size())
    (stage / "spm").mkdir()
    piece_counts = {}
    for split, files in raw_files.items():
        piece_counts[split] = [encode_file(model, f, stage / "spm" / f.name) for f in files]
    lap("spm_encode")

    logger.info("[4/5] dictionary")
    dictionary = Path(cfg.srcdict) if cfg.srcdict else stage / "dict.txt"
    if not cfg.srcdict:
        write_dictionary(model, sum(piece_counts["train"], Counter()), dictionary)
    check = check_dictionary(
        dictionary, model, sum((c for cs in piece_counts.values() for c in cs), Counter()),
        max_unk_rate=cfg.max_unk_rate if cfg.srcdict else None,
        label=str(cfg.srcdict or "the dictionary built from the sentencepiece model"),
    )  # fmt: skip
    lap("dictionary")

    logger.info("[5/5] fairseq-preprocess")
    argv = binarize(stage / "spm", stage / "bin", dictionary, list(data), pairs, cfg.workers)
    shutil.copyfile(stage / "spm.model", stage / "bin" / "spm.model")
    lap("binarize")
    return {"model": model, "piece_counts": piece_counts, "check": check, "argv": argv, "symbols": symbols}


def separators_in(pairs: list[tuple[str, str]]) -> list[str]:
    """The :data:`SEPARATORS` that occur in the sources of ``pairs``."""
    return [s for s in SEPARATORS if any(s in source for source, _ in pairs)]


def check_symbols(model, symbols: list[str], path) -> None:
    """Warn when a reused sentencepiece model splits a separator into several pieces (it
    still works, as a sequence of pieces, but is not the one symbol a fresh model makes)."""
    for symbol in symbols:
        pieces = [p for p in model.encode(symbol, out_type=str) if p != "\u2581"]
        if pieces != [symbol]:
            logger.warning("--spm-model %s splits %s into %s: train the model on data with it, or "
                           "accept it as several pieces", path, symbol, pieces)  # fmt: skip


def prepare(cfg: PrepareConfig) -> dict:
    """Run every stage for ``cfg`` and return the report also written to
    ``OUT/preprocess_report.json``.

    The outputs are built in a sibling staging directory and moved into OUT only when
    every stage has succeeded: a failed run leaves OUT as it was, a successful one
    replaces the previous outputs (other files in OUT are left alone).
    """
    started = time.perf_counter()
    seconds = {}
    out, pairs = Path(cfg.out), is_pair_corpus(cfg.corpus)

    def lap(stage: str) -> None:
        seconds[stage] = round(time.perf_counter() - started - sum(seconds.values()), 2)

    check_config(cfg)
    for flag, path in (("--spm-model", cfg.spm_model), ("--srcdict", cfg.srcdict)):
        if path and not Path(path).is_file():
            raise FileNotFoundError(f"missing {flag} file: {path}")
    if not pairs and (cfg.max_source_tokens or cfg.max_target_tokens):
        logger.warning("%s is plain text: --max-source/target-tokens ignored", cfg.corpus)
    logger.info("[1/5] reading and cleaning %s", cfg.corpus)
    data, reports, source_info = clean_corpus(cfg)
    if not data.get("train"):
        raise DataError(f"{cfg.corpus}: no training data left after cleaning")
    lap("clean")

    out.parent.mkdir(parents=True, exist_ok=True)
    stage = Path(tempfile.mkdtemp(prefix=f".{out.name}.staging-", dir=out.parent))
    try:
        built = _build(cfg, data, stage, lap)
        out.mkdir(exist_ok=True)
        clear_outputs(out)
        for name in OUTPUTS:
            if (stage / name).exists():
                (stage / name).rename(out / name)
    finally:
        shutil.rmtree(stage, ignore_errors=True)

    report = {
        "corpus": cfg.corpus,
        "config": {k: (str(v) if isinstance(v, Path) else v) for k, v in asdict(cfg).items()},
        "splits": {
            split: {
                **reports[split].to_dict(),
                "stats": _stats(data[split], built["piece_counts"][split], pairs),
            }
            for split in data
        },
        "source_skipped": source_info,
        "spm": {
            "model": str(out / "spm.model"),
            "given": str(cfg.spm_model) if cfg.spm_model else None,
            "type": None if cfg.spm_model else cfg.spm_type,
            "vocab_size_requested": None if cfg.spm_model else cfg.vocab_size,
            "pieces": built["model"].get_piece_size(),
            "user_defined_symbols": built["symbols"],
        },
        "dictionary": {
            **built["check"].to_dict(),
            "dictionary": str(out / "bin" / dictionary_name(pairs)),
            "given": str(cfg.srcdict) if cfg.srcdict else None,
        },
        "fairseq_preprocess_args": _final_argv(built["argv"], stage, out, pairs),
        "seconds": {**seconds, "total": round(time.perf_counter() - started, 2)},
    }
    (out / "preprocess_report.json").write_text(json.dumps(report, indent=2) + "\n")
    rows = PAIR_REPAIRS if pairs else TEXT_REPAIRS
    summary = format_summary(reports, rows + READER_REPAIRS.get(cfg.corpus, ()))
    logger.info("repairs (details in %s):\n%s", out / "preprocess_report.json", summary)
    return report
