"""The longest ACLSum paper body, untruncated, through one fairseq-train update and
fairseq-generate with Z-Code++ FiE (tiny size; memory-efficient global layer)."""

import pytest
import torch
from harness import generate, train

from benchmarks.long_paper import longest_paper, prepare, source_tokens


@pytest.mark.e2e
def test_longest_paper_trains_and_generates_untruncated(tmp_path):
    data = prepare(longest_paper(), tmp_path, vocab_size=2000)
    tokens = source_tokens(data)
    assert tokens > 16384  # the whole body, far beyond the usual limits
    lengths = ["--no-truncate-source", "--max-source-positions", str(tokens), "--max-target-positions", "512"]
    save = train(data, tmp_path / "ckpt", "zcodepp_tiny", lengths + [
        "--fie-chunk-size", "256", "--batch-size", "1", "--max-tokens", str(tokens), "--max-update", "1",
        "--required-batch-size-multiple", "1", "--disable-validation",
    ])
    state = torch.load(save / "checkpoint_last.pt", weights_only=False)
    assert state["optimizer_history"][-1]["num_updates"] == 1  # the example was not filtered out
    hyps = generate(data, save / "checkpoint_last.pt", lengths + ["--batch-size", "1", "--max-len-b", "8"])
    assert len(hyps) == 1
