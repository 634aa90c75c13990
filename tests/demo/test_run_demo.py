"""The main job (``scripts/run_demo.sh``) as a newcomer runs it: the quick run twice in one folder
(the second report must come from the second model), and a failed training. A corpus of one's own
(``SOURCE_CORPUS=DIR``) goes through it in README's block, run by the docs test, which then checks
the folders named from it and LEAD-3 from its test sources (``page_checks.check_readme``).

Each run happens in a fresh working directory with the repository's code linked into it, as the
docs test does, so ``data/`` and ``runs/`` land there.
"""

import os
import re
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
LINKED = ("user_dir", "scripts", "fairseq_ext", "preprocess", "requirements.txt", "pyproject.toml", ".venv")
QUICK = {"LIMIT": "4", "BEAM": "1", "MAX_UPDATE": "1", "OMP_NUM_THREADS": "1"}


def workspace(tmp_path):
    work = tmp_path / "repo"
    work.mkdir()
    for name in LINKED:
        (work / name).symlink_to(REPO / name)
    return work


def run_demo(work, **variables):
    # SETUP=0: the copy shares this repository's .venv, which its set-up must not reinstall
    env = {**os.environ, **QUICK, **variables, "PYTHONPATH": str(work), "SETUP": "0"}
    env["PATH"] = f"{REPO / '.venv' / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    return subprocess.run(["bash", "scripts/run_demo.sh"], cwd=work, env=env, capture_output=True, text=True,
                          timeout=600)


def updates_of(checkpoint):
    import user_dir  # noqa: F401  (registers the names the checkpoint selects: the library never imports it)
    from fairseq_ext.compat.checkpoint import safe_load

    return safe_load(checkpoint)["optimizer_history"][-1]["num_updates"]


def _ok(done):
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done


@pytest.mark.e2e
def test_a_second_quick_run_reports_its_own_model(tmp_path):
    work = workspace(tmp_path)
    run = work / "runs" / "demo-s2s_ft_copy"
    _ok(run_demo(work, MAX_UPDATE="1"))
    assert updates_of(run / "checkpoints" / "checkpoint_best.pt") == 1

    # the second validates and saves at every update, so the test set is decoded by the mean of two;
    # fairseq keeps no interval checkpoint of an update that ends an epoch (at LIMIT=4 an epoch may
    # be two updates), and three updates keep at least two whatever the epoch's length
    second = _ok(run_demo(work, MAX_UPDATE="3", VALID_EVERY="1", AVERAGE="2"))
    assert "moved to runs/demo-s2s_ft_copy.previous" in second.stdout
    assert updates_of(run / "checkpoints" / "checkpoint_best.pt") in (1, 2, 3)
    results = (run / "results.md").read_text()
    averaged = r"checkpoint_avg2\.pt, the mean of updates (1\+2|1\+3|2\+3) \(the best: update [123]\)"
    assert re.search(averaged, results), results
    # three updates: two of pre-training on the training papers' gap sentences first (the recipe's
    # three quarters); one update: none (the first run)
    assert "; fine-tuned from 2 updates on gap sentences of data/aclsum_gsg-limit4;" in results
    assert updates_of(run / "pretrain" / "checkpoint_best.pt") == 2
    assert (run / "checkpoints" / "checkpoint_avg2.pt").is_file()
    assert "| ROUGE-2 |" in results.split("rouge_paired):")[1]  # the paired comparison
    first = (run.parent / "demo-s2s_ft_copy.previous" / "results.md").read_text()
    assert "checkpoint_best.pt, update 1; not averaged (AVERAGE=3, " in first  # one update: nothing to average
    assert "gap sentences" not in first
    assert "data/aclsum_aspects_wp-limit4" in second.stdout  # a quick run's data are its own

    # a training that fails is reported as such, with an earlier run's checkpoint beside it; so is
    # a pre-training that fails (before the training)
    failed = run_demo(work, MAX_UPDATE="2", LR="not-a-number", GSG_UPDATES="0")
    assert failed.returncode != 0
    assert "training failed (fairseq-train exited with" in failed.stderr
    assert not (run / "results.md").exists() and not (run / "checkpoints" / "checkpoint_best.pt").exists()
    failed = run_demo(work, MAX_UPDATE="2", LR="not-a-number")
    assert failed.returncode != 0
    assert "pre-training failed (fairseq-train exited with 2)" in failed.stderr  # argparse refuses the rate
    assert not (run / "results.md").exists() and not (run / "checkpoints").exists()
