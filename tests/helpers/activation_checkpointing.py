"""Shared by the ``--checkpoint-activations`` tests of the families: build a model through
fairseq's own argument parser, and compare the gradients of the checkpointed and plain models.

    plain, checkpointed = model_pair(data_dir, "bart_ls_tiny", flags)
    assert_same_gradients(plain, checkpointed)
"""

import torch
from fairseq import options, tasks
from fairseq.dataclass.utils import convert_namespace_to_omegaconf

import user_dir
from parity import perturb_parameters
from toys import toy_dictionary

VOCAB = 40
TOL = 1e-5


def dictionary_dir(path):
    """A data directory holding only a joined dictionary of ``VOCAB`` words (enough to build a model)."""
    dictionary = toy_dictionary(VOCAB)
    for side in ("source", "target"):
        dictionary.save(str(path / f"dict.{side}.txt"))
    return path


def build(data_dir, arch, *flags):
    args = options.parse_args_and_arch(options.get_training_parser(), [
        str(data_dir), "--task", "abstractive_summarization", "--arch", arch, "--user-dir",
        user_dir.hub.USER_DIR, *flags,
    ])
    cfg = convert_namespace_to_omegaconf(args)
    return tasks.setup_task(cfg.task).build_model(cfg.model)


def model_pair(data_dir, arch, flags):
    """The same perturbed model without and with ``--checkpoint-activations``."""
    plain = perturb_parameters(build(data_dir, arch, *flags), seed=4)
    checkpointed = build(data_dir, arch, *flags, "--checkpoint-activations")
    checkpointed.load_state_dict(plain.state_dict())
    return plain, checkpointed


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


def assert_same_gradients(plain, checkpointed):
    expected, got = gradients(plain, seed=2), gradients(checkpointed, seed=2)
    assert expected.keys() == got.keys() and any("encoder.layers" in name for name in got)
    for name, grad in expected.items():
        torch.testing.assert_close(got[name], grad, atol=TOL, rtol=0, msg=name)


def assert_trained(save_dir, updates):
    """The run's last checkpoint records ``updates`` updates, trained with the flag."""
    state = torch.load(save_dir / "checkpoint_last.pt", weights_only=False)
    assert state["optimizer_history"][-1]["num_updates"] == updates
    assert state["cfg"]["model"].checkpoint_activations
