"""scripts/gpu_check.sh: the command list (dry run) and, on this CPU machine, its fallback run
(bf16 and two gloo processes instead of fp16 and two GPUs) for one family."""

import os
import subprocess

import pytest
import torch

from harness import REPO


def _run(tmp_path, **env):
    return subprocess.run(["bash", "scripts/gpu_check.sh"], cwd=REPO, capture_output=True, text=True, timeout=600,
                          env={**os.environ, "WORK": str(tmp_path), **env})  # fmt: skip


@pytest.mark.e2e  # runs scripts/gpu_check.sh
@pytest.mark.skipif(torch.cuda.is_available(), reason="the CPU fallback's command list")
def test_dry_run_lists_every_family_precision_and_the_two_process_job(tmp_path):
    result = _run(tmp_path, DRY_RUN="1")
    assert result.returncode == 0, result.stderr
    commands = [line for line in result.stdout.splitlines() if "fairseq-train" in line]
    assert len(commands) == 6 * 2 + 6  # six families in fp32 and bf16, then each over 2 processes
    for task in ("abstractive_summarization", "prophetnet_span_mask", "bart_ls_model_based_denoising",
                 "zcodepp_pretraining", "s2s_ft_summarization", "transformer_sm"):  # fmt: skip
        assert sum(f"--task {task} " in c for c in commands) == 3
    assert sum(c.endswith("--cpu --bf16") for c in commands) == 6
    assert sum(c.startswith("torchrun --nproc_per_node 2") for c in commands) == 6


@pytest.mark.e2e
@pytest.mark.skipif(torch.cuda.is_available(), reason="the CPU fallback")
def test_cpu_fallback_trains_and_prints_the_table(tmp_path):
    result = _run(tmp_path, FAMILIES="bart", UPDATES="3", WARMUP="1", BATCH="2", ACLSUM_LIMIT="8")
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    table = (tmp_path / "results.md").read_text()
    rows = [line for line in table.splitlines() if line.startswith("| bart |")]
    assert [row.split(" | ")[1:3] for row in rows] == [["fp32", "1"], ["bf16", "1"], ["fp32", "2"]]
    assert all(row.endswith("| ok |") for row in rows)
    assert float(rows[0].split(" | ")[4]) == 1.0  # fp32, 1 process is the reference


@pytest.mark.e2e
def test_setup_env_0_uses_the_python_on_path_without_setup_env_or_the_venv(tmp_path):
    # no families: the script checks the environment, trains nothing and prints an empty table
    path = f"{REPO}/.venv/bin:{os.environ['PATH']}"  # stands in for a machine's own python
    result = _run(tmp_path, SETUP_ENV="0", FAMILIES=" ", PATH=path)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    assert f"[gpu_check] SETUP_ENV=0: {REPO}/.venv/bin/python as found" in result.stdout
    assert "[setup]" not in result.stdout + result.stderr  # scripts/setup_env.sh never ran
    assert "| family | precision |" in (tmp_path / "results.md").read_text()
