"""Question generation end to end: a SQuAD-format fixture (with bad entries) -> preprocess ->
fairseq-train with --eval-bleu choosing checkpoint_best, whose logged BLEU equals the sacrebleu
command line on the same text. The commands of docs/question_generation.md run in the docs test,
which then checks what they wrote (``page_checks.check_question_generation``)."""

import json

import pytest
import torch
from fairseq import checkpoint_utils
from fairseq.logging import metrics

from fairseq_ext.data.squad_sample import DEV_ARTICLES, TEST_TITLES, squad_json
from harness import train
from page_checks import sacrebleu_cli
from preprocess import prepare as prepare_cli
from toys import bad_squad

pytestmark = pytest.mark.e2e
BLEU_ARGS = ["--eval-bleu", "--eval-bleu-args", '{"beam": 1, "max_len_b": 20}',
             "--best-checkpoint-metric", "bleu", "--maximize-best-checkpoint-metric"]  # fmt: skip


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
