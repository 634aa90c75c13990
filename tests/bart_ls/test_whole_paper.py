"""The longest ACLSum paper body, untruncated, through one fairseq-train update and
fairseq-generate with BART-LS, each block attention type (tiny size)."""

import pytest
import torch

from benchmarks.long_paper import longest_paper, prepare, source_tokens
from harness import generate, train


@pytest.fixture(scope="module")
def paper(tmp_path_factory):
    root = tmp_path_factory.mktemp("whole_paper")
    data = prepare(longest_paper(), root, vocab_size=2000)
    return data, source_tokens(data)


@pytest.mark.e2e
@pytest.mark.parametrize("attention", ["block", "overlapping", "global"])
def test_longest_paper_trains_and_generates_untruncated(paper, attention, tmp_path):
    data, tokens = paper
    assert tokens > 16384  # the whole body, beyond BART-LS's 16K positions
    lengths = ["--no-truncate-source", "--max-source-positions", str(tokens), "--max-target-positions", "512"]
    save = train(data, tmp_path, "bart_ls_tiny", lengths + [
        "--encoder-attention", attention, "--block-size", "1024", "--global-tokens", "64", "--batch-size", "1",
        "--max-tokens", str(tokens), "--max-update", "1", "--required-batch-size-multiple", "1",
        "--disable-validation",
    ])
    state = torch.load(save / "checkpoint_last.pt", weights_only=False)
    assert state["optimizer_history"][-1]["num_updates"] == 1  # the example was not filtered out
    hyps = generate(data, save / "checkpoint_last.pt", lengths + ["--batch-size", "1", "--max-len-b", "8"])
    assert len(hyps) == 1
