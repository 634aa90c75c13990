"""What a model file may be: tensors, and the description of a model. Nothing about the run.

==================  ==========================================================================
components          only the reviewed ones (:data:`REVIEWED`): the project's own and the few
                    fairseq components its recipes use; anything else needs the caller's word
                    (:func:`trust`, ``--trust-model-file FILE``, ``from_pretrained(trust=True)``)
environment         no path, directory, file name, device, hub name or address: the run-time
                    groups (:data:`RUN_TIME_GROUPS`) and the :data:`ENVIRONMENT_FIELDS` of the
                    components are set back to their defaults on load (:func:`describe_only`),
                    so the caller's command line or call supplies them
tensors             dense strided tensors that own their bytes: no expanded (stride 0) or
                    overlapping views, no sparse or meta tensors (:func:`check_tensors`); a
                    fairseq ``model`` entry is a mapping of names to tensors
sizes               the declared sizes fit the tensors (:func:`check_declared_sizes`), and the
                    model built on the ``meta`` device has the file's parameter shapes before
                    anything is allocated (:func:`check_model_shapes`)
training state      ``extra_state`` and ``optimizer_history`` of their fairseq shape
                    (:func:`check_training_state`); saved optimizer hyper-parameters never
                    override the command line's (:func:`command_line_hyper_parameters`)
==================  ==========================================================================

Every refusal is a :class:`ModelFileRefused`: one line naming the file and the field.
"""

import argparse
import dataclasses
import enum
import functools
import logging
import math
import os
import re

import torch
from torch.utils._device import DeviceContext

from .config_schema import ConfigRefused, _component_types, _preview, _registry
from .errors import ModelFileRefused

logger = logging.getLogger(__name__)

#: fairseq's own components a model file may select, by group, as ``module.Class`` of the
#: registered class (an architecture counts as its model's class). The project's own
#: components (``user_dir`` and ``fairseq_ext``) are reviewed with the project.
REVIEWED = {
    "model": (
        "fairseq.models.transformer.transformer_legacy.TransformerModel",
        "fairseq.models.bart.model.BARTModel",
    ),
    "task": ("fairseq.tasks.translation.TranslationTask", "fairseq.tasks.denoising.DenoisingTask"),
    "criterion": (
        "fairseq.criterions.label_smoothed_cross_entropy.LabelSmoothedCrossEntropyCriterion",
        "fairseq.criterions.cross_entropy.CrossEntropyCriterion",
    ),
    "optimizer": (
        "fairseq.optim.adam.FairseqAdam", "fairseq.optim.sgd.SGD", "fairseq.optim.adafactor.FairseqAdafactor",
    ),
    "lr_scheduler": (
        "fairseq.optim.lr_scheduler.polynomial_decay_schedule.PolynomialDecayLRSchedule",
        "fairseq.optim.lr_scheduler.inverse_square_root_schedule.InverseSquareRootSchedule",
        "fairseq.optim.lr_scheduler.fixed_schedule.FixedLRSchedule",
        "fairseq.optim.lr_scheduler.cosine_lr_scheduler.CosineLRSchedule",
    ),
    "bpe": (
        "fairseq.data.encoders.sentencepiece_bpe.SentencepieceBPE",
        "fairseq.data.encoders.hf_bert_bpe.BertBPE",
        "fairseq.data.encoders.gpt2_bpe.GPT2BPE",
    ),
    "tokenizer": ("fairseq.data.encoders.space_tokenizer.SpaceTokenizer",),
    "scoring": ("fairseq.scoring.bleu.Scorer", "fairseq.scoring.bleu.SacrebleuScorer"),
}

#: Packages whose registered components are this project's own.
PROJECT_PACKAGES = ("user_dir", "fairseq_ext")

#: Fields of the reviewed components that name something of the run's environment (a file,
#: a folder, a hub name): never taken from a model file, set back to their defaults on load.
ENVIRONMENT_FIELDS = frozenset({
    "data", "spm_model", "wordpiece_vocab", "decode_words_file", "grounded_corpora",
    "instruction_templates", "init_from_hf", "encoder_embed_path", "decoder_embed_path", "scorer_path",
    "sentencepiece_model", "bpe_vocab_file", "gpt2_encoder_json", "gpt2_vocab_bpe", "bpe_codes",
    "bpe_merges", "bpe_vocab", "user_dir", "load_pretrained_decoder_from", "load_pretrained_encoder_from",
})

#: Text fields of the reviewed components that describe the model (names, options, literal
#: lists): kept. A test holds every text field of every reviewed component to one of the two.
DESCRIPTION_TEXT_FIELDS = frozenset({
    "_name", "arch", "encoder_layers_to_keep", "decoder_layers_to_keep", "encoder_xformers_att_config",
    "decoder_xformers_att_config", "xformers_att_config", "decoder_output_dim", "adaptive_softmax_cutoff",
    "source_lang", "target_lang", "train_subset", "eval_bleu_args", "eval_bleu_detok", "eval_bleu_detok_args",
    "eval_bleu_remove_bpe", "eval_rouge_args", "instruction", "dynamic_span_length", "shorten_data_split_list",
    "adam_betas", "adafactor_eps", "bpe",
})

#: ``cfg`` groups that select a component: the description of the model and how it was trained.
COMPONENT_GROUPS = ("model", "task", "criterion", "optimizer", "lr_scheduler", "bpe", "tokenizer", "scoring")

#: ``cfg`` groups that only make sense for the run that saved the file (where it logged, saved,
#: which devices, how it decoded): set back to their defaults; the caller's apply.
RUN_TIME_GROUPS = ("common", "common_eval", "distributed_training", "dataset", "optimization", "checkpoint",
                   "bmuf", "generation", "eval_lm", "interactive", "ema")

#: Legacy ``args`` keys that select a component, and their group.
NAME_KEYS = {"arch": "model", "task": "task", "criterion": "criterion", "optimizer": "optimizer",
             "lr_scheduler": "lr_scheduler", "bpe": "bpe", "tokenizer": "tokenizer", "scoring": "scoring"}

#: Below this, a declared size needs no tensor to back it (sinusoidal positions, small tables).
SIZE_WITHOUT_TENSOR = 1 << 16

#: Field names that count layers: at most one layer per tensor in the file.
LAYER_COUNT = re.compile(r"(^|_)(n_)?(hidden_)?layers?$")

#: dtypes a tensor of a model file may have.
TENSOR_DTYPES = frozenset({
    torch.float32, torch.float16, torch.bfloat16, torch.float64, torch.int64, torch.int32, torch.int16,
    torch.int8, torch.uint8, torch.bool,
})

#: The caller's word that a file may select unreviewed components (absolute paths); children
#: spawned by fairseq-train read it from this variable.
TRUST_VARIABLE = "FAIRSEQ_EXT_TRUSTED_MODEL_FILES"

_told = set()


def refuse(path, message):
    text = " ".join(f"refusing model file {path}: {message}".split())
    raise ModelFileRefused(text if len(text) <= 600 else text[:597] + "...")


# ------------------------------------------------------------------ trust
def trust(path):
    """The caller trusts ``path``: it may select components this project has not reviewed
    (everything else is still checked)."""
    trusted = trusted_files() | {os.path.realpath(os.fspath(path))}
    os.environ[TRUST_VARIABLE] = os.pathsep.join(sorted(trusted))


def trusted_files():
    return {p for p in os.environ.get(TRUST_VARIABLE, "").split(os.pathsep) if p}


def is_trusted(path):
    return os.path.realpath(os.fspath(path)) in trusted_files()


def take_trust_flags(argv):
    """``argv`` without its ``--trust-model-file FILE`` pairs, each FILE trusted (:func:`trust`)."""
    kept, i = [], 0
    while i < len(argv):
        arg = str(argv[i])
        if arg == "--trust-model-file" and i + 1 < len(argv):
            trust(argv[i + 1])
            i += 2
            continue
        if arg.startswith("--trust-model-file="):
            trust(arg.split("=", 1)[1])
        else:
            kept.append(argv[i])
        i += 1
    return kept


# ------------------------------------------------------------------ components
def is_reviewed(group, name):
    """Whether the component ``name`` of ``group`` (``model`` for an architecture) is reviewed."""
    cls = _registry("model" if group == "arch" else group).get(name) if isinstance(name, str) else None
    if cls is None:
        return False
    qualified = f"{cls.__module__}.{cls.__qualname__}"
    own = cls.__module__.split(".")[0] in PROJECT_PACKAGES
    return own or qualified in REVIEWED["model" if group == "arch" else group]


def selected_components(state):
    """``(dotted field, group, name)`` of every component ``state``'s ``cfg``/``args`` selects."""
    found = []
    cfg, args = state.get("cfg"), state.get("args")
    if isinstance(cfg, dict):
        for group in COMPONENT_GROUPS:
            node = cfg.get(group)
            if isinstance(node, argparse.Namespace):
                node = vars(node)
            if not isinstance(node, dict):
                continue
            if node.get("_name") is not None:
                found.append((f"cfg.{group}._name", group, node["_name"]))
            if group == "model" and node.get("arch") is not None:
                found.append(("cfg.model.arch", "arch", node["arch"]))
    if isinstance(args, argparse.Namespace):
        for key, group in NAME_KEYS.items():
            if getattr(args, key, None) is not None:
                found.append((f"args.{key}", "arch" if key == "arch" else group, getattr(args, key)))
    return found


def check_components(state, path):
    """Refuse a file that selects a component nobody reviewed, unless the caller trusts it."""
    if not isinstance(state, dict) or is_trusted(path):
        return
    for where, group, name in selected_components(state):
        if not is_reviewed(group, name):
            refuse(path, f"{where} = {_preview(name)} selects a {group} this project has not reviewed "
                         f"(reviewed: its own and {_reviewed_names(group)}); a file describes a model of "
                         f"these only. If you trust this file, pass --trust-model-file {path} "
                         "(or from_pretrained(..., trust=True)). See docs/security.md")


def _reviewed_names(group):
    registry = _registry("model" if group == "arch" else group)
    own = REVIEWED["model" if group == "arch" else group]
    names = sorted(n for n, c in registry.items() if f"{c.__module__}.{c.__qualname__}" in own)
    return ", ".join(names[:6]) + (" ..." if len(names) > 6 else "")


# ------------------------------------------------------------------ environment
def describe_only(state, path):
    """Set everything in ``state``'s ``cfg``/``args`` that is not the model's description back
    to its default (run-time groups, environment fields); said once per file."""
    if not isinstance(state, dict):
        return
    changed = []
    cfg = state.get("cfg")
    if isinstance(cfg, dict):
        defaults = _group_defaults()
        for group in RUN_TIME_GROUPS:
            node = cfg.get(group)
            if isinstance(node, dict):
                saved = defaults[group]
                changed += [f"cfg.{group}.{k}" for k, v in node.items() if k in saved and v != saved[k]]
                cfg[group] = dict(defaults[group])
        for group in COMPONENT_GROUPS:
            node = cfg.get(group)
            changed += _clear_environment(node, f"cfg.{group}")
    args = state.get("args")
    if isinstance(args, argparse.Namespace):
        changed += _describe_only_flat(args)
    if changed and os.path.realpath(path) not in _told:
        _told.add(os.path.realpath(path))
        changed.sort(key=lambda c: ".generation." not in c)  # decoding settings first: they change output
        shown = ", ".join(changed[:10]) + (f" and {len(changed) - 10} more" if len(changed) > 10 else "")
        loud = [c for c in changed if ".generation." in c or c.startswith("args.") and c[5:] in _generation_fields()]
        log = logger.warning if loud else logger.info
        log(f"{path}: {len(changed)} setting(s) of the run that saved it are not taken from the file "
            f"(the caller's or the defaults apply): {shown}")


def _clear_environment(node, where):
    values = vars(node) if isinstance(node, argparse.Namespace) else node
    if not isinstance(values, dict):
        return []
    cleared = []
    for key in ENVIRONMENT_FIELDS & set(values):
        if values[key] not in (None, ""):
            cleared.append(f"{where}.{key}")
        values[key] = None
    return cleared


def _describe_only_flat(args):
    """A legacy ``args`` Namespace: run-time flags back to their defaults, environment cleared."""
    values = vars(args)
    described = set(NAME_KEYS) | {"_name"}
    for key, group in NAME_KEYS.items():
        name = values.get(key)
        if isinstance(name, str):
            described |= set(_component_types("model" if group == "model" else group, name))
    changed = []
    run_time = _run_time_defaults()
    for key in sorted(set(values) - described):
        if key in run_time and values[key] != run_time[key]:
            changed.append(f"args.{key}")
            values[key] = run_time[key]
    return changed + _clear_environment(values, "args")


@functools.cache
def _group_defaults():
    from fairseq.dataclass.configs import FairseqConfig

    types = {f.name: f.type for f in dataclasses.fields(FairseqConfig)}
    return {group: _defaults(types[group]) for group in RUN_TIME_GROUPS}


@functools.cache
def _run_time_defaults():
    merged = {}
    for defaults in _group_defaults().values():
        for key, value in defaults.items():
            merged.setdefault(key, value)
    return merged


@functools.cache
def _generation_fields():
    return frozenset(_group_defaults()["generation"])


def _defaults(dataclass):
    values = {}
    for field in dataclasses.fields(dataclass):
        if field.default is not dataclasses.MISSING:
            value = field.default
        elif field.default_factory is not dataclasses.MISSING:
            value = field.default_factory()
        else:
            value = None
        values[field.name] = value.value if isinstance(value, enum.Enum) else value
    return values


# ------------------------------------------------------------------ tensors
def check_tensors(state, path):
    """Every tensor in ``state`` dense, strided, on the CPU, owning the bytes it spans, and no
    two tensors overlapping unless they are the same view; a fairseq ``model`` entry maps names
    to tensors."""
    model = state.get("model") if isinstance(state, dict) and {"cfg", "args"} & set(state) else None
    if model is not None:
        if not isinstance(model, dict):
            refuse(path, f"model is a {type(model).__name__}, not a mapping of parameter names to tensors")
        for name, value in model.items():
            if not isinstance(value, torch.Tensor):
                refuse(path, f"model.{name} is a {type(value).__name__} where a tensor belongs")
    spans = {}
    for where, tensor in _tensors(state, "state"):
        _check_tensor(tensor, where, path)
        if tensor.numel() == 0:
            continue
        storage = tensor.untyped_storage()
        start = tensor.storage_offset() * tensor.element_size()
        view = (start, start + tensor.numel() * tensor.element_size())
        for other, other_where in spans.get(storage.data_ptr(), {}).items():
            if other != view and other[0] < view[1] and view[0] < other[1]:
                refuse(path, f"{where} overlaps {other_where} in the same storage (a view, not a tensor of its own)")
        spans.setdefault(storage.data_ptr(), {})[view] = where


def _check_tensor(tensor, where, path):
    if tensor.layout != torch.strided or tensor.is_quantized or tensor.device.type != "cpu":
        refuse(path, f"{where} is a {tensor.layout} tensor on {tensor.device}; a model file holds dense CPU tensors")
    if tensor.dtype not in TENSOR_DTYPES:
        refuse(path, f"{where} has dtype {tensor.dtype}, which no model here holds")
    if tensor.numel() == 0:
        return
    expected = 1
    for size, stride in sorted(zip(tensor.shape, tensor.stride()), key=lambda d: d[1]):
        if size == 1:
            continue
        if stride != expected:
            refuse(path, f"{where} of shape {tuple(tensor.shape)} has strides {tensor.stride()}: an expanded "
                         "or overlapping view, not a tensor that owns its bytes")
        expected *= size
    needed = (tensor.storage_offset() + tensor.numel()) * tensor.element_size()
    if needed > tensor.untyped_storage().nbytes():
        refuse(path, f"{where} spans {needed} bytes of a {tensor.untyped_storage().nbytes()}-byte storage")


def _tensors(node, where, depth=0):
    """``(dotted path, tensor)`` of every tensor under ``node``."""
    if isinstance(node, torch.Tensor):
        yield where, node
    elif depth > 64:
        return
    elif isinstance(node, dict):
        for key, value in node.items():
            yield from _tensors(value, f"{where}.{key}", depth + 1)
    elif isinstance(node, (list, tuple)):
        for i, value in enumerate(node):
            yield from _tensors(value, f"{where}[{i}]", depth + 1)
    elif isinstance(node, argparse.Namespace):
        yield from _tensors(vars(node), where, depth + 1)


# ------------------------------------------------------------------ training state
def check_training_state(state, path):
    """``optimizer_history`` and ``extra_state`` as fairseq writes them: a training file holds
    both, with an epoch, counts and times that are finite and not negative."""
    if not isinstance(state, dict) or not {"cfg", "args"} & set(state):
        return
    history = state.get("optimizer_history")
    if history is not None:
        if not isinstance(history, list) or not all(isinstance(h, dict) for h in history):
            refuse(path, "optimizer_history is not a list of records")
        for i, record in enumerate(history):
            _count(record.get("num_updates", 0), f"optimizer_history[{i}].num_updates", path)
    extra = state.get("extra_state")
    if extra is None:
        if history is not None or "last_optimizer_state" in state:
            refuse(path, "extra_state is missing (a fairseq training file holds it: epoch and iterator)")
        return
    if not isinstance(extra, dict):
        refuse(path, f"extra_state is a {type(extra).__name__}, not a record")
    if not extra:
        return  # a file made by hand for its weights: resuming from it is refused by the trainer's check
    iterator = extra.get("train_iterator")
    if not isinstance(iterator, dict):
        refuse(path, "extra_state.train_iterator is missing or not a record (epoch, iterations_in_epoch)")
    _count(iterator.get("epoch"), "extra_state.train_iterator.epoch", path, least=1)
    _count(iterator.get("iterations_in_epoch", 0), "extra_state.train_iterator.iterations_in_epoch", path)
    for key in ("previous_training_time", "best", "val_loss"):
        value = extra.get(key)
        if value is None:
            continue
        if isinstance(value, torch.Tensor) and value.numel() == 1:
            value = value.item()
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
                or (key == "previous_training_time" and value < 0):
            refuse(path, f"extra_state.{key} = {_preview(value)} (a finite number{', >= 0' if key[0] == 'p' else ''})")
    last = state.get("last_optimizer_state")
    if last is not None:
        groups = last.get("param_groups") if isinstance(last, dict) else None
        if not isinstance(groups, list):
            refuse(path, "last_optimizer_state has no list of param_groups")
        for i, group in enumerate(groups):
            for key, value in (group.items() if isinstance(group, dict) else ()):
                if key != "params" and isinstance(value, float) and not math.isfinite(value):
                    refuse(path, f"last_optimizer_state.param_groups[{i}].{key} = {value} (not finite)")


def _count(value, where, path, least=0):
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        refuse(path, f"{where} = {_preview(value)} (an integer >= {least})")


def command_line_hyper_parameters(load_state_dict):
    """Wrap ``FairseqOptimizer.load_state_dict`` (fairseq-train's resume and ``--restore-file``):
    torch's ``Optimizer.load_state_dict`` takes every hyper-parameter of the saved
    ``param_groups`` over the optimizer the command line built; here the command line's stay
    (the learning rate is the scheduler's, set again after loading), and each disagreement is
    logged naming both values. The moments and step counts load as before, and must have
    their parameter's shape."""

    @functools.wraps(load_state_dict)
    def wrapped(self, state_dict, optimizer_overrides=None):
        before = [{k: v for k, v in group.items() if k != "params"} for group in self.param_groups]
        _check_moment_shapes(self, state_dict)
        load_state_dict(self, state_dict, optimizer_overrides)
        for i, (group, mine) in enumerate(zip(self.param_groups, before)):
            for key, value in mine.items():
                if key == "lr" or (optimizer_overrides and key in optimizer_overrides):
                    continue
                if group.get(key) != value:
                    logger.warning(f"optimizer state: param_groups[{i}].{key} = {group.get(key)!r} in the checkpoint, "
                                   f"{value!r} on the command line: the command line's is used")
                    group[key] = value

    return wrapped


def _check_moment_shapes(optimizer, state_dict):
    params = [p for group in optimizer.param_groups for p in group["params"]]
    saved = state_dict.get("state", {}) if isinstance(state_dict, dict) else {}
    for index, moments in saved.items():
        if not isinstance(index, int) or not 0 <= index < len(params) or not isinstance(moments, dict):
            continue
        for key, value in moments.items():
            if isinstance(value, torch.Tensor) and value.dim() > 0 and value.shape != params[index].shape:
                raise ModelFileRefused(f"refusing optimizer state: state[{index}].{key} has shape "
                                       f"{tuple(value.shape)}, its parameter {tuple(params[index].shape)}")


def check_stop_time(load_checkpoint):
    """Wrap ``Trainer.load_checkpoint``: a training state without the records it reads is one
    line naming the file and the record, not a ``KeyError``; a saved training time already
    past the command line's ``--stop-time-hours`` would end the run before its first update,
    which stops it here, naming both."""

    @functools.wraps(load_checkpoint)
    def wrapped(self, filename, *args, **kwargs):
        try:
            extra_state = load_checkpoint(self, filename, *args, **kwargs)
        except KeyError as err:
            refuse(filename, f"{err.args[0]!r} is missing from its training state (extra_state.train_iterator, "
                             "optimizer_history): to start from its weights use --finetune-from-model")
        limit = getattr(self.cfg.optimization, "stop_time_hours", 0) or 0
        saved = (extra_state or {}).get("previous_training_time") or 0
        if limit > 0 and saved / 3600 >= limit:
            refuse(filename, f"extra_state.previous_training_time = {saved / 3600:.2f} hours is already past "
                             f"--stop-time-hours {limit}: the run would stop before training (raise "
                             "--stop-time-hours, or start from the weights with --finetune-from-model)")
        return extra_state

    return wrapped


# ------------------------------------------------------------------ sizes
def check_declared_sizes(model_cfg, tensors, path, where="cfg.model"):
    """Before anything is built: every whole number the configuration declares is backed by
    the file (at most its largest tensor dimension, or :data:`SIZE_WITHOUT_TENSOR`), no
    layer count exceeds the number of tensors, and every real number is finite."""
    values = vars(model_cfg) if isinstance(model_cfg, argparse.Namespace) else model_cfg
    if not hasattr(values, "items"):
        return
    shapes = [tuple(t.shape) for t in tensors.values() if isinstance(t, torch.Tensor)]
    largest = max([d for shape in shapes for d in shape] or [0])
    for key, value in values.items():
        if isinstance(value, float) and not math.isfinite(value):
            refuse(path, f"{where}.{key} = {value}: a model is described by finite numbers")
        if isinstance(value, bool) or not isinstance(value, int):
            continue
        if LAYER_COUNT.search(str(key)) and value > len(shapes):
            refuse(path, f"{where}.{key} = {value} layers, but the file holds {len(shapes)} tensors")
        if value > max(largest, SIZE_WITHOUT_TENSOR):
            refuse(path, f"{where}.{key} = {value} is larger than any tensor of the file "
                         f"(largest dimension {largest}): the configuration does not describe these weights")


def check_model_shapes(build, model_cfg, model_state, path, strict=True):
    """Build the model on the ``meta`` device (``build(model_cfg)``: no memory spent), put the
    file's state through the model's own upgrade, and refuse any parameter whose shape
    differs, or (``strict``) that one side lacks, naming the configuration field that set it; a
    description the model's code cannot build, or tensors its upgrade cannot read, are refused
    as such (one line, whatever the model's code raised)."""
    try:
        with MetaBuild():
            model = build(model_cfg)
    except Exception as err:  # noqa: BLE001  (whatever the description makes the model's code raise)
        refuse(path, f"the model it describes cannot be built ({type(err).__name__}: {err}): the configuration "
                     "does not describe a model")
    state = dict(model_state)
    if hasattr(model, "upgrade_state_dict"):
        try:
            model.upgrade_state_dict(state)
        except Exception as err:  # noqa: BLE001
            refuse(path, f"the model's own upgrade cannot read the file's tensors ({type(err).__name__}: {err}): "
                         "they are not this model's")
    expected = model.state_dict()
    for name, tensor in expected.items():
        found = state.get(name)
        if found is None:
            if strict:
                refuse(path, f"the configuration declares {name} {tuple(tensor.shape)}, which the file does not hold"
                             f"{_fields_setting(model_cfg, tensor.shape, ())}")
            continue
        if isinstance(found, torch.Tensor) and tuple(found.shape) != tuple(tensor.shape):
            refuse(path, f"{name} is {tuple(found.shape)} in the file but {tuple(tensor.shape)} as the "
                         f"configuration declares it{_fields_setting(model_cfg, tensor.shape, found.shape)}")
    if strict:
        extra = [name for name in state if name not in expected]
        if extra:
            refuse(path, f"the file holds {len(extra)} tensor(s) the configured model has no place for "
                         f"(first: {extra[0]}): the configuration does not describe these weights")


class MetaBuild(DeviceContext):
    """Tensors made inside are ``meta`` tensors (shapes, no memory); initialisation on them
    (in-place ops that keep the shape, and fairseq's ``.cpu()`` round trip) is skipped, as
    there are no values to set."""

    _RESHAPING = frozenset({"resize_", "resize_as_", "set_", "as_strided_", "squeeze_", "unsqueeze_", "t_",
                            "transpose_", "swapdims_", "swapaxes_"})

    def __init__(self):
        super().__init__(torch.device("meta"))

    def __torch_function__(self, func, types, args=(), kwargs=None):
        name = getattr(func, "__name__", "")
        first = args[0] if args else (kwargs or {}).get("tensor")
        if isinstance(first, torch.Tensor) and first.is_meta and (func is torch.Tensor.cpu or (
                name.endswith("_") and not name.startswith("_") and name not in self._RESHAPING)):
            return first
        return super().__torch_function__(func, types, args, kwargs)


def _fields_setting(model_cfg, declared, found):
    values = vars(model_cfg) if isinstance(model_cfg, argparse.Namespace) else dict(model_cfg.items())
    suspects = [d for d in declared if d not in tuple(found)]
    named = [f"cfg.model.{k} = {v}" for k, v in values.items()
             if isinstance(v, int) and not isinstance(v, bool) and v in suspects]
    return f" (set by {', '.join(named[:3])})" if named else ""


def refused_config(err, path):
    """A :class:`ConfigRefused` (or a configuration library's parse error) as one line."""
    text = str(err).splitlines()[0] if str(err) else type(err).__name__
    if isinstance(err, ConfigRefused):
        return ModelFileRefused(text[:600])
    key = re.search(r"(\w+)\s*=", str(err))
    field = f"args.{key.group(1)}" if key else "its legacy args"
    return ModelFileRefused(f"refusing model file {path}: {field} cannot be read as a configuration value "
                            f"({type(err).__name__}: {text[:200]})")
