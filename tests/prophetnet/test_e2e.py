"""End to end on the real corpora: Wikipedia plain text -> span-mask pre-training
(fairseq-train --task prophetnet_span_mask) -> fine-tuning on ACLSum with the same
sentencepiece model and dictionary (--restore-file, the <mask> row dropped) ->
fairseq-generate with beam, --lenpen, --min-len, --max-len-b, --no-repeat-ngram-size -> hub."""

import pytest
import torch

from harness import generate, prepare_corpus, read_lines, train
from user_dir import from_pretrained

pytestmark = pytest.mark.e2e  # trains with fairseq-train

ARCH = "prophetnet_summ_tiny"
SHORT = ["--max-source-positions", "128", "--max-target-positions", "64"]


@pytest.fixture(scope="module")
def corpora(tmp_path_factory):
    wiki = prepare_corpus("wiki", tmp_path_factory.mktemp("wiki"), limit=8)
    aclsum = prepare_corpus("aclsum", tmp_path_factory.mktemp("aclsum"), limit=12,
                            extra=["--spm-model", str(wiki / "spm.model"), "--srcdict", str(wiki / "dict.txt")])
    return wiki, aclsum


@pytest.fixture(scope="module")
def pretrained(corpora, tmp_path_factory):
    wiki, _ = corpora
    save_dir = tmp_path_factory.mktemp("pretrain")
    train(wiki, save_dir, ARCH, ["--tokens-per-sample", "128", "--max-update", "6", "--max-tokens", "2048"] + SHORT,
          task="prophetnet_span_mask", criterion="ngram_language_loss")
    return save_dir / "checkpoint_last.pt"


@pytest.fixture(scope="module")
def finetuned(corpora, pretrained, tmp_path_factory):
    _, aclsum = corpora
    save_dir = tmp_path_factory.mktemp("finetune")
    train(aclsum, save_dir, ARCH, [
        "--restore-file", str(pretrained), "--reset-optimizer", "--reset-dataloader", "--reset-meters",
        "--reset-lr-scheduler", "--label-smoothing", "0.1", "--max-epoch", "2", "--ngram-gamma", "0.5",
    ] + SHORT, criterion="ngram_language_loss")
    return save_dir


def test_pretraining_checkpoint_has_mask_row(corpora, pretrained):
    wiki, _ = corpora
    state = torch.load(pretrained, weights_only=True)
    rows = state["model"]["encoder.embed_tokens.weight"].size(0)
    dict_size = 4 + len(read_lines(wiki / "dict.txt"))
    assert rows == dict_size + 1  # the task appended <mask>
    assert state["cfg"]["task"]["_name"] == "prophetnet_span_mask"
    assert state["optimizer_history"][-1]["num_updates"] == 6


def test_finetuning_starts_from_pretrained_weights(pretrained, finetuned):
    tuned = torch.load(finetuned / "checkpoint_last.pt", weights_only=True)
    start = torch.load(pretrained, weights_only=True)
    embeddings = "encoder.embed_tokens.weight"
    assert tuned["model"][embeddings].size(0) == start["model"][embeddings].size(0) - 1
    # a fine-tuned weight stays close to where pre-training left it (not a fresh init)
    key = "decoder.ngram_embeddings.weight"
    moved = (tuned["model"][key] - start["model"][key]).norm() / start["model"][key].norm()
    assert moved < 0.5


def test_generate_with_paper_decoding_flags(corpora, finetuned):
    _, aclsum = corpora
    hyps = generate(aclsum, finetuned / "checkpoint_last.pt", [
        "--task", "abstractive_summarization", "--required-batch-size-multiple", "1",
        "--beam", "3", "--lenpen", "1.2", "--min-len", "5", "--max-len-b", "16", "--no-repeat-ngram-size", "2",
        "--bpe", "sentencepiece", "--sentencepiece-model", str(aclsum / "spm.model"),
    ] + SHORT)
    references = read_lines(aclsum.parent / "raw" / "test.target")
    assert len(hyps) == len(references)
    assert all(hyp.strip() for hyp in hyps)


def test_hub_summarizes_with_prophetnet(corpora, finetuned):
    _, aclsum = corpora
    summarizer = from_pretrained(str(finetuned), checkpoint_file="checkpoint_last.pt", data_name_or_path=str(aclsum))
    documents = read_lines(aclsum.parent / "raw" / "test.source")[:2]
    summaries = summarizer.summarize(documents, beam=2, lenpen=1.0, min_len=3, max_len_b=12, no_repeat_ngram_size=3)
    assert len(summaries) == 2 and all(isinstance(s, str) and s.strip() for s in summaries)
