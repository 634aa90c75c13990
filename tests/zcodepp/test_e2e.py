"""Z-Code++ end to end on the real corpora, through fairseq-train --user-dir in-process:
phase one on Wikipedia (MLM + RTD + CSP) -> export -> grounded phase two on ACLSum + ACLSum-long
-> fine-tuning on ACLSum (and on ACLSum-long with FiE) -> fairseq-generate -> hub."""

import contextlib
import logging

import pytest
import torch

from fairseq_ext.zcodepp.export import export
from harness import generate, prepare_corpus, read_lines, train

pytestmark = pytest.mark.e2e  # trains with fairseq-train

ARCH = "zcodepp_tiny"
# fairseq-generate's default --required-batch-size-multiple 8 drops a last partial batch
# (12 test documents -> 8 hypotheses); 1 keeps every document
ALL_BATCHES = ["--required-batch-size-multiple", "1"]
PHASE_ONE = ["--generator-layers", "1", "--tokens-per-sample", "128", "--max-tokens", "1024", "--max-update", "4"]


@contextlib.contextmanager
def captured_log():
    """Every log message (INFO and up) emitted inside the block, as one string."""
    records = []
    handler = logging.Handler(logging.INFO)
    handler.emit = lambda record: records.append(record.getMessage())
    root = logging.getLogger()
    old_level = root.level
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    text = []
    try:
        yield text
    finally:
        root.removeHandler(handler)
        root.setLevel(old_level)
        text.append("\n".join(records))


@pytest.fixture(scope="module")
def corpora(tmp_path_factory):
    root = tmp_path_factory.mktemp("zcodepp_data")
    wiki = prepare_corpus("wiki", root / "wiki", limit=4)
    shared = ["--spm-model", str(wiki / "spm.model"), "--srcdict", str(wiki / "dict.txt")]
    aclsum = prepare_corpus("aclsum", root / "aclsum", limit=12, extra=shared)
    aclsum_long = prepare_corpus("aclsum_long", root / "aclsum_long", limit=6, extra=shared)
    return {"wiki": wiki, "aclsum": aclsum, "aclsum_long": aclsum_long}


@pytest.fixture(scope="module")
def phase_one(corpora, tmp_path_factory):
    save_dir = tmp_path_factory.mktemp("zcodepp_phase1")
    with captured_log() as log:
        train(corpora["wiki"], save_dir, ARCH, PHASE_ONE, task="zcodepp_pretraining", criterion="zcodepp_joint")
    return save_dir / "checkpoint_last.pt", log[0]


@pytest.fixture(scope="module")
def phase_two(corpora, phase_one, tmp_path_factory):
    save_dir = tmp_path_factory.mktemp("zcodepp_phase2")
    corpora_arg = f"aclsum:{corpora['aclsum']},aclsum_long:{corpora['aclsum_long']}"
    with captured_log() as log:
        train(corpora["aclsum"], save_dir, ARCH, [
            "--finetune-from-model", str(phase_one[0]), "--grounded-corpora", corpora_arg, "--max-update", "3",
        ], task="zcodepp_grounded")
    return save_dir / "checkpoint_last.pt", log[0]


def test_phase_one_logs_each_loss_and_keeps_gdes_parts(phase_one):
    checkpoint, log = phase_one
    for name in ("mlm_loss", "rtd_loss", "csp_loss", "rtd_accuracy"):
        assert f"{name}=" in log and f"| {name} " in log  # train_inner and valid lines
    state = torch.load(checkpoint, weights_only=True)["model"]
    assert "encoder.embed_tokens.delta" in state and "generator.encoder.embed_tokens.weight" in state
    assert state["encoder.embed_tokens.delta"].abs().sum() > 0  # RTD/CSP trained the delta


def test_export_folds_the_delta(phase_one, tmp_path):
    state = torch.load(phase_one[0], weights_only=True)["model"]
    exported = export(phase_one[0], tmp_path / "exported.pt")["model"]
    folded = state["generator.encoder.embed_tokens.weight"] + state["encoder.embed_tokens.delta"]
    assert torch.equal(exported["encoder.embed_tokens.weight"], folded)
    assert not any(k.startswith(("generator.", "rtd_head.")) for k in exported)
    reloaded = torch.load(tmp_path / "exported.pt", weights_only=True)
    assert reloaded["cfg"]["model"].generator_layers == 0


def test_grounded_phase_two_continues_from_phase_one(phase_two):
    checkpoint, log = phase_two
    assert "folded the GDES embedding delta" in log
    assert "pairs from aclsum with 2 templates" in log and "pairs from aclsum_long with 2 templates" in log
    state = torch.load(checkpoint, weights_only=True)["model"]
    assert not any(k.startswith("generator.") for k in state)


def test_finetune_generate_and_hub(corpora, phase_two, tmp_path):
    aclsum = corpora["aclsum"]
    train(aclsum, tmp_path, ARCH, ["--finetune-from-model", str(phase_two[0]), "--max-update", "3"])
    hyps = generate(aclsum, tmp_path / "checkpoint_last.pt", [
        "--task", "abstractive_summarization",
        "--bpe", "sentencepiece", "--sentencepiece-model", aclsum / "spm.model", "--max-len-b", "12",
    ] + ALL_BATCHES)
    test_sources = read_lines(aclsum.parent / "raw" / "test.source")
    assert len(hyps) == len(test_sources) and all("▁" not in h for h in hyps)

    from user_dir import from_pretrained

    hub = from_pretrained(str(tmp_path), checkpoint_file="checkpoint_last.pt", data_name_or_path=str(aclsum))
    summaries = hub.summarize(test_sources[:2], beam=2, max_len_b=12, batch_size=2)
    assert len(summaries) == 2 and all(isinstance(s, str) for s in summaries)


def test_finetune_long_documents_with_fie(corpora, phase_two, tmp_path):
    long_data = corpora["aclsum_long"]
    lengths = ["--max-source-positions", "512"]
    train(long_data, tmp_path, ARCH, ["--finetune-from-model", str(phase_two[0]), "--max-update", "2",
                                      "--fie-chunk-size", "64", "--max-tokens", "4000"] + lengths + ALL_BATCHES)
    hyps = generate(long_data, tmp_path / "checkpoint_last.pt",
                    ["--task", "abstractive_summarization", "--max-len-b", "8"] + lengths + ALL_BATCHES)
    assert len(hyps) == len(read_lines(long_data.parent / "raw" / "test.source"))

    from user_dir import from_pretrained

    hub = from_pretrained(str(tmp_path), checkpoint_file="checkpoint_last.pt", data_name_or_path=str(long_data))
    encoder = hub.models[0].encoder
    assert encoder.fie_chunk_size == 64 and encoder.num_local_layers == encoder.num_layers - 1
