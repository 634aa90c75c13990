"""BART-LS end to end on real data, in-process with ``--user-dir user_dir``:

our own fairseq BART (``bart_summ_tiny``, one update on aclsum_long) -> converted to BART-LS ->
long denoising pre-training on wiki (same sentencepiece and dictionary) -> fine-tuning on
aclsum_long with ``abstractive_summarization`` (sentinel rows dropped) -> fairseq-generate and
the hub's ``summarize`` on long documents; and model-based denoising through fairseq-train.
"""

import pytest
import torch

from fairseq_ext.convert.bart_ls import convert_checkpoint
from harness import USER_DIR, generate, prepare_corpus, read_lines, train

pytestmark = pytest.mark.e2e  # trains with fairseq-train

NUM_SENTINELS = 16
SMALL_DATA = ["--required-batch-size-multiple", "1"]
TINY = SMALL_DATA + ["--encoder-layers", "1", "--block-size", "64", "--pooling-layers", "1",
        "--max-source-positions", "1024", "--max-target-positions", "128"]


@pytest.fixture(scope="module")
def corpora(tmp_path_factory):
    root = tmp_path_factory.mktemp("bart_ls_e2e")
    summ = prepare_corpus("aclsum_long", root / "aclsum_long", limit=4, vocab_size=500)
    wiki = prepare_corpus(
        "wiki", root / "wiki", limit=10, vocab_size=500,
        extra=["--spm-model", str(summ / "spm.model"), "--srcdict", str(summ / "dict.source.txt")],
    )
    return root, summ, wiki


def test_bart_to_bart_ls_pretrain_finetune_generate(corpora):
    root, summ, wiki = corpora
    bart = train(summ, root / "bart", "bart_summ_tiny", SMALL_DATA + ["--max-update", "1"])
    converted = convert_checkpoint(
        bart / "checkpoint_last.pt", summ / "dict.source.txt", root / "bart_ls_init", "bart_ls_tiny", NUM_SENTINELS,
        max_source_positions=1024, block_size=64, pooling_layers=1, pooling_kernel=6, pooling_stride=4,
        pooling_padding=3,
    )
    pretrained = train(
        wiki, root / "pretrain", "bart_ls_tiny",
        TINY + ["--max-update", "2", "--tokens-per-sample", "900", "--num-sentinels", str(NUM_SENTINELS),
                "--dynamic-span-length", "4,8,12", "--finetune-from-model", str(converted)],
        task="bart_ls_long_denoising",
    )
    state = torch.load(pretrained / "checkpoint_last.pt", weights_only=True)
    assert state["model"]["encoder.embed_positions.weight"].size(0) == 1024 + 2
    finetuned = train(
        summ, root / "finetune", "bart_ls_tiny",
        TINY + ["--max-update", "2", "--finetune-from-model", str(pretrained / "checkpoint_last.pt")],
    )
    hyps = generate(summ, finetuned / "checkpoint_last.pt",
                    SMALL_DATA + ["--task", "abstractive_summarization", "--max-source-positions", "1024",
                     "--max-target-positions", "128", "--max-len-b", "8"])
    assert len(hyps) == len(read_lines(summ.parent / "raw" / "test.source"))

    from user_dir import from_pretrained

    summarizer = from_pretrained(str(finetuned), checkpoint_file="checkpoint_last.pt", data_name_or_path=str(summ))
    document = read_lines(summ.parent / "raw" / "test.source")[0]
    assert len(summarizer.task.encode_text(document)) > 1024  # a long document, truncated by the task
    summary = summarizer.summarize(document, beam=2, max_len_b=8)
    assert isinstance(summary, str)


def test_model_based_denoising_trains(corpora):
    root, _, wiki = corpora
    save = train(
        wiki, root / "model_based", "bart_ls_tiny",
        TINY + ["--max-update", "2", "--tokens-per-sample", "600", "--num-sentinels", str(NUM_SENTINELS),
                "--scorer-layers", "1", "--scorer-embed-dim", "32", "--scorer-heads", "2",
                "--scorer-ffn-dim", "64", "--scorer-block-size", "64"],
        task="bart_ls_model_based_denoising", criterion="bart_ls_model_based_denoising",
    )
    state = torch.load(save / "checkpoint_last.pt", weights_only=True)
    assert any(key.startswith("scorer.") for key in state["criterion"])  # the scorer trains and is saved
    assert USER_DIR.endswith("user_dir")
