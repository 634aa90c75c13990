"""Question generation end to end: a SQuAD-format fixture (with bad entries) -> preprocess ->
fairseq-train with --eval-bleu choosing checkpoint_best -> fairseq-generate -> scores; the
plugin's BLEU equals the sacrebleu command line on the same text; and every ```bash block of
docs/question_generation.md runs as written (data and runs in a temporary directory, tiny
sizes through the recipes' variables)."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from fairseq import checkpoint_utils
from fairseq.logging import metrics

from fairseq_ext.data.squad_sample import DEV_ARTICLES, TEST_TITLES, squad_json
from harness import REPO, train
from preprocess import prepare as prepare_cli
from toys import bad_squad

pytestmark = pytest.mark.e2e
BIN = Path(sys.executable).parent
DOC = REPO / "docs" / "question_generation.md"
BLEU_ARGS = ["--eval-bleu", "--eval-bleu-args", '{"beam": 1, "max_len_b": 20}',
             "--best-checkpoint-metric", "bleu", "--maximize-best-checkpoint-metric"]  # fmt: skip


def sacrebleu_cli(ref, hyp):
    run = subprocess.run([str(BIN / "sacrebleu"), str(ref), "-i", str(hyp), "-w", "2", "-b"],
                         capture_output=True, text=True, check=True)  # fmt: skip
    return run.stdout.strip()


@pytest.fixture(scope="module")
def squad_data(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("qg")
    train_json = tmp / "train.json"
    train_json.write_text(json.dumps(bad_squad()), encoding="utf-8")
    (tmp / "dev.json").write_text(json.dumps(squad_json(DEV_ARTICLES)), encoding="utf-8")
    (tmp / "doclist-test.txt").write_text("".join(t + "\n" for t in TEST_TITLES), encoding="utf-8")
    prepare_cli.main(["--corpus", "squad", "--squad-json", str(train_json), "--split-json", f"valid={tmp / 'dev.json'}",
                      "--split-titles", f"test={tmp / 'doclist-test.txt'}", "--out", str(tmp / "out"),
                      "--vocab-size", "400", "--max-source-tokens", "60"])  # fmt: skip
    return tmp / "out" / "bin"


def validation_bleu(checkpoint, data, tmp_path):
    """Re-run validation of ``checkpoint`` on ``data`` as fairseq-train does (several batches, the
    task's valid_step and reduce_metrics); returns (logged bleu, hypotheses file, references file)."""
    models, cfg, task = checkpoint_utils.load_model_ensemble_and_task([str(checkpoint)],
                                                                      arg_overrides={"data": str(data)})
    model = models[0].eval()
    criterion = task.build_criterion(cfg.criterion)
    task.load_dataset("valid")
    itr = task.get_batch_iterator(task.dataset("valid"), max_sentences=3, required_batch_size_multiple=1,
                                  max_positions=(256, 128)).next_epoch_itr(shuffle=False)  # fmt: skip
    seen, generate = [], task._generate_for_validation

    def recording(sample, model):
        hyps, refs = generate(sample, model)
        seen.extend(zip(hyps, refs))
        return hyps, refs

    task._generate_for_validation = recording
    with metrics.aggregate(new_root=True) as agg:
        batches = 0
        for sample in itr:
            with torch.no_grad():
                _, _, logging_output = task.valid_step(sample, model, criterion)
            task.reduce_metrics([logging_output], criterion)
            batches += 1
        logged = agg.get_smoothed_values()["bleu"]
    assert batches >= 3
    hyp, ref = tmp_path / "valid.hyp", tmp_path / "valid.ref"
    hyp.write_text("".join(h + "\n" for h, _ in seen), encoding="utf-8")
    ref.write_text("".join(r + "\n" for _, r in seen), encoding="utf-8")
    return logged, hyp, ref


def test_eval_bleu_picks_the_best_checkpoint_and_equals_sacrebleu(squad_data, tmp_path):
    save = train(squad_data, tmp_path / "ckpt", "bart_summ_tiny",
                 [*BLEU_ARGS, "--max-epoch", "6", "--batch-size", "4", "--required-batch-size-multiple", "1"])
    best = torch.load(save / "checkpoint_best.pt", weights_only=True)
    assert best["cfg"]["checkpoint"]["best_checkpoint_metric"] == "bleu"
    logged_in_training = best["extra_state"]["val_loss"]  # the bleu of the epoch it was saved at
    assert best["extra_state"]["best"] == logged_in_training
    logged, hyp, ref = validation_bleu(save / "checkpoint_best.pt", squad_data, tmp_path)
    assert logged == logged_in_training
    assert f"{logged:.2f}" == sacrebleu_cli(ref, hyp)
    assert logged > 0  # a degenerate 0 == 0 would prove nothing


# ------------------------------------------------------------------ the documented commands


def bash_blocks(text):
    return re.findall(r"```bash\n(.*?)```", text, flags=re.S)


TINY = {  # the recipes' variables, at test size
    "scripts/prophetnet/squad_qg.sh": {"ARCH": "prophetnet_summ_tiny", "MAX_EPOCH": "1", "BATCH_SIZE": "8",
                                       "UPDATE_FREQ": "1", "LR": "1e-3", "WARMUP": "4", "BEAM": "2",
                                       "SOURCE_POSITIONS": "256"},
    "scripts/s2s_ft/squad_qg.sh": {"INIT": "none", "ARCH": "s2s_ft_tiny", "MAX_EPOCH": "1", "BATCH_SIZE": "8",
                                   "UPDATE_FREQ": "1", "LR": "1e-3", "WARMUP": "4", "BEAM": "2"},
}
SIZES = {"--arch bart_summ_small": "--arch bart_summ_tiny", "--max-epoch 30": "--max-epoch 1",
         "--vocab-size 8000": "--vocab-size 400"}  # fmt: skip


def test_every_documented_command_runs(tmp_path):
    blocks = bash_blocks(DOC.read_text(encoding="utf-8"))
    assert len(blocks) >= 6
    env = {**os.environ, "PATH": f"{BIN}:{os.environ['PATH']}", "OMP_NUM_THREADS": "1"}
    outputs = []
    for block in blocks:
        command = re.sub(r"(?<![\w/])(data|runs)/", lambda m: f"{tmp_path}/{m.group(1)}/", block)
        for size, tiny in SIZES.items():
            command = command.replace(size, tiny)
        extra = next((v for script, v in TINY.items() if script in command), {})
        run = subprocess.run(["bash", "-euo", "pipefail", "-c", command], cwd=REPO, env={**env, **extra},
                             capture_output=True, text=True)  # fmt: skip
        assert run.returncode == 0, f"{command}\n{run.stdout[-3000:]}\n{run.stderr[-3000:]}"
        outputs.append(run.stdout)
    runs = tmp_path / "runs" / "qg"
    for family in ("prophetnet", "s2s_ft"):
        scores = json.loads((runs / family / "test.scores.json").read_text())
        assert scores["bleu_signature"].startswith("nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp")
        raw_ref = tmp_path / "data" / "squad_qg" / "raw" / "test.target"
        ref = raw_ref if family == "prophetnet" else runs / family / "test.ref"
        assert f"{scores['bleu']:.2f}" == sacrebleu_cli(ref, runs / family / "test.hyp")
        assert (runs / family / "checkpoint_best.pt").is_file()
        log = (runs / family / "train.log").read_text()
        assert "validation BLEU: sacrebleu nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp" in log
        assert re.search(r"valid on 'valid' subset .*\| bleu \d", log)
    # the scoring block: our line and the sacrebleu command line's JSON agree
    ours = next(o for o in outputs if o.startswith("BLEU-4"))
    ours_bleu = ours.split()[1]
    theirs = json.loads(ours[ours.index("{"):])
    assert float(ours_bleu) == theirs["score"] and theirs["signature"] in ours
    assert (runs / "bart" / "checkpoint_best.pt").is_file()
