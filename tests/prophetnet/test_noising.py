"""The dataset of ProphetNet's MASS span masking (paper section 3.1; the masking itself:
tests/noising/test_noising.py)."""

import torch

from fairseq_ext.prophetnet.span_data import SpanMaskDataset
from toys import toy_dictionary


def test_dataset_is_deterministic_per_epoch_and_collates():
    d = toy_dictionary(50, "<mask>")
    mask_idx = d.index("<mask>")
    blocks = [torch.arange(4, 4 + n) for n in (70, 30, 64)]
    data = SpanMaskDataset(blocks, [len(b) for b in blocks], d, mask_idx, max_length=64, random_high=len(d) - 1)
    first = data[0]
    assert len(first["source"]) == 64 and torch.equal(first["target"], data[0]["target"])
    assert all(int(data.tgt_sizes[i]) == len(data[i]["target"]) for i in range(3))
    data.set_epoch(2)
    assert not torch.equal(first["source"], data[0]["source"]) or not torch.equal(first["target"], data[0]["target"])
    batch = data.collater([data[i] for i in range(3)])
    prev, target = batch["net_input"]["prev_output_tokens"], batch["target"]
    assert torch.equal(prev[:, 0], torch.full((3,), d.eos()))
    assert torch.equal(prev[0, 1: len(data[0]["target"])], data[0]["target"][:-1])
    assert batch["ntokens"] == int(target.ne(d.pad()).sum())
    assert batch["target_segment_start"].shape == target.shape
    state = torch.get_rng_state()
    data[1]
    assert torch.equal(torch.get_rng_state(), state)  # the noise has its own seeded generator
