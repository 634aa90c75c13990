"""One job over several CPU processes, for every model family, through fairseq's own engine.

Equivalence: two processes (fairseq's spawn, ``--distributed-world-size 2``, default
``--ddp-backend pytorch_ddp``, no ``--find-unused-parameters``) end with the same parameters
as one process with ``--update-freq 2``. Why the two are comparable batch for batch: fairseq
builds one list of batches (fixed ``--batch-size``, ``--required-batch-size-multiple 1``),
shuffles it with ``--seed`` + epoch, and hands rank r the batches r, r + W, r + 2W, ...
(``ShardedIterator``); ``GroupedIterator`` then gives each update ``--update-freq``
consecutive batches of a rank. So update k is batches 2k and 2k+1 in both layouts, and the
reduced gradient is the same sum divided by the same sample size. Dropout and the families'
own randomness (s2s-ft's token noise, Z-Code++'s sampled replacements) are seeded per batch by
the tasks (``user_dir/tasks/_batch_seed.py``), so they stay on. A control run (one process,
``--update-freq 1``: other batches per update) shows that the comparison can fail.

Also here: torchrun on one node (the real ``fairseq-train``) and on two "nodes" (two torchrun
launches on this machine), only rank 0 writing checkpoints, resuming a distributed run, bf16
training on CPU for every family, and tensorboard event files.
"""

import importlib.util
import logging
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from harness import REPO, prepare_corpus, train, train_argv

pytestmark = pytest.mark.e2e

BIN = Path(sys.executable).parent
LAST = "checkpoint_last.pt"
TOLERANCE = 1e-5  # parameters after 3 updates; measured here: identical to the last bit
COMMON = ["--cpu", "--batch-size", "2", "--required-batch-size-multiple", "1", "--max-update", "3",
          "--disable-validation"]  # fmt: skip
WIKI_BLOCKS = ["--tokens-per-sample", "64", "--max-source-positions", "128", "--max-target-positions", "64"]

#: family -> (corpus, arch, task, criterion, flags): each family's own task and criterion.
FAMILIES = {
    "bart": ("aclsum", "bart_summ_tiny", "abstractive_summarization", "label_smoothed_cross_entropy",
             ["--label-smoothing", "0.1"]),
    "prophetnet": ("wiki", "prophetnet_summ_tiny", "prophetnet_span_mask", "ngram_language_loss", WIKI_BLOCKS),
    "bart_ls": ("wiki", "bart_ls_tiny", "bart_ls_model_based_denoising", "bart_ls_model_based_denoising",
                ["--encoder-layers", "1", "--block-size", "64", "--pooling-layers", "1", "--tokens-per-sample", "256",
                 "--max-source-positions", "1024", "--max-target-positions", "128", "--num-sentinels", "16",
                 "--scorer-layers", "1", "--scorer-embed-dim", "32", "--scorer-heads", "2", "--scorer-ffn-dim", "64",
                 "--scorer-block-size", "64", "--freeze-scorer"]),
    "zcodepp": ("wiki", "zcodepp_tiny", "zcodepp_pretraining", "zcodepp_joint",
                ["--generator-layers", "1", *WIKI_BLOCKS]),
    "s2s_ft": ("aclsum", "s2s_ft_tiny", "s2s_ft_summarization", "s2s_ft",
               ["--s2s-method", "pseudo", "--max-source-positions", "96", "--max-target-positions", "48"]),
    "transformer_sm": ("aclsum", "transformer_sm_tiny", "transformer_sm", "transformer_sm",
                       ["--mode", "dat", "--max-source-positions", "128", "--max-target-positions", "48"]),
}  # fmt: skip


@pytest.fixture(scope="module")
def corpora(tmp_path_factory):
    root = tmp_path_factory.mktemp("distributed_data")
    return {"aclsum": prepare_corpus("aclsum", root / "aclsum", limit=16),
            "wiki": prepare_corpus("wiki", root / "wiki", limit=4)}  # fmt: skip


def _train(corpora, family, save_dir, extra=()):
    corpus, arch, task, criterion, flags = FAMILIES[family]
    return train(corpora[corpus], save_dir, arch, [*COMMON, *flags, *extra], task=task, criterion=criterion)


def _weights(checkpoint):
    """Every trained tensor of a checkpoint: the model's and the criterion's (BART-LS scorer)."""
    state = torch.load(checkpoint, weights_only=True)
    weights = dict(state["model"])
    weights.update({f"criterion.{k}": v for k, v in (state.get("criterion") or {}).items()})
    return weights, state["optimizer_history"][-1]["num_updates"]


def _largest_difference(a, b):
    assert a.keys() == b.keys()
    return max((a[k].float() - b[k].float()).abs().max().item() for k in a if a[k].is_floating_point())


def _free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _env():
    env = dict(os.environ, OMP_NUM_THREADS="1")
    for name in ("MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE", "RANK", "LOCAL_RANK"):
        env.pop(name, None)
    return env


def _cli(corpora, family, save_dir, extra=()):
    """The fairseq-train arguments of :func:`_train`, for the real binary."""
    corpus, arch, task, criterion, flags = FAMILIES[family]
    return train_argv(corpora[corpus], save_dir, arch, [*COMMON, *flags, *extra], task=task, criterion=criterion)


@pytest.fixture(scope="module")
def single_bart(corpora, tmp_path_factory):
    """The reference: bart, one process, --update-freq 2."""
    return _weights(_train(corpora, "bart", tmp_path_factory.mktemp("bart_uf2"), ["--update-freq", "2"]) / LAST)


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_two_processes_equal_one_process_with_update_freq_2(corpora, tmp_path, family):
    one, updates_one = _weights(_train(corpora, family, tmp_path / "uf2", ["--update-freq", "2"]) / LAST)
    two, updates_two = _weights(_train(corpora, family, tmp_path / "ddp", ["--distributed-world-size", "2"]) / LAST)
    assert updates_one == updates_two == 3
    assert _largest_difference(one, two) <= TOLERANCE
    other, _ = _weights(_train(corpora, family, tmp_path / "uf1") / LAST)
    assert _largest_difference(one, other) > 100 * TOLERANCE  # other batches per update: visibly different


def test_torchrun_one_node_trains_one_job_and_only_rank_0_writes(corpora, single_bart, tmp_path):
    saves = tmp_path / "saves"
    saves.mkdir()
    env_extra = {"RECORD_SAVES": str(saves)}
    command = [str(BIN / "torchrun"), "--nproc_per_node", "2", "--master_port", str(_free_port()),
               str(REPO / "tests/helpers/record_saves.py"), *_cli(corpora, "bart", tmp_path / "ckpt")]  # fmt: skip
    result = subprocess.run(command, cwd=REPO, env={**_env(), **env_extra}, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "distributed init (rank 1): env://" in result.stdout + result.stderr
    weights, updates = _weights(tmp_path / "ckpt" / LAST)
    assert updates == 3 and _largest_difference(single_bart[0], weights) <= TOLERANCE
    assert sorted(p.name for p in saves.iterdir()) == ["rank0.txt"]  # rank 1 never wrote a checkpoint
    written = (saves / "rank0.txt").read_text().split()
    assert written and all(Path(name).parent == tmp_path / "ckpt" for name in written)


def test_torchrun_two_nodes_on_one_machine(corpora, single_bart, tmp_path):
    port = str(_free_port())
    launches = []
    for node_rank in ("0", "1"):
        command = [str(BIN / "torchrun"), "--nnodes", "2", "--node_rank", node_rank, "--nproc_per_node", "1",
                   "--master_addr", "127.0.0.1", "--master_port", port,
                   str(BIN / "fairseq-train"), *_cli(corpora, "bart", tmp_path / "ckpt")]  # fmt: skip
        launches.append(subprocess.Popen(command, cwd=REPO, env=_env(), stdout=subprocess.PIPE,
                                         stderr=subprocess.STDOUT, text=True))
    outputs = [launch.communicate(timeout=300)[0] for launch in launches]
    assert [launch.returncode for launch in launches] == [0, 0], outputs[0][-3000:] + outputs[1][-3000:]
    weights, updates = _weights(tmp_path / "ckpt" / LAST)
    assert updates == 3 and _largest_difference(single_bart[0], weights) <= TOLERANCE


def test_distributed_run_resumes_from_its_checkpoint(corpora, tmp_path):
    # stopped after 2 updates (a killed job's last save), restarted to 4: the same parameters
    # as 4 updates without a stop (model, Adam state, data position and seeds are restored)
    _train(corpora, "bart", tmp_path / "ddp", ["--distributed-world-size", "2", "--max-update", "2"])
    assert _weights(tmp_path / "ddp" / LAST)[1] == 2
    _train(corpora, "bart", tmp_path / "ddp", ["--distributed-world-size", "2", "--max-update", "4"])
    resumed, updates = _weights(tmp_path / "ddp" / LAST)
    straight, _ = _weights(_train(corpora, "bart", tmp_path / "uf2", ["--update-freq", "2", "--max-update", "4"])
                           / LAST)
    assert updates == 4 and _largest_difference(resumed, straight) <= TOLERANCE


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_bf16_trains_on_cpu(corpora, tmp_path, family):
    checkpoint = _train(corpora, family, tmp_path, ["--bf16", "--max-update", "2"]) / LAST
    weights, updates = _weights(checkpoint)
    assert updates == 2
    common = torch.load(checkpoint, weights_only=True)["cfg"]["common"]
    assert common["bf16"] and not common["tpu"]
    trained = [w for w in weights.values() if w.is_floating_point()]
    assert all(torch.isfinite(w).all() for w in trained)
    # fairseq saves in fp32; every weight of a model that ran in bf16 is a bf16 value
    assert all(torch.equal(w, w.to(torch.bfloat16).float()) for w in trained)


def test_telemetry_tensorboard_events_and_json_log_plot(corpora, tmp_path):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    logdir, log = tmp_path / "tb", tmp_path / "train.log"
    flags = [flag for flag in COMMON if flag != "--disable-validation"]
    corpus, arch, task, criterion, family_flags = FAMILIES["bart"]
    handler = logging.FileHandler(log)  # what fairseq-train prints to stdout, in its format
    handler.setFormatter(logging.Formatter("%(asctime)s | %(levelname)s | %(name)s | %(message)s"))
    root, level = logging.getLogger(), logging.getLogger().level
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    try:
        train(corpora[corpus], tmp_path / "ckpt", arch,
              [*flags, *family_flags, "--tensorboard-logdir", str(logdir), "--log-format", "json",
               "--eval-rouge", "--eval-rouge-args", '{"beam": 1, "max_len_b": 8}'],
              task=task, criterion=criterion)  # fmt: skip
    finally:
        root.removeHandler(handler)
        root.setLevel(level)
        handler.close()
    scalars = {}
    for run in ("train_inner", "train", "valid"):
        events = EventAccumulator(str(logdir / run))
        events.Reload()
        scalars[run] = {tag: [(e.step, e.value) for e in events.Scalars(tag)] for tag in events.Tags()["scalars"]}
    assert [step for step, _ in scalars["train_inner"]["loss"]] == [1, 2, 3]
    assert all(value > 0 for _, value in scalars["train_inner"]["loss"])
    assert scalars["train"]["loss"][-1][0] == 3 and scalars["valid"]["loss"][-1][0] == 3
    assert scalars["valid"]["rougeL"][-1][0] == 3

    png = tmp_path / "training.png"
    _run([sys.executable, str(REPO / "scripts" / "plot_training.py"), str(log), "--out", str(png)])
    assert png.read_bytes()[:4] == b"\x89PNG"
    spec = importlib.util.spec_from_file_location("plot_training", REPO / "scripts" / "plot_training.py")
    plot_training = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(plot_training)
    series = plot_training.read_log(log.read_text().splitlines())
    assert [step for step, _ in series["train_inner"]] == [1, 2, 3]
    assert series["valid"][-1][0] == 3 and series["valid_rougeL"][-1][0] == 3
    # the tensorboard scalars and the JSON log are the same numbers (the log rounds to 3 digits)
    assert series["train_inner"][-1][1] == pytest.approx(scalars["train_inner"]["loss"][-1][1], abs=1e-3)


def _run(command):
    result = subprocess.run(command, cwd=REPO, env=_env(), capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return result
