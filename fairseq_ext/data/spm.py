"""sentencepiece training/encoding and the fairseq dictionary that goes with a model.

Models have ``<unk>`` (id 0) as their only special piece: fairseq's ``Dictionary`` adds
its own ``<s> <pad> </s> <unk>``. The dictionary written by :func:`write_dictionary`
lists every other piece in sentencepiece id order, so ``fairseq id = spm id + 3`` for
every piece but ``<unk>`` (spm 0 -> fairseq 3), and a split that was never seen in
training still has no ``<unk>`` except for characters the model itself does not know.
"""

import logging
import math
import random
import shutil
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator

import sentencepiece

logger = logging.getLogger(__name__)

FAIRSEQ_SPECIALS = ("<s>", "<pad>", "</s>", "<unk>")
SPM_CHUNK_WORDS = 256
"""Documents are fed to the trainer in chunks of this many words: sentencepiece skips
input lines longer than ``max_sentence_length`` bytes, which would silently leave whole
(long) documents out of training. Pieces never cross whitespace, so chunking is exact."""
SPM_MAX_SENTENCE_BYTES = 1 << 16
"""Trainer's line limit: only a single word longer than this is skipped."""


class DictionaryMismatch(ValueError):
    """A given fairseq dictionary does not fit the sentencepiece model's pieces."""


def _chunks(files: Iterable[Path], chunk_words: int = SPM_CHUNK_WORDS) -> Iterator[str]:
    for path in files:
        with open(path, encoding="utf-8", newline="\n") as lines:
            for line in lines:
                words = line.split()
                for start in range(0, len(words), chunk_words):
                    yield " ".join(words[start : start + chunk_words])


def train_spm(
    files: list[Path],
    model_prefix: Path,
    vocab_size: int = 8000,
    model_type: str = "unigram",
    character_coverage: float = 1.0,
    max_chunks: int = 2_000_000,
    seed: int = 1,
    num_threads: int = 1,
    user_defined_symbols: Iterable[str] = (),
) -> sentencepiece.SentencePieceProcessor:
    """Train ``model_prefix``.model/.vocab on the text ``files`` and return the model.

    The vocabulary is a soft limit (``hard_vocab_limit=False``): on a corpus too small
    for ``vocab_size`` the model gets fewer pieces and a log line says so. At most
    ``max_chunks`` chunks (a seeded random sample) are used for training.
    ``user_defined_symbols`` (e.g. ``[SEP]``) are always encoded as one piece each.
    """
    chunks = list(_chunks(files))
    if len(chunks) > max_chunks:
        logger.info("sentencepiece: sampling %d of %d training chunks", max_chunks, len(chunks))
        chunks = random.Random(seed).sample(chunks, max_chunks)
    if not chunks:
        raise ValueError(f"no text to train sentencepiece on in {[str(f) for f in files]}")
    sentencepiece.set_random_generator_seed(seed)
    try:
        _train(chunks, model_prefix, vocab_size, model_type, character_coverage, num_threads, user_defined_symbols)
    except RuntimeError as err:  # sentencepiece's C++ checks: "INTERNAL: src/...cc(638) [...] message"
        reason = str(err).split("] ", 1)[-1].strip()
        names = ", ".join(Path(f).name for f in files)
        raise ValueError(f"sentencepiece cannot train a {vocab_size}-piece {model_type} model on the "
                         f"cleaned {names}: {reason}") from err
    model = load_spm(Path(f"{model_prefix}.model"))
    if model.get_piece_size() < vocab_size:
        logger.info(
            "sentencepiece: vocabulary capped at %d pieces (asked for %d): "
            "that is all this corpus supports",
            model.get_piece_size(),
            vocab_size,
        )
    return model


def _train(chunks, model_prefix, vocab_size, model_type, character_coverage, num_threads, user_defined_symbols):
    sentencepiece.SentencePieceTrainer.train(
        sentence_iterator=iter(chunks),
        model_prefix=str(model_prefix),
        vocab_size=vocab_size,
        model_type=model_type,
        character_coverage=character_coverage,
        hard_vocab_limit=False,
        max_sentence_length=SPM_MAX_SENTENCE_BYTES,
        unk_id=0,
        bos_id=-1,
        eos_id=-1,
        pad_id=-1,
        num_threads=num_threads,
        user_defined_symbols=list(user_defined_symbols),
        minloglevel=2,
    )


def load_spm(path: Path) -> sentencepiece.SentencePieceProcessor:
    """The sentencepiece model at ``path``; a missing, empty or unreadable file is an error
    naming it (sentencepiece itself says only "unk is not defined")."""
    if not Path(path).is_file():
        raise FileNotFoundError(f"missing sentencepiece model: {path}")
    if Path(path).stat().st_size == 0:
        raise ValueError(f"{path} is empty (0 bytes): not a sentencepiece model")
    try:
        model = sentencepiece.SentencePieceProcessor(model_file=str(path))
    except (RuntimeError, OSError) as err:
        raise ValueError(f"{path} is not a sentencepiece model ({err})") from err
    if model.get_piece_size() == 0:
        raise ValueError(f"{path} is not a sentencepiece model (no pieces)")
    return model


def install_spm(model_path: Path, model_prefix: Path) -> sentencepiece.SentencePieceProcessor:
    """Copy an existing model to ``model_prefix``.model and (re)write its ``.vocab``."""
    model = load_spm(model_path)
    target = Path(f"{model_prefix}.model")
    if Path(model_path).resolve() != target.resolve():
        shutil.copyfile(model_path, target)
    with open(f"{model_prefix}.vocab", "w", encoding="utf-8") as vocab:
        for i in range(model.get_piece_size()):
            vocab.write(f"{model.id_to_piece(i)}\t{model.get_score(i):g}\n")
    return model


def encode_file(
    model: sentencepiece.SentencePieceProcessor,
    src: Path,
    dst: Path,
    batch_lines: int = 1000,
    log_every: int = 100_000,
) -> Counter:
    """Write ``src`` as space-separated pieces to ``dst``, line for line (an empty line
    stays empty: it is a document break). Returns the piece counts; logs progress every
    ``log_every`` lines."""
    counts, done = Counter(), 0
    with (
        open(src, encoding="utf-8", newline="\n") as lines,
        open(dst, "w", encoding="utf-8") as out,
    ):
        batch = []
        for line in lines:
            batch.append(line.rstrip("\n"))
            if len(batch) == batch_lines:
                _encode_batch(model, batch, out, counts)
                done += len(batch)
                batch = []
                if done % log_every < batch_lines:
                    logger.info("%s: %d lines encoded", src, done)
        _encode_batch(model, batch, out, counts)
    return counts


def _encode_batch(model, batch: list[str], out, counts: Counter) -> None:
    for pieces in model.encode(batch, out_type=str):
        counts.update(pieces)
        out.write(" ".join(pieces) + "\n")


def spm_pieces(model: sentencepiece.SentencePieceProcessor) -> list[str]:
    """The model's pieces in id order, without its control/unknown pieces."""
    return [
        model.id_to_piece(i)
        for i in range(model.get_piece_size())
        if not (model.is_unknown(i) or model.is_control(i))
    ]


def write_dictionary(model: sentencepiece.SentencePieceProcessor, counts: dict, path: Path):
    """A fairseq ``dict.txt`` holding every piece of ``model`` in id order (see the module
    docstring); the count column is the piece's frequency in ``counts`` (training data)."""
    with open(path, "w", encoding="utf-8") as out:
        for piece in spm_pieces(model):
            out.write(f"{piece} {counts.get(piece, 0)}\n")


def read_dictionary_symbols(path: Path) -> set[str]:
    """The symbols of a fairseq ``dict.txt`` (first column; ``#fairseq:overwrite`` flags
    ignored), plus the specials fairseq's ``Dictionary`` always has."""
    if not Path(path).is_file():
        raise FileNotFoundError(f"missing dictionary: {path}")
    with open(path, encoding="utf-8") as lines:
        symbols = {line.rstrip("\n").rsplit(" ", 1)[0].split(" ")[0] for line in lines}
    return symbols | set(FAIRSEQ_SPECIALS)


@dataclass
class DictionaryCheck:
    """How well a dictionary covers a model's pieces and the encoded data."""

    dictionary: str
    pieces: int
    pieces_missing: int
    tokens: int
    unk_tokens: int
    examples_missing: list[str]

    @property
    def unk_rate(self) -> float:
        return self.unk_tokens / max(self.tokens, 1)

    def to_dict(self) -> dict:
        return {**self.__dict__, "unk_rate": self.unk_rate}


def _unk_rate_to_pass(rate: float) -> str:
    """A ``--max-unk-rate`` just above ``rate``, rounded up to two significant digits."""
    return f"{float(f'{rate:.2g}') + 10 ** (math.floor(math.log10(rate)) - 1):.2g}"


def check_dictionary(
    path: Path,
    model: sentencepiece.SentencePieceProcessor,
    counts: Counter,
    max_unk_rate: float | None = 0.01,
    label: str | None = None,
) -> DictionaryCheck:
    """Check that dictionary ``path`` fits ``model`` on data with piece ``counts``.

    Raises :class:`DictionaryMismatch` when more than ``max_unk_rate`` (``None``: no
    limit) of the encoded tokens would become ``<unk>`` (a dictionary made for another
    sentencepiece model); pieces of the model missing from it are reported either way.
    ``label`` names the dictionary in messages (default: ``path``).
    """
    label = label or str(path)
    symbols = read_dictionary_symbols(path)
    pieces = spm_pieces(model)
    missing = [p for p in pieces if p not in symbols]
    unk_tokens = sum(c for piece, c in counts.items() if piece not in symbols)
    check = DictionaryCheck(
        label, len(pieces), len(missing), sum(counts.values()), unk_tokens,
        missing[:20],
    )  # fmt: skip
    if max_unk_rate is not None and check.unk_rate > max_unk_rate:
        raise DictionaryMismatch(
            f"dictionary {label} does not fit the sentencepiece model: "
            f"{check.unk_rate:.1%} of the encoded tokens would be <unk> "
            f"(limit {max_unk_rate:.1%}) and {len(missing)} of the model's {check.pieces} "
            f"pieces are missing from it (e.g. {missing[:5]}). If this is the dictionary built "
            f"with this --spm-model and your text simply holds pieces it never saw, accept them "
            f"with --max-unk-rate {_unk_rate_to_pass(check.unk_rate)}; otherwise pass the dict.txt "
            "built with this --spm-model, or omit --srcdict to build one."
        )
    if missing:
        logger.warning(
            "dictionary %s lacks %d of %d sentencepiece pieces (unk rate %.3f%%)",
            label, len(missing), check.pieces, 100 * check.unk_rate,
        )  # fmt: skip
    return check
