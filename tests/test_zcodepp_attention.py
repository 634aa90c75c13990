"""Z-Code++ encoder: parity with HF DeBERTa-v2 (random init, same weights), FiE properties."""

from argparse import Namespace

import pytest
import torch
from fairseq.data import Dictionary
from fairseq.models.transformer import TransformerConfig
from transformers import DebertaV2Config, DebertaV2Model
from transformers.models.deberta_v2.modeling_deberta_v2 import DisentangledSelfAttention as HFAttention
from transformers.models.deberta_v2.modeling_deberta_v2 import make_log_bucket_position

import user_dir  # noqa: F401  (registers zcodepp)
from fairseq_ext.zcodepp.convert import deberta_v2_to_encoder_state
from fairseq_ext.zcodepp.disentangled_attention import DisentangledSelfAttention
from fairseq_ext.zcodepp.encoder import ZCodeEncoder
from fairseq_ext.zcodepp.relative_position import log_bucket_position, relative_position_index
from user_dir.models.zcodepp import zcodepp_tiny_architecture

VOCAB, DIM, HEADS, LAYERS, FFN = 60, 32, 4, 3, 64
BUCKETS, MAX_DISTANCE = 16, 32
TOL = 1e-5


def dictionary(size=VOCAB):
    d = Dictionary()
    for i in range(size - len(d)):
        d.add_symbol(f"w{i}")
    return d


def hf_config():
    return DebertaV2Config(
        vocab_size=VOCAB, hidden_size=DIM, num_hidden_layers=LAYERS, num_attention_heads=HEADS,
        intermediate_size=FFN, hidden_act="gelu", hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
        relative_attention=True, position_buckets=BUCKETS, max_relative_positions=MAX_DISTANCE,
        pos_att_type=["p2c", "c2p"], share_att_key=True, norm_rel_ebd="layer_norm",
        position_biased_input=False, type_vocab_size=0, layer_norm_eps=1e-5, pad_token_id=1,
    )


def build_encoder(fie_chunk_size=0, fie_global_layers=1, layers=LAYERS):
    args = Namespace(
        encoder_embed_dim=DIM, encoder_ffn_embed_dim=FFN, encoder_layers=layers, encoder_attention_heads=HEADS,
        rel_pos_buckets=BUCKETS, max_relative_positions=MAX_DISTANCE, dropout=0.0, attention_dropout=0.0,
        fie_chunk_size=fie_chunk_size, fie_global_layers=fie_global_layers,
    )
    zcodepp_tiny_architecture(args)
    cfg = TransformerConfig.from_namespace(args)
    d = dictionary()
    embed = torch.nn.Embedding(len(d), DIM, padding_idx=d.pad())
    return ZCodeEncoder(cfg, d, embed).eval()


def random_tokens(lengths, pad=1, left_pad=False, generator=None):
    batch, width = len(lengths), max(lengths)
    tokens = torch.full((batch, width), pad, dtype=torch.long)
    for row, n in enumerate(lengths):
        words = torch.randint(4, VOCAB, (n,), generator=generator)
        if left_pad:
            tokens[row, width - n:] = words
        else:
            tokens[row, :n] = words
    return tokens


def encode(encoder, tokens):
    return encoder(tokens)["encoder_out"][0].transpose(0, 1)  # (B, T, C)


def test_log_buckets_match_deberta():
    relative = torch.arange(-3000, 3001)
    for buckets, max_distance in [(256, 512), (BUCKETS, MAX_DISTANCE), (8, 20)]:
        ours = log_bucket_position(relative, buckets, max_distance)
        theirs = make_log_bucket_position(relative, buckets, max_distance).long()
        assert torch.equal(ours, theirs)
    index = relative_position_index(5, 256, 512)
    assert index[0].tolist() == [256, 255, 254, 253, 252] and index[:, 0].tolist() == [256, 257, 258, 259, 260]
    positions = torch.arange(70)
    direct = log_bucket_position(positions[:, None] - positions[None, :], BUCKETS, MAX_DISTANCE) + BUCKETS
    assert torch.equal(relative_position_index(70, BUCKETS, MAX_DISTANCE), direct.clamp(0, 2 * BUCKETS - 1))


def test_bad_bucket_config_is_an_error():
    with pytest.raises(ValueError, match="buckets"):
        log_bucket_position(torch.arange(3), 1, 512)


def test_attention_matches_hf_disentangled_self_attention():
    torch.manual_seed(0)
    hf = HFAttention(hf_config()).eval()
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
    our_out = ours(x, padding, rel, relative_position_index(45, BUCKETS, MAX_DISTANCE))
    real = ~padding
    torch.testing.assert_close(our_out[real], hf_out[real], atol=TOL, rtol=0)


def test_encoder_matches_hf_deberta_v2_model():
    torch.manual_seed(0)
    hf = DebertaV2Model(hf_config()).eval()
    encoder = build_encoder()
    missing, unexpected = encoder.load_state_dict(deberta_v2_to_encoder_state(hf.state_dict()), strict=False)
    assert not unexpected
    assert set(missing) == {"version"}
    tokens = random_tokens([50, 37, 12])
    with torch.no_grad():
        hf_out = hf(tokens, attention_mask=tokens.ne(1).long()).last_hidden_state
        our_out = encode(encoder, tokens)
    real = tokens.ne(1)
    torch.testing.assert_close(our_out[real], hf_out[real], atol=TOL, rtol=0)


def test_encoder_gradients_match_hf():
    torch.manual_seed(1)
    hf = DebertaV2Model(hf_config()).train(False)
    encoder = build_encoder()
    encoder.load_state_dict(deberta_v2_to_encoder_state(hf.state_dict()), strict=False)
    tokens = random_tokens([20, 14])
    real = tokens.ne(1)
    hf(tokens, attention_mask=real.long()).last_hidden_state[real].pow(2).sum().backward()
    encode(encoder, tokens)[real].pow(2).sum().backward()
    ours = encoder.layers[0].self_attn.k_proj.weight.grad
    theirs = hf.encoder.layer[0].attention.self.key_proj.weight.grad
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
