"""The main job (``scripts/run_demo.sh``) as a newcomer runs it: the quick run twice in one folder
(the second report must come from the second model), a failed training, and a corpus of one's
own (``SOURCE_CORPUS=DIR``: data and run folders named from it, LEAD-3 from its test sources).

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


@pytest.mark.e2e
def test_own_corpus_through_the_main_job(tmp_path):
    from fairseq_ext.data import load_aclsum
    from fairseq_ext.data.surface import normalize

    corpus = tmp_path / "my corpus"
    corpus.mkdir()
    for split in ("train", "valid", "test"):
        data = load_aclsum(split, 4)
        sources = [f"Own document {i} of {split}. It has a second sentence. And a third one. " + source
                   for i, source in enumerate(data.sources)]
        (corpus / f"{split}.source").write_text("".join(s + "\n" for s in sources), encoding="utf-8")
        (corpus / f"{split}.target").write_text("".join(t + "\n" for t in data.targets), encoding="utf-8")
    work = workspace(tmp_path)
    done = _ok(run_demo(work, SOURCE_CORPUS=str(corpus), LIMIT=""))

    data, run = work / "data" / "my corpus_wp", work / "runs" / "demo-s2s_ft_copy-my corpus_wp"
    assert (data / "bin" / "dict.source.txt").is_file() and (run / "results.md").is_file()
    assert str(corpus) in (data / "corpus.txt").read_text()
    lead = (run / "lead3.hyp").read_text(encoding="utf-8").splitlines()
    assert len(lead) == 4 and all(line.startswith(f"Own document {i} of test.") for i, line in enumerate(lead))
    assert len((run / "test.hyp").read_text().splitlines()) == 4  # one summary a document, not joined by 3
    # the summaries in their documents' casing and spacing; ROUGE read the same words tokenized
    summaries = (run / "test.hyp").read_text(encoding="utf-8").splitlines()
    tokens = (run / "test.tokens.hyp").read_text(encoding="utf-8").splitlines()
    assert ["".join(normalize(s).split()) for s in summaries] == ["".join(t.split()) for t in tokens]
    assert summaries != tokens and all(t == t.lower() for t in tokens)
    assert "update 1;" in done.stdout

    # the same data folder name from another corpus is refused, naming what it holds
    other = tmp_path / "elsewhere" / "my corpus"
    other.parent.mkdir()
    other.symlink_to(corpus)
    refused = run_demo(work, SOURCE_CORPUS=str(other.parent / "my corpus/"), LIMIT="", DATA_DIR="")
    assert refused.returncode != 0 and "holds other data" in refused.stderr
