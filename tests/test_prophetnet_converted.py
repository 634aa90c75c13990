"""A converted HF ProphetNet checkpoint fine-tunes and generates through stock fairseq:
HF weights (random init, the real BERT-uncased WordPiece vocabulary of the installed
MiniLM, 30,522 pieces) -> converter -> ACLSum tokenized with that vocabulary -> fairseq-train
--finetune-from-model -> fairseq-generate --bpe bert. (Real released checkpoints follow the
same path; nothing is downloaded.)"""

import pytest
import torch
from transformers import ProphetNetConfig, ProphetNetForConditionalGeneration

from fairseq_ext.convert.cli import main as convert
from fairseq_ext.data.prepare_wordpiece import prepare_wordpiece
from fairseq_ext.data.wordpiece import minilm_dir, read_vocab
from harness import generate, read_lines, train

LIMIT = 8
POSITIONS = ["--max-source-positions", "128", "--max-target-positions", "64"]


@pytest.fixture(scope="module")
def converted(tmp_path_factory):
    vocab = minilm_dir() / "vocab.txt"
    tokens = read_vocab(str(vocab))
    config = ProphetNetConfig(  # the sizes of prophetnet_summ_tiny
        vocab_size=len(tokens), hidden_size=32, encoder_ffn_dim=64, decoder_ffn_dim=64, num_encoder_layers=1,
        num_decoder_layers=1, num_encoder_attention_heads=2, num_decoder_attention_heads=2, ngram=2,
        num_buckets=16, relative_max_distance=32, max_position_embeddings=160, pad_token_id=tokens.index("[PAD]"),
        bos_token_id=tokens.index("[CLS]"), eos_token_id=tokens.index("[SEP]"),
        decoder_start_token_id=tokens.index("[SEP]"),
    )
    torch.manual_seed(0)
    hf_dir = tmp_path_factory.mktemp("hf")
    ProphetNetForConditionalGeneration(config).save_pretrained(hf_dir)
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
