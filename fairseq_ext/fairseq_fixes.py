"""fairseq 0.12 bugs that lose or ignore things silently, or stop a run, fixed from the outside.

Every fix names the fairseq release it was measured on (``ve-fairseq==0.12.3``, the lock's
fairseq 0.12) and is one self-contained function; :func:`install` (run when ``--user-dir
user_dir`` is imported) applies them all, idempotently.

1. **n-gram blocking does nothing on CPU.** ``SequenceGenerator`` hands its
   ``NGramRepeatBlock`` the whole token buffer ``(bsz * beam, max_len + 2)``; without the CUDA
   extension the Python path takes the n-gram to check from the *end of the buffer* (still
   padding), so ``--no-repeat-ngram-size`` never bans anything. :class:`PrefixNGramRepeatBlock`
   hands it only the tokens generated so far; tasks install it through ``build_generator``::

       buffer  : </s> a b a b <pad> <pad> ...     step 4
       fairseq : last 2 = (<pad>, <pad>)  -> nothing banned
       prefix  : last 2 = (a, b)          -> bans "a" (seen after "a b")

2. **The last batch is dropped.** fairseq 0.12.3's ``data_utils.batch_by_size`` (both Python
   3.11 forks) drops the final batch when its size is not a multiple of
   ``--required-batch-size-multiple`` (default 8): ``fairseq-generate`` on 12 documents prints
   8 hypotheses, and training skips up to 7 examples an epoch, without a word.
   :func:`keep_last_batch` wraps it so that the remainder comes back as a last, smaller batch,
   as fairseq 0.12.2 did (batches are consecutive runs of ``indices``).

3. **A boolean flag that defaults to on turns it off.** fairseq 0.12.3's
   ``gen_parser_from_dataclass`` makes a bool field defaulting to True a ``store_false`` flag
   of the same name: ``--truncate-source`` (fairseq's BART summarization recipe: "truncate")
   switched truncation off. :func:`add_dataclass_args` registers such a field as ``--x``
   (on, the default) and ``--no-x`` (off); tasks and models call it from ``add_args``.

4. **A beam size of 1 after a larger one crashes.** fairseq 0.12.3's
   ``EnsembleModel.set_decoder_beam_size`` tells the model its beam only when it is above 1,
   so a generator built with ``beam=1`` after one with ``beam=4`` (the hub builds one per call)
   runs BART's "beamable" encoder-decoder attention with the stale size 4 (a reshape error).
   :func:`fix_decoder_beam_size` sets it for every beam size and undoes BART's swap of the
   encoder's ``reorder_encoder_out`` at beam 1; tasks apply it in ``build_generator``.

Distributed training and mixed precision (issue: one job over N processes, on CPU and GPU):

5. :func:`fix_torchrun_launch`: under ``torchrun`` every process ran its own world-size-1
   job (the default ``--distributed-world-size`` is the number of GPUs, 1 on CPU), all
   writing the same ``--save-dir``; with an explicit world size, ``rank % cuda.device_count()``
   divided by zero on CPU. torchrun's ``WORLD_SIZE``/``RANK``/``LOCAL_RANK`` now decide.
6. :func:`fix_cpu_backend`: ``--distributed-backend`` defaults to ``nccl``, which CPU wheels
   do not have; a CPU run (``--cpu``, or no CUDA) uses ``gloo``.
7. :func:`fix_cpu_spawn`: ``--distributed-world-size N --cpu`` asserted ``world size is N but
   have 0 available devices`` (and would have spawned ``min(0, N)`` processes); it now spawns N.
8. :func:`fix_cpu_ddp`: ``--ddp-backend pytorch_ddp`` (the default) passed
   ``device_ids=[device_id]`` to ``DistributedDataParallel`` for CPU modules too, which torch
   refuses.
9. :func:`fix_frozen_ddp`: a module with parameters but none to train (a frozen criterion,
   such as BART-LS's scorer under ``--freeze-scorer``) was still wrapped in
   ``DistributedDataParallel``, which refuses it; it is left unwrapped (nothing to reduce).
10. :func:`fix_bf16_without_tpu`: ``--bf16`` set ``--tpu`` (needs ``torch_xla``), so ``--bf16``
   failed on CPU and on GPUs; ``--tpu`` is now only on when asked for.
11. :func:`fix_all_gather_list_on_cpu`: ``distributed_utils.all_gather_list`` (logging outputs
   that cannot be summed) allocated its buffer with ``torch.cuda.ByteTensor`` and pinned
   memory, so it failed in every CPU (gloo) job; it now uses the process group's device.
12. :func:`fix_resume_broadcast`: a distributed run could not resume (CPU and GPUs alike):
    rank 0 reads ``checkpoint_last.pt`` and sends the state to the other ranks, which
    unpickle it with torch's ``weights_only=True`` default and refuse the omegaconf config
    inside. The receiving ranks now unpickle their peer's message in full (see the function).
"""

import argparse
import functools
import logging
import os
import random
import sys

import numpy as np
import torch
from fairseq.dataclass.utils import gen_parser_from_dataclass, interpret_dc_type
from fairseq.ngram_repeat_block import NGramRepeatBlock

logger = logging.getLogger(__name__)

#: What ``torchrun`` (and ``torch.distributed.launch``) set in every worker's environment.
TORCHRUN_VARIABLES = ("MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE", "RANK", "LOCAL_RANK")


class PrefixNGramRepeatBlock(NGramRepeatBlock):
    """fairseq's n-gram blocker, looking at the hypotheses up to ``step`` only."""

    def forward(self, tokens, lprobs, bsz: int, beam_size: int, step: int):
        if self.use_extension:  # the CUDA kernel reads the buffer with ``step`` itself
            return super().forward(tokens, lprobs, bsz, beam_size, step)
        return super().forward(tokens[:, : step + 1], lprobs, bsz, beam_size, step)


def fix_ngram_blocking(generator):
    """Give a ``SequenceGenerator`` a working CPU n-gram blocker (nothing to do without
    ``--no-repeat-ngram-size``); returns the generator."""
    blocker = getattr(generator, "repeat_ngram_blocker", None)
    if blocker is not None and not isinstance(blocker, PrefixNGramRepeatBlock):
        generator.repeat_ngram_blocker = PrefixNGramRepeatBlock(
            blocker.no_repeat_ngram_size, use_extension=blocker.use_extension
        )
    return generator


def fix_decoder_beam_size(generator):
    """Tell every model of a ``SequenceGenerator`` its beam size, 1 included; returns the
    generator."""
    ensemble = getattr(generator, "model", None)
    if generator.beam_size > 1 or ensemble is None:
        return generator  # fairseq set it in SequenceGenerator.__init__
    for model in getattr(ensemble, "models", []):
        if getattr(model, "set_beam_size", None) is None:
            continue
        model.set_beam_size(1)
        encoder = getattr(model, "encoder", None)
        if encoder is not None and "reorder_encoder_out" in vars(encoder):
            del encoder.reorder_encoder_out  # BART's set_beam_size swapped in a no-op reorder
    return generator


def true_boolean_fields(dataclass_instance):
    """Names of the bool fields of a fairseq dataclass that default to True."""
    return [
        name for name in dataclass_instance._get_all_attributes()
        if interpret_dc_type(dataclass_instance._get_type(name)) is bool
        and dataclass_instance._get_default(name) is True
    ]


def add_dataclass_args(parser, dataclass_instance, delete_default=False):
    """fairseq's ``gen_parser_from_dataclass``, except that a bool field defaulting to True
    becomes the pair ``--x`` (on) / ``--no-x`` (off) instead of an inverted ``--x``.
    ``delete_default`` as in fairseq (models: the value is absent unless given, so that
    architecture functions can fill it)."""
    for name in true_boolean_fields(dataclass_instance):
        flag = "--" + name.replace("_", "-")
        default = {} if delete_default else {"default": True}
        help_text = dataclass_instance._get_help(name) or name
        try:
            parser.add_argument(flag, dest=name, action="store_true", help=f"{help_text} (on by default)", **default)
            parser.add_argument("--no-" + flag[2:], dest=name, action="store_false", help=f"turn {flag} off",
                                **default)
        except argparse.ArgumentError:
            pass  # registered elsewhere already (fairseq skips such duplicates the same way)
    gen_parser_from_dataclass(parser, dataclass_instance, delete_default=delete_default)


def keep_last_batch(batch_by_size):
    """Wrap fairseq's ``batch_by_size`` so that no index is left out of the batches."""
    if getattr(batch_by_size, "_fairseq_ext_keeps_last_batch", False):
        return batch_by_size

    @functools.wraps(batch_by_size)
    def wrapped(indices, *args, **kwargs):
        batches = batch_by_size(indices, *args, **kwargs)
        indices = np.asarray(indices) if not isinstance(indices, np.ndarray) else indices
        covered = sum(len(batch) for batch in batches)
        if covered == len(indices):
            return batches
        if covered and not np.array_equal(np.concatenate(batches), indices[:covered]):
            return batches  # not the consecutive-runs layout this fix knows (fixed shapes)
        return list(batches) + [indices[covered:]]

    wrapped._fairseq_ext_keeps_last_batch = True
    return wrapped


def _patch(owner, name, wrap):
    """Replace ``owner.name`` by ``wrap(owner.name)`` unless a fix already did (idempotent).
    The original stays reachable as ``owner.name.__wrapped__``."""
    current = getattr(owner, name)
    layer = current
    while layer is not None:  # fixes may stack on one attribute (call_main has two)
        if getattr(layer, "_fairseq_ext_fix", None) == wrap.__name__:
            return current
        layer = getattr(layer, "__wrapped__", None)
    patched = wrap(current)
    patched._fairseq_ext_fix = wrap.__name__
    setattr(owner, name, patched)
    return patched


def _cpu_run(cfg):
    """Does this fairseq config train on CPU (``--cpu``, or a machine without CUDA)?"""
    return bool(cfg.common.cpu) or not torch.cuda.is_available()


def launched_by_torchrun(environ=None):
    """True inside a worker started by ``torchrun`` (or ``python -m torch.distributed.launch``)."""
    environ = os.environ if environ is None else environ
    return all(name in environ for name in TORCHRUN_VARIABLES)


# --------------------------------------------------------------------------- 3. torchrun
def torchrun_infer_init_method(infer_init_method):
    """Wrap ``distributed_utils.infer_init_method`` so that torchrun's environment decides.

    fairseq 0.12.3 reads torchrun's variables only when ``--distributed-world-size`` is not 1,
    and its default is ``torch.cuda.device_count()``: 1 on CPU (and on one-GPU nodes), so each
    of N torchrun workers trained alone. With the world size given it set ``device_id = rank %
    torch.cuda.device_count()`` (ZeroDivisionError on CPU; the wrong GPU across nodes whose GPU
    count differs from ``--nproc_per_node``). Here ``WORLD_SIZE``, ``RANK`` and ``LOCAL_RANK``
    (the device index on this node) are taken as they are, over any ``--distributed-*`` flag.
    """

    @functools.wraps(infer_init_method)
    def wrapped(cfg, force_distributed=False):
        if (
            cfg.distributed_init_method is not None
            or cfg.tpu
            or cfg.pipeline_model_parallel
            or not launched_by_torchrun()
        ):
            return infer_init_method(cfg, force_distributed)
        world_size = int(os.environ["WORLD_SIZE"])
        if world_size != cfg.distributed_world_size:
            logger.info(f"torchrun: world size {world_size} (WORLD_SIZE), not {cfg.distributed_world_size}")
        cfg.distributed_world_size = world_size
        if world_size == 1 and not force_distributed:
            return None
        cfg.distributed_init_method = "env://"
        cfg.distributed_rank = int(os.environ["RANK"])
        cfg.device_id = int(os.environ["LOCAL_RANK"])
        cfg.distributed_no_spawn = True  # torchrun started the processes
        return None

    return wrapped


def fix_torchrun_launch():
    """Fix 3 (fairseq 0.12.3): one job over torchrun's processes, on CPU and GPUs."""
    from fairseq.distributed import utils as distributed_utils

    _patch(distributed_utils, "infer_init_method", torchrun_infer_init_method)


# --------------------------------------------------------------------------- 4. gloo on CPU
def cpu_backend_call_main(call_main):
    """Wrap ``distributed_utils.call_main``: a CPU run's ``nccl`` backend becomes ``gloo``.

    The choice is made here, in the launching process, so that processes spawned by
    ``torch.multiprocessing`` (which import fairseq afresh, before the plugin) inherit it
    through the config they are handed.
    """

    @functools.wraps(call_main)
    def wrapped(cfg, main, **kwargs):
        dist = cfg.distributed_training
        if dist.distributed_backend == "nccl" and _cpu_run(cfg):
            if dist.distributed_world_size > 1 or launched_by_torchrun():
                logger.info("training on CPU: --distributed-backend gloo (CPU builds of torch have no nccl)")
            dist.distributed_backend = "gloo"
        return call_main(cfg, main, **kwargs)

    return wrapped


def fix_cpu_backend():
    """Fix 4 (fairseq 0.12.3): ``gloo`` instead of the default ``nccl`` for CPU runs."""
    from fairseq.distributed import utils as distributed_utils

    _patch(distributed_utils, "call_main", cpu_backend_call_main)


# --------------------------------------------------------------------------- 5. spawn on CPU
def _free_port():
    import socket

    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def cpu_spawn_call_main(call_main):
    """Wrap ``distributed_utils.call_main``: ``--distributed-world-size N`` on CPU spawns N
    processes on this machine (fairseq 0.12.3 asserts N <= number of GPUs, then spawns
    ``min(GPUs, N)``).

    Only the single-machine case is taken over: no ``--distributed-init-method``, no
    ``--distributed-no-spawn``, not under torchrun or SLURM. A CPU run that gives an init
    method without ``--distributed-no-spawn`` would spawn nothing and exit 0, so it is refused.
    """
    from fairseq.distributed import utils as distributed_utils

    @functools.wraps(call_main)
    def wrapped(cfg, main, **kwargs):
        dist = cfg.distributed_training
        if (
            not _cpu_run(cfg)
            or cfg.common.tpu
            or dist.distributed_world_size <= 1
            or dist.distributed_no_spawn
            or dist.pipeline_model_parallel
            or launched_by_torchrun()
            or "SLURM_STEP_NODELIST" in os.environ
            or "SLURM_JOB_NODELIST" in os.environ
        ):
            return call_main(cfg, main, **kwargs)
        if dist.distributed_init_method is not None:
            raise ValueError(
                "--distributed-init-method on CPU needs --distributed-no-spawn and one process per "
                "--distributed-rank (or launch the processes with torchrun): fairseq would spawn "
                "one process per GPU, that is none"
            )
        port = dist.distributed_port if dist.distributed_port > 0 else _free_port()
        dist.distributed_port = port
        dist.distributed_init_method = f"tcp://localhost:{port}"
        dist.distributed_num_procs = dist.distributed_world_size
        kwargs["start_rank"] = dist.distributed_rank
        dist.distributed_rank = None  # distributed_main assigns start_rank + process index
        logger.info(f"spawning {dist.distributed_world_size} CPU processes ({dist.distributed_init_method})")
        torch.multiprocessing.spawn(
            fn=distributed_utils.distributed_main,
            args=(main, cfg, kwargs),
            nprocs=dist.distributed_world_size,
            join=True,
        )
        return None

    return wrapped


def fix_cpu_spawn():
    """Fix 5 (fairseq 0.12.3): fairseq's own spawn (``--distributed-world-size N``) on CPU."""
    from fairseq.distributed import utils as distributed_utils

    _patch(distributed_utils, "call_main", cpu_spawn_call_main)


# --------------------------------------------------------------------------- 6. DDP on CPU
def cpu_ddp_class(ddp_class):
    """A subclass of torch's ``DistributedDataParallel`` that drops ``device_ids`` and
    ``output_device`` for a module whose parameters are on CPU (torch accepts them for
    single-device GPU modules only; fairseq 0.12.3 always passes ``[args.device_id]``)."""

    class CpuCapableDistributedDataParallel(ddp_class):
        def __init__(self, module, device_ids=None, output_device=None, *args, **kwargs):
            first = next(module.parameters(), None)
            if first is not None and first.device.type == "cpu":
                device_ids, output_device = None, None
            super().__init__(module, device_ids, output_device, *args, **kwargs)

    CpuCapableDistributedDataParallel.__name__ = ddp_class.__name__
    CpuCapableDistributedDataParallel.__qualname__ = ddp_class.__qualname__
    CpuCapableDistributedDataParallel.__wrapped__ = ddp_class
    return CpuCapableDistributedDataParallel


def fix_cpu_ddp():
    """Fix 6 (fairseq 0.12.3): the default ``--ddp-backend pytorch_ddp`` trains CPU modules."""
    from fairseq.models import distributed_fairseq_model

    _patch(distributed_fairseq_model, "DistributedDataParallel", cpu_ddp_class)


# --------------------------------------------------------------------------- 7. frozen modules
def skip_frozen_distributed_wrapper(distributed_fairseq_model):
    """Wrap ``fairseq.models.DistributedFairseqModel``: a module none of whose parameters
    requires a gradient is returned as it is, moved to the device (torch's DDP raises on such a
    module; there are no gradients to reduce, and every rank built the same weights)."""

    @functools.wraps(distributed_fairseq_model)
    def wrapped(args, model, process_group, device):
        if any(p.requires_grad for p in model.parameters()):
            return distributed_fairseq_model(args, model, process_group, device)
        logger.info(f"{type(model).__name__} has no trainable parameter: not wrapped for data parallelism")
        return model.to(device)

    return wrapped


def fix_frozen_ddp():
    """Fix 7 (fairseq 0.12.3): frozen criterions (or models) under distributed training."""
    from fairseq import models

    _patch(models, "DistributedFairseqModel", skip_frozen_distributed_wrapper)


# --------------------------------------------------------------------------- 8. bf16
def bf16_without_tpu(parse_args_and_arch):
    """Wrap ``options.parse_args_and_arch``: ``--bf16`` no longer implies ``--tpu``.

    fairseq 0.12.3 sets ``args.tpu = True`` whenever ``--bf16`` is given (a TPU-era default),
    so the trainer looks for ``torch_xla`` and neither CPU nor CUDA runs can use bf16. An
    explicit ``--tpu`` on the command line keeps it on.
    """

    @functools.wraps(parse_args_and_arch)
    def wrapped(parser, input_args=None, *args, **kwargs):
        result = parse_args_and_arch(parser, input_args, *args, **kwargs)
        parsed = result[0] if isinstance(result, tuple) else result
        given = sys.argv[1:] if input_args is None else list(input_args)
        if getattr(parsed, "bf16", False) and getattr(parsed, "tpu", False) and "--tpu" not in given:
            parsed.tpu = False
        return result

    return wrapped


def fix_bf16_without_tpu():
    """Fix 8 (fairseq 0.12.3): ``--bf16`` trains on CPU and GPUs."""
    from fairseq import options

    _patch(options, "parse_args_and_arch", bf16_without_tpu)


# --------------------------------------------------------------------------- 9. all_gather_list
def cpu_all_gather_list(all_gather_list):
    """Wrap ``distributed_utils.all_gather_list`` so that gloo (CPU) groups work: the same
    encoding (a 4-byte length and a pickle per rank in one byte buffer, summed with
    ``all_reduce``), with the buffer on CPU and no pinned memory."""
    import pickle
    import struct

    from fairseq.distributed import utils as distributed_utils

    @functools.wraps(all_gather_list)
    def wrapped(data, group=None, max_size=16384):
        if group is None:
            group = distributed_utils.get_global_group()
        if distributed_utils.use_xla() or torch.distributed.get_backend(group) != "gloo":
            return all_gather_list(data, group=group, max_size=max_size)
        from fairseq import utils

        rank = distributed_utils.get_rank(group=group)
        world_size = distributed_utils.get_world_size(group=group)
        encoded = pickle.dumps(utils.move_to_cpu(data))
        size = 4 + len(encoded)
        if size > max_size:
            raise ValueError(f"encoded data size ({size}) exceeds max_size ({max_size})")
        buffer = torch.zeros(max_size * world_size, dtype=torch.uint8)
        start = rank * max_size
        buffer[start : start + size] = torch.frombuffer(bytearray(struct.pack(">I", len(encoded)) + encoded), dtype=torch.uint8)
        distributed_utils.all_reduce(buffer, group=group)
        result = []
        for i in range(world_size):
            chunk = buffer[i * max_size : (i + 1) * max_size].numpy().tobytes()
            (length,) = struct.unpack(">I", chunk[:4])
            if length > 0:
                result.append(pickle.loads(chunk[4 : 4 + length]))
        return result

    return wrapped


def fix_all_gather_list_on_cpu():
    """Fix 9 (fairseq 0.12.3): ``all_gather_list`` over gloo."""
    from fairseq.distributed import utils as distributed_utils

    _patch(distributed_utils, "all_gather_list", cpu_all_gather_list)


# --------------------------------------------------------------------------- 10. resume
def trusted_broadcast_receive(broadcast_object_slow):
    """Wrap ``distributed_utils._broadcast_object_slow`` (how rank 0 hands the resumed state to
    the other ranks): the receiving side unpickles with ``weights_only=False``.

    The bytes are rank 0's in-memory state of this same job, sent over the job's own process
    group, and rank 0 read the checkpoint file through the plugin's guarded loader
    (:mod:`fairseq_ext.checkpoint`). Every rank already trusts rank 0 with its weights and
    gradients; the file on disk is what ``weights_only`` protects, and it still does. The
    sending side and the wire format are fairseq's, unchanged.
    """
    import io

    from fairseq.distributed import utils as distributed_utils

    @functools.wraps(broadcast_object_slow)
    def wrapped(obj, src_rank, group, dist_device):
        if distributed_utils.get_rank(group) == src_rank:
            return broadcast_object_slow(obj, src_rank, group, dist_device)
        length = torch.LongTensor([0]).to(dist_device)
        distributed_utils.broadcast(length, src=src_rank, group=group)
        buffer = torch.ByteTensor(int(length.item())).to(dist_device)
        distributed_utils.broadcast(buffer, src=src_rank, group=group)
        return torch.load(io.BytesIO(buffer.cpu().numpy()), map_location="cpu", weights_only=False)

    return wrapped


def fix_resume_broadcast():
    """Fix 10 (fairseq 0.12.3 on torch >= 2.6): distributed runs resume."""
    from fairseq.distributed import utils as distributed_utils

    _patch(distributed_utils, "_broadcast_object_slow", trusted_broadcast_receive)


def fix_dropped_last_batch():
    """Fix 2 (fairseq 0.12.3): :func:`keep_last_batch` on ``data_utils.batch_by_size``."""
    from fairseq.data import data_utils

    data_utils.batch_by_size = keep_last_batch(data_utils.batch_by_size)


#: The fixes :func:`install` applies, in order (fix 1 is installed per task, in ``build_generator``).
FIXES = (
    fix_dropped_last_batch,
    fix_torchrun_launch,
    fix_cpu_spawn,
    fix_cpu_backend,  # after fix_cpu_spawn: the outer call_main picks gloo before any spawn
    fix_cpu_ddp,
    fix_frozen_ddp,
    fix_bf16_without_tpu,
    fix_all_gather_list_on_cpu,
    fix_resume_broadcast,
)


def install():
    """Apply every fix in :data:`FIXES` (idempotent: importing the plugin twice changes nothing)."""
    for fix in FIXES:
        fix()
