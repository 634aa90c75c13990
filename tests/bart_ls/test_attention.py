"""BART-LS encoder attention: block cores against dense masked attention, padding invariance,
pooled attention reductions, and the mask pictures."""

import pytest
import torch
import torch.nn.functional as F

from fairseq_ext.bart_ls import masks
from fairseq_ext.bart_ls.attention import (
    BlockAttention,
    BlockSparseSelfAttention,
    GlobalBlockAttention,
    OverlappingBlockAttention,
    build_block_core,
)
from fairseq_ext.bart_ls.pooling import PooledAttention
from fairseq_ext.modules.alignment import real_tokens_first
from parity import perturb_parameters

BATCH, HEADS, DIM = 2, 2, 4


def dense_reference(q, k, v, allowed, padding_mask):
    """Plain softmax attention over a dense (T, T) pattern and key padding."""
    scores = q @ k.transpose(-1, -2) / q.size(-1) ** 0.5  # (B, H, T, T)
    mask = allowed.unsqueeze(0).unsqueeze(0) & ~padding_mask[:, None, None, :]  # (B, 1, T, T)
    scores = scores.masked_fill(~mask, float("-inf"))
    return torch.softmax(scores, dim=-1) @ v  # (B, H, T, D)


def random_qkv(length, seed=0):
    gen = torch.Generator().manual_seed(seed)
    return [torch.randn(BATCH, HEADS, length, DIM, generator=gen) for _ in range(3)]


def test_mask_pictures():
    assert masks.local_block_mask(4, 2).int().tolist() == [[1, 1, 0, 0], [1, 1, 0, 0], [0, 0, 1, 1], [0, 0, 1, 1]]
    overlap = masks.overlapping_block_mask(8, 4).int()
    assert overlap[0].tolist() == [1, 1, 1, 1, 1, 1, 0, 0]
    assert overlap[7].tolist() == [0, 0, 1, 1, 1, 1, 1, 1]
    glob = masks.global_block_mask(8, 4, 1).int()
    assert glob[0].tolist() == [1] * 8 and glob[4].tolist() == [1] * 8
    assert glob[5].tolist() == [1, 0, 0, 0, 1, 1, 1, 1]


def test_real_tokens_first_roundtrip():
    pad = torch.tensor([[True, True, False, False, False], [False, False, False, True, True]])
    index, inverse = real_tokens_first(pad)
    assert pad.gather(1, index).tolist() == [[False, False, False, True, True]] * 2
    x = torch.arange(10).view(2, 5)
    assert torch.equal(x.gather(1, index).gather(1, inverse), x)


@pytest.mark.parametrize(
    "core,dense",
    [
        (BlockAttention(), lambda t, w: masks.local_block_mask(t, w)),
        (OverlappingBlockAttention(), lambda t, w: masks.overlapping_block_mask(t, w)),
        (GlobalBlockAttention(num_global=2), lambda t, w: masks.global_block_mask(t, w, 2)),
    ],
    ids=["block", "overlapping", "global"],
)
def test_core_matches_dense_masked_attention(core, dense):
    length, block = 24, 6
    q, k, v = random_qkv(length)
    padding_mask = torch.zeros(BATCH, length, dtype=torch.bool)
    padding_mask[1, 17:] = True  # the second row has 17 real tokens, the last block all padding
    out = core(q, k, v, padding_mask, block)
    expected = dense_reference(q, k, v, dense(length, block), padding_mask)
    real = ~padding_mask
    torch.testing.assert_close(out[0], expected[0], atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(out[1][:, real[1]], expected[1][:, real[1]], atol=1e-5, rtol=1e-5)


def build_attention(mechanism, pooling, block=8, embed=8, heads=2, seed=0):
    torch.manual_seed(seed)
    pool = PooledAttention(embed, heads, kernel_size=4, stride=3, padding=2) if pooling else None
    module = BlockSparseSelfAttention(embed, heads, build_block_core(mechanism, num_global=2), block, pooling=pool)
    return module.eval()


@pytest.mark.parametrize("pooling", [False, True], ids=["plain", "pooled"])
@pytest.mark.parametrize("mechanism", ["block", "overlapping", "global"])
def test_padding_does_not_change_real_outputs(mechanism, pooling):
    attention = build_attention(mechanism, pooling)
    real_len, extra = 29, 13
    x = torch.randn(real_len, 1, 8)  # (T, B, C)
    alone, _ = attention(x, x, x, key_padding_mask=None)
    filler = torch.randn(extra, 1, 8)
    for side in ("left", "right"):
        padded = torch.cat([filler, x] if side == "left" else [x, filler], dim=0)  # (T + extra, 1, C)
        batch = torch.cat([padded, torch.randn_like(padded)], dim=1)  # a second, unpadded row
        pad = torch.zeros(2, real_len + extra, dtype=torch.bool)
        if side == "left":
            pad[0, :extra] = True
        else:
            pad[0, real_len:] = True
        out, _ = attention(batch, batch, batch, key_padding_mask=pad)
        real = out[extra:, 0] if side == "left" else out[:real_len, 0]
        torch.testing.assert_close(real, alone[:, 0], atol=1e-5, rtol=1e-5)
        assert out[pad[0].nonzero().squeeze(1), 0].abs().max() == 0  # padding rows are zeroed


@pytest.mark.parametrize("mechanism", ["block", "overlapping", "global"])
def test_one_block_is_full_attention(mechanism):
    """Block >= length: every mechanism reduces to full (padding-masked) attention."""
    attention = build_attention(mechanism, pooling=False, block=64)
    x = torch.randn(20, 2, 8)
    pad = torch.zeros(2, 20, dtype=torch.bool)
    pad[1, :5] = True
    out, _ = attention(x, x, x, key_padding_mask=pad)
    full = torch.nn.MultiheadAttention(8, 2, bias=True)
    full.in_proj_weight.data = torch.cat([attention.q_proj.weight, attention.k_proj.weight, attention.v_proj.weight])
    full.in_proj_bias.data = torch.cat([attention.q_proj.bias, attention.k_proj.bias, attention.v_proj.bias])
    full.out_proj.load_state_dict(attention.out_proj.state_dict())
    expected, _ = full(x, x, x, key_padding_mask=pad, need_weights=False)
    torch.testing.assert_close(out[:, 0], expected[:, 0], atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(out[5:, 1], expected[5:, 1], atol=1e-5, rtol=1e-5)


def test_pooling_with_unit_kernel_is_full_attention():
    """kernel 1, stride 1, no padding: pooled keys are the keys, so it is ordinary attention."""
    torch.manual_seed(0)
    pool = PooledAttention(8, 2, kernel_size=1, stride=1, padding=0).eval()
    x = torch.randn(2, 11, 8)  # (B, T, C)
    pad = torch.zeros(2, 11, dtype=torch.bool)
    pad[1, 7:] = True
    full = torch.nn.MultiheadAttention(8, 2, batch_first=True)
    full.in_proj_weight.data = torch.cat([pool.q_proj.weight, pool.k_proj.weight, pool.v_proj.weight])
    full.in_proj_bias.data = torch.cat([pool.q_proj.bias, pool.k_proj.bias, pool.v_proj.bias])
    full.out_proj.load_state_dict(pool.out_proj.state_dict())
    expected, _ = full(x, x, x, key_padding_mask=pad, need_weights=False)
    torch.testing.assert_close(pool(x, pad), expected, atol=1e-5, rtol=1e-5)


def test_pooled_keys_are_window_means():
    """Keys/values are averages of ``kernel`` projected rows (padding rows count as zero)."""
    torch.manual_seed(0)
    pool = PooledAttention(4, 1, kernel_size=2, stride=2, padding=0).eval()
    x = torch.randn(1, 6, 4)
    pad = torch.tensor([[False] * 5 + [True]])
    k = pool.k_proj(x) * (~pad).unsqueeze(-1)
    v = pool.v_proj(x) * (~pad).unsqueeze(-1)
    k_pooled = (k[:, 0::2] + k[:, 1::2]) / 2  # (1, 3, 4)
    v_pooled = (v[:, 0::2] + v[:, 1::2]) / 2
    expected = pool.out_proj(F.scaled_dot_product_attention(pool.q_proj(x), k_pooled, v_pooled))
    torch.testing.assert_close(pool(x, pad), expected, atol=1e-5, rtol=1e-5)


def test_bad_configurations_raise():
    with pytest.raises(ValueError, match="even block size"):
        OverlappingBlockAttention()(*random_qkv(6), torch.zeros(BATCH, 6, dtype=torch.bool), 3)
    with pytest.raises(ValueError, match="unknown block attention"):
        build_block_core("sliding")
    with pytest.raises(ValueError, match="attn_mask"):
        attention = build_attention("block", pooling=False)
        x = torch.randn(4, 1, 8)
        attention(x, x, x, attn_mask=torch.zeros(4, 4))


SWEEP_BLOCK = 4
DENSE_PATTERNS = {
    "block": lambda t, w: masks.local_block_mask(t, w),
    "overlapping": lambda t, w: masks.overlapping_block_mask(t, w),
    "global": lambda t, w: masks.global_block_mask(t, w, 2),
}


def dense_module_reference(attention, x, pattern, block):
    """The module's projections around plain softmax attention over a dense (L, L) pattern, for
    one row ``x`` (L, C) of real tokens laid out from position 0 (as the module aligns them)."""
    length = x.size(0)

    def heads(y):
        return y.view(length, attention.num_heads, attention.head_dim).transpose(0, 1).unsqueeze(0)

    q, k, v = heads(attention.q_proj(x)), heads(attention.k_proj(x)), heads(attention.v_proj(x))
    out = dense_reference(q, k, v, pattern(length, block), torch.zeros(1, length, dtype=torch.bool))
    return attention.out_proj(out[0].transpose(0, 1).reshape(length, -1))  # (L, C)


def length_sweep(mechanism, pooling, seed):
    """A perturbed attention module (blocks of ``SWEEP_BLOCK``), the longest row (``filler``,
    three blocks plus two) and one input of every length from 1 token to that, all ``(L, 1, 8)``."""
    attention = perturb_parameters(build_attention(mechanism, pooling=pooling, block=SWEEP_BLOCK), seed=seed)
    generator = torch.Generator().manual_seed(seed)
    filler = torch.randn(3 * SWEEP_BLOCK + 2, 1, 8, generator=generator)
    return attention, filler, [torch.randn(n, 1, 8, generator=generator) for n in range(1, len(filler) + 1)]


@pytest.mark.parametrize("mechanism", sorted(DENSE_PATTERNS))
def test_every_length_matches_dense_masked_attention(mechanism):
    """Every length from 1 token to three blocks plus two, alone and left-padded beside the
    longest row (as fairseq collates sources), against dense masked attention; global
    attention with 2 global tokens per block covers rows no longer than the global count."""
    attention, filler, inputs = length_sweep(mechanism, pooling=False, seed=3)
    longest = len(filler)
    with torch.no_grad():
        for x in inputs:  # (L, 1, C)
            length = len(x)
            alone, _ = attention(x, x, x)
            block = masks.effective_block_size(length, SWEEP_BLOCK)
            expected = dense_module_reference(attention, x[:, 0], DENSE_PATTERNS[mechanism], block)
            torch.testing.assert_close(alone[:, 0], expected, atol=1e-5, rtol=1e-5)

            batch = torch.cat([filler, torch.cat([torch.zeros(longest - length, 1, 8), x])], dim=1)  # (T, 2, C)
            pad = torch.zeros(2, longest, dtype=torch.bool)
            pad[1, : longest - length] = True
            out, _ = attention(batch, batch, batch, key_padding_mask=pad)
            block = masks.effective_block_size(longest, SWEEP_BLOCK)
            expected = dense_module_reference(attention, x[:, 0], DENSE_PATTERNS[mechanism], block)
            torch.testing.assert_close(out[longest - length:, 1], expected, atol=1e-5, rtol=1e-5)
            assert out[: longest - length, 1].abs().max() == 0 if length < longest else True


@pytest.mark.parametrize("mechanism", sorted(DENSE_PATTERNS))
def test_every_length_with_pooling_is_padding_invariant(mechanism):
    """Pooled attention at every length from 1 token: finite, and the same alone as left- or
    right-padded beside the longest row."""
    attention, filler, inputs = length_sweep(mechanism, pooling=True, seed=4)
    longest = len(filler)
    with torch.no_grad():
        for x in inputs:
            length = len(x)
            alone, _ = attention(x, x, x)
            assert torch.isfinite(alone).all()
            gap = torch.zeros(longest - length, 1, 8)
            for side in ("left", "right"):
                row = torch.cat([gap, x] if side == "left" else [x, gap])
                batch = torch.cat([filler, row], dim=1)
                pad = torch.zeros(2, longest, dtype=torch.bool)
                if side == "left":
                    pad[1, : longest - length] = True
                else:
                    pad[1, length:] = True
                out, _ = attention(batch, batch, batch, key_padding_mask=pad)
                real = out[~pad[1], 1]
                torch.testing.assert_close(real, alone[:, 0], atol=1e-5, rtol=1e-5)
