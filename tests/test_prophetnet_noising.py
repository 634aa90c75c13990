"""MASS-style span masking of the pre-training task (paper section 3.1)."""

import numpy as np
import pytest
import torch
from fairseq.data import Dictionary

from fairseq_ext.prophetnet.noising import span_lengths, span_mask, target_length
from fairseq_ext.prophetnet.span_data import SpanMaskDataset

MASK, EOS = 99, 2


def _mask(tokens, seed=0, **kwargs):
    return span_mask(tokens, np.random.default_rng(seed), MASK, EOS, 4, 90, **kwargs)


def test_one_contiguous_span_per_chunk_and_fifteen_percent():
    tokens = np.arange(10, 10 + 512) % 80 + 10
    assert span_lengths(512).tolist() == [10] * 8  # round(64 * 0.15) in each of the 8 chunks
    source, target, segment = _mask(tokens, mask_prob=1.0, random_prob=0.0)
    masked = np.flatnonzero(source == MASK)
    assert len(masked) == 80 and abs(len(masked) / 512 - 0.15) < 0.01
    for chunk in range(8):  # exactly one run of 10 inside each chunk of 64
        inside = masked[(masked >= 64 * chunk) & (masked < 64 * (chunk + 1))]
        assert len(inside) == 10 and np.all(np.diff(inside) == 1)
    assert target[:-1].tolist() == tokens[masked].tolist() and target[-1] == EOS
    assert segment.tolist() == [10 * (i // 10) for i in range(80)] + [70]


def test_replacement_is_80_10_10():
    tokens = np.full(64 * 400, 50)
    source, _, _ = _mask(tokens, seed=3, chunk=64, ratio=0.5)
    changed = source[source != 50]
    masked = int(np.rint(64 * 0.5)) * 400
    as_mask = (changed == MASK).sum() / masked
    as_random = (changed != MASK).sum() / masked  # a random draw equal to 50 counts as kept
    assert abs(as_mask - 0.8) < 0.02 and abs(as_random - 0.1) < 0.02
    assert changed[changed != MASK].min() >= 4 and changed.max() <= MASK


def test_short_blocks_and_lengths_known_in_advance():
    for length in (1, 2, 7, 64, 65, 130, 512):
        _, target, _ = _mask(np.arange(length) + 10)
        assert len(target) == target_length(length)
    assert span_lengths(1).tolist() == [0]  # a one-token chunk is left alone
    with pytest.raises(ValueError):
        span_lengths(10, ratio=1.5)


def test_dataset_is_deterministic_per_epoch_and_collates():
    d = Dictionary()
    for i in range(50):
        d.add_symbol(f"w{i}")
    mask_idx = d.add_symbol("<mask>")
    blocks = [torch.arange(4, 4 + n) for n in (70, 30, 64)]
    data = SpanMaskDataset(blocks, [len(b) for b in blocks], d, mask_idx, max_length=64, random_high=len(d) - 1)
    first = data[0]
    assert len(first["source"]) == 64 and torch.equal(first["target"], data[0]["target"])
    data.set_epoch(2)
    assert not torch.equal(first["source"], data[0]["source"]) or not torch.equal(first["target"], data[0]["target"])
    batch = data.collater([data[i] for i in range(3)])
    prev, target = batch["net_input"]["prev_output_tokens"], batch["target"]
    assert torch.equal(prev[:, 0], torch.full((3,), d.eos()))
    assert torch.equal(prev[0, 1: len(data[0]["target"])], data[0]["target"][:-1])
    assert batch["ntokens"] == int(target.ne(d.pad()).sum())
    assert batch["target_segment_start"].shape == target.shape
