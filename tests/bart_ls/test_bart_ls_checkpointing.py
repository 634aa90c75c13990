"""``--checkpoint-activations`` in the BART-LS encoder: the same gradients as the plain path for
every attention type (every weight perturbed, pooling layers included)."""

import pytest
import torch
from fairseq import options, tasks
from fairseq.data import Dictionary
from fairseq.dataclass.utils import convert_namespace_to_omegaconf

import user_dir
from parity import perturb_parameters

VOCAB = 40
TOL = 1e-5


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    path = tmp_path_factory.mktemp("bart_ls_dict")
    dictionary = Dictionary()
    for i in range(VOCAB):
        dictionary.add_symbol(f"w{i}")
    for side in ("source", "target"):
        dictionary.save(str(path / f"dict.{side}.txt"))
    return path


def build(data_dir, *flags):
    args = options.parse_args_and_arch(options.get_training_parser(), [
        str(data_dir), "--task", "abstractive_summarization", "--arch", "bart_ls_tiny", "--user-dir",
        user_dir.hub.USER_DIR, *flags,
    ])
    cfg = convert_namespace_to_omegaconf(args)
    return tasks.setup_task(cfg.task).build_model(cfg.model)


def gradients(model, seed):
    """Gradients of a weighted sum of the decoder's outputs on a left-padded batch (train mode)."""
    gen = torch.Generator().manual_seed(1)
    src = torch.full((3, 30), 1)
    for row, n in enumerate([30, 12, 1]):
        src[row, 30 - n:] = torch.randint(4, VOCAB, (n,), generator=gen)
    prev = torch.randint(4, VOCAB, (3, 6), generator=gen)
    model.train()
    torch.manual_seed(seed)  # the same dropout masks in both runs
    logits, _ = model(src, src.ne(1).sum(1), prev)
    (logits * torch.linspace(-1, 1, logits.numel()).view_as(logits)).sum().backward()
    return {name: p.grad.clone() for name, p in model.named_parameters() if p.grad is not None}


@pytest.mark.parametrize("dropout", ["0", "0.1"])
@pytest.mark.parametrize("attention", ["block", "overlapping", "global", "full"])
def test_checkpointed_encoder_gradients_equal_plain(data_dir, attention, dropout):
    pooling = "0" if attention == "full" else "1"  # full attention is BART's encoder, without pooling
    flags = ["--encoder-attention", attention, "--block-size", "8", "--global-tokens", "2", "--pooling-layers", pooling,
             "--pooling-kernel", "4", "--pooling-stride", "2", "--pooling-padding", "1",
             "--dropout", dropout, "--attention-dropout", dropout]
    plain = perturb_parameters(build(data_dir, *flags), seed=4)
    checkpointed = build(data_dir, *flags, "--checkpoint-activations")
    checkpointed.load_state_dict(plain.state_dict())
    assert all(layer.checkpoint_activations for layer in checkpointed.encoder.layers)
    assert not any(layer.checkpoint_activations for layer in plain.encoder.layers)
    expected, got = gradients(plain, seed=2), gradients(checkpointed, seed=2)
    assert expected.keys() == got.keys() and any("encoder.layers" in name for name in got)
    for name, grad in expected.items():
        torch.testing.assert_close(got[name], grad, atol=TOL, rtol=0, msg=name)


@pytest.mark.e2e
def test_fairseq_train_with_checkpoint_activations(tmp_path):
    """Two updates of fairseq-train on long ACLSum papers with --checkpoint-activations."""
    from harness import prepare_corpus, train

    data = prepare_corpus("aclsum_long", tmp_path / "data", limit=2, vocab_size=300)
    save = train(data, tmp_path / "ckpt", "bart_ls_tiny", [
        "--checkpoint-activations", "--encoder-attention", "overlapping", "--block-size", "64",
        "--pooling-layers", "1", "--max-source-positions", "1024", "--batch-size", "1", "--max-update", "2",
        "--required-batch-size-multiple", "1",
    ])
    state = torch.load(save / "checkpoint_last.pt", weights_only=False)
    assert state["optimizer_history"][-1]["num_updates"] == 2
    assert state["cfg"]["model"].checkpoint_activations
