"""fp16 and bf16 forward passes of every family against fp32, on one fixed batch.

Each family's model is built by its own task on real (tiny) ACLSum data, every weight is
perturbed (matrices ~ N(0, 1/fan_in), LayerNorm gains 1 +- 0.1, non-zero biases: O(1)
activations and logits spread over several nats, not the near-uniform outputs of a fresh
init), and one batch mixes lengths from a single token to the full document, so that rows are
padded. The model is cast with ``.to(dtype)`` as fairseq's ``--fp16``/``--bf16`` do, runs on
CPU, and the log-probabilities of the target tokens are compared with fp32.

Tolerances (max |log p_fp16/bf16 - log p_fp32| over all real target tokens): the unit
roundoff is 2^-11 (4.9e-4) in fp16 and 2^-8 (3.9e-3) in bf16, 8 times larger. Rounding the
weights, every activation and every LayerNorm input of a one- or two-layer model with logits of
a few nats accumulates errors of some roundoffs times the logit scale on a log-probability:
measured here (torch 2.13 CPU) at most 0.0044 in fp16 and 0.039 in bf16 across the families
(s2s-ft the largest). The bounds, 0.02 and 0.16 (in the 8:1 ratio of the roundoffs), keep a
margin of about 4 while staying far below what a broken mask or an overflow gives (inf/NaN,
or errors of whole nats).
"""

import copy

import pytest
import torch

from fairseq_ext.prophetnet.attention import own_slot_attention
from half_precision import FAMILIES, HALF, LOGPROB_TOLERANCE, build, summarization_rows

LENGTHS = [(1, 1), (2, 3), (17, 5), (None, None)]  # (source, target) tokens per row; None = the whole document


def _family(aclsum, family):
    arch, task_name, flags = FAMILIES[family]
    task, model, _ = build(aclsum, arch, task_name, flags)
    rows = summarization_rows(task, LENGTHS)
    return task, model, task.dataset("valid").collater(rows)


def _target_logprobs(model, sample, pad):
    with torch.no_grad():
        logits = model(**sample["net_input"])[0]  # (B, T, V)
    assert torch.isfinite(logits).all(), "non-finite logits"
    target = sample["target"]  # (B, T)
    logprobs = torch.log_softmax(logits.float(), dim=-1).gather(-1, target.unsqueeze(-1)).squeeze(-1)
    return logprobs[target.ne(pad)]  # (N,)


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_half_precision_forward_matches_fp32(aclsum_bin, family):
    task, model, sample = _family(aclsum_bin, family)
    pad = task.target_dictionary.pad()
    reference = _target_logprobs(model, sample, pad)
    assert reference.std() > 0.5  # perturbed weights: spread-out predictions, not a uniform guess
    assert sample["net_input"]["src_tokens"].ne(task.source_dictionary.pad()).sum(1).min() <= 2  # a 1-token row
    for dtype in HALF:
        tolerance = LOGPROB_TOLERANCE[dtype]
        low = _target_logprobs(copy.deepcopy(model).to(dtype), sample, pad)
        error = (low - reference).abs().max().item()
        assert error <= tolerance, f"{family} {dtype}: max |log p error| {error:.4f} > {tolerance}"


def test_prophetnet_scores_do_not_overflow_in_fp16():
    # rows whose query equals its key give q . k = 16 * 70^2 = 78,400 > 65,504 (the fp16 maximum)
    # before scaling, 19,600 after: scaling first and summing in fp32 keeps them finite
    gen = torch.Generator().manual_seed(0)
    q = 70 * torch.randn(1, 2, 6, 16, generator=gen).sign()  # (B, H, Q, d)
    k, v = q.clone(), torch.randn(1, 2, 6, 16, generator=gen)
    k_own, v_own = torch.randn(1, 2, 6, 16, generator=gen), torch.randn(1, 2, 6, 16, generator=gen)
    allowed = torch.ones(6, 6, dtype=torch.bool).tril()  # causal, every row sees a key
    bias = torch.zeros(1, 2, 6, 6).masked_fill(~allowed, torch.finfo(torch.float16).min)
    own_bias = torch.zeros(1, 2, 6, 1)
    reference = own_slot_attention(q, k, v, k_own, v_own, bias, own_bias)
    half = own_slot_attention(*(t.half() for t in (q, k, v, k_own, v_own, bias, own_bias)))
    assert torch.isfinite(half).all()
    assert (half.float() - reference).abs().max() < 0.02
