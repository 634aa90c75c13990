"""Safe checkpoint loading for fairseq on torch >= 2.6.

torch 2.6 made ``torch.load`` default to ``weights_only=True``. fairseq 0.12 pickles its
legacy ``argparse.Namespace`` into every checkpoint (``cfg.model`` and ``args``), so stock
fairseq can no longer resume training, run ``fairseq-generate`` or load hub models.

This module keeps ``weights_only=True`` and allowlists exactly the extra type fairseq
checkpoints hold (measured: a checkpoint written by ``fairseq-train`` holds tensors,
builtin containers, ``collections.OrderedDict`` and ``argparse.Namespace``; the rest are
on torch's default allowlist). A checkpoint whose pickle names anything else (a function
to call, a class to build) is refused with :class:`UntrustedCheckpointError` naming the
file and the offending globals; a truncated or corrupt file raises
:class:`CorruptCheckpointError` naming the file instead of a traceback from inside pickle.

``install()`` is what the plugin calls on import; nothing here runs at import time.
"""

import argparse
import functools
import logging
import os
import pickle
import zipfile

import torch

logger = logging.getLogger(__name__)

#: The globals a fairseq checkpoint holds beyond torch's default ``weights_only`` allowlist.
FAIRSEQ_CHECKPOINT_GLOBALS = (argparse.Namespace,)


class CheckpointError(RuntimeError):
    """A checkpoint could not be loaded; the message names the file and the reason."""


class UntrustedCheckpointError(CheckpointError):
    """The checkpoint's pickle would import or call something outside the allowlist."""


class CorruptCheckpointError(CheckpointError):
    """The checkpoint is truncated, corrupt, or not a torch checkpoint at all."""


def allow_globals():
    """Add fairseq's checkpoint types to torch's ``weights_only`` allowlist (idempotent)."""
    torch.serialization.add_safe_globals(list(FAIRSEQ_CHECKPOINT_GLOBALS))


def _unsafe_globals(path):
    """Names of the globals in ``path`` that the ``weights_only`` unpickler would refuse."""
    try:
        names = torch.serialization.get_unsafe_globals_in_checkpoint(path)
    except Exception:  # not a zip checkpoint: the legacy format gives no listing
        return []
    allowed = {f"{t.__module__}.{t.__qualname__}" for t in FAIRSEQ_CHECKPOINT_GLOBALS}
    return [name for name in names if name not in allowed]


def _is_unpickling_refusal(exc):
    return isinstance(exc, pickle.UnpicklingError) and "Weights only load failed" in str(exc)


def _raised_by_torch_load(exc):
    """Whether ``exc`` came out of torch's reader (a file it could not parse), as opposed
    to fairseq's handling of a state it did read."""
    tb = exc.__traceback__
    while tb is not None:
        filename = tb.tb_frame.f_code.co_filename.replace(os.sep, "/")
        if filename.endswith(("torch/serialization.py", "torch/_weights_only_unpickler.py")):
            return True
        tb = tb.tb_next
    return False


def diagnose_load_error(path, exc):
    """Turn an exception raised while unpickling ``path`` into a :class:`CheckpointError`.

    Returns ``None`` when ``exc`` is not a loading failure (the caller re-raises it).
    """
    if isinstance(exc, CheckpointError):
        return exc
    if _is_unpickling_refusal(exc):
        names = _unsafe_globals(path)
        listed = ", ".join(names) if names else "a global outside the allowlist"
        return UntrustedCheckpointError(
            f"refusing to load checkpoint {path}: its pickle would import {listed}, "
            "which a fairseq checkpoint never holds and which could run code. "
            "If you made this file yourself and trust it, add the type with "
            "torch.serialization.add_safe_globals([...]) before loading."
        )
    corrupt = isinstance(exc, (EOFError, pickle.UnpicklingError, zipfile.BadZipFile)) or _raised_by_torch_load(exc)
    if corrupt:
        size = os.path.getsize(path) if os.path.exists(path) else 0
        return CorruptCheckpointError(
            f"checkpoint {path} ({size} bytes) is truncated or corrupt and cannot be read "
            f"({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}). "
            "Use another checkpoint (e.g. checkpoint_best.pt or an earlier checkpointN.pt)."
        )
    return None


def safe_load(path, map_location="cpu"):
    """``torch.load(path, weights_only=True)`` with fairseq's types allowed and clear errors."""
    allow_globals()
    if not os.path.exists(path):
        raise FileNotFoundError(f"checkpoint not found: {path}")
    try:
        return torch.load(path, map_location=map_location, weights_only=True)
    except Exception as exc:
        error = diagnose_load_error(path, exc)
        if error is None:
            raise
        raise error from exc


def _guard(load_checkpoint_to_cpu):
    """Wrap fairseq's ``load_checkpoint_to_cpu`` so loading failures name their file."""
    if getattr(load_checkpoint_to_cpu, "_fairseq_ext_guarded", False):
        return load_checkpoint_to_cpu

    @functools.wraps(load_checkpoint_to_cpu)
    def guarded(path, *args, **kwargs):
        try:
            return load_checkpoint_to_cpu(path, *args, **kwargs)
        except Exception as exc:
            error = diagnose_load_error(path, exc)
            if error is None:
                raise
            raise error from exc

    guarded._fairseq_ext_guarded = True
    return guarded


def install():
    """Make fairseq's resume, generate and hub loading work under ``weights_only=True``.

    Allowlists :data:`FAIRSEQ_CHECKPOINT_GLOBALS` and wraps
    ``fairseq.checkpoint_utils.load_checkpoint_to_cpu`` (the one function through which
    fairseq-train, fairseq-generate and ``from_pretrained`` read checkpoints) so that a
    refused or corrupt checkpoint raises a :class:`CheckpointError` naming the file.
    """
    from fairseq import checkpoint_utils

    allow_globals()
    checkpoint_utils.load_checkpoint_to_cpu = _guard(checkpoint_utils.load_checkpoint_to_cpu)
