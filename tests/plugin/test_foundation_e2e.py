"""End to end on real ACLSum: preprocess -> fairseq-train --user-dir (with validation ROUGE as
the best-checkpoint metric) -> resume after an interruption -> fairseq-generate -> hub."""

import logging

import pytest
import torch

from harness import generate, prepare_corpus, read_lines, train

pytestmark = pytest.mark.e2e  # trains with fairseq-train

ARCH = "bart_summ_tiny"
TRAIN_LIMIT = 16


@pytest.fixture(scope="module")
def aclsum(tmp_path_factory):
    return prepare_corpus("aclsum", tmp_path_factory.mktemp("aclsum"), limit=TRAIN_LIMIT)


@pytest.fixture(scope="module")
def trained(aclsum, tmp_path_factory):
    save_dir = tmp_path_factory.mktemp("ckpt")
    train(aclsum, save_dir, ARCH, [
        "--max-epoch", "2", "--max-tokens", "1500",
        "--eval-rouge", "--eval-rouge-args", '{"beam": 1, "max_len_b": 16}',
        "--best-checkpoint-metric", "rougeL", "--maximize-best-checkpoint-metric",
    ])
    return save_dir


def _state(path):
    return torch.load(path, weights_only=True)  # the plugin's allowlist makes this work


def test_train_saves_best_by_validation_rouge(trained):
    last = _state(trained / "checkpoint_last.pt")
    iterator = last["extra_state"]["train_iterator"]
    assert (iterator["epoch"], iterator["iterations_in_epoch"]) == (3, 0)  # 2 epochs done
    assert (trained / "checkpoint_best.pt").exists()
    assert isinstance(last["extra_state"]["best"], float)
    assert 0.0 <= last["extra_state"]["best"] <= 100.0  # rougeL F1 in percent
    assert last["cfg"]["checkpoint"]["best_checkpoint_metric"] == "rougeL"


def test_resume_after_interruption_continues_from_checkpoint_last(aclsum, tmp_path, caplog):
    # first run stops after 3 updates, in the middle of epoch 1 (as a killed job would,
    # after its last save); the restart must pick up at update 3 with the same data position
    common = ["--max-tokens", "600", "--save-interval-updates", "1"]
    train(aclsum, tmp_path, ARCH, common + ["--max-update", "3"])
    first = _state(tmp_path / "checkpoint_last.pt")
    assert first["optimizer_history"][-1]["num_updates"] == 3
    iterations_in_epoch = first["extra_state"]["train_iterator"]["iterations_in_epoch"]
    assert iterations_in_epoch > 0

    with caplog.at_level(logging.INFO):
        train(aclsum, tmp_path, ARCH, common + ["--max-update", "5"])
    assert any("Loaded checkpoint" in r.getMessage() and "@ 3 updates" in r.getMessage()
               for r in caplog.records)
    second = _state(tmp_path / "checkpoint_last.pt")
    assert second["optimizer_history"][-1]["num_updates"] == 5


def test_generate_and_hub_on_test_set(aclsum, trained):
    test_sources = read_lines(aclsum.parent / "raw" / "test.source")
    hyps = generate(aclsum, trained / "checkpoint_best.pt", [
        "--task", "abstractive_summarization",
        "--bpe", "sentencepiece", "--sentencepiece-model", aclsum / "spm.model",
        "--beam", "2", "--max-len-b", "12", "--no-repeat-ngram-size", "3",
        "--batch-size", "5",  # 16 = 5 + 5 + 5 + 1: fairseq 0.12.3 alone drops the last one
    ])
    assert len(hyps) == len(test_sources)
    assert all("▁" not in h for h in hyps)  # sentencepiece was decoded

    from user_dir import from_pretrained

    hub = from_pretrained(str(trained), checkpoint_file="checkpoint_best.pt",
                          data_name_or_path=str(aclsum))
    summaries = hub.summarize(test_sources[:3], beam=2, max_len_b=12, batch_size=2)
    assert len(summaries) == 3 and all(isinstance(s, str) for s in summaries)
    assert isinstance(hub.summarize(test_sources[0], beam=2, max_len_b=12), str)
    # n-gram blocking works on CPU: no token trigram repeats in any beam's output
    for hypos in hub.generate([hub.encode(s) for s in test_sources[:4]], beam=2, max_len_b=24,
                              no_repeat_ngram_size=3):
        tokens = hypos[0]["tokens"].tolist()
        trigrams = [tuple(tokens[i:i + 3]) for i in range(len(tokens) - 2)]
        assert len(trigrams) == len(set(trigrams))
    with pytest.raises(ValueError, match="empty"):
        hub.summarize(["  "])


def test_fairseq_own_from_pretrained_with_user_dir(aclsum, trained):
    from fairseq import hub_utils

    from harness import USER_DIR
    from user_dir import SummarizationHubInterface

    loaded = hub_utils.from_pretrained(str(trained), checkpoint_file="checkpoint_best.pt",
                                       data_name_or_path=str(aclsum), user_dir=USER_DIR)
    hub = SummarizationHubInterface(loaded["args"], loaded["task"], loaded["models"])
    assert type(loaded["task"]).__name__ == "AbstractiveSummarizationTask"
    assert isinstance(hub.summarize("A short document about parsing.", beam=1, max_len_b=5), str)
