"""Checkpoints read as data: no code runs from a checkpoint (docs/security.md).

:func:`safe_load` is the one function through which the repository reads a checkpoint or a
weight file: ``torch.load(weights_only=True)`` with :data:`FAIRSEQ_CHECKPOINT_GLOBALS`
allowlisted for this read only (``TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD`` ignored), ``.safetensors``
without pickle, ``cfg``/``args`` validated by :mod:`.config_schema` and the fields fairseq
``eval()``s (:data:`EVAL_FIELDS`, :data:`MODEL_EVAL_FIELDS`) plain literals. The fixes table
puts :func:`load_checkpoint_to_cpu` and :func:`load_ema_from_checkpoint` in place of fairseq's.
"""

import _compat_pickle
import argparse
import ast
import collections
import contextlib
import ctypes
import functools
import gc
import logging
import mmap
import os
import pickle
import re
import zipfile

import torch

from . import model_file
from .config_schema import ConfigRefused, _preview, validate_checkpoint_config, validate_values
from .errors import CheckpointError, CorruptCheckpointError, ModelFileRefused, UntrustedCheckpointError
from .renamed_flags import add_new_fields, upgrade_checkpoint_config

logger = logging.getLogger(__name__)

#: The globals a fairseq checkpoint holds beyond torch's default ``weights_only`` allowlist.
FAIRSEQ_CHECKPOINT_GLOBALS = (argparse.Namespace,)

#: Config fields whose stored value fairseq 0.12.3 passes to ``eval()`` (directly or through
#: ``utils.eval_str_list``/``eval_str_dict``/``eval_bool``), whatever the model: checked at
#: every depth of ``cfg`` and ``args``. The sites are listed in docs/security.md.
EVAL_FIELDS = frozenset({
    "adaptive_softmax_cutoff",  # transformer decoder, lstm, lstm_lm, lightconv, fconv_lm, model parallel
    "adaptive_input_cutoff",  # transformer_lm, lightconv_lm
    "character_filters",  # transformer_lm, lightconv_lm
    "xformers_att_config", "encoder_xformers_att_config",  # MultiheadAttention
    "conv_feature_layers",  # wav2vec, wav2vec2, hubert, multires_hubert, s2t_wav_transformer
    "conv_aggregator_layers",  # wav2vec
    "override_encoder_layers",  # multires_hubert
    "left_pad_source", "left_pad_target",  # multilingual_translation, multi_simple_epoch, backtranslation
    "adam_betas", "adamax_betas", "lamb_betas", "adafactor_eps",  # optimizers
    "wer_args",  # ctc criterion
    "feature_encoder_spec",  # raw audio dataset
    "pipeline_balance", "pipeline_devices",  # pipeline model parallel
    "pipeline_encoder_balance", "pipeline_encoder_devices",
    "pipeline_decoder_balance", "pipeline_decoder_devices",
})

#: Fields with common names (other models store free text under them, e.g. BART-LS's
#: ``encoder_attention="block"``) that only these fairseq models ``eval()``: checked in a
#: config node whose ``arch``/``_name`` selects one of them (or a subclass).
MODEL_EVAL_FIELDS = {
    "fairseq.models.fconv.FConvModel": ("encoder_layers", "decoder_layers", "decoder_attention"),
    "fairseq.models.fconv_lm.FConvLanguageModel": ("decoder_layers", "decoder_attention"),
    "fairseq.models.fconv_self_att.FConvModelSelfAtt": (
        "pretrained", "encoder_layers", "encoder_attention", "decoder_layers", "decoder_attention",
        "self_attention", "project_input", "gated_attention", "downsample",
    ),
    "fairseq.models.lstm.LSTMModel": ("decoder_attention",),
}

#: Fields naming another checkpoint that fairseq reads with its own bare ``torch.load``
#: (which the environment variable switches to full pickle), outside :func:`safe_load`.
BARE_LOAD_FIELDS = frozenset({"load_pretrained_decoder_from"})  # xm_transformer.build_model

#: torch's switch that turns ``weights_only`` off where a caller does not pass it.
NO_WEIGHTS_ONLY_VARIABLE = "TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD"

_warned_about_variable = False




def safe_load(path, map_location="cpu", mmap=False):
    """Read the checkpoint or weight file ``path`` without running code from it.

    ``.safetensors`` files are read by ``safetensors``; anything else by ``torch.load`` with
    ``weights_only=True`` and fairseq's types allowed. ``mmap=True`` maps a zip-format file
    instead of reading it: a tensor's bytes are read when something reads them, so entries a
    caller drops unread (the optimizer state, when decoding) never take memory. A fairseq state whose ``cfg``/``args``
    would make fairseq ``eval()`` more than a literal is refused (:func:`check_eval_fields`).
    Every failure is a :class:`CheckpointError` (or ``FileNotFoundError``) naming ``path``.
    """
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"checkpoint not found (no such file): {path}")
    if path.endswith(".safetensors"):
        from safetensors.torch import load_file

        try:
            return load_file(path, device=str(map_location))
        except Exception as exc:
            raise _corrupt(path, exc) from exc
    _warn_if_variable_set()
    try:
        # only the types not allowed yet: torch's context removes on exit everything it was given
        missing = [t for t in FAIRSEQ_CHECKPOINT_GLOBALS if t not in torch.serialization.get_safe_globals()]
        with torch.serialization.safe_globals(missing):
            state = torch.load(path, map_location=map_location, weights_only=True,
                               mmap=mmap and zipfile.is_zipfile(path))
    except Exception as exc:
        raise _loading_error(path, exc) from exc
    check_eval_fields(state, path)
    check_config(state, path)
    model_file.check_tensors(state, path)
    model_file.check_components(state, path)
    model_file.check_training_state(state, path)
    return state


def check_config(state, path):
    """Refuse ``state`` (read from ``path``) unless its ``cfg`` and ``args`` are what a
    configuration may be (:func:`fairseq_ext.compat.config_schema.validate_checkpoint_config`):
    raises :class:`UntrustedCheckpointError` naming the file and each refused field."""
    try:
        validate_checkpoint_config(state, path)
    except ConfigRefused as err:
        raise UntrustedCheckpointError(str(err)) from None


def check_eval_fields(state, path):
    """Refuse ``state`` (read from ``path``) if a field fairseq ``eval()``s holds more than a
    literal: raises :class:`UntrustedCheckpointError` naming the file and each field's dotted
    path (``cfg.model.adaptive_softmax_cutoff``, ``args.decoder_layers``)."""
    if not isinstance(state, dict):
        return
    bad = [(where, value) for key in ("args", "cfg") for where, value in _unsafe_fields(state.get(key), key)]
    if not bad:
        return
    listed = "; ".join(f"{where} = {_preview(value)}" for where, value in bad)
    bare = [where for where, _ in bad if where.rpartition(".")[2] in BARE_LOAD_FIELDS]
    raise UntrustedCheckpointError(
        f"refusing to load checkpoint {path}: {listed}. fairseq passes these fields to eval() "
        "while it builds the model, task or optimizer, so anything but a plain literal "
        "(a number, string, list, tuple or dict of them) could run code"
        + (f"; {', '.join(bare)} names a file fairseq would unpickle outside the safe loader" if bare else "")
        + ". See docs/security.md."
    )


def load_checkpoint_to_cpu(path, arg_overrides=None, load_on_all_ranks=False, keep_optimizer_state=True):
    """fairseq's ``checkpoint_utils.load_checkpoint_to_cpu`` reading through :func:`safe_load`.

    The same state as fairseq 0.12.3 returns (``arg_overrides`` applied, ``cfg`` as a
    DictConfig, legacy checkpoints upgraded), with the flags this repository renamed since
    the checkpoint was saved under their new names (:mod:`.renamed_flags`);
    ``load_on_all_ranks`` only mattered for remote files, which fairseq copies to a local
    path first, as here. ``keep_optimizer_state=False`` (decoding) maps the file and drops
    ``last_optimizer_state`` unread: Adam's two moments, twice the weights, never reach memory.
    """
    from fairseq import checkpoint_utils
    from fairseq.dataclass.utils import overwrite_args_by_name
    from fairseq.file_io import PathManager
    from omegaconf import OmegaConf

    local_path = PathManager.get_local_path(path)
    state = safe_load(local_path, mmap=not keep_optimizer_state)
    model_file.describe_only(state, local_path)
    if arg_overrides:
        try:
            validate_values(dict(arg_overrides), "arg_overrides", f"the overrides for {path}")
        except ConfigRefused as err:
            raise UntrustedCheckpointError(str(err)) from None
    if not isinstance(state, dict) or not {"model", "cfg", "args"} & set(state):
        raise CorruptCheckpointError(f"{path} is not a fairseq checkpoint (no model, cfg or args in it)")
    if state.get("cfg") is not None:
        state["cfg"] = OmegaConf.create(state["cfg"], flags={"allow_objects": True})
    upgrade_checkpoint_config(state, path)
    if state.get("cfg") is not None:
        add_new_fields(state["cfg"], path)
    if state.get("args") is not None and arg_overrides is not None:
        for name, value in arg_overrides.items():
            setattr(state["args"], name, value)
    if state.get("cfg") is not None:
        if arg_overrides is not None:
            overwrite_args_by_name(state["cfg"], arg_overrides)
    try:
        state = checkpoint_utils._upgrade_state_dict(state)
    except CheckpointError:
        raise
    except Exception as err:  # a legacy args value Hydra cannot parse, a field of the wrong shape
        raise model_file.refused_config(err, path) from None
    if not keep_optimizer_state:  # after the upgrade, which moves a legacy file's optimizer here
        state.pop("last_optimizer_state", None)
    return state


def load_model_ensemble_and_task(load_model_ensemble_and_task):
    """Wrap ``checkpoint_utils.load_model_ensemble_and_task`` (fairseq-generate, -interactive,
    -validate, both hubs, ``load_model_ensemble``): each file is read once through the safe
    loader, without its optimizer state (a model for decoding needs none), its declared sizes
    checked against its tensors, and the model built on the ``meta`` device and compared
    parameter by parameter (:mod:`.model_file`) before fairseq builds it for real from the
    same state."""

    @functools.wraps(load_model_ensemble_and_task)
    def wrapped(filenames, arg_overrides=None, task=None, strict=True, suffix="", num_shards=1, state=None):
        if num_shards != 1 or state is not None:  # sharded (FSDP) files: read shard by shard by fairseq
            return load_model_ensemble_and_task(filenames, arg_overrides, task, strict, suffix, num_shards, state)
        from fairseq import tasks
        from fairseq.dataclass.utils import convert_namespace_to_omegaconf

        ensemble, cfg = [], None
        for filename in filenames:
            path = filename.replace(".pt", suffix + ".pt") if suffix else filename
            if not os.path.isfile(path):
                raise OSError(f"Model file not found: {path}")
            state = load_checkpoint_to_cpu(path, arg_overrides, keep_optimizer_state=False)
            cfg = convert_namespace_to_omegaconf(state["args"]) if state.get("args") is not None else state["cfg"]
            model_file.check_declared_sizes(cfg.model, state.get("model") or {}, path)
            if task is None:
                if cfg.task is not None and "data" in cfg.task and cfg.task.data is None:
                    model_file.refuse(path, "cfg.task.data: the data directory comes from the caller, never from a "
                                            "model file: pass it (arg_overrides={'data': DIR}, the hub's "
                                            "data_name_or_path, the command line's DATA)")
                task = tasks.setup_task(cfg.task, from_checkpoint=True)
            model_file.check_model_shapes(_builder(task), cfg.model, state.get("model") or {}, path, strict)
            with weights_taken_from_the_file(path):
                models, cfg, task = load_model_ensemble_and_task([filename], arg_overrides, task, strict, suffix, 1,
                                                                 state)
            # the model now holds the file's tensors as its weights; the rest of the state goes
            # before the next file. While fairseq upgrades a file's Namespace, hydra's caller
            # detection (inspect.stack()) keeps frames that hold the state in a reference cycle,
            # and the file's mapping with it: a collection frees them now, not at some later one
            state = None
            gc.collect()
            ensemble.extend(models)
        return ensemble, cfg, task

    return wrapped


@contextlib.contextmanager
def weights_taken_from_the_file(path):
    """While fairseq loads a model for decoding from ``path`` (mapped by :func:`safe_load`),
    ``load_state_dict`` takes the file's tensors as the model's weights (torch's ``assign=True``)
    instead of copying them into the weights the model was built with, which are freed; then
    each weight is copied out of the mapping into the process's own memory, a few MB at a time,
    and the file's pages each piece came from are dropped (``madvise``) before the next. Copying
    into the built weights held both at once, the built ones and the mapped file's pages the
    copy touched: twice the weights at the peak; this holds them once. The model
    never reads the file again: fairseq rewrites ``checkpoint_best.pt`` in place (it copies the
    newest checkpoint over it), which would cut weights that still lived in the mapping.

    A tensor whose dtype differs from the model's (an fp16 file into an fp32 model) is
    converted first, as the copy would have converted it; shapes are checked by torch as before.
    Parameters keep the model's ``requires_grad``. Tied weights stay tied: the slots that held
    one parameter (an embedding and the output projection) hold one again, the tensor the copy
    would have left there (the last of their names in the model's order).
    ``torch.nn.Module.load_state_dict`` is replaced for the block's duration, process-wide: the
    block is fairseq's (single-threaded) loading of one file."""
    original = torch.nn.Module.load_state_dict

    def assigning(module, state_dict, strict=True, assign=False):
        own = module.state_dict(keep_vars=True)
        taken = collections.OrderedDict()
        for name, tensor in state_dict.items():
            mine = own.get(name)
            if isinstance(tensor, torch.Tensor) and isinstance(mine, torch.Tensor) and tensor.dtype != mine.dtype:
                tensor = tensor.to(mine.dtype)
            taken[name] = tensor
        if hasattr(state_dict, "_metadata"):  # the version numbers modules upgrade by
            taken._metadata = state_dict._metadata
        own = None  # the built weights go as they are replaced
        tied = _tied_slots(module)
        result = original(module, taken, strict=strict, assign=True)
        taken = None
        for slots in tied:
            last = getattr(slots[-1][0], slots[-1][1])[slots[-1][2]]
            for owner, kind, name in slots:
                getattr(owner, kind)[name] = last
        _into_memory(module, _private_mappings(path))
        return result

    torch.nn.Module.load_state_dict = assigning
    try:
        yield
    finally:
        torch.nn.Module.load_state_dict = original


MADV_DONTNEED = 4  # Linux's madvise advice: drop these pages (a file's are read again if touched)
COPY_CHUNK = 4 * 2**20  # bytes of a weight copied out of a mapped file before its pages are dropped


def _private_mappings(path):
    """The address ranges ``[(start, end)]`` where this process maps ``path`` privately
    (``/proc/self/maps``); empty where that file does not exist (not Linux)."""
    target, ranges = os.path.realpath(path), []
    try:
        with open("/proc/self/maps") as maps:
            for line in maps:
                fields = line.split(maxsplit=5)
                if len(fields) == 6 and fields[1].endswith("p") and fields[5].rstrip("\n") == target:
                    start, end = (int(x, 16) for x in fields[0].split("-"))
                    ranges.append((start, end))
    except OSError:
        return []
    return ranges


def _into_memory(module, mapped):
    """Every parameter and buffer of ``module`` whose bytes lie in one of the ``mapped`` ranges,
    replaced by a copy in the process's memory (a parameter stays a parameter, tied slots one
    tensor); the whole pages of the file it read are dropped once every tensor that shares its
    storage is copied (as each piece is copied when it is its storage's only tensor), so that
    no tensor still to be copied reads a dropped page back from the file."""
    if not mapped:
        return
    page = mmap.PAGESIZE
    libc = ctypes.CDLL(None, use_errno=True)  # the process's own symbols, libc's among them (no ldconfig run)
    libc.madvise.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)
    storages = collections.defaultdict(list)  # (first, past byte) -> [(owner, kind, name, tensor)]
    for owner, kind, name, tensor in _slots(module):
        if tensor.device.type != "cpu" or tensor.layout != torch.strided:
            continue
        storage = tensor.untyped_storage()
        first, past = storage.data_ptr(), storage.data_ptr() + storage.nbytes()
        if any(start <= first and past <= end for start, end in mapped):
            storages[(first, past)].append((owner, kind, name, tensor))
    for (first, past), slots in storages.items():
        alone = len({id(tensor) for *_, tensor in slots}) == 1
        drop = (lambda a, b: _drop(libc, a, b, page)) if alone else (lambda a, b: None)
        copies = {}
        for *_, tensor in slots:
            if id(tensor) not in copies:
                data = _copy_out(tensor.detach(), drop)
                if isinstance(tensor, torch.nn.Parameter):
                    data = torch.nn.Parameter(data, requires_grad=tensor.requires_grad)
                copies[id(tensor)] = data  # the originals stay in slots until the group is done
        for owner, kind, name, tensor in slots:
            getattr(owner, kind)[name] = copies[id(tensor)]
        _drop(libc, first, past, page)


def _copy_out(tensor, drop):
    """A copy of ``tensor`` in the process's memory, made :data:`COPY_CHUNK` bytes at a time, each
    chunk's source pages handed to ``drop(first_byte, past_byte)`` once copied: the peak grows by
    a chunk, not by the tensor. A tensor that is not contiguous is cloned whole."""
    if not tensor.is_contiguous() or tensor.numel() == 0:
        return tensor.clone()
    copy = torch.empty_like(tensor)  # its pages are not touched before their chunk is written
    source, target = tensor.view(-1), copy.view(-1)
    step, base, size = max(1, COPY_CHUNK // tensor.element_size()), tensor.data_ptr(), tensor.element_size()
    for begin in range(0, source.numel(), step):
        end = min(begin + step, source.numel())
        target[begin:end].copy_(source[begin:end])
        drop(base + begin * size, base + end * size)
    return copy


def _drop(libc, first, past, page):
    """``madvise(MADV_DONTNEED)`` on the whole pages inside bytes ``[first, past)``."""
    start, end = -(-first // page) * page, past // page * page
    if end > start:
        libc.madvise(start, end - start, MADV_DONTNEED)


def _slots(module):
    """Every slot of ``module``'s parameters and buffers that holds a tensor, once each, in the
    model's order: ``(owner module, "_parameters" or "_buffers", name, tensor)``."""
    seen = set()
    for _, owner in module.named_modules(remove_duplicate=False):
        for kind in ("_parameters", "_buffers"):
            for name, tensor in getattr(owner, kind).items():
                if tensor is not None and (id(owner), kind, name) not in seen:
                    seen.add((id(owner), kind, name))
                    yield owner, kind, name, tensor


def _tied_slots(module):
    """The slots ``(module, "_parameters" or "_buffers", name)`` that hold one tensor between
    them, one list per tensor held in more than one, each in the model's order."""
    slots = collections.defaultdict(list)
    for owner, kind, name, tensor in _slots(module):
        slots[id(tensor)].append((owner, kind, name))
    return [group for group in slots.values() if len(group) > 1]


def _builder(task):
    """The model class's own build, as the task's ``build_model`` calls it while loading (without
    the task's own extras: its validation generator, its length bookkeeping)."""
    from fairseq import models

    return lambda model_cfg: models.build_model(model_cfg, task, from_checkpoint=True)


def load_ema_from_checkpoint(path):
    """fairseq's ``checkpoint_utils.load_ema_from_checkpoint`` (``--ema-seed-model``) reading
    through :func:`safe_load`: the state with its EMA weights (fp16 made fp32) as ``model``."""
    state = safe_load(path)
    ema = (state.get("extra_state") or {}).get("ema") if isinstance(state, dict) else None
    if not isinstance(ema, dict) or not ema:
        raise ModelFileRefused(f"refusing model file {path}: extra_state.ema holds no EMA weights "
                               "(--ema-seed-model needs a file saved with --store-ema)")
    state["model"] = collections.OrderedDict(
        (name, param.float() if param.dtype == torch.half else param.clone()) for name, param in ema.items()
    )
    return state


def _warn_if_variable_set():
    global _warned_about_variable
    if _warned_about_variable or os.environ.get(NO_WEIGHTS_ONLY_VARIABLE, "0").lower() not in ("1", "y", "yes", "true"):
        return
    _warned_about_variable = True
    logger.warning(
        f"{NO_WEIGHTS_ONLY_VARIABLE} is set: ignored for checkpoint loading (fairseq_ext reads "
        "checkpoints with weights_only=True and fairseq's types allowlisted, so it is not needed). "
        "Other torch.load calls in this process still obey it: unset it."
    )


def _unsafe_fields(root, root_name):
    """``(dotted path, value)`` of every field under ``root`` (nested dicts, Namespaces, lists)
    that fairseq would ``eval()`` or load outside :func:`safe_load`, holding a non-literal."""
    found, seen, stack = [], set(), [(root, root_name)]
    while stack:  # iterative: a pickle can nest deeply or refer to itself
        node, where = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, argparse.Namespace):
            node = vars(node)
        if isinstance(node, dict):
            eval_fields = EVAL_FIELDS | _model_eval_fields(node)
            for key, value in node.items():
                at = f"{where}.{key}"
                if key in eval_fields and not _is_literal(value):
                    found.append((at, value))
                elif key in BARE_LOAD_FIELDS and value:
                    found.append((at, value))
                else:
                    stack.append((value, at))
        elif isinstance(node, (list, tuple)):
            stack.extend((item, f"{where}[{i}]") for i, item in enumerate(node))
    return sorted(found, key=lambda item: item[0])


def _model_eval_fields(node):
    """The :data:`MODEL_EVAL_FIELDS` of the fairseq model that ``node``'s ``arch``/``_name`` selects."""
    from fairseq.models import ARCH_MODEL_REGISTRY, MODEL_REGISTRY

    fields = set()
    for key in ("arch", "_name"):
        name = node.get(key)
        if not isinstance(name, str):
            continue
        model = ARCH_MODEL_REGISTRY.get(name) or MODEL_REGISTRY.get(name)
        for cls in getattr(model, "__mro__", ()):
            fields.update(MODEL_EVAL_FIELDS.get(f"{cls.__module__}.{cls.__qualname__}", ()))
    return frozenset(fields)


def _is_literal(value):
    """Whether ``eval(value)`` can only build data: non-text values are not evaluated (fairseq
    only evals ``str``), bytes never belong there, text must be a Python literal (or empty)."""
    if isinstance(value, (bytes, bytearray)):
        return False
    if not isinstance(value, str) or not value.strip():
        return True
    try:
        ast.literal_eval(value)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False
    return True


def _real_global(name):
    """``commands.Popen`` -> ``subprocess.Popen``: torch writes protocol-2 pickles, where
    Python renames modules to their Python 2 names (and maps them back on load)."""
    module, _, attr = name.rpartition(".")
    if (module, attr) in _compat_pickle.NAME_MAPPING:
        module, attr = _compat_pickle.NAME_MAPPING[(module, attr)]
    elif module in _compat_pickle.IMPORT_MAPPING:
        module = _compat_pickle.IMPORT_MAPPING[module]
    return f"{module}.{attr}" if module else attr


def _unsafe_globals(path, message):
    """The real names of the globals in ``path`` that torch's unpickler refuses: all of them
    for a zip checkpoint, the first one (from torch's message) for the legacy format."""
    allowed = {f"{t.__module__}.{t.__qualname__}" for t in FAIRSEQ_CHECKPOINT_GLOBALS}
    try:
        names = [n for n in torch.serialization.get_unsafe_globals_in_checkpoint(path) if n not in allowed]
    except Exception:  # the legacy format gives no listing
        names = []
    names = names or re.findall(r"GLOBAL (\S+)", message)
    return sorted({_real_global(n) for n in names})


# what torch's weights_only unpickler says when a pickle asks for more than data
_REFUSALS = ("GLOBAL ", "unrecognized function", "Can only create new object", "Can only build")


def _loading_error(path, exc):
    """The :class:`CheckpointError` for ``exc``, raised by ``torch.load(path, weights_only=True)``."""
    message = str(exc)
    if isinstance(exc, RuntimeError) and "TorchScript archives" in message:
        return UntrustedCheckpointError(
            f"refusing to load {path}: it is a TorchScript archive (a program, not a checkpoint)"
        )
    if isinstance(exc, pickle.UnpicklingError) and any(r in message for r in _REFUSALS):
        names = _unsafe_globals(path, message)
        listed = ", ".join(names) if names else "something other than tensors and plain data"
        return UntrustedCheckpointError(
            f"refusing to load checkpoint {path}: its pickle would import {listed}, "
            "which a fairseq checkpoint never holds and which could run code. "
            "If you made this file yourself and trust it, add the type with "
            "torch.serialization.add_safe_globals([...]) before loading."
        )
    return _corrupt(path, exc)


def _corrupt(path, exc):
    reason = _reason(exc)
    size = os.path.getsize(path) if os.path.exists(path) else 0
    return CorruptCheckpointError(
        f"checkpoint {path} ({size} bytes) is truncated or corrupt and cannot be read "
        f"({type(exc).__name__}{': ' + reason if reason else ''}). "
        "Use another checkpoint (e.g. checkpoint_best.pt or an earlier checkpointN.pt)."
    )


def _reason(exc):
    """The cause in ``exc``'s message, without torch's advice about ``weights_only``."""
    message = str(exc).split("WeightsUnpickler error:")[-1]
    lines = [line.strip() for line in message.splitlines()]
    useful = [line for line in lines if line and "weights_only" not in line and "Weights only" not in line
              and "documentation" not in line]
    return useful[0] if useful else ""
