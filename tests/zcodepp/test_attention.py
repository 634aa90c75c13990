"""Z-Code++ encoder: parity with HF DeBERTa-v2 (random init, same weights), FiE properties."""

from argparse import Namespace

import pytest
import torch
from transformers import DebertaV2Model
from transformers.models.deberta_v2.modeling_deberta_v2 import DisentangledSelfAttention as HFAttention
from transformers.models.deberta_v2.modeling_deberta_v2 import make_log_bucket_position

import user_dir  # noqa: F401  (registers zcodepp)
from deberta_oracle import (
    BUCKETS,
    DIM,
    HEADS,
    LAYERS,
    MAX_DISTANCE,
    PAD,
    PARITY_CONFIGS,
    TOL,
    VOCAB,
    build_encoder,
    converted,
    dictionary,
    encode,
    hf_config,
    random_tokens,
)  # fmt: skip
from fairseq_ext.modules.relative_position import deberta_distance_index, deberta_log_bucket, deberta_relative_index
from fairseq_ext.zcodepp.disentangled_attention import DisentangledSelfAttention
from parity import BEAMS, REORDER_STEPS, encoder_decoder_with_reorders, perturb_parameters
from user_dir.models.zcodepp import ZCodeppModel, zcodepp_tiny_architecture


def test_log_buckets_match_deberta():
    relative = torch.arange(-3000, 3001)
    for buckets, max_distance in [(256, 512), (BUCKETS, MAX_DISTANCE), (8, 20)]:
        ours = deberta_log_bucket(relative, buckets, max_distance)
        theirs = make_log_bucket_position(relative, buckets, max_distance).long()
        assert torch.equal(ours, theirs)
    index = deberta_relative_index(5, 256, 512)
    assert index[0].tolist() == [256, 255, 254, 253, 252] and index[:, 0].tolist() == [256, 257, 258, 259, 260]
    positions = torch.arange(70)
    direct = deberta_log_bucket(positions[:, None] - positions[None, :], BUCKETS, MAX_DISTANCE) + BUCKETS
    assert torch.equal(deberta_relative_index(70, BUCKETS, MAX_DISTANCE), direct.clamp(0, 2 * BUCKETS - 1))


def test_bad_bucket_config_is_an_error():
    with pytest.raises(ValueError, match="buckets"):
        deberta_log_bucket(torch.arange(3), 1, 512)


def test_attention_matches_hf_disentangled_self_attention():
    hf = perturb_parameters(HFAttention(hf_config()).eval(), seed=0)
    ours = DisentangledSelfAttention(DIM, HEADS).eval()
    for name in ("q", "k", "v"):
        hf_proj = getattr(hf, {"q": "query_proj", "k": "key_proj", "v": "value_proj"}[name])
        getattr(ours, f"{name}_proj").load_state_dict(hf_proj.state_dict())
    torch.nn.init.eye_(ours.out_proj.weight)  # HF's module stops before its output dense
    torch.nn.init.zeros_(ours.out_proj.bias)

    lengths = [45, 30]  # longer than MAX_DISTANCE: log buckets and clamping in play
    x = torch.randn(2, 45, DIM)
    padding = torch.arange(45)[None, :] >= torch.tensor(lengths)[:, None]  # (B, T)
    rel = torch.nn.functional.layer_norm(torch.randn(2 * BUCKETS, DIM), (DIM,))
    keep = (~padding).long()
    hf_mask = keep[:, None, :, None] * keep[:, None, None, :]  # (B, 1, T, T) as DebertaV2Encoder builds it
    hf_out, _ = hf(x, hf_mask, rel_embeddings=rel)
    our_out = ours(x, padding, rel, deberta_distance_index(45, BUCKETS, MAX_DISTANCE))
    real = ~padding
    torch.testing.assert_close(our_out[real], hf_out[real], atol=TOL, rtol=0)


@pytest.mark.parametrize("name", sorted(PARITY_CONFIGS))
def test_encoder_matches_hf_deberta_v2_model(name):
    """Every weight perturbed, a padded batch of very different lengths (300 tokens: past the
    exact range of 256 buckets and past the log range of 8 buckets)."""
    hf = perturb_parameters(DebertaV2Model(hf_config(**PARITY_CONFIGS[name])).eval(), seed=0)
    encoder = converted(hf)
    tokens = random_tokens([300, 37, 1], generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        hf_out = hf(tokens, attention_mask=tokens.ne(PAD).long()).last_hidden_state
        our_out = encode(encoder, tokens)
    real = tokens.ne(PAD)
    assert hf_out[real].abs().mean() > 0.3  # O(1) outputs: nothing hides in small numbers
    torch.testing.assert_close(our_out[real], hf_out[real], atol=TOL, rtol=0)


def test_encoder_gradients_match_hf():
    hf = perturb_parameters(DebertaV2Model(hf_config(**PARITY_CONFIGS["unusual"])).train(False), seed=1)
    encoder = converted(hf)
    tokens = random_tokens([20, 14], generator=torch.Generator().manual_seed(1))
    real = tokens.ne(PAD)
    hf(tokens, attention_mask=real.long()).last_hidden_state[real].pow(2).sum().backward()
    encode(encoder, tokens)[real].pow(2).sum().backward()
    ours = encoder.layers[0].self_attn.k_proj.weight.grad
    theirs = hf.encoder.layer[0].attention.self.key_proj.weight.grad
    torch.testing.assert_close(ours, theirs, atol=1e-4, rtol=1e-4)
    ours = encoder.rel_layer_norm.weight.grad
    theirs = hf.encoder.LayerNorm.weight.grad
    torch.testing.assert_close(ours, theirs, atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("left_pad", [False, True])
def test_encoder_is_padding_invariant(left_pad):
    torch.manual_seed(2)
    for encoder in (build_encoder(), build_encoder(fie_chunk_size=8, fie_global_layers=1)):
        tokens = random_tokens([23], left_pad=left_pad)
        padded = torch.cat([random_tokens([23, 9, 41], left_pad=left_pad)], 0)
        width = padded.size(1)
        if left_pad:
            padded[0] = torch.cat([torch.ones(width - 23, dtype=torch.long), tokens[0]])
        else:
            padded[0] = torch.cat([tokens[0], torch.ones(width - 23, dtype=torch.long)])
        alone = encode(encoder, tokens)[0]  # (23, C)
        in_batch = encode(encoder, padded)[0][padded[0].ne(1)]  # (23, C)
        torch.testing.assert_close(in_batch, alone, atol=TOL, rtol=0)


def test_fie_with_chunk_at_least_input_length_equals_plain_encoder():
    torch.manual_seed(3)
    plain = build_encoder()
    tokens = random_tokens([40, 33, 7])
    for chunk in (40, 64):
        fie = build_encoder(fie_chunk_size=chunk, fie_global_layers=1)
        fie.load_state_dict(plain.state_dict())
        torch.testing.assert_close(encode(fie, tokens), encode(plain, tokens), atol=TOL, rtol=0)


def test_fie_local_layers_see_only_their_chunk():
    torch.manual_seed(4)
    # every layer local (no global layer): tokens of chunk 2 cannot change the outputs of chunk 1
    fie = build_encoder(fie_chunk_size=8, fie_global_layers=0)
    tokens = random_tokens([21])
    changed = tokens.clone()
    changed[0, 8:] = torch.randint(4, VOCAB, (13,))
    torch.testing.assert_close(encode(fie, changed)[0, :8], encode(fie, tokens)[0, :8], atol=TOL, rtol=0)
    assert not torch.allclose(encode(fie, changed)[0, 8:], encode(fie, tokens)[0, 8:])
    # with a global layer on top, they can
    fused = build_encoder(fie_chunk_size=8, fie_global_layers=1)
    assert not torch.allclose(encode(fused, changed)[0, :8], encode(fused, tokens)[0, :8])


@pytest.mark.parametrize("length", [1, 7, 8, 9, 100])
def test_fie_any_length(length):
    fie = build_encoder(fie_chunk_size=8)
    out = encode(fie, random_tokens([length, max(1, length // 2)]))
    assert out.shape == (2, length, DIM) and torch.isfinite(out).all()


def test_fie_bad_config_is_an_error():
    with pytest.raises(ValueError, match="fie-global-layers"):
        build_encoder(fie_chunk_size=8, fie_global_layers=LAYERS + 1)


def test_each_layer_draws_its_own_dropout_mask_for_the_relative_table():
    """DeBERTa drops out the relative table in every layer (``pos_dropout``), each with its own
    mask; the table each layer's position keys are computed from shows which mask it got."""
    encoder = build_encoder(dropout=0.5).train()
    tables = []
    hooks = [layer.self_attn.k_proj.register_forward_hook(
        lambda module, args, out: tables.append(args[0]) if args[0].dim() == 2 else None)
        for layer in encoder.layers]  # fmt: skip
    torch.manual_seed(5)
    encode(encoder, random_tokens([9, 4]))
    for hook in hooks:
        hook.remove()
    assert len(tables) == LAYERS
    dropped = [table.eq(0) for table in tables]  # (2S, C) each
    assert all(0.3 < mask.float().mean() < 0.7 for mask in dropped)
    assert not any(torch.equal(dropped[i], dropped[j]) for i in range(LAYERS) for j in range(i))


@pytest.mark.parametrize("fie_chunk_size", [0, 8])
def test_every_length_from_one_token_is_padding_invariant(fie_chunk_size):
    """Lengths 1 .. three FiE chunks + 2, each alone and right/left-padded beside the longest."""
    encoder = build_encoder(fie_chunk_size=fie_chunk_size, fie_global_layers=1)
    perturb_parameters(encoder, seed=6)
    longest = 3 * 8 + 2
    generator = torch.Generator().manual_seed(6)
    for length in range(1, longest + 1):
        tokens = random_tokens([length], generator=generator)
        alone = encode(encoder, tokens)[0]  # (T, C)
        assert torch.isfinite(alone).all()
        for left_pad in (False, True):
            batch = random_tokens([longest, length], left_pad=left_pad, generator=generator)
            batch[1] = PAD
            if left_pad:
                batch[1, longest - length:] = tokens[0]
            else:
                batch[1, :length] = tokens[0]
            in_batch = encode(encoder, batch)[1][batch[1].ne(PAD)]
            torch.testing.assert_close(in_batch, alone, atol=TOL, rtol=0)


def test_incremental_decoding_follows_beam_reorders():
    """The whole model (disentangled encoder, standard decoder), perturbed: step-by-step
    decoding with beam search's reorders (within each sentence's beams, after the first step
    and in the middle of decoding, then a finished sentence leaving the batch) equals the full
    forward over each beam's rows."""
    d = dictionary()
    args = Namespace(max_source_positions=64, max_target_positions=32, dropout=0.0, attention_dropout=0.0,
                     fie_chunk_size=8)
    zcodepp_tiny_architecture(args)
    model = ZCodeppModel.build_model(args, Namespace(source_dictionary=d, target_dictionary=d)).eval()
    perturb_parameters(model, seed=9)
    src = random_tokens([30, 5, 1], left_pad=True, generator=torch.Generator().manual_seed(9))
    src = src.repeat_interleave(BEAMS, 0)
    lengths = src.ne(PAD).sum(1)
    prev = torch.randint(4, VOCAB, (len(src), REORDER_STEPS), generator=torch.Generator().manual_seed(10))
    prev[:, 0] = d.eos()
    steps, full = encoder_decoder_with_reorders(model, src, lengths, prev)
    torch.testing.assert_close(steps, full, atol=1e-4, rtol=1e-4)
