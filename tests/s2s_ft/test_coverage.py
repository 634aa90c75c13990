"""The coverage mechanism of the copy attention (See et al. 2017, Section 2.3; ``--coverage``,
``--coverage-loss-weight``): the coverage vector and loss by hand, cached decoding (beam
reorders included) equal to the full forward, zero weights equal to the model without
coverage, and a checkpoint trained without it loading into a model with it."""

import copy
from types import SimpleNamespace

import pytest
import torch
from fairseq.sequence_generator import SequenceGenerator

from fairseq_ext.modules.pointer_generator import Coverage, coverage_loss
from parity import perturb_parameters
from s2s_ft_models import batch, cached_steps, log_probs_through_beam_reorders, make_model
from user_dir.criterions.s2s_ft import S2SFTCriterion

VARIANTS = {"last_layer_heads": {"copy_heads": 2}, "own_attention": {"copy_attention_dim": 16}}


def coverage_model(method, variant="last_layer_heads", seed=0, weight=None):
    model, d = make_model(method, seed=seed, coverage=True, **VARIANTS[variant])
    perturb_parameters(model, seed=seed + 7)
    with torch.no_grad():
        if weight is None:
            weight = torch.linspace(-2.0, 1.5, len(model.decoder.coverage.weight))
        model.decoder.coverage.weight.copy_(weight)
    return model, d


def full_log_probs(model, src, lengths, prev):
    net_output = model.decoder(prev, model.encoder(src, lengths))
    return model.get_normalized_probs(net_output, log_probs=True), net_output[1]


def test_coverage_by_hand():
    probs = torch.tensor([[[[0.5, 0.5, 0.0], [0.2, 0.8, 0.0]],
                           [[1.0, 0.0, 0.0], [0.4, 0.6, 0.0]]]])  # (B=1, h=2, T=2, S=3), last column padding
    cov = Coverage(2)
    attn, coverages, after = cov(probs)
    torch.testing.assert_close(attn, probs.mean(1))  # w = 0: the mean of the heads
    torch.testing.assert_close(coverages[0], torch.tensor([[0.0, 0.0, 0.0], [0.75, 0.25, 0.0]]))
    torch.testing.assert_close(after[0], torch.tensor([1.05, 0.95, 0.0]))
    with torch.no_grad():
        cov.weight.copy_(torch.tensor([-1.0, 2.0]))
    attn, coverages, _ = cov(probs)
    c = torch.tensor([0.75, 0.25, 0.0])
    head0 = torch.tensor([0.2, 0.8, 0.0]) * torch.exp(-1.0 * c)
    head1 = torch.tensor([0.4, 0.6, 0.0]) * torch.exp(2.0 * c)
    expected = (head0 / head0.sum() + head1 / head1.sum()) / 2
    torch.testing.assert_close(attn[0, 1], expected)
    torch.testing.assert_close(attn[0, 0], probs[0, :, 0].mean(0))  # no coverage before the first step
    assert attn[0, :, 2].eq(0).all()
    per_step = torch.stack([torch.tensor(0.0), torch.minimum(expected, c).sum()])
    torch.testing.assert_close(coverage_loss(attn, coverages)[0], per_step)


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("method", ["causal", "masked", "pseudo"])
def test_cached_decoding_equals_full_forward(method, variant):
    model, d = coverage_model(method, variant)
    src, lengths, prev, _ = batch(d)
    with torch.no_grad():
        full, extra = full_log_probs(model, src, lengths, prev)
        for step, out, lprobs in cached_steps(model, src, lengths, prev):
            keep = prev[:, step].ne(d.pad())
            torch.testing.assert_close(lprobs[keep, 0], full[keep, step], atol=1e-4, rtol=0)
            torch.testing.assert_close(out[1]["coverage"][keep, 0], extra["coverage"][keep, step], atol=1e-5, rtol=0)
    assert extra["coverage"][:, 1:].abs().sum() > 0


@pytest.mark.parametrize("variant", VARIANTS)
def test_cached_decoding_follows_beam_reorders(variant):
    model, d = coverage_model("pseudo", variant, seed=5)
    steps, reordered = log_probs_through_beam_reorders(model, d)
    with torch.no_grad():
        full, _ = full_log_probs(model, *reordered)
    torch.testing.assert_close(steps, full, atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("variant", VARIANTS)
def test_sequence_generator_scores_equal_full_forward(variant):
    model, d = coverage_model("pseudo", variant, seed=3)
    src, lengths, _, _ = batch(d)
    generator = SequenceGenerator([model], d, beam_size=3, max_len_b=8, min_len=2)
    with torch.no_grad():
        hypos = generator.forward({"net_input": {"src_tokens": src, "src_lengths": lengths}})
        for i, beams in enumerate(hypos):
            for hypo in beams[:2]:
                tokens = hypo["tokens"]
                prev = torch.cat([torch.tensor([d.eos()]), tokens[:-1]])[None]
                lprobs, _ = full_log_probs(model, src[i : i + 1], lengths[i : i + 1], prev)
                expected = lprobs[0].gather(1, tokens[:, None])[:, 0]
                torch.testing.assert_close(hypo["positional_scores"], expected, atol=1e-4, rtol=0)


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("method", ["causal", "pseudo"])
def test_zero_weights_give_the_model_without_coverage(method, variant):
    plain, d = make_model(method, seed=4, **VARIANTS[variant])
    perturb_parameters(plain, seed=11)
    covered, _ = make_model(method, seed=4, coverage=True, **VARIANTS[variant])
    covered.load_state_dict(plain.state_dict())  # the missing coverage weights are read as 0
    assert covered.decoder.coverage.weight.eq(0).all()
    src, lengths, prev, _ = batch(d)
    with torch.no_grad():
        expected, _ = full_log_probs(plain, src, lengths, prev)
        ours, _ = full_log_probs(covered, src, lengths, prev)
        assert torch.equal(ours, expected)
        state, encoder_out = {}, covered.encoder(src, lengths)
        old_state, old_encoder_out = {}, plain.encoder(src, lengths)
        for step in range(prev.size(1)):
            new = covered.decoder(prev[:, : step + 1], encoder_out, incremental_state=state)
            old = plain.decoder(prev[:, : step + 1], old_encoder_out, incremental_state=old_state)
            new, old = covered.get_normalized_probs(new, True), plain.get_normalized_probs(old, True)
            assert torch.equal(new, old)


def test_old_weights_load_into_a_coverage_model(tmp_path):
    """fairseq's loading path (``upgrade_state_dict`` then a strict ``load_state_dict``), as
    ``--finetune-from-model`` and ``--restore-file`` take it."""
    plain, d = make_model("pseudo", seed=2, copy_heads=2)
    covered, _ = make_model("pseudo", seed=3, copy_heads=2, coverage=True)
    path = tmp_path / "old.pt"
    torch.save({"model": plain.state_dict()}, path)
    state = torch.load(path, weights_only=True)
    covered.load_state_dict(state["model"], strict=True, model_cfg=None)
    assert covered.decoder.coverage.weight.eq(0).all()
    torch.testing.assert_close(covered.decoder.pointer.gate.weight, plain.decoder.pointer.gate.weight)
    with pytest.raises(RuntimeError, match="Unexpected key"):  # the other way round stays an error
        plain.load_state_dict(covered.state_dict(), strict=True, model_cfg=None)


def criterion(d, weight):
    return S2SFTCriterion(SimpleNamespace(target_dictionary=d), False, 0.1, coverage_loss_weight=weight)


@pytest.mark.parametrize("method", ["causal", "pseudo"])
def test_coverage_loss_by_hand(method):
    model, d = coverage_model(method)
    src, lengths, prev, tgt = batch(d)
    sample = {"net_input": {"src_tokens": src, "src_lengths": lengths, "prev_output_tokens": prev},
              "target": tgt, "ntokens": int(tgt.ne(d.pad()).sum())}  # fmt: skip
    with torch.no_grad():
        base, _, _ = criterion(d, 0.0)(model, sample)
        loss, _, log = criterion(d, 0.5)(model, sample)
        _, extra = full_log_probs(model, src, lengths, prev)
    attn = extra["attn"][0]
    by_hand = 0.0
    for b in range(tgt.size(0)):
        covered = torch.zeros(attn.size(-1))
        for t in range(tgt.size(1)):
            if tgt[b, t] != d.pad():
                by_hand += sum(min(float(a), float(c)) for a, c in zip(attn[b, t], covered))
            covered = covered + attn[b, t]
    assert by_hand > 0
    torch.testing.assert_close(float(log["coverage_loss"]), by_hand, atol=1e-4, rtol=1e-5)
    torch.testing.assert_close(float(loss), float(base) + 0.5 * by_hand, atol=1e-3, rtol=1e-5)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_precision_attention_is_renormalized_as_in_fp32(dtype):
    # all attention on position 0 for 8 steps: its coverage is t, exp(-4 t) of the uncovered
    # positions' weight, below fp16's smallest number from t = 5 (in fp16 arithmetic: 0 / 0)
    probs = torch.zeros(1, 2, 8, 3)  # (B, h, T, S)
    probs[..., 0] = 1.0
    cov = Coverage(2)
    with torch.no_grad():
        cov.weight.fill_(-4.0)
    reference = cov(probs)
    half = copy.deepcopy(cov).to(dtype)(probs.to(dtype), torch.zeros(1, 3, dtype=dtype))
    for got, expected in zip(half, reference):
        assert torch.isfinite(got).all()
        torch.testing.assert_close(got.float(), expected)
    torch.testing.assert_close(reference[0][0, :, 0], torch.ones(8))  # it keeps all the attention


def test_coverage_loss_trains_the_coverage_weights():
    model, d = coverage_model("pseudo")
    model.train()
    src, lengths, prev, tgt = batch(d)
    sample = {"net_input": {"src_tokens": src, "src_lengths": lengths, "prev_output_tokens": prev},
              "target": tgt, "ntokens": int(tgt.ne(d.pad()).sum())}  # fmt: skip
    loss, _, _ = criterion(d, 1.0)(model, sample)
    loss.backward()
    assert model.decoder.coverage.weight.grad.abs().sum() > 0


def test_clear_errors():
    with pytest.raises(ValueError, match="--coverage is the copy attention's"):
        make_model("pseudo", coverage=True)
    model, d = make_model("pseudo", copy_heads=2)
    src, lengths, prev, tgt = batch(d)
    sample = {"net_input": {"src_tokens": src, "src_lengths": lengths, "prev_output_tokens": prev},
              "target": tgt, "ntokens": int(tgt.ne(d.pad()).sum())}  # fmt: skip
    with pytest.raises(ValueError, match="needs a model with --coverage"):
        criterion(d, 1.0)(model, sample)
    with pytest.raises(ValueError, match="must be >= 0"):
        criterion(d, -1.0)
