"""The fixes tables: :data:`PATCHES`, every wrapper the plugin puts in place of a fairseq (or
torch) object, and :data:`HELPERS`, the functions tasks call on an object fairseq built.

One row (:class:`Fix`) per fairseq function: what goes wrong, why (the cause in fairseq's code),
the release it was measured on, and the ``wrap`` that builds the replacement. Installing is one
attribute swap per row, undoing the swap back (``is`` fairseq's own object again):
:func:`install` / :func:`uninstall`, :func:`applied` for a ``with`` block, :func:`unchanged` to
put back whatever a block changed. Only ``user_dir/__init__.py`` calls :func:`install`;
importing the library changes nothing. A helper row names the ``function`` tasks call on an
object they build (a generator, a parser); nothing process-wide changes for them.
"""

import argparse
import contextlib
import functools
import importlib
import os
import sys
from dataclasses import dataclass
from typing import Callable, Optional

import torch

from . import checkpoint, model_file
from .archives import local_files_only, safe_archive_loading
from .distributed import (
    cpu_all_gather_list,
    cpu_call_main,
    cpu_ddp_class,
    skip_frozen_distributed_wrapper,
    torchrun_infer_init_method,
    trusted_broadcast_receive,
)
from .flags import add_dataclass_args, checked_parse_args_and_arch
from .generation import fix_decoder_beam_size, fix_ngram_blocking, keep_last_batch, repairing_buffered_read

#: The fairseq (and torch) on which every fix was measured.
MEASURED_ON = "ve-fairseq 0.12.3 (fairseq 0.12), torch 2.13"

#: Attributes marking a replaced object: the fix that made it, and what it replaced.
_FIX_MARK, _REPLACED = "_fairseq_ext_fix", "_fairseq_ext_replaced"


@dataclass(frozen=True)
class Fix:
    """One row of :data:`FIXES`.

    A process-wide fix names its ``target`` (``"module:attribute"`` of fairseq; one row per
    target) and ``wrap``, which turns the object found there into its replacement. A per-task
    fix has no target; ``function`` is what tasks and models call. A fix with neither defines
    :meth:`apply`/:meth:`undo` itself (:class:`AllowlistFix`).
    """

    name: str
    fixes: str
    why: str
    target: Optional[str] = None
    wrap: Optional[Callable] = None
    function: Optional[Callable] = None
    applied_by: str = "install()"
    fairseq: str = MEASURED_ON

    @property
    def process_wide(self):
        return self.function is None

    def _owner(self):
        if self.target is None:
            raise TypeError(f"{self.name} is applied per task, not process-wide: {self.applied_by} calls "
                            f"{self.function.__name__}")
        module, attribute = self.target.split(":")
        owner = importlib.import_module(module)
        *classes, attribute = attribute.split(".")  # "module:Class.method" replaces a method
        for name in classes:
            owner = getattr(owner, name)
        return owner, attribute

    def is_applied(self):
        owner, attribute = self._owner()
        return getattr(getattr(owner, attribute), _FIX_MARK, None) == self.name

    def apply(self):
        """Swap the replacement in (nothing happens if it is in place)."""
        if self.is_applied():
            return
        owner, attribute = self._owner()
        current = getattr(owner, attribute)
        replacement = self.wrap(current)
        setattr(replacement, _FIX_MARK, self.name)
        setattr(replacement, _REPLACED, current)
        setattr(owner, attribute, replacement)

    def undo(self):
        """Swap fairseq's own object back (nothing happens if the fix is not in place)."""
        if self.is_applied():
            owner, attribute = self._owner()
            setattr(owner, attribute, original(getattr(owner, attribute)))


def original(value):
    """What a fix replaced with ``value`` (fairseq's own object), or ``value`` itself."""
    return getattr(value, _REPLACED, value)


def replaced_by(function):
    """A ``wrap`` for a fix that replaces fairseq's function by ``function`` outright."""

    def wrap(_fairseq_function):
        @functools.wraps(function)
        def replacement(*args, **kwargs):
            return function(*args, **kwargs)

        return replacement

    return wrap


@dataclass(frozen=True)
class AllowlistFix(Fix):
    """Adds ``types`` to torch's process-wide ``weights_only`` allowlist; undo removes them."""

    types: tuple = ()

    def is_applied(self):
        return all(t in torch.serialization.get_safe_globals() for t in self.types)

    def apply(self):
        present = torch.serialization.get_safe_globals()
        torch.serialization.add_safe_globals([t for t in self.types if t not in present])

    def undo(self):
        _set_allowlist([g for g in torch.serialization.get_safe_globals() if g not in self.types])


@dataclass(frozen=True)
class OfflineFix(Fix):
    """Sets ``variables`` to ``"1"`` in the environment (and in ``huggingface_hub``'s constants,
    read once when it is imported); undo restores what was there."""

    variables: tuple = ()

    def is_applied(self):
        return all(os.environ.get(v) == "1" for v in self.variables)

    def apply(self):
        if not self.is_applied():
            _OFFLINE_SAVED.update({v: os.environ.get(v) for v in self.variables})
        for variable in self.variables:
            os.environ[variable] = "1"
        _hub_constants(True)

    def undo(self):
        _restore_variables(_OFFLINE_SAVED, {})


_OFFLINE_SAVED = {}


def _restore_variables(values, saved):
    """The environment variables ``values`` back as they were (None: unset), the offline fix's
    record of what it replaced set to ``saved``, and ``huggingface_hub``'s constant to match."""
    for variable, value in dict(values).items():
        if value is None:
            os.environ.pop(variable, None)
        else:
            os.environ[variable] = value
    _OFFLINE_SAVED.clear()
    _OFFLINE_SAVED.update(saved)
    _hub_constants(os.environ.get("HF_HUB_OFFLINE") == "1")


def _hub_constants(offline):
    constants = sys.modules.get("huggingface_hub.constants")
    if constants is not None:
        constants.HF_HUB_OFFLINE = offline


def _set_allowlist(entries):
    torch.serialization.clear_safe_globals()
    torch.serialization.add_safe_globals(list(entries))


#: The patches: process-wide fixes, in the order :func:`install` applies them (and
#: :func:`uninstall` undoes them backwards); at most one per fairseq attribute.
PATCHES = (
    AllowlistFix(
        "checkpoint_types_allowlisted",
        fixes="torch >= 2.6 reads fairseq checkpoints with weights_only=True and refuses them",
        why="fairseq pickles an argparse.Namespace (cfg.model of legacy models, args) into every "
            "checkpoint; it is data, allowlisted (fairseq_ext.compat.checkpoint.FAIRSEQ_CHECKPOINT_GLOBALS)",
        types=(argparse.Namespace,),
        fairseq="ve-fairseq 0.12.3 on torch >= 2.6 (measured on torch 2.13)",
    ),
    OfflineFix(
        "third_party_loaders_offline",
        fixes="a checkpoint's --bpe bert without a vocabulary file made the hub ask a model hub over the "
              "network (transformers' BertTokenizer.from_pretrained), outside fairseq's cached_path",
        why="fairseq's BertBPE, and other encoders, call third-party loaders that fetch by default",
        variables=("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE"),
    ),
    Fix(
        "safe_checkpoint_loading",
        fixes="fairseq-train resume, --finetune-from-model, fairseq-generate/-interactive and the hub "
              "could not read checkpoints (weights_only=True), or, told to, ran code from them",
        why="checkpoint_utils.load_checkpoint_to_cpu calls torch.load without weights_only and then "
            "eval()s config strings; fairseq_ext.compat.checkpoint.load_checkpoint_to_cpu reads with "
            "weights_only=True, refuses non-literal eval fields and renames old flags",
        target="fairseq.checkpoint_utils:load_checkpoint_to_cpu",
        wrap=replaced_by(checkpoint.load_checkpoint_to_cpu),
        fairseq="ve-fairseq 0.12.3 on torch >= 2.6 (measured on torch 2.13)",
    ),
    Fix(
        "safe_ema_loading",
        fixes="--ema-seed-model could not read a checkpoint under weights_only=True",
        why="checkpoint_utils.load_ema_from_checkpoint calls torch.load itself",
        target="fairseq.checkpoint_utils:load_ema_from_checkpoint",
        wrap=replaced_by(checkpoint.load_ema_from_checkpoint),
        fairseq="ve-fairseq 0.12.3 on torch >= 2.6 (measured on torch 2.13)",
    ),
    Fix(
        "model_shapes_before_memory",
        fixes="a model file of a few kilobytes whose configuration declared huge sizes made every load "
              "path allocate and initialise gigabytes before the weights were compared",
        why="checkpoint_utils.load_model_ensemble_and_task builds the model from the file's cfg.model, "
            "then loads the state; fairseq_ext.compat.checkpoint.load_model_ensemble_and_task builds "
            "it on the meta device first and compares every parameter shape",
        target="fairseq.checkpoint_utils:load_model_ensemble_and_task",
        wrap=checkpoint.load_model_ensemble_and_task,
    ),
    Fix(
        "command_line_optimizer_settings",
        fixes="--restore-file took the saved weight decay, betas and eps over the command line's, "
              "with nothing logged (a saved weight decay of 1000 zeroed the model in two updates)",
        why="FairseqOptimizer.load_state_dict calls torch's Optimizer.load_state_dict, which copies "
            "every saved param_groups hyper-parameter",
        target="fairseq.optim.fairseq_optimizer:FairseqOptimizer.load_state_dict",
        wrap=model_file.command_line_hyper_parameters,
    ),
    Fix(
        "saved_training_time_checked",
        fixes="a saved training time past --stop-time-hours ended a resumed run before it trained, "
              "with nothing said",
        why="Trainer.load_checkpoint takes extra_state.previous_training_time as it is",
        target="fairseq.trainer:Trainer.load_checkpoint",
        wrap=model_file.check_stop_time,
    ),
    Fix(
        "safe_archive_extraction",
        fixes="from_pretrained on a .tar.gz wrote members with '..', absolute names or through a "
              "symlink anywhere the user can write, deleted the archive, and fetched URLs",
        why="file_utils.load_archive_file calls tarfile.extractall on the archive as it is; "
            "fairseq_ext.compat.archives.extract_archive checks every member first",
        target="fairseq.file_utils:load_archive_file",
        wrap=safe_archive_loading,
    ),
    Fix(
        "local_files_only",
        fixes="a URL in a checkpoint's --bpe fields (or its defaults, e.g. gpt2's) was downloaded "
              "while loading, with whatever the URL carried",
        why="file_utils.cached_path downloads any http(s)/s3 name with requests",
        target="fairseq.file_utils:cached_path",
        wrap=local_files_only,
    ),
    Fix(
        "interactive_invalid_utf8",
        fixes="one line of invalid UTF-8 on stdin ended fairseq-interactive with a pybind11 cast "
              "error; the lines after it got no output",
        why="buffered_read reads stdin as text (surrogate escapes reach sentencepiece); the "
            "replacement reads bytes and repairs each line (U+FFFD, logged with its number)",
        target="fairseq_cli.interactive:buffered_read",
        wrap=repairing_buffered_read,
    ),
    Fix(
        "keep_last_batch",
        fixes="the last batch was dropped: fairseq-generate on 12 documents printed 8 hypotheses, "
              "training skipped up to 7 examples an epoch, silently",
        why="data_utils.batch_by_size drops a final batch whose size is not a multiple of "
            "--required-batch-size-multiple (default 8); fairseq 0.12.2 kept it",
        target="fairseq.data.data_utils:batch_by_size",
        wrap=keep_last_batch,
    ),
    Fix(
        "torchrun_launch",
        fixes="under torchrun every process trained its own world-size-1 job, all writing one "
              "--save-dir; with --distributed-world-size given, rank % cuda.device_count() divided "
              "by zero on CPU",
        why="infer_init_method reads torchrun's variables only when the world size is not 1, and "
            "its default is torch.cuda.device_count(): 1 on CPU",
        target="fairseq.distributed.utils:infer_init_method",
        wrap=torchrun_infer_init_method,
    ),
    Fix(
        "cpu_launch",
        fixes="--distributed-world-size N --cpu asserted 'world size is N but have 0 available devices'; "
              "CPU runs asked for the nccl backend, which CPU builds of torch do not have",
        why="call_main spawns min(torch.cuda.device_count(), N) processes, none on CPU, and "
            "--distributed-backend defaults to nccl; the wrapper picks gloo, then spawns N",
        target="fairseq.distributed.utils:call_main",
        wrap=cpu_call_main,
    ),
    Fix(
        "cpu_ddp",
        fixes="--ddp-backend pytorch_ddp (the default) failed for CPU modules",
        why="DistributedDataParallel is given device_ids=[device_id] even on CPU, which torch refuses",
        target="fairseq.models.distributed_fairseq_model:DistributedDataParallel",
        wrap=cpu_ddp_class,
    ),
    Fix(
        "frozen_ddp",
        fixes="a criterion (or model) with parameters but none to train, such as BART-LS's scorer "
              "under --freeze-scorer, stopped distributed training",
        why="DistributedFairseqModel wraps it in DistributedDataParallel, which refuses a module "
            "without trainable parameters",
        target="fairseq.models:DistributedFairseqModel",
        wrap=skip_frozen_distributed_wrapper,
    ),
    Fix(
        "argument_checks",
        fixes="--bf16 failed on CPU and GPUs (it looked for torch_xla); an --arch typo printed every "
              "registered architecture (4,000 characters, wav2vec included) and no suggestion; a data "
              "path one level above bin/ ended a 30-line traceback in dict.source.txt",
        why="options.parse_args_and_arch sets args.tpu = True whenever --bf16 is given, and leaves "
            "--arch to argparse's choices and the data path to the task's setup; the wrapper says "
            "which of the plugin's architectures, or which bin/, was meant, and exits 2 as argparse does",
        target="fairseq.options:parse_args_and_arch",
        wrap=checked_parse_args_and_arch,
    ),
    Fix(
        "all_gather_list_on_cpu",
        fixes="logging outputs that cannot be summed failed to gather in every CPU (gloo) job",
        why="distributed_utils.all_gather_list allocates its buffer with torch.cuda.ByteTensor and "
            "pinned memory",
        target="fairseq.distributed.utils:all_gather_list",
        wrap=cpu_all_gather_list,
    ),
    Fix(
        "resume_broadcast",
        fixes="a distributed run could not resume (CPU and GPUs alike)",
        why="rank 0 sends the state it read to the other ranks, which unpickle it with torch's "
            "weights_only=True default and refuse the omegaconf config inside",
        target="fairseq.distributed.utils:_broadcast_object_slow",
        wrap=trusted_broadcast_receive,
        fairseq="ve-fairseq 0.12.3 on torch >= 2.6 (measured on torch 2.13)",
    ),
)

#: The helpers: per-task fixes, functions that tasks and models call on an object they build
#: (a generator, a parser); nothing process-wide changes for them.
HELPERS = (
    Fix(
        "prefix_ngram_blocking",
        fixes="--no-repeat-ngram-size banned nothing on CPU",
        why="SequenceGenerator hands NGramRepeatBlock the whole token buffer, and its Python path "
            "(no CUDA extension) reads the n-gram from the buffer's end, still padding "
            "(PrefixNGramRepeatBlock)",
        function=fix_ngram_blocking,
        applied_by="fairseq_ext.decoding.plugin_generator (every summarization task's build_generator)",
    ),
    Fix(
        "decoder_beam_size",
        fixes="with --eval-rouge and a beam above 1, the validation (and training) loss of BART-based models "
              "read every beam-th row of the encoder keys, or crashed; a generator of beam 1 built after one "
              "with a larger beam (the hub builds one per call) crashed in BART's beamable attention",
        why="SequenceGenerator.__init__ sets the beam size on the models themselves, for good, and only when "
            "it is above 1 (EnsembleModel.set_decoder_beam_size)",
        function=fix_decoder_beam_size,
        applied_by="fairseq_ext.decoding.plugin_generator (every summarization task's build_generator)",
    ),
    Fix(
        "boolean_flags_on_by_default",
        fixes="a boolean flag that defaults to on turned it off: --truncate-source stopped "
              "truncation, --share-all-embeddings unshared",
        why="gen_parser_from_dataclass makes a bool field defaulting to True a store_false flag of "
            "the same name; add_dataclass_args registers --x (on) and --no-x (off)",
        function=add_dataclass_args,
        applied_by="add_args of the plugin's tasks and dataclass models",
    ),
)

#: Every row of both tables.
FIXES = PATCHES + HELPERS

#: :data:`FIXES` by name.
FIXES_BY_NAME = {fix.name: fix for fix in FIXES}

#: The fixes :func:`install` applies: the patches.
PROCESS_WIDE = PATCHES

#: The environment variables the patches set (a child process inherits them).
ENVIRONMENT_VARIABLES = tuple(v for fix in PATCHES for v in getattr(fix, "variables", ()))


def install():
    """Apply every process-wide fix (idempotent: importing the plugin twice changes nothing)."""
    for fix in PROCESS_WIDE:
        fix.apply()


def uninstall():
    """Undo every process-wide fix: fairseq's own objects are back in place."""
    for fix in reversed(PROCESS_WIDE):
        fix.undo()


@contextlib.contextmanager
def unchanged():
    """Put back, on exit, every object the process-wide fixes replace, torch's allowlist and
    the environment variables they set, exactly as they were on entry (the very objects),
    whatever the block applied or undid."""
    targets = {fix.target: fix._owner() for fix in PROCESS_WIDE if fix.target}
    saved = {target: getattr(owner, attribute) for target, (owner, attribute) in targets.items()}
    allowlist = torch.serialization.get_safe_globals()
    environment = {v: os.environ.get(v) for v in ENVIRONMENT_VARIABLES}
    offline_saved = dict(_OFFLINE_SAVED)
    try:
        yield
    finally:
        for target, (owner, attribute) in targets.items():
            setattr(owner, attribute, saved[target])
        _set_allowlist(allowlist)
        _restore_variables(environment, offline_saved)


@contextlib.contextmanager
def applied():
    """Every process-wide fix in place for a ``with`` block, as it was afterwards."""
    with unchanged():
        install()
        yield
