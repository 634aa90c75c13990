"""A converted HF ProphetNet checkpoint fine-tunes and generates through stock fairseq:
HF weights (random init, the real BERT-uncased WordPiece vocabulary of the installed
MiniLM, 30,522 pieces) -> converter -> ACLSum tokenized with that vocabulary -> fairseq-train
--finetune-from-model -> fairseq-generate --bpe bert. (Real released checkpoints follow the
same path; nothing is downloaded.)"""

import pytest
import torch

from fairseq_ext.cli.convert import main as convert
from fairseq_ext.data.prepare_wordpiece import prepare_wordpiece
from harness import generate, read_lines, train
from prophetnet_oracle import tiny_hf_prophetnet

pytestmark = pytest.mark.e2e  # trains with fairseq-train

LIMIT = 8
POSITIONS = ["--max-source-positions", "128", "--max-target-positions", "64"]


@pytest.fixture(scope="module")
def converted(tmp_path_factory):
    hf_dir = tmp_path_factory.mktemp("hf")
    vocab = tiny_hf_prophetnet(hf_dir, max_positions=160)
    out = tmp_path_factory.mktemp("converted")
    return convert(["prophetnet", "--hf-dir", str(hf_dir), "--out", str(out), "--vocab", str(vocab)]), vocab


def test_finetune_and_generate_from_converted_checkpoint(converted, tmp_path):
    checkpoint, vocab = converted
    data = tmp_path / "aclsum_wp"
    prepare_wordpiece("aclsum", data, vocab=vocab, limit=LIMIT)
    save_dir = tmp_path / "ckpt"
    train(data / "bin", save_dir, "prophetnet_summ_tiny", [
        "--finetune-from-model", checkpoint, "--max-epoch", "1", "--label-smoothing", "0.1",
    ] + POSITIONS, criterion="ngram_language_loss")
    tuned = torch.load(save_dir / "checkpoint_last.pt", weights_only=True)["model"]
    start = torch.load(checkpoint, weights_only=True)["model"]
    assert tuned["encoder.embed_tokens.weight"].shape == start["encoder.embed_tokens.weight"].shape
    assert tuned["decoder.embed_positions.weight"].size(0) < start["decoder.embed_positions.weight"].size(0)

    hyps = generate(data / "bin", save_dir / "checkpoint_last.pt", [
        "--task", "abstractive_summarization", "--required-batch-size-multiple", "1",
        "--bpe", "bert", "--bpe-vocab-file", str(vocab), "--beam", "2", "--max-len-b", "10", "--min-len", "3",
    ] + POSITIONS)
    assert len(hyps) == len(read_lines(data / "raw" / "test.source")) == LIMIT
    assert all(hyp.strip() and "##" not in hyp for hyp in hyps)  # WordPieces joined back into words
