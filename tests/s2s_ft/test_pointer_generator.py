"""The copy mechanism (fairseq_ext.modules.pointer_generator) and its s2s-ft wiring
(``--copy-heads``): a normalized mixture, p_gen = 1 is the plain model, cached decoding and
beam search equal the full forward, fairseq's stock criterion trains it, and a token the
generator cannot produce is copied."""

from types import SimpleNamespace

import pytest
import torch
from fairseq.criterions.label_smoothed_cross_entropy import LabelSmoothedCrossEntropyCriterion
from fairseq.sequence_generator import SequenceGenerator

from fairseq_ext.modules.pointer_generator import PointerGenerator, copy_distribution, copy_mixture
from parity import perturb_parameters
from s2s_ft_models import batch, cached_steps, log_probs_through_beam_reorders, make_model

VARIANTS = {"last_layer_heads": {"copy_heads": 2}, "own_attention": {"copy_attention_dim": 16}}


def random_inputs(B=3, T=5, S=7, V=11, seed=0):
    g = torch.Generator().manual_seed(seed)
    logits = torch.randn(B, T, V, generator=g) * 3
    attn = torch.rand(B, T, S, generator=g)
    attn[0, :, -2:] = 0  # padding positions hold no attention
    attn = attn / attn.sum(-1, keepdim=True)
    tokens = torch.randint(0, V, (B, S), generator=g)
    tokens[1, :3] = 4  # one token at several positions
    p_gen = torch.rand(B, T, 1, generator=g)
    return logits, p_gen, attn, tokens


def test_mixture_is_a_distribution():
    logits, p_gen, attn, tokens = random_inputs()
    probs = copy_mixture(logits, p_gen, attn, tokens, log_probs=False)
    assert (probs >= 0).all()
    torch.testing.assert_close(probs.sum(-1), torch.ones(3, 5))
    log_probs = copy_mixture(logits, p_gen, attn, tokens, log_probs=True)
    torch.testing.assert_close(log_probs.exp(), probs)


def test_mixture_by_hand():
    logits, p_gen, attn, tokens = random_inputs(B=2, T=2, S=4, V=6, seed=1)
    probs = copy_mixture(logits, p_gen, attn, tokens, log_probs=False)
    for b in range(2):
        for t in range(2):
            for w in range(6):
                copied = sum(attn[b, t, j] for j in range(4) if tokens[b, j] == w)
                expected = p_gen[b, t, 0] * torch.softmax(logits[b, t], -1)[w] + (1 - p_gen[b, t, 0]) * copied
                torch.testing.assert_close(probs[b, t, w], torch.as_tensor(expected, dtype=probs.dtype))


def test_extremes_of_the_gate():
    logits, _, attn, tokens = random_inputs(seed=2)
    ones, zeros = torch.ones(3, 5, 1), torch.zeros(3, 5, 1)
    generated = copy_mixture(logits, ones, attn, tokens, log_probs=True)
    torch.testing.assert_close(generated, torch.log_softmax(logits, -1))
    copied = copy_mixture(logits, zeros, attn, tokens, log_probs=False)
    torch.testing.assert_close(copied, copy_distribution(attn, tokens, 11))
    never_in_source = torch.ones(11, dtype=torch.bool)
    never_in_source[tokens.flatten()] = False
    assert never_in_source.any() and (copied[..., never_in_source] == 0).all()


def test_gate_reads_hidden_and_context():
    torch.manual_seed(0)
    gate = PointerGenerator(8)
    hidden, source = torch.randn(2, 3, 8), torch.randn(5, 2, 8)
    attn = torch.softmax(torch.randn(2, 3, 5), -1)
    p_gen = gate(hidden, attn, source)
    assert p_gen.shape == (2, 3, 1) and ((p_gen > 0) & (p_gen < 1)).all()
    other = torch.softmax(torch.randn(2, 3, 5), -1)
    assert not torch.allclose(p_gen, gate(hidden, other, source))  # the context matters


def test_mismatched_source_ids_are_an_error():
    logits, p_gen, attn, tokens = random_inputs()
    with pytest.raises(ValueError, match="source positions"):
        copy_mixture(logits, p_gen, attn, tokens[:, :-1], log_probs=True)


# --- s2s-ft with --copy-heads ------------------------------------------------------------


def copy_model(method, variant="last_layer_heads", seed=0):
    model, d = make_model(method, seed=seed, **VARIANTS[variant])
    perturb_parameters(model, seed=seed + 7)
    return model, d


def copy_model_and_batch(method, variant):
    """:func:`copy_model` and its dictionary with a toy batch (:func:`s2s_ft_models.batch`)."""
    model, d = copy_model(method, variant)
    return model, d, batch(d)


def full_log_probs(model, src, lengths, prev):
    net_output = model.decoder(prev, model.encoder(src, lengths))
    return model.get_normalized_probs(net_output, log_probs=True)


def test_attention_read_out_is_the_layers_own_attention():
    """The weights returned by ``attention_probs`` times the values give the fused core's output."""
    from fairseq_ext.modules.attention import fused_attention
    from fairseq_ext.modules.multihead import split_heads

    model, _ = copy_model("pseudo")
    layer = model.encoder.body.layers[-1]
    g = torch.Generator().manual_seed(3)
    x, kv_in = torch.randn(2, 5, 32, generator=g), torch.randn(2, 9, 32, generator=g)
    keys, values = layer.keys_values(kv_in)
    allowed = torch.rand(2, 1, 5, 9, generator=g) > 0.3
    allowed[..., 0] = True
    probs = layer.attention_probs(x, keys, allowed)  # (B, H, T, K)
    q = split_heads(layer.query(x), layer.heads)
    torch.testing.assert_close(probs @ values, fused_attention(q, keys, values, allowed), atol=1e-5, rtol=0)
    assert (probs[~allowed.expand_as(probs)] == 0).all()


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("method", ["causal", "masked", "pseudo"])
def test_copy_model_probabilities_sum_to_one(method, variant):
    model, d, (src, lengths, prev, _) = copy_model_and_batch(method, variant)
    with torch.no_grad():
        logits, extra = model.decoder(prev, model.encoder(src, lengths))
        probs = model.get_normalized_probs((logits, extra), log_probs=False)
    assert extra["attn"][0].shape == (2, prev.size(1), src.size(1) + 1)  # + <s>
    torch.testing.assert_close(extra["attn"][0].sum(-1), torch.ones(2, prev.size(1)))
    torch.testing.assert_close(probs.sum(-1), torch.ones(2, prev.size(1)))
    padding = extra["src_tokens"].eq(d.pad())
    assert (extra["attn"][0].masked_select(padding[:, None, :]) == 0).all()


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("method", ["causal", "pseudo"])
def test_gate_fully_open_is_the_plain_model(method, variant):
    """p_gen = 1 (a gate bias of +inf): the copy model's distribution is the plain model's."""
    plain, d = make_model(method, seed=4)
    perturb_parameters(plain, seed=11)
    copying, _ = make_model(method, seed=4, **VARIANTS[variant])
    copying.load_state_dict(plain.state_dict(), strict=False)
    with torch.no_grad():
        copying.decoder.pointer.gate.bias.fill_(float("inf"))
    src, lengths, prev, _ = batch(d)
    with torch.no_grad():
        expected = full_log_probs(plain, src, lengths, prev)
        ours = full_log_probs(copying, src, lengths, prev)
    torch.testing.assert_close(ours, expected, atol=1e-5, rtol=0)


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("method", ["causal", "masked", "pseudo"])
def test_cached_decoding_equals_full_forward(method, variant):
    model, d, (src, lengths, prev, _) = copy_model_and_batch(method, variant)
    with torch.no_grad():
        full = full_log_probs(model, src, lengths, prev)
        for step, _, lprobs in cached_steps(model, src, lengths, prev):
            keep = prev[:, step].ne(d.pad())
            torch.testing.assert_close(lprobs[keep, 0], full[keep, step], atol=1e-4, rtol=0)


@pytest.mark.parametrize("variant", VARIANTS)
def test_cached_decoding_follows_beam_reorders(variant):
    model, d = copy_model("pseudo", variant, seed=5)
    steps, reordered = log_probs_through_beam_reorders(model, d)
    with torch.no_grad():
        full = full_log_probs(model, *reordered)
    torch.testing.assert_close(steps, full, atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("method", ["causal", "pseudo"])
def test_sequence_generator_scores_equal_full_forward(method, variant):
    model, d = copy_model(method, variant, seed=3)
    src, lengths, _, _ = batch(d)
    generator = SequenceGenerator([model], d, beam_size=3, max_len_b=8, min_len=2, no_repeat_ngram_size=2)
    with torch.no_grad():
        hypos = generator.forward({"net_input": {"src_tokens": src, "src_lengths": lengths}})
        for i, beams in enumerate(hypos):
            for hypo in beams[:2]:
                tokens = hypo["tokens"]
                prev = torch.cat([torch.tensor([d.eos()]), tokens[:-1]])[None]
                lprobs = full_log_probs(model, src[i : i + 1], lengths[i : i + 1], prev)[0]
                expected = lprobs.gather(1, tokens[:, None])[:, 0]
                torch.testing.assert_close(hypo["positional_scores"], expected, atol=1e-4, rtol=0)


@pytest.mark.parametrize("variant", VARIANTS)
def test_stock_criterion_trains_the_gate_and_the_attention(variant):
    model, d = copy_model("pseudo", variant)
    model.train()
    src, lengths, prev, tgt = batch(d)
    sample = {"net_input": {"src_tokens": src, "src_lengths": lengths, "prev_output_tokens": prev},
              "target": tgt, "ntokens": int(tgt.ne(d.pad()).sum())}  # fmt: skip
    criterion = LabelSmoothedCrossEntropyCriterion(SimpleNamespace(target_dictionary=d), False, 0.1)
    loss, _, _ = criterion(model, sample)
    assert torch.isfinite(loss)
    loss.backward()
    assert model.decoder.pointer.gate.weight.grad.abs().sum() > 0
    if variant == "own_attention":
        assert model.decoder.pointer.query.weight.grad.abs().sum() > 0
    else:
        assert model.encoder.body.layers[-1].query.weight.grad.abs().sum() > 0


@pytest.mark.parametrize("variant", VARIANTS)
def test_a_token_the_generator_cannot_produce_is_copied(variant):
    """With the vocabulary's bias pushing a token far below every other, the plain model gives
    it no probability; the copy model gives it the attention on the positions that hold it."""
    model, d = copy_model("pseudo", variant)
    src, lengths, prev, _ = batch(d)
    rare = int(src[0, -2])  # a token of the first source
    with torch.no_grad():
        model.encoder.body.lm_head.bias[rare] = -1e4
        logits, extra = model.decoder(prev, model.encoder(src, lengths))
        plain = torch.softmax(logits, -1)[0, :, rare]
        probs = model.get_normalized_probs((logits, extra), log_probs=False)[0, :, rare]
        held = extra["src_tokens"][0].eq(rare)
        expected = (1 - extra["p_gen"][0, :, 0]) * extra["attn"][0][0][:, held].sum(-1)
    assert (plain == 0).all()
    assert (probs > 1e-3).all()
    torch.testing.assert_close(probs, expected)


def test_own_attention_is_normalized_and_skips_padding():
    torch.manual_seed(0)
    pointer = PointerGenerator(8, attention_dim=4)
    padding = torch.tensor([[False, False, True], [False, False, False]])
    attn = pointer.attention(torch.randn(2, 5, 8), torch.randn(3, 2, 8), padding)
    assert attn.shape == (2, 5, 3) and (attn[0, :, 2] == 0).all()
    torch.testing.assert_close(attn.sum(-1), torch.ones(2, 5))
    with pytest.raises(ValueError, match="no attention of its own"):
        PointerGenerator(8).attention(torch.randn(2, 5, 8), torch.randn(3, 2, 8), padding)


def test_clear_errors():
    with pytest.raises(ValueError, match="--copy-heads 5"):
        make_model("pseudo", copy_heads=5)
    with pytest.raises(ValueError, match="not both"):
        make_model("pseudo", copy_heads=1, copy_attention_dim=8)
    model, d = copy_model("pseudo")
    src, lengths, prev, _ = batch(d)
    logits, _ = model.decoder(prev, model.encoder(src, lengths))
    with pytest.raises(ValueError, match="extra output"):
        model.get_normalized_probs((logits, None), log_probs=True)
