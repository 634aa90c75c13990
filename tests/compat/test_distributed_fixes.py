"""The fairseq 0.12.3 fixes for distributed training and bf16 (entries of
:data:`fairseq_ext.compat.FIXES`), one by one, each against fairseq's own function (kept as
``__wrapped__``) to show the failure it removes. Whole training runs are in
``tests/training/test_distributed_e2e.py``."""

import subprocess
import sys

import pytest
import torch
import torch.distributed as dist
from fairseq import options
from fairseq.dataclass.utils import convert_namespace_to_omegaconf
from fairseq.distributed import utils as distributed_utils
from fairseq.models import distributed_fairseq_model
from torch import nn

import user_dir  # noqa: F401  (installs the fixes, as --user-dir does)
from fairseq_ext import compat
from fairseq_ext.compat.distributed import TORCHRUN_VARIABLES
from harness import REPO, USER_DIR

TORCHRUN_ENV = {"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "29500", "WORLD_SIZE": "2", "RANK": "1", "LOCAL_RANK": "1"}


def _args(*flags):
    parser = options.get_training_parser()
    argv = ["/no/data", "--user-dir", USER_DIR, "--task", "abstractive_summarization", "--arch", "bart_summ_tiny",
            "--optimizer", "adam", "--lr", "1e-3", "--max-tokens", "100", *flags]  # fmt: skip
    return options.parse_args_and_arch(parser, argv)


def _cfg(*flags):
    return convert_namespace_to_omegaconf(_args(*flags))


@pytest.fixture
def no_launcher_env(monkeypatch):
    for name in (*TORCHRUN_VARIABLES, "SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST"):
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


@pytest.fixture
def gloo_group(tmp_path):
    """A world of one gloo process (this one), torn down afterwards."""
    dist.init_process_group("gloo", init_method=f"file://{tmp_path / 'rendezvous'}", world_size=1, rank=0)
    yield dist.group.WORLD
    dist.destroy_process_group()


def test_install_is_idempotent_and_every_fix_is_in_place():
    compat.install()
    compat.install()
    for value in (distributed_utils.call_main, distributed_utils.infer_init_method, distributed_utils.all_gather_list,
                  distributed_fairseq_model.DistributedDataParallel, options.parse_args_and_arch):
        assert not hasattr(compat.original(value), "_fairseq_ext_fix")  # one wrapper, over fairseq's own
    assert distributed_utils.call_main._fairseq_ext_fix == "cpu_launch"
    assert distributed_utils.infer_init_method._fairseq_ext_fix == "torchrun_launch"
    assert distributed_utils.all_gather_list._fairseq_ext_fix == "all_gather_list_on_cpu"
    assert distributed_fairseq_model.DistributedDataParallel._fairseq_ext_fix == "cpu_ddp"
    assert options.parse_args_and_arch._fairseq_ext_fix == "argument_checks"


@pytest.mark.e2e  # runs Python processes
def test_fixes_are_in_place_before_fairseq_parses_and_launches():
    # fairseq-train's cli_main: get_training_parser() (imports --user-dir), parse_args_and_arch,
    # call_main -> infer_init_method -> spawn/distributed_main. A fresh interpreter shows that the
    # first step already installs everything the later ones use.
    code = (
        "import sys; sys.argv = ['fairseq-train', 'data', '--user-dir', 'user_dir']\n"
        "from fairseq import options; from fairseq.distributed import utils as d\n"
        "assert not hasattr(d.call_main, '_fairseq_ext_fix')\n"
        "options.get_training_parser()\n"
        "print(options.parse_args_and_arch._fairseq_ext_fix, d.call_main._fairseq_ext_fix, "
        "d.infer_init_method._fairseq_ext_fix)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["argument_checks", "cpu_launch", "torchrun_launch"]


# ----------------------------------------------------------------------------- 3. torchrun
def test_torchrun_environment_makes_one_job(no_launcher_env):
    for name, value in TORCHRUN_ENV.items():
        no_launcher_env.setenv(name, value)
    stock = _cfg("--cpu").distributed_training
    distributed_utils.infer_init_method.__wrapped__(stock)
    # fairseq alone: default world size 1 on CPU -> no init method -> an independent job per worker
    assert stock.distributed_init_method is None and stock.distributed_world_size == 1

    ours = _cfg("--cpu").distributed_training
    distributed_utils.infer_init_method(ours)
    assert ours.distributed_init_method == "env://"
    assert (ours.distributed_world_size, ours.distributed_rank, ours.device_id) == (2, 1, 1)
    assert ours.distributed_no_spawn


def test_torchrun_with_explicit_world_size_no_longer_divides_by_zero(no_launcher_env):
    for name, value in TORCHRUN_ENV.items():
        no_launcher_env.setenv(name, value)
    if torch.cuda.device_count() == 0:
        with pytest.raises(ZeroDivisionError):  # rank % torch.cuda.device_count()
            stock = _cfg("--cpu", "--distributed-world-size", "2").distributed_training
            distributed_utils.infer_init_method.__wrapped__(stock)
    ours = _cfg("--cpu", "--distributed-world-size", "2").distributed_training
    distributed_utils.infer_init_method(ours)
    assert (ours.distributed_rank, ours.device_id) == (1, 1)


def test_without_torchrun_fairseq_decides(no_launcher_env):
    cfg = _cfg("--cpu").distributed_training
    distributed_utils.infer_init_method(cfg)
    assert cfg.distributed_init_method is None and cfg.distributed_world_size == 1


# ----------------------------------------------------------------------------- 4. gloo, 5. spawn
def test_cpu_run_gets_gloo(no_launcher_env):
    seen = []
    distributed_utils.call_main(_cfg("--cpu"), lambda cfg: seen.append(cfg.distributed_training.distributed_backend))
    assert seen == ["gloo"]
    stock = []
    distributed_utils.call_main.__wrapped__(
        _cfg("--cpu"), lambda cfg: stock.append(cfg.distributed_training.distributed_backend)
    )
    assert stock == ["nccl"]  # what fairseq would hand to init_process_group on a CPU build


def test_cpu_spawn_launches_world_size_processes(no_launcher_env):
    if torch.cuda.device_count() == 0:
        with pytest.raises(AssertionError, match="world size is 2 but have 0 available devices"):
            distributed_utils.call_main.__wrapped__(_cfg("--cpu", "--distributed-world-size", "2"), print)
    calls = []
    no_launcher_env.setattr(torch.multiprocessing, "spawn", lambda **kwargs: calls.append(kwargs))
    distributed_utils.call_main(_cfg("--cpu", "--distributed-world-size", "2"), print)
    (call,) = calls
    main, cfg, kwargs = call["args"]
    assert call["fn"] is distributed_utils.distributed_main and call["nprocs"] == 2 and main is print
    assert cfg.distributed_training.distributed_init_method.startswith("tcp://localhost:")
    assert cfg.distributed_training.distributed_backend == "gloo"
    assert cfg.distributed_training.distributed_rank is None and kwargs["start_rank"] == 0


def test_cpu_init_method_without_no_spawn_is_refused_not_silently_skipped(no_launcher_env):
    flags = ("--cpu", "--distributed-world-size", "2", "--distributed-init-method", "tcp://localhost:29999")
    ran = []
    distributed_utils.call_main.__wrapped__(_cfg(*flags), ran.append)
    assert ran == []  # fairseq spawned min(0 GPUs, 2) = 0 processes and returned: nothing trained
    with pytest.raises(ValueError, match="--distributed-no-spawn"):
        distributed_utils.call_main(_cfg(*flags), ran.append)


# ----------------------------------------------------------------------------- 6. DDP, 7. frozen
def test_pytorch_ddp_wraps_a_cpu_module(gloo_group, monkeypatch):
    args = _cfg("--cpu").distributed_training
    assert args.ddp_backend == "pytorch_ddp" and not args.find_unused_parameters
    wrap = distributed_fairseq_model.DistributedFairseqModel  # fairseq's function (fix 6 is in the class)
    with monkeypatch.context() as stock:
        stock.setattr(distributed_fairseq_model, "DistributedDataParallel",
                      distributed_fairseq_model.DistributedDataParallel.__wrapped__)
        with pytest.raises(ValueError, match="device_ids"):
            wrap(args, nn.Linear(3, 2), gloo_group, torch.device("cpu"))
    wrapped = wrap(args, nn.Linear(3, 2), gloo_group, torch.device("cpu"))
    assert isinstance(wrapped.module, torch.nn.parallel.DistributedDataParallel)
    wrapped(torch.randn(4, 3)).sum().backward()  # a training step through the reducer
    assert wrapped.module.module.weight.grad is not None


def test_frozen_module_is_not_wrapped(gloo_group):
    from fairseq import models

    frozen = nn.Linear(3, 2).requires_grad_(False)
    args = _cfg("--cpu").distributed_training
    with pytest.raises(RuntimeError, match="doesn't have any parameter that requires a gradient"):
        distributed_fairseq_model.DistributedFairseqModel(args, frozen, gloo_group, torch.device("cpu"))
    assert models.DistributedFairseqModel(args, frozen, gloo_group, torch.device("cpu")) is frozen
    trainable = models.DistributedFairseqModel(args, nn.Linear(3, 2), gloo_group, torch.device("cpu"))
    assert isinstance(trainable.module, torch.nn.parallel.DistributedDataParallel)


# ----------------------------------------------------------------------------- 8. bf16
def test_bf16_does_not_turn_on_tpu():
    parser = options.get_training_parser()
    argv = ["/no/data", "--user-dir", USER_DIR, "--task", "abstractive_summarization", "--arch", "bart_summ_tiny",
            "--max-tokens", "100", "--bf16", "--cpu"]  # fmt: skip
    assert compat.original(options.parse_args_and_arch)(parser, argv).tpu  # fairseq: --bf16 implies --tpu
    args = options.parse_args_and_arch(options.get_training_parser(), argv)
    assert args.bf16 and not args.tpu
    assert options.parse_args_and_arch(options.get_training_parser(), argv + ["--tpu"]).tpu  # asked for


# ----------------------------------------------------------------------------- 9. all_gather_list
def test_all_gather_list_over_gloo(gloo_group):
    data = {"loss": torch.tensor(1.5), "n": 3, "words": ["a", "b"]}
    if not torch.cuda.is_available():
        with pytest.raises((TypeError, RuntimeError, AssertionError)):  # torch.cuda.ByteTensor on a CPU build
            distributed_utils.all_gather_list.__wrapped__(data, group=gloo_group)
    (gathered,) = distributed_utils.all_gather_list(data, group=gloo_group)
    assert gathered["n"] == 3 and gathered["words"] == ["a", "b"] and float(gathered["loss"]) == 1.5
    with pytest.raises(ValueError, match="exceeds max_size"):
        distributed_utils.all_gather_list(list(range(10_000)), group=gloo_group, max_size=64)
