"""s2s-ft end to end on real ACLSum: WordPiece (and sentencepiece) preprocessing ->
fairseq-train --user-dir for the three fine-tuning methods -> fairseq-generate -> hub;
and one update of MiniLM-L6-H384 started from its real weights."""

import shutil

import pytest
import torch
from safetensors.torch import load_file

from fairseq_ext.data.prepare_wordpiece import prepare_wordpiece
from fairseq_ext.data.wordpiece import minilm_dir
from harness import generate, prepare_corpus, read_lines, train
from user_dir import from_pretrained

pytestmark = pytest.mark.e2e  # trains with fairseq-train

LIMIT = 4
TASK = ("--task", "s2s_ft_summarization")
CRITERION = "s2s_ft"
# fairseq's batch_by_size returns no batch for 4 examples under its default multiple of 8
SHORT = ["--max-source-positions", "96", "--max-target-positions", "48", "--required-batch-size-multiple", "1"]


def train_s2s(data, save_dir, arch, extra):
    flags = [*SHORT, "--max-update", "2", "--max-tokens", "300", "--label-smoothing", "0.1", *extra]
    return train(data, save_dir, arch, flags, task=TASK[1], criterion=CRITERION)


@pytest.fixture(scope="module")
def wordpiece_data(tmp_path_factory):
    out = tmp_path_factory.mktemp("aclsum_wp")
    prepare_wordpiece("aclsum", out, limit=LIMIT)
    return out / "bin"


@pytest.mark.parametrize("method", ["causal", "masked", "pseudo"])
def test_three_methods_train_and_generate(wordpiece_data, tmp_path, method):
    train_s2s(wordpiece_data, tmp_path, "s2s_ft_tiny", ["--s2s-method", method])
    state = torch.load(tmp_path / "checkpoint_last.pt", weights_only=True)
    assert state["optimizer_history"][-1]["num_updates"] == 2
    assert state["cfg"]["model"]["s2s_method"] == method
    flags = [*TASK, *SHORT, "--min-len", "3", "--max-len-b", "8"]
    hyps = generate(wordpiece_data, tmp_path / "checkpoint_last.pt", flags)
    assert len(hyps) == len(read_lines(wordpiece_data.parent / "raw" / "test.source"))
    assert all(h.strip() for h in hyps)
    assert not any("##" in h for h in hyps)  # WordPieces joined back into words


def test_minilm_init_train_generate_and_hub(wordpiece_data, tmp_path):
    train_s2s(wordpiece_data, tmp_path, "s2s_ft_minilm_l6_h384",
              ["--init-from-hf", str(minilm_dir()), "--lr", "5e-5"])  # fmt: skip
    state = torch.load(tmp_path / "checkpoint_last.pt", weights_only=True)
    assert state["optimizer_history"][-1]["num_updates"] == 2
    summarizer = from_pretrained(str(tmp_path), "checkpoint_last.pt", data_name_or_path=str(wordpiece_data))
    assert summarizer.models[0].encoder.body.cfg.embed_dim == 384
    document = read_lines(wordpiece_data.parent / "raw" / "test.source")[0]
    summary = summarizer.summarize(document, beam=2, max_len_b=6, min_len=2)
    assert isinstance(summary, str) and summary.strip() and "##" not in summary


def tiny_bert_dir(directory):
    """A random HF BERT of ``s2s_ft_tiny``'s sizes over MiniLM's vocabulary (the data's)."""
    transformers = pytest.importorskip("transformers")
    config = transformers.BertConfig(
        vocab_size=len(read_lines(minilm_dir() / "vocab.txt")), hidden_size=64, num_hidden_layers=2,
        num_attention_heads=4, intermediate_size=128,
    )
    torch.manual_seed(0)
    transformers.BertForMaskedLM(config).save_pretrained(directory)
    shutil.copy(minilm_dir() / "vocab.txt", directory / "vocab.txt")
    return directory


def test_checkpoint_loads_after_the_init_from_hf_directory_is_gone(wordpiece_data, tmp_path):
    """--init-from-hf is read when a model starts training, not when its checkpoint is loaded:
    fairseq-generate (under either task) and the hub work on a machine without that directory."""
    hf_dir = tiny_bert_dir(tmp_path / "hf")
    released = load_file(hf_dir / "model.safetensors")["bert.embeddings.position_embeddings.weight"]  # (512, 64)
    train_s2s(wordpiece_data, tmp_path / "ckpt", "s2s_ft_tiny", ["--init-from-hf", str(hf_dir)])
    shutil.rmtree(hf_dir)
    checkpoint = tmp_path / "ckpt" / "checkpoint_last.pt"
    trained = torch.load(checkpoint, weights_only=True)["model"]["encoder.body.embeddings.position.weight"]
    assert (trained - released).abs().max() < 0.01  # two Adam steps of 1e-3 away from the released weights
    documents = read_lines(wordpiece_data.parent / "raw" / "test.source")
    for task in ("s2s_ft_summarization", "abstractive_summarization"):
        hyps = generate(wordpiece_data, checkpoint, [*SHORT, "--min-len", "2", "--max-len-b", "6"], task=task)
        assert len(hyps) == len(documents)
    summarizer = from_pretrained(str(checkpoint.parent), checkpoint.name, data_name_or_path=str(wordpiece_data))
    assert summarizer.summarize(documents[0], beam=2, max_len_b=6, min_len=2).strip()


def test_sentencepiece_data_gets_a_mask_token(tmp_path):
    data = prepare_corpus("aclsum", tmp_path / "aclsum", limit=LIMIT)
    train_s2s(data, tmp_path / "ckpt", "s2s_ft_tiny", ["--s2s-method", "pseudo"])
    hyps = generate(data, tmp_path / "ckpt" / "checkpoint_last.pt", [*TASK, *SHORT, "--max-len-b", "6"])
    assert len(hyps) == LIMIT and all(h.strip() for h in hyps)
