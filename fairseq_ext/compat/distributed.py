"""fairseq 0.12.3's distributed training on CPU, under torchrun and when resuming: the wrappers
the fixes table (:mod:`.fixes`) puts in place of ``fairseq.distributed.utils``'s and
``fairseq.models``' functions. docs/distributed.md tells the user side.
"""

import functools
import io
import logging
import os
import pickle
import socket
import struct

import torch

logger = logging.getLogger(__name__)

#: What ``torchrun`` (and ``torch.distributed.launch``) set in every worker's environment.
TORCHRUN_VARIABLES = ("MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE", "RANK", "LOCAL_RANK")


def _cpu_run(cfg):
    """Does this fairseq config train on CPU (``--cpu``, or a machine without CUDA)?"""
    return bool(cfg.common.cpu) or not torch.cuda.is_available()


def launched_by_torchrun(environ=None):
    """True inside a worker started by ``torchrun`` (or ``python -m torch.distributed.launch``)."""
    environ = os.environ if environ is None else environ
    return all(name in environ for name in TORCHRUN_VARIABLES)


# --------------------------------------------------------------------------- torchrun
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


def _free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def cpu_call_main(call_main):
    """Wrap ``distributed_utils.call_main`` for CPU runs: the ``nccl`` backend becomes ``gloo``
    (CPU builds of torch have no nccl), and ``--distributed-world-size N`` spawns N processes
    on this machine (fairseq 0.12.3 asserts N <= number of GPUs, then spawns ``min(GPUs, N)``).

    The backend is chosen here, in the launching process, so that spawned processes (which
    import fairseq afresh, before the plugin) inherit it through the config they are handed.
    Only the single-machine spawn is taken over: no ``--distributed-init-method``, no
    ``--distributed-no-spawn``, not under torchrun or SLURM. A CPU run that gives an init
    method without ``--distributed-no-spawn`` would spawn nothing and exit 0, so it is refused.
    """
    from fairseq.distributed import utils as distributed_utils

    @functools.wraps(call_main)
    def wrapped(cfg, main, **kwargs):
        dist = cfg.distributed_training
        if dist.distributed_backend == "nccl" and _cpu_run(cfg):
            if dist.distributed_world_size > 1 or launched_by_torchrun():
                logger.info("training on CPU: --distributed-backend gloo (CPU builds of torch have no nccl)")
            dist.distributed_backend = "gloo"
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


def cpu_all_gather_list(all_gather_list):
    """Wrap ``distributed_utils.all_gather_list`` so that gloo (CPU) groups work: the same
    encoding (a 4-byte length and a pickle per rank in one byte buffer, summed with
    ``all_reduce``), with the buffer on CPU and no pinned memory."""
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
        message = bytearray(struct.pack(">I", len(encoded)) + encoded)  # a 4-byte length, then the pickle
        buffer[start : start + size] = torch.frombuffer(message, dtype=torch.uint8)
        distributed_utils.all_reduce(buffer, group=group)
        result = []
        for i in range(world_size):
            chunk = buffer[i * max_size : (i + 1) * max_size].numpy().tobytes()
            (length,) = struct.unpack(">I", chunk[:4])
            if length > 0:
                result.append(pickle.loads(chunk[4 : 4 + length]))
        return result

    return wrapped


def trusted_broadcast_receive(broadcast_object_slow):
    """Wrap ``distributed_utils._broadcast_object_slow`` (how rank 0 hands the resumed state to
    the other ranks): the receiving side unpickles with ``weights_only=False``.

    The bytes are rank 0's in-memory state of this same job, sent over the job's own process
    group, and rank 0 read the checkpoint file through the plugin's guarded loader
    (:mod:`fairseq_ext.compat.checkpoint`). Every rank already trusts rank 0 with its weights and
    gradients; the file on disk is what ``weights_only`` protects, and it still does. The
    sending side and the wire format are fairseq's, unchanged.
    """
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
