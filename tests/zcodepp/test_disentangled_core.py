"""The row-at-a-time disentangled attention (``disentangled_attention`` and its hand-written
backward) computes what the plain autograd formulation computes: scores ``Q K^T`` plus the c2p
and p2c terms gathered from ``Q Kr^T`` and ``K Qr^T``, masked, softmaxed, dropped out, times
``V`` -- forward and every gradient, in fp64 exactly, with dropout, and through the module on
perturbed weights."""

import pytest
import torch

from fairseq_ext.modules.attention import biased_attention
from fairseq_ext.modules.multihead import merge_heads
from fairseq_ext.modules.relative_position import deberta_distance_index, relative_index_rows
from fairseq_ext.zcodepp.disentangled_attention import DisentangledSelfAttention, disentangled_attention
from parity import perturb_parameters

BATCH, HEADS, LENGTH, HEAD_DIM = 3, 2, 9, 4
BUCKETS, MAX_DISTANCE = 4, 12  # log buckets and clamping both in play at this length
DIM, TOL = 24, 1e-5


def reference_bias(query, key, pos_query, pos_key, position_index):
    """c2p + p2c by autograd: two gathers, the second read transposed (DeBERTa's own layout)."""
    batch, heads, length, _ = query.shape
    index = position_index.expand(batch, heads, length, length)  # (B, H, T, T)
    c2p = torch.matmul(query, pos_key.transpose(-1, -2)).gather(-1, index)
    p2c = torch.matmul(key, pos_query.transpose(-1, -2)).gather(-1, index.transpose(-1, -2)).transpose(-1, -2)
    return c2p + p2c


def reference_attention(query, key, value, pos_query, pos_key, position_index, padding, keep=None, p=0.0):
    scores = query @ key.transpose(-1, -2) + reference_bias(query, key, pos_query, pos_key, position_index)
    probs = torch.softmax(scores.masked_fill(padding[:, None, None, :], torch.finfo(scores.dtype).min), dim=-1)
    if keep is not None:
        probs = probs * keep / (1 - p)
    return probs @ value


def inputs(dtype=torch.float64, seed=0):
    g = torch.Generator().manual_seed(seed)
    q, k, v = (torch.randn(BATCH, HEADS, LENGTH, HEAD_DIM, generator=g, dtype=dtype) for _ in range(3))
    pq, pk = (torch.randn(HEADS, 2 * BUCKETS, HEAD_DIM, generator=g, dtype=dtype) for _ in range(2))
    index = relative_index_rows(deberta_distance_index(LENGTH, BUCKETS, MAX_DISTANCE), 0, LENGTH)  # (T, T)
    padding = torch.zeros(BATCH, LENGTH, dtype=torch.bool)
    padding[1, 6:] = True
    padding[2, 2:] = True
    return [t.requires_grad_() for t in (q, k, v, pq, pk)], index, padding


def outputs_and_grads(fn, tensors):
    out = fn(*tensors)
    weights = torch.linspace(-1, 1, out.numel(), dtype=out.dtype).view_as(out)
    grads = torch.autograd.grad((out * weights).sum() + out.pow(2).sum(), tensors)
    return [out, *grads]


def test_equals_autograd_reference_in_fp64():
    tensors, index, padding = inputs()
    ours = outputs_and_grads(lambda *t: disentangled_attention(*t, index, padding), tensors)
    theirs = outputs_and_grads(lambda *t: reference_attention(*t, index, padding), tensors)
    for name, a, b in zip(("out", "query", "key", "value", "pos_query", "pos_key"), ours, theirs):
        torch.testing.assert_close(a, b, atol=1e-12, rtol=0, msg=name)


def test_backward_passes_gradcheck():
    tensors, index, padding = inputs()
    assert torch.autograd.gradcheck(lambda *t: disentangled_attention(*t, index, padding), tensors)


def test_dropout_masks_the_probabilities_forward_and_backward():
    """A row's mask is drawn before its ``P V``, rows in order: the reference draws the same."""
    p = 0.3
    tensors, index, padding = inputs()
    torch.manual_seed(5)
    ours = outputs_and_grads(lambda *t: disentangled_attention(*t, index, padding, dropout_p=p), tensors)
    torch.manual_seed(5)
    keep = torch.stack([torch.empty(HEADS, LENGTH, LENGTH, dtype=torch.bool).bernoulli_(1 - p)
                        for _ in range(BATCH)])
    assert 0 < keep.float().mean() < 1
    theirs = outputs_and_grads(lambda *t: reference_attention(*t, index, padding, keep, p), tensors)
    for a, b in zip(ours, theirs):
        torch.testing.assert_close(a, b, atol=1e-12, rtol=0)


def test_bad_dropout_is_an_error():
    tensors, index, padding = inputs()
    with pytest.raises(ValueError, match="dropout"):
        disentangled_attention(*tensors, index, padding, dropout_p=1.0)


def reference_module(attention, x, padding, rel, distance_index):
    """DisentangledSelfAttention's forward as autograd gathers + the shared biased core."""
    heads = attention._heads
    query, key, value = heads(attention.q_proj(x) * attention.scaling), heads(attention.k_proj(x)), heads(
        attention.v_proj(x))
    pos_query, pos_key = heads(attention.q_proj(rel) * attention.scaling), heads(attention.k_proj(rel))
    index = relative_index_rows(distance_index, 0, x.size(1))
    bias = reference_bias(query, key, pos_query, pos_key, index).float()
    return attention.out_proj(merge_heads(biased_attention(query, key, value, padding, bias)))


@pytest.mark.parametrize("lengths", [[9, 6, 2], [1], [16, 16]])
def test_module_equals_the_autograd_formulation_on_perturbed_weights(lengths):
    attention = perturb_parameters(DisentangledSelfAttention(DIM, HEADS * 2), seed=3).eval()
    g = torch.Generator().manual_seed(1)
    length = max(lengths)
    x = torch.randn(len(lengths), length, DIM, generator=g)
    padding = torch.arange(length)[None, :] >= torch.tensor(lengths)[:, None]  # (B, T)
    rel = torch.randn(2 * BUCKETS, DIM, generator=g)
    distance_index = deberta_distance_index(length, BUCKETS, MAX_DISTANCE)
    results = []
    for forward in (attention, lambda *a: reference_module(attention, *a)):
        xx, rr = x.clone().requires_grad_(), rel.clone().requires_grad_()
        attention.zero_grad()
        out = forward(xx, padding, rr, distance_index).masked_fill(padding[..., None], 0)  # (B, T, C)
        (out * torch.linspace(-1, 1, out.numel()).view_as(out)).sum().backward()
        results.append([out, xx.grad, rr.grad] + [p.grad.clone() for p in attention.parameters()])
    for a, b in zip(*results):
        torch.testing.assert_close(a, b, atol=TOL, rtol=TOL)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_half_inputs_keep_fp32_scores(dtype):
    """fp16 / bf16 inputs: scores and softmax in fp32, outputs and gradients in the input dtype."""
    tensors, index, padding = inputs(torch.float32)
    low = [t.detach().to(dtype).requires_grad_() for t in tensors]
    out = disentangled_attention(*low, index, padding)
    out.float().sum().backward()
    reference = reference_attention(*tensors, index, padding)
    assert out.dtype == dtype and all(t.grad.dtype == dtype and torch.isfinite(t.grad).all() for t in low)
    torch.testing.assert_close(out.float(), reference, atol=0.05, rtol=0.05)
