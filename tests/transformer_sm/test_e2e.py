"""End to end on real ACLSum: preprocess -> fairseq-train --user-dir with domain-adaptive
training -> end-task training from that checkpoint -> fairseq-generate -> hub summarize."""

import logging

import pytest
import torch

from harness import generate, read_lines, train

pytestmark = pytest.mark.e2e  # trains with fairseq-train

ARCH = "transformer_sm_tiny"
LIMIT = 8  # documents a split in aclsum_bin (tests/conftest.py)
LENGTHS = ["--max-source-positions", "128", "--max-target-positions", "48"]
# fairseq 0.12's batch_by_size drops a final batch smaller than --required-batch-size-multiple
TRAIN = ["--batch-size", "4", "--max-tokens", "4000", "--lr", "3e-3", "--required-batch-size-multiple", "1", *LENGTHS]


@pytest.fixture(scope="module")
def aclsum(aclsum_bin):
    return aclsum_bin


def _train(data, save_dir, mode, extra=()):
    argv = ["--mode", mode, *TRAIN, *extra]
    return train(data, save_dir, ARCH, argv, task="transformer_sm", criterion="transformer_sm")


def _last_valid_stats(records):
    stats = [r.getMessage() for r in records if "valid on 'valid' subset" in r.getMessage()]
    assert stats, "no validation line in the training log"
    return stats[-1]


@pytest.fixture(scope="module")
def schedule(aclsum, tmp_path_factory):
    """DAT for 2 epochs, then ETT for 1 epoch starting from the DAT weights (with validation
    ROUGE, which decodes through the task's inference_step)."""
    logger = logging.getLogger()
    handler = _Collect()
    logger.addHandler(handler)
    previous = logger.level
    logger.setLevel(logging.INFO)
    try:
        dat_dir = _train(aclsum, tmp_path_factory.mktemp("dat"), "dat", ["--max-epoch", "2"])
        dat_records = list(handler.records)
        handler.records.clear()
        ett_dir = _train(
            aclsum, tmp_path_factory.mktemp("ett"), "ett",
            ["--max-epoch", "1", "--finetune-from-model", str(dat_dir / "checkpoint_last.pt"),
             "--eval-rouge", "--eval-rouge-args", '{"beam": 3, "max_len_b": 8, "no_repeat_ngram_size": 3}'],
        )  # fmt: skip
        ett_records = list(handler.records)
    finally:
        logger.removeHandler(handler)
        logger.setLevel(previous)
    return dat_dir, dat_records, ett_dir, ett_records


class _Collect(logging.Handler):
    def __init__(self):
        super().__init__(logging.INFO)
        self.records = []

    def emit(self, record):
        self.records.append(record)


def test_truncation_is_counted_in_the_log(schedule):
    _, dat_records, _, _ = schedule
    messages = [r.getMessage() for r in dat_records]
    assert any("articles (with <s>) are longer than 128 tokens" in m and "truncated" in m for m in messages)
    assert any("targets are longer than 48 tokens" in m for m in messages)


def test_dat_counts_article_tokens_and_ett_only_summary_tokens(schedule):
    _, dat_records, _, ett_records = schedule
    dat_valid, ett_valid = _last_valid_stats(dat_records), _last_valid_stats(ett_records)
    assert "summary_nll_loss" in dat_valid and "summary_nll_loss" in ett_valid
    # DAT predicts the (truncated) article too: many more tokens per batch than ETT
    dat_wpb = float(dat_valid.split("| wpb ")[1].split()[0])
    ett_wpb = float(ett_valid.split("| wpb ")[1].split()[0])
    assert dat_wpb > 2 * ett_wpb
    assert "rougeL" in ett_valid and "rougeL" not in dat_valid


def test_ett_starts_from_the_dat_weights(schedule):
    dat_dir, _, ett_dir, ett_records = schedule
    assert any("loading pretrained model from" in r.getMessage() and str(dat_dir) in r.getMessage()
               for r in ett_records)
    dat = torch.load(dat_dir / "checkpoint_last.pt", weights_only=True)
    ett = torch.load(ett_dir / "checkpoint_last.pt", weights_only=True)
    assert ett["cfg"]["criterion"]["mode"] == "ett" and dat["cfg"]["criterion"]["mode"] == "dat"
    assert ett["optimizer_history"][-1]["num_updates"] > 0
    key = "decoder.embed.sources.weight"
    assert not torch.equal(dat["model"][key], ett["model"][key])  # trained further, same tensor names


def test_fairseq_generate_summarizes_every_test_document(aclsum, schedule):
    _, _, ett_dir, _ = schedule
    hyps = generate(aclsum, ett_dir / "checkpoint_last.pt", [
        "--task", "transformer_sm", "--beam", "3", "--no-repeat-ngram-size", "3",
        "--min-len", "4", "--max-len-b", "16", "--required-batch-size-multiple", "1", *LENGTHS,
    ])  # fmt: skip
    assert len(hyps) == len(read_lines(aclsum.parent / "raw" / "test.source")) == LIMIT
    assert all(h.strip() for h in hyps)


def test_hub_summarize(aclsum, schedule):
    from user_dir import from_pretrained

    _, _, ett_dir, _ = schedule
    summarizer = from_pretrained(str(ett_dir), checkpoint_file="checkpoint_last.pt", data_name_or_path=str(aclsum))
    docs = read_lines(aclsum.parent / "raw" / "test.source")[:2]
    summaries = summarizer.summarize(docs, beam=3, min_len=4, max_len_b=16, no_repeat_ngram_size=3)
    assert len(summaries) == 2 and all(isinstance(s, str) and s.strip() for s in summaries)
    assert isinstance(summarizer.summarize(docs[0], beam=3, max_len_b=8), str)
