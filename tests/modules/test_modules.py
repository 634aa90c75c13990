"""Shared attention pieces (fairseq_ext.modules): head split/merge, the attention cores,
real-tokens-first alignment, blocking and the MLM head, against direct references."""

import pytest
import torch

from fairseq_ext.modules.alignment import gather_time, real_tokens_first
from fairseq_ext.modules.attention import biased_attention, fused_attention
from fairseq_ext.modules.blocking import pad_to_multiple, split_blocks
from fairseq_ext.modules.lm_head import MaskedLMHead
from fairseq_ext.modules.multihead import merge_heads, split_heads
from fairseq_ext.modules.table_rows import keep_leading_rows


def reference_attention(q, k, v, allowed=None, bias=None):
    """Plain softmax attention, fp64, masked keys at -inf."""
    scores = q.double() @ k.double().transpose(-1, -2)
    if bias is not None:
        scores = scores + bias.double()
    if allowed is not None:
        scores = scores.masked_fill(~allowed, float("-inf"))
    return torch.softmax(scores, dim=-1) @ v.double()


def test_split_and_merge_heads():
    x = torch.randn(2, 5, 12)  # (B, T, C)
    heads = split_heads(x, 3)
    assert torch.equal(heads, x.view(2, 5, 3, 4).transpose(1, 2))  # (B, H, T, D)
    assert torch.equal(merge_heads(heads), x)
    table = torch.randn(7, 12)  # (2S, C): no batch axis
    assert torch.equal(split_heads(table, 3), table.view(7, 3, 4).transpose(0, 1))


@pytest.mark.parametrize("padding", [
    [[1, 1, 0, 0, 0], [0, 0, 0, 1, 1], [1, 1, 1, 1, 1], [0, 0, 0, 0, 0]],  # left, right, all, none
])
def test_real_tokens_first_agrees_with_the_roll_on_one_sided_padding(padding):
    """BART-LS rolled each row by its leading padding (``left_align_index``), Z-Code++ sorted
    the mask stably (``right_align``); on padding at one end of a row, as fairseq collates, the
    two are the same permutation."""
    pad = torch.tensor(padding, dtype=torch.bool)
    positions = torch.arange(pad.size(1))
    first_real = (~pad).long().argmax(dim=1, keepdim=True)
    rolled = (positions + first_real) % pad.size(1)  # the BART-LS formula
    order, inverse = real_tokens_first(pad)
    assert torch.equal(order, rolled)
    x = torch.randn(4, 5, 3)
    assert torch.equal(gather_time(gather_time(x, order), inverse), x)


def test_real_tokens_first_on_padding_inside_a_row():
    """Where the two copies disagreed (padding in the middle of a row, e.g. a concatenation of
    padded pieces) the stable sort is kept: every real token comes first, in order; the roll
    left a pad between real tokens, which would shift block boundaries."""
    pad = torch.tensor([[True, False, True, False, False]])
    order, inverse = real_tokens_first(pad)
    assert order.tolist() == [[1, 3, 4, 0, 2]]
    assert pad.gather(1, order).tolist() == [[False, False, False, True, True]]
    assert torch.equal(order.gather(1, inverse), torch.arange(5).unsqueeze(0))


@pytest.mark.parametrize("length", [1, 2, 5, 8, 9])
def test_pad_to_multiple_and_split_blocks(length):
    x = torch.randn(2, length, 3)
    padding = torch.zeros(2, length, dtype=torch.bool)
    padding[1, length // 2:] = True
    x_padded, padding_padded = pad_to_multiple(x, padding, 4)
    blocks = -(-length // 4)
    assert x_padded.shape == (2, 4 * blocks, 3) and padding_padded.shape == (2, 4 * blocks)
    assert torch.equal(x_padded[:, :length], x) and not x_padded[:, length:].any()
    assert torch.equal(padding_padded[:, :length], padding) and padding_padded[:, length:].all()
    assert split_blocks(x_padded, 4).shape == (2, blocks, 4, 3)
    assert torch.equal(split_blocks(x_padded, 4).flatten(1, 2), x_padded)


def test_fused_attention_matches_softmax_attention_over_any_leading_dims():
    gen = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(2, 3, 4, 6, 8, generator=gen) for _ in range(3))  # (B, H, n, w, D)
    allowed = torch.rand(2, 1, 4, 1, 6, generator=gen) > 0.3  # (B, 1, n, 1, w): key padding per block
    allowed[0, 0, 1] = False  # one block sees nothing: uniform weights, finite
    out = fused_attention(q, k, v, allowed)
    assert out.shape == (2, 3, 4, 6, 8) and torch.isfinite(out).all()
    q_scaled = q / 8**0.5
    expected = reference_attention(q_scaled, k, v, allowed | ~allowed.any(-1, keepdim=True))
    torch.testing.assert_close(out.double(), expected, atol=1e-5, rtol=0)
    everything = torch.ones(1, 1, 1, 1, 6, dtype=torch.bool)
    torch.testing.assert_close(fused_attention(q, k, v, everything), fused_attention(q, k, v), atol=1e-6, rtol=0)


def test_biased_attention_matches_softmax_attention_and_keeps_fp32_scores():
    gen = torch.Generator().manual_seed(1)
    q, k, v = (torch.randn(2, 2, 5, 4, generator=gen) for _ in range(3))
    bias = torch.randn(2, 2, 5, 5, generator=gen)
    padding = torch.tensor([[False] * 5, [False, False, False, True, True]])
    out = biased_attention(q, k, v, padding, bias.clone())
    expected = reference_attention(q, k, v, ~padding[:, None, None, :], bias)
    torch.testing.assert_close(out.double(), expected, atol=1e-6, rtol=0)
    # fp16 inputs with a score bias beyond fp16's range: the scores are summed and normalized in fp32
    big = biased_attention(q.half() * 100, k.half() * 100, v.half(), padding, bias.clone() * 1e5)
    assert big.dtype == torch.float16 and torch.isfinite(big).all()
    with pytest.raises(ValueError, match="fp32"):
        biased_attention(q, k, v, padding, bias.half())


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("bias", [False, True])
def test_biased_attention_on_keys_of_padding_only_stays_finite(dtype, bias):
    # masked_softmax's promise for a row whose keys are all padding: uniform weights, not NaN
    # (a fill at -inf gives -inf - -inf there); row 0 keeps one key, which takes all the weight
    gen = torch.Generator().manual_seed(2)
    q, k, v = (torch.randn(2, 2, 3, 4, generator=gen).to(dtype) for _ in range(3))  # (B, H, T, D)
    padding = torch.tensor([[False, True, True], [True, True, True]])  # (B, S)
    out = biased_attention(q, k, v, padding, torch.randn(2, 2, 3, 3, generator=gen) if bias else None)
    assert out.dtype == dtype and torch.isfinite(out).all()
    torch.testing.assert_close(out[0], v[0, :, :1].expand(2, 3, 4))
    torch.testing.assert_close(out[1].float(), v[1].float().mean(dim=1, keepdim=True).expand(2, 3, 4),
                               atol=0.02, rtol=0)  # fmt: skip


def test_mlm_head_tied_weight_is_registered_or_passed():
    torch.manual_seed(0)
    embedding = torch.nn.Embedding(11, 8)
    tied = MaskedLMHead(8, 11, layer_norm_eps=1e-12, tied_weight=embedding.weight)
    assert "weight" in tied.state_dict() and tied.weight is embedding.weight
    free = MaskedLMHead(8, 11, layer_norm_eps=1e-12)
    free.load_state_dict({k: v for k, v in tied.state_dict().items() if k != "weight"})
    features = torch.randn(3, 8)
    torch.testing.assert_close(tied(features), free(features, embedding.weight), atol=0, rtol=0)
    with pytest.raises(ValueError, match="embedding_weight"):
        free(features)


def test_keep_leading_rows_cuts_only_larger_tables(caplog):
    model_state = {"embed.weight": torch.zeros(5, 2), "positions.weight": torch.zeros(8, 2)}
    checkpoint = {"m.embed.weight": torch.arange(14.0).view(7, 2), "m.positions.weight": torch.zeros(6, 2),
                  "m.other.weight": torch.zeros(9, 2)}
    with caplog.at_level("INFO"):
        keep_leading_rows(checkpoint, model_state, ("embed.weight", "positions.weight", "other.weight"), "m.")
    assert torch.equal(checkpoint["m.embed.weight"], torch.arange(10.0).view(5, 2))  # the leading rows
    assert checkpoint["m.positions.weight"].shape == (6, 2)  # fewer rows: left for load_state_dict to refuse
    assert checkpoint["m.other.weight"].shape == (9, 2)  # not a table of the model
    assert "m.embed.weight: keeping the first 5 of 7 rows" in caplog.text
