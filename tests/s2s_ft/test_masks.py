"""s2s-ft attention masks, checked cell by cell against Figure 2 of the paper (the noise:
tests/noising/test_noising.py)."""

import pytest
import torch

from fairseq_ext.s2s_ft.masks import decode_step_mask, pseudo_masked_attention_mask, seq2seq_attention_mask


def picture(rows):
    """Rows of '1'/'0' characters (spaces ignored) -> bool tensor."""
    return torch.tensor([[c == "1" for c in row.replace(" ", "")] for row in rows])


# Figure 2(a)/(b): source s1 s2 s3 (bidirectional), target t1 t2 (left-to-right)
SEQ2SEQ_3_2 = picture([
    "111 00",  # s1
    "111 00",  # s2
    "111 00",  # s3
    "111 10",  # t1
    "111 11",  # t2
])  # fmt: skip

# Figure 2(c): source s1 s2, target t1 t2 t3, pseudo masks p1 p2 p3
PSEUDO_2_3 = picture([
    "11 000 000",  # s1
    "11 000 000",  # s2
    "11 100 000",  # t1
    "11 110 000",  # t2
    "11 111 000",  # t3
    "11 000 100",  # p1: source and itself
    "11 100 010",  # p2: source, t1, itself
    "11 110 001",  # p3: source, t1 t2, itself
])  # fmt: skip


def test_seq2seq_mask_matches_figure_2ab():
    assert torch.equal(seq2seq_attention_mask(3, 2), SEQ2SEQ_3_2)


def test_pseudo_mask_matches_figure_2c():
    assert torch.equal(pseudo_masked_attention_mask(2, 3), PSEUDO_2_3)


@pytest.mark.parametrize("source,target", [(1, 1), (5, 1), (1, 6), (7, 4)])
def test_masks_general_properties(source, target):
    s2s = seq2seq_attention_mask(source, target)
    assert s2s[:source, :source].all() and not s2s[:source, source:].any()
    assert torch.equal(s2s[source:, source:], torch.ones(target, target, dtype=torch.bool).tril())
    pm = pseudo_masked_attention_mask(source, target)
    tgt, pse = slice(source, source + target), slice(source + target, None)
    assert torch.equal(pm[: source + target, : source + target], s2s)  # Figure 2(c) extends 2(b)
    assert not pm[:, pse].logical_and(~torch.eye(source + 2 * target, dtype=torch.bool)[:, pse]).any()
    assert torch.equal(pm[pse, tgt], torch.ones(target, target, dtype=torch.bool).tril(-1))
    assert pm.any(dim=1).all()  # every row attends somewhere


@pytest.mark.parametrize("source,step", [(3, 1), (3, 2), (5, 4)])
def test_decode_step_mask_is_a_slice_of_the_pseudo_mask(source, step):
    """Step k computes rows target_{k-1} and pseudo_k over [source; target_<k; pseudo_k]."""
    full = pseudo_masked_attention_mask(source, step + 1)
    rows = [source + step - 1, source + (step + 1) + step]
    cols = list(range(source + step)) + [rows[1]]
    expected = full[rows][:, cols]
    assert torch.equal(decode_step_mask(source + step - 1, True), expected)
    first = pseudo_masked_attention_mask(source, 1)[[source + 1]][:, list(range(source)) + [source + 1]]
    assert torch.equal(decode_step_mask(source, False), first)
