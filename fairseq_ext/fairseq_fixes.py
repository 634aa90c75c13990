"""fairseq 0.12 bugs that lose or ignore things silently, or stop a run, fixed from the outside,
as one table: :data:`FIXES`.

Every entry (:class:`Fix`) says what goes wrong, why (the cause in fairseq's code), the fairseq
release it was measured on (``ve-fairseq==0.12.3``, the lock's fairseq 0.12) and how it is
applied and undone:

* *process-wide* entries replace one attribute of fairseq (or extend torch's ``weights_only``
  allowlist): :meth:`Fix.apply` puts the fix in place, idempotently, and :meth:`Fix.undo`
  puts fairseq's own object back (the very object: ``is`` holds), leaving any fix stacked on
  the same attribute in place. :func:`install` applies them all, :func:`uninstall` undoes
  them, :func:`applied` applies them for a ``with`` block and :func:`unchanged` puts back on
  exit whatever a block applied (a tool that needs the plugin's registrations, not its fixes).
  Only the plugin's entry point, ``user_dir/__init__.py`` (what ``--user-dir user_dir``
  imports), calls :func:`install`; importing this module changes nothing.
* *per-task* entries act on one object a task builds (a generator, an argument parser); the
  tasks and models call them (:attr:`Fix.function`), nothing process-wide is changed, so there
  is nothing to undo.

The checkpoint entries put :mod:`fairseq_ext.checkpoint`'s guarded loader in place of
fairseq's (torch >= 2.6 made ``weights_only=True`` the default, which fairseq's own loader
fails on); the distributed-training ones are described in docs/distributed.md.
"""

import argparse
import contextlib
import difflib
import functools
import importlib
import logging
import os
import sys
from dataclasses import dataclass
from typing import Callable, Optional

import numpy as np
import torch
from fairseq.dataclass.utils import gen_parser_from_dataclass, interpret_dc_type
from fairseq.ngram_repeat_block import NGramRepeatBlock

logger = logging.getLogger(__name__)

#: What ``torchrun`` (and ``torch.distributed.launch``) set in every worker's environment.
TORCHRUN_VARIABLES = ("MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE", "RANK", "LOCAL_RANK")


class PrefixNGramRepeatBlock(NGramRepeatBlock):
    """fairseq's n-gram blocker, looking at the hypotheses up to ``step`` only.

    ``SequenceGenerator`` hands its blocker the whole token buffer ``(bsz * beam, max_len + 2)``;
    without the CUDA extension fairseq takes the n-gram to check from the end of the buffer
    (still padding)::

        buffer  : </s> a b a b <pad> <pad> ...     step 4
        fairseq : last 2 = (<pad>, <pad>)  -> nothing banned
        prefix  : last 2 = (a, b)          -> bans "a" (seen after "a b")
    """

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

    return wrapped


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


# --------------------------------------------------------------------------- gloo on CPU
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


# --------------------------------------------------------------------------- spawn on CPU
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


# --------------------------------------------------------------------------- DDP on CPU
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


# --------------------------------------------------------------------------- frozen modules
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


# --------------------------------------------------------------------------- bf16
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


def unknown_arch_message(arch, registry):
    """What to say about ``--arch ARCH`` missing from ``registry`` (fairseq's
    ``ARCH_CONFIG_REGISTRY``: name -> the function that sets the sizes): the closest names among
    the plugin's architectures (those not defined inside fairseq itself), and their list."""
    own = sorted(name for name, function in registry.items()
                 if not getattr(function, "__module__", "fairseq").startswith("fairseq."))
    close = difflib.get_close_matches(arch, own, n=3, cutoff=0.6)
    hint = f"did you mean {' or '.join(close)}? " if close else ""
    return (f"--arch {arch} is not a registered architecture; {hint}the plugin's are: {', '.join(own)} "
            "(fairseq's own: fairseq-train --help)")


def data_dir_message(data):
    """What to say when fairseq's data path ``data`` holds no dictionary but its ``bin/`` does
    (``python -m preprocess.prepare --out OUT`` writes the binarized data to ``OUT/bin``); None
    when the path is not that case."""
    first = str(data).split(os.pathsep)[0]
    if not os.path.isdir(first) or any(name.startswith("dict") and name.endswith(".txt")
                                       for name in os.listdir(first)):
        return None
    inner = os.path.join(first, "bin")
    if os.path.isdir(inner) and any(name.startswith("dict") and name.endswith(".txt") for name in os.listdir(inner)):
        return (f"{first} holds no dictionary (dict.*.txt): the binarized data are in {inner}; "
                f"pass {inner} instead (python -m preprocess.prepare --out OUT writes them to OUT/bin)")
    return None


def _given_arch(argv):
    for i, arg in enumerate(argv):
        if arg in ("--arch", "-a") and i + 1 < len(argv):
            return argv[i + 1]
        if arg.startswith("--arch="):
            return arg.split("=", 1)[1]
    return None


def newcomer_errors(parse_args_and_arch):
    """Wrap ``options.parse_args_and_arch``: an ``--arch`` typo and a data directory one level
    above ``bin/`` end with one line that says what to pass, instead of argparse's list of every
    registered architecture (4,000 characters, wav2vec included) or a 30-line traceback that
    ends in ``dict.source.txt``."""

    @functools.wraps(parse_args_and_arch)
    def wrapped(parser, input_args=None, *args, **kwargs):
        from fairseq.models import ARCH_CONFIG_REGISTRY

        given = sys.argv[1:] if input_args is None else [str(x) for x in input_args]
        arch = _given_arch(given)
        if arch is not None and arch not in ARCH_CONFIG_REGISTRY:
            parser.exit(2, f"{parser.prog}: error: {unknown_arch_message(arch, ARCH_CONFIG_REGISTRY)}\n")
        result = parse_args_and_arch(parser, input_args, *args, **kwargs)
        parsed = result[0] if isinstance(result, tuple) else result
        message = data_dir_message(getattr(parsed, "data", None) or "")
        if message:
            parser.exit(2, f"{parser.prog}: error: {message}\n")
        return result

    return wrapped


# --------------------------------------------------------------------------- all_gather_list
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


# --------------------------------------------------------------------------- resume
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


# --------------------------------------------------------------------------- archives, fetches
def safe_archive_loading(load_archive_file):
    """Wrap ``file_utils.load_archive_file`` (what ``hub_utils.from_pretrained`` calls on the
    model and data paths): a folder is used as it is, a tar archive is extracted by
    :func:`fairseq_ext.archives.extract_archive` (every member checked first; the archive kept),
    a URL is refused (loading never touches the network)."""
    from .archives import extract_archive
    from .config_schema import is_remote

    @functools.wraps(load_archive_file)
    def wrapped(archive_file):
        path = os.fspath(archive_file)
        if is_remote(path):
            raise ValueError(f"refusing to fetch {path}: loading a model never touches the network "
                             "(download it yourself and give the local path)")
        if os.path.isdir(path):
            return path
        if not os.path.isfile(path):
            raise FileNotFoundError(f"model or data path not found: {path}")
        return extract_archive(path)

    return wrapped


def local_files_only(cached_path):
    """Wrap ``file_utils.cached_path`` (how fairseq's BPEs and archives resolve a file name):
    a URL or remote path is refused, naming it; a local path is returned as fairseq does."""
    from .config_schema import is_remote

    @functools.wraps(cached_path)
    def wrapped(url_or_filename, cache_dir=None):
        if is_remote(url_or_filename):
            raise ValueError(f"refusing to fetch {url_or_filename}: loading never touches the network "
                             "(give a local file)")
        return cached_path(url_or_filename, cache_dir)

    return wrapped


# --------------------------------------------------------------------------- interactive input
def repaired_lines(stream, source="<stdin>"):
    """Lines of ``stream`` (bytes, or text that may hold the surrogate escapes of undecodable
    bytes) as text: invalid UTF-8 becomes U+FFFD, each repaired line logged with its number, and
    the count at the end; no line stops the run."""
    repaired = 0
    for number, raw in enumerate(stream, 1):
        if isinstance(raw, str):
            try:
                raw = raw.encode("utf-8", errors="surrogateescape")
            except UnicodeEncodeError:
                raw = raw.encode("utf-8", errors="surrogatepass")
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as err:
            line = raw.decode("utf-8", errors="replace")
            repaired += 1
            logger.warning(f"{source} line {number}: invalid UTF-8 at byte {err.start} replaced by U+FFFD")
        yield line
    if repaired:
        logger.warning(f"{source}: {repaired} line(s) of invalid UTF-8 repaired (U+FFFD)")


def repairing_buffered_read(buffered_read):
    """Replace ``fairseq_cli.interactive.buffered_read``: the same buffers of stripped lines,
    read as bytes and decoded by :func:`repaired_lines`. fairseq reads stdin as text, so a line
    of invalid UTF-8 reached sentencepiece as lone surrogates (a pybind11 cast error) or raised
    UnicodeDecodeError, and the lines after it got no output."""

    @functools.wraps(buffered_read)
    def wrapped(input, buffer_size):
        stdin = getattr(sys.stdin, "buffer", sys.stdin)  # a text stream where stdin was replaced
        stream = stdin if input == "-" else open(input, "rb")
        buffer = []
        try:
            for line in repaired_lines(stream, "<stdin>" if input == "-" else input):
                buffer.append(line.strip())
                if len(buffer) >= buffer_size:
                    yield buffer
                    buffer = []
        finally:
            if stream is not stdin:
                stream.close()
        if buffer:
            yield buffer

    return wrapped


# --------------------------------------------------------------------------- the table
#: The fairseq (and torch) on which every fix was measured.
MEASURED_ON = "ve-fairseq 0.12.3 (fairseq 0.12), torch 2.13"

#: Attributes marking a replaced object: the fix that made it, and what it replaced.
_FIX_MARK, _REPLACED = "_fairseq_ext_fix", "_fairseq_ext_replaced"


@dataclass(frozen=True)
class Fix:
    """One row of :data:`FIXES`.

    A process-wide fix names its ``target`` (``"module:attribute"`` of fairseq) and ``wrap``,
    which turns the object found there into its replacement (a new object on every call). A
    per-task fix has no target; ``function`` is what tasks and models call. A fix with
    neither defines :meth:`apply`/:meth:`undo` itself (:class:`AllowlistFix`).
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
        return importlib.import_module(module), attribute

    def layers(self):
        """Names of the fixes stacked on the target, outermost first."""
        owner, attribute = self._owner()
        return replacement_layers(getattr(owner, attribute))

    def is_applied(self):
        return self.name in self.layers()

    def apply(self):
        """Put the fix in place (nothing happens if it is)."""
        if self.is_applied():
            return
        owner, attribute = self._owner()
        current = getattr(owner, attribute)
        replacement = self.wrap(current)
        setattr(replacement, _FIX_MARK, self.name)
        setattr(replacement, _REPLACED, current)
        setattr(owner, attribute, replacement)

    def undo(self):
        """Put back what the fix replaced; fixes stacked above it stay applied."""
        owner, attribute = self._owner()
        above, layer = [], getattr(owner, attribute)
        while getattr(layer, _FIX_MARK, None) not in (None, self.name):
            above.append(FIXES_BY_NAME[getattr(layer, _FIX_MARK)])
            layer = getattr(layer, _REPLACED)
        if getattr(layer, _FIX_MARK, None) != self.name:
            return  # not applied
        setattr(owner, attribute, getattr(layer, _REPLACED))
        for fix in reversed(above):
            fix.apply()


def replacement_layers(value):
    """Names of the fixes that replaced ``value`` and what it replaced, outermost first."""
    names = []
    while getattr(value, _FIX_MARK, None) is not None:
        names.append(getattr(value, _FIX_MARK))
        value = getattr(value, _REPLACED)
    return names


def original(value):
    """The object under every fix that replaced ``value`` (fairseq's own)."""
    while getattr(value, _FIX_MARK, None) is not None:
        value = getattr(value, _REPLACED)
    return value


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


def _set_allowlist(entries):
    torch.serialization.clear_safe_globals()
    torch.serialization.add_safe_globals(list(entries))


def _checkpoint_module():
    from . import checkpoint

    return checkpoint


def _safe_checkpoint_loader(_fairseq_function):
    return replaced_by(_checkpoint_module().load_checkpoint_to_cpu)(_fairseq_function)


def _safe_ema_loader(_fairseq_function):
    return replaced_by(_checkpoint_module().load_ema_from_checkpoint)(_fairseq_function)


#: Every fix, in the order :func:`install` applies them (and :func:`uninstall` undoes them
#: backwards). Process-wide fixes on one attribute stack: the later one is the outer layer.
FIXES = (
    AllowlistFix(
        "checkpoint_types_allowlisted",
        fixes="torch >= 2.6 reads fairseq checkpoints with weights_only=True and refuses them",
        why="fairseq pickles an argparse.Namespace (cfg.model of legacy models, args) into every "
            "checkpoint; it is data, allowlisted (fairseq_ext.checkpoint.FAIRSEQ_CHECKPOINT_GLOBALS)",
        types=(argparse.Namespace,),
        fairseq="ve-fairseq 0.12.3 on torch >= 2.6 (measured on torch 2.13)",
    ),
    Fix(
        "safe_checkpoint_loading",
        fixes="fairseq-train resume, --finetune-from-model, fairseq-generate/-interactive and the hub "
              "could not read checkpoints (weights_only=True), or, told to, ran code from them",
        why="checkpoint_utils.load_checkpoint_to_cpu calls torch.load without weights_only and then "
            "eval()s config strings; fairseq_ext.checkpoint.load_checkpoint_to_cpu reads with "
            "weights_only=True, refuses non-literal eval fields and renames old flags",
        target="fairseq.checkpoint_utils:load_checkpoint_to_cpu",
        wrap=_safe_checkpoint_loader,
        fairseq="ve-fairseq 0.12.3 on torch >= 2.6 (measured on torch 2.13)",
    ),
    Fix(
        "safe_ema_loading",
        fixes="--ema-seed-model could not read a checkpoint under weights_only=True",
        why="checkpoint_utils.load_ema_from_checkpoint calls torch.load itself",
        target="fairseq.checkpoint_utils:load_ema_from_checkpoint",
        wrap=_safe_ema_loader,
        fairseq="ve-fairseq 0.12.3 on torch >= 2.6 (measured on torch 2.13)",
    ),
    Fix(
        "safe_archive_extraction",
        fixes="from_pretrained on a .tar.gz wrote members with '..', absolute names or through a "
              "symlink anywhere the user can write, deleted the archive, and fetched URLs",
        why="file_utils.load_archive_file calls tarfile.extractall on the archive as it is; "
            "fairseq_ext.archives.extract_archive checks every member first",
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
        "cpu_spawn",
        fixes="--distributed-world-size N --cpu asserted 'world size is N but have 0 available devices'",
        why="call_main spawns min(torch.cuda.device_count(), N) processes, none on CPU",
        target="fairseq.distributed.utils:call_main",
        wrap=cpu_spawn_call_main,
    ),
    Fix(
        "gloo_on_cpu",
        fixes="CPU runs asked for the nccl backend, which CPU builds of torch do not have",
        why="--distributed-backend defaults to nccl; applied after cpu_spawn, so the outer "
            "call_main picks gloo before any spawn",
        target="fairseq.distributed.utils:call_main",
        wrap=cpu_backend_call_main,
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
        "bf16_without_tpu",
        fixes="--bf16 failed on CPU and GPUs (it looked for torch_xla)",
        why="options.parse_args_and_arch sets args.tpu = True whenever --bf16 is given",
        target="fairseq.options:parse_args_and_arch",
        wrap=bf16_without_tpu,
    ),
    Fix(
        "newcomer_errors",
        fixes="an --arch typo printed every registered architecture (4,000 characters, wav2vec "
              "included) and no suggestion; a data path one level above bin/ ended a 30-line "
              "traceback in dict.source.txt",
        why="options.parse_args_and_arch leaves --arch to argparse's choices and the data path to "
            "the task's setup; the wrapper says which of the plugin's architectures, or which "
            "bin/, was meant (newcomer_errors), and exits 2 as argparse does",
        target="fairseq.options:parse_args_and_arch",
        wrap=newcomer_errors,
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
    Fix(
        "prefix_ngram_blocking",
        fixes="--no-repeat-ngram-size banned nothing on CPU",
        why="SequenceGenerator hands NGramRepeatBlock the whole token buffer, and its Python path "
            "(no CUDA extension) reads the n-gram from the buffer's end, still padding "
            "(PrefixNGramRepeatBlock)",
        function=fix_ngram_blocking,
        applied_by="AbstractiveSummarizationTask.build_generator (every task derived from it)",
    ),
    Fix(
        "decoder_beam_size",
        fixes="a generator with beam 1 built after one with a larger beam (the hub builds one per "
              "call) crashed in BART's beamable encoder-decoder attention",
        why="EnsembleModel.set_decoder_beam_size tells the model its beam only when it is above 1",
        function=fix_decoder_beam_size,
        applied_by="AbstractiveSummarizationTask.build_generator (every task derived from it)",
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

#: :data:`FIXES` by name.
FIXES_BY_NAME = {fix.name: fix for fix in FIXES}

#: The fixes :func:`install` applies.
PROCESS_WIDE = tuple(fix for fix in FIXES if fix.process_wide)


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
    """Put back, on exit, every object the process-wide fixes replace, and torch's allowlist,
    exactly as they were on entry (the very objects), whatever the block applied or undid."""
    targets = {fix.target: fix._owner() for fix in PROCESS_WIDE if fix.target}
    saved = {target: getattr(owner, attribute) for target, (owner, attribute) in targets.items()}
    allowlist = torch.serialization.get_safe_globals()
    try:
        yield
    finally:
        for target, (owner, attribute) in targets.items():
            setattr(owner, attribute, saved[target])
        _set_allowlist(allowlist)


@contextlib.contextmanager
def applied():
    """Every process-wide fix in place for a ``with`` block, as it was afterwards."""
    with unchanged():
        install()
        yield
