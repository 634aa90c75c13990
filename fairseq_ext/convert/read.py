"""Reading what the converters convert: a local Hugging Face model folder or a fairseq checkpoint.

Every weight file goes through :func:`fairseq_ext.compat.checkpoint.safe_load`, the repository's one
low-level loader (``safetensors`` without pickle, or ``torch.load`` with ``weights_only=True``),
so a crafted file is refused with an error naming it; nothing is downloaded.
"""

import argparse
import json
import logging
from dataclasses import dataclass
from pathlib import Path

from ..compat.checkpoint import CorruptCheckpointError, safe_load
from ..compat.model_file import check_declared_sizes
from .validate import Config, ConversionError, check_hf_types

logger = logging.getLogger(__name__)

CONFIG_FILE = "config.json"
#: The weight files of a Hugging Face folder, in the order they are preferred.
WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin")
SHARD_INDEXES = ("model.safetensors.index.json", "pytorch_model.bin.index.json")


@dataclass
class HFCheckpoint:
    """A Hugging Face model folder as read: its config (a :class:`Config` naming
    ``config.json``), its state dict and the weight file it came from."""

    directory: Path
    config: Config
    state: dict
    weights: Path


def find_file(directory, names, what):
    """The first of ``names`` present in ``directory``; none is an error listing them."""
    directory = Path(directory)
    for name in names:
        if (directory / name).is_file():
            return directory / name
    raise FileNotFoundError(f"no {' or '.join(names)} in {directory} ({what})")


def read_hf_dir(directory):
    """Read ``directory``: ``config.json`` and ``model.safetensors`` (else ``pytorch_model.bin``)."""
    directory = Path(directory)
    if not directory.is_dir():
        raise FileNotFoundError(f"Hugging Face model folder not found: {directory}")
    config_path = directory / CONFIG_FILE
    if not config_path.is_file():
        raise FileNotFoundError(f"{config_path} not found: the config beside the weights is needed to convert")
    try:
        fields = json.loads(config_path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise ConversionError(f"{config_path} is not a JSON config: {err}") from err
    if not isinstance(fields, dict):
        raise ConversionError(f"{config_path} holds a {type(fields).__name__}, not a config object")
    check_hf_types(Config(fields, config_path))
    shards = [name for name in SHARD_INDEXES if (directory / name).is_file()]
    if shards and not any((directory / name).is_file() for name in WEIGHT_FILES):
        raise ConversionError(f"{directory / shards[0]}: sharded weights are not supported; save the model "
                              "as one file (save_pretrained(..., max_shard_size='100GB'))")
    weights = find_file(directory, WEIGHT_FILES, "the model's weights")
    logger.info(f"reading {weights}")
    state = safe_load(weights)
    if not isinstance(state, dict):
        raise CorruptCheckpointError(f"{weights} holds a {type(state).__name__}, not a state dict")
    check_declared_sizes(fields, state, weights, where=CONFIG_FILE)  # before any model is built from it
    return HFCheckpoint(directory, Config(fields, config_path), state, weights)


def read_fairseq_checkpoint(path):
    """A fairseq checkpoint as saved (``model`` and ``cfg`` or legacy ``args``), read raw."""
    logger.info(f"reading {path}")
    state = safe_load(path)
    if not isinstance(state, dict) or "model" not in state or not {"cfg", "args"} & set(state):
        raise CorruptCheckpointError(f"{path} is not a fairseq checkpoint (no model with a cfg or args)")
    model = state["cfg"].get("model") if state.get("cfg") is not None else state.get("args")
    check_declared_sizes(model, state["model"], path, where="cfg.model" if state.get("cfg") is not None else "args")
    return state


def fairseq_model_config(state, path):
    """The model options of a fairseq checkpoint ``state`` read from ``path`` (``cfg.model``, an
    ``argparse.Namespace`` for legacy models or a dict, else the legacy ``args``), as a
    :class:`Config` whose messages name ``path``."""
    if state.get("cfg") is not None and state["cfg"].get("model") is not None:
        model, where = state["cfg"]["model"], f"{path} (cfg.model)"
    elif state.get("args") is not None:
        model, where = state["args"], f"{path} (args)"
    else:
        raise ConversionError(f"{path} has neither cfg.model nor args: the model options are needed")
    return Config(vars(model) if isinstance(model, argparse.Namespace) else dict(model), where)
