"""The one output format of every converter: a directory laid out as fairseq's released models.

::

    OUT/model.pt                        a fairseq checkpoint: {"args": Namespace(arch, task,
                                        criterion, options), "model": state dict, ...}
    OUT/args.txt                        ``--arch ARCH --flag value ...``: the model flags that
                                        build the same model in fairseq-train
    OUT/dict.txt, dict.source.txt,      the dictionary the data must be binarized with
    OUT/dict.target.txt                 (``fairseq-preprocess --srcdict OUT/dict.txt``)

Legacy ``args``, not a full ``cfg``: fairseq fills every option the converter does not set from
the registered defaults when it loads the file, so converters need not import ``user_dir``.
"""

import argparse
import logging
import math
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional, Union

import torch
from fairseq.data import Dictionary

from .validate import ConversionError

logger = logging.getLogger(__name__)

CHECKPOINT_FILE = "model.pt"
ARGS_FILE = "args.txt"
#: ``dict.txt`` for ``fairseq-preprocess --srcdict``; the source/target pair is what tasks
#: derived from ``translation`` read from a data (or model) directory.
DICTIONARY_FILES = ("dict.txt", "dict.source.txt", "dict.target.txt")


@dataclass
class Converted:
    """What a family's converter produced, for :func:`write_converted`."""

    model: dict  # state dict keyed as the registered model (Z-Code++: its encoder, ``encoder.*``)
    arch: str  # a registered ``--arch``
    model_args: dict  # model options, written to args.txt and into the checkpoint
    task: str  # the task that loads the checkpoint (fairseq-generate, the hub)
    criterion: str
    extra_args: dict = field(default_factory=dict)  # other options, stored in the checkpoint only
    dictionary: Optional[Union[Dictionary, str, Path]] = None  # a Dictionary (saved) or a file (copied)
    default_on: tuple = ()  # boolean model options that default to on: off is written --no-x


#: What one word of ``args.txt`` may be: the documented ``$(cat OUT/args.txt)`` splits the file
#: on whitespace and expands glob patterns, so a word holds none of either, nor quotes or ``$``.
SHELL_WORD = re.compile(r"[A-Za-z0-9_.,:+=/-]+")
#: What a flag's value may be: a number, or a name (not starting with ``-``, which would read
#: as another flag).
NAME_VALUE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.,:+=/-]*")


def model_flags(arch, model_args, default_on=()):
    """``--arch ARCH`` and a flag per option: ``--x value``; a boolean ``--x`` when on and,
    when off, ``--no-x`` if it defaults to on (else nothing: fairseq's store-true default).
    Every value must be a bool, a finite number or a name (:data:`NAME_VALUE`): anything else
    is refused naming the option, so the words stay the words written."""
    flags = ["--arch", _shell_value("arch", arch)]
    for name, value in model_args.items():
        if not re.fullmatch(r"[a-z0-9_]+", str(name)):
            raise ConversionError(f"model option {name!r} is not a flag name")
        flag = "--" + name.replace("_", "-")
        if isinstance(value, bool):
            if value:
                flags.append(flag)
            elif name in default_on:
                flags.append("--no-" + name.replace("_", "-"))
        elif value is not None:
            flags += [flag, _shell_value(name, value)]
    return flags


def _shell_value(name, value):
    """``value`` as one word of ``args.txt``, or :class:`ConversionError` naming ``name``."""
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
        return str(value)
    if isinstance(value, str) and NAME_VALUE.fullmatch(value) and SHELL_WORD.fullmatch(value):
        return value
    raise ConversionError(
        f"model option {name}={value!r} cannot be written to {ARGS_FILE}: a value there is a number or a "
        "name (letters, digits, _ . , : + = / -), so that $(cat OUT/args.txt) reads it as one word"
    )


#: Always in the checkpoint's args (``None``: the model's own limits, as a command line without
#: the flags gives): fairseq's upgrade of legacy checkpoints would otherwise read a model
#: option named ``max_positions`` (s2s-ft's, Transformer-SM's) as both limits.
LENGTH_LIMITS = ("max_source_positions", "max_target_positions")


def fairseq_checkpoint(converted):
    """The ``model.pt`` state of ``converted`` (no optimizer state: every loader starts afresh)."""
    args = argparse.Namespace(
        arch=converted.arch, task=converted.task, criterion=converted.criterion,
        **{**dict.fromkeys(LENGTH_LIMITS), **converted.extra_args, **converted.model_args},
    )  # fmt: skip
    return {
        "args": args,
        "cfg": None,
        "model": converted.model,
        "optimizer_history": [{"optimizer_name": None, "lr_scheduler_state": {"best": None}, "num_updates": 0}],
        "extra_state": {"train_iterator": {"epoch": 1, "iterations_in_epoch": 0}},
        "last_optimizer_state": None,
    }


def write_converted(out_dir, converted):
    """Write ``converted`` into ``out_dir`` (created); returns the path of ``model.pt`` (a ``str``,
    as fairseq's loaders take it)."""
    out_dir = Path(out_dir)
    if out_dir.exists() and not out_dir.is_dir():
        raise NotADirectoryError(f"--out {out_dir} is a file: give a directory")
    flags = " ".join(model_flags(converted.arch, converted.model_args, converted.default_on))  # refuses first
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / CHECKPOINT_FILE
    torch.save(fairseq_checkpoint(converted), path)
    (out_dir / ARGS_FILE).write_text(flags + "\n", encoding="utf-8")
    written = [CHECKPOINT_FILE, ARGS_FILE]
    if converted.dictionary is not None:
        for name in DICTIONARY_FILES:
            if isinstance(converted.dictionary, Dictionary):
                converted.dictionary.save(str(out_dir / name))
            elif Path(converted.dictionary).resolve() != (out_dir / name).resolve():
                shutil.copyfile(converted.dictionary, out_dir / name)
        written += list(DICTIONARY_FILES)
    logger.info(f"wrote {', '.join(written)} in {out_dir} ({len(converted.model)} tensors); model flags: {flags}")
    return str(path)
