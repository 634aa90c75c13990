"""The memory-efficient disentangled attention (queries in chunks, each chunk's band of relative
buckets) equals the full-score path, forward and backward, and never builds a T x T tensor."""

from argparse import Namespace

import pytest
import torch
from fairseq.models.transformer import TransformerConfig
from torch.utils._python_dispatch import TorchDispatchMode
from transformers import DebertaV2Config
from transformers.models.deberta_v2.modeling_deberta_v2 import DisentangledSelfAttention as HFAttention

from fairseq_ext.modules.relative_position import (
    deberta_distance_index,
    deberta_log_bucket,
    relative_band,
    relative_index_rows,
)
from fairseq_ext.zcodepp.disentangled_attention import DisentangledSelfAttention
from fairseq_ext.zcodepp.encoder import ZCodeEncoder
from parity import perturb_parameters
from toys import toy_dictionary
from user_dir.models.zcodepp import zcodepp_tiny_architecture

TOL = 1e-5
DIM, HEADS = 24, 3
# (buckets, max distance): log buckets and clamping in play at these lengths; and a table so
# wide that every distance up to 32 keeps its own bucket (position buckets in effect off)
POSITIONS = {"log_buckets": (8, 20), "exact_buckets": (64, 128)}


def padded(lengths, generator):
    """Inputs (B, T, C) and a right-padding mask (B, T) for rows of ``lengths``."""
    length = max(lengths)
    x = torch.randn(len(lengths), length, DIM, generator=generator)
    padding = torch.arange(length)[None, :] >= torch.tensor(lengths)[:, None]  # (B, T)
    return x, padding


def attention_pair(chunk, seed=0):
    """The same perturbed attention twice: full scores, and chunks of ``chunk`` queries."""
    full = perturb_parameters(DisentangledSelfAttention(DIM, HEADS), seed=seed).eval()
    chunked = DisentangledSelfAttention(DIM, HEADS, query_chunk_size=chunk).eval()
    chunked.load_state_dict(full.state_dict())
    return full, chunked


def run(attention, x, padding, rel, index):
    """Output, and the gradients of a loss that weighs every output differently."""
    x = x.clone().requires_grad_()
    rel = rel.clone().requires_grad_()
    attention.zero_grad()
    out = attention(x, padding, rel, index)  # (B, T, C)
    weights = torch.linspace(-1, 1, out.numel()).view_as(out)
    (out * weights).masked_fill(padding.unsqueeze(-1), 0).sum().backward()
    grads = {"x": x.grad, "rel": rel.grad}
    grads.update({name: p.grad.clone() for name, p in attention.named_parameters()})
    return out, grads


@pytest.mark.parametrize("positions", sorted(POSITIONS))
@pytest.mark.parametrize("length", [1, 2, 7, 16, 33])
@pytest.mark.parametrize("chunk", [1, 3, 8])
def test_band_rows_equal_the_full_index(positions, length, chunk):
    buckets, max_distance = POSITIONS[positions]
    distance_index = deberta_distance_index(length, buckets, max_distance)  # (2T-1,)
    i, j = torch.arange(length)[:, None], torch.arange(length)[None, :]
    full = (deberta_log_bucket(i - j, buckets, max_distance) + buckets).clamp(0, 2 * buckets - 1)  # (T, T)
    for start in range(0, length, chunk):
        end = min(start + chunk, length)
        assert torch.equal(relative_index_rows(distance_index, start, end), full[start:end])
        assert relative_band(distance_index, start, end) == (int(full[start:end].min()), int(full[start:end].max()))


@pytest.mark.parametrize("positions", sorted(POSITIONS))
@pytest.mark.parametrize("lengths,chunk", [
    ([1], 4),  # one token
    ([2, 1], 1),  # one query per chunk
    ([13, 5, 1], 4),  # not a multiple of the chunk; a row of one token
    ([33, 20], 8),  # longer than the log range's max distance (log_buckets)
    ([40, 40], 16),  # a multiple of the chunk, no padding
])
def test_chunked_equals_full_scores_forward_and_backward(positions, lengths, chunk):
    buckets, max_distance = POSITIONS[positions]
    generator = torch.Generator().manual_seed(len(lengths) * 100 + chunk)
    x, padding = padded(lengths, generator)
    rel = torch.nn.functional.layer_norm(torch.randn(2 * buckets, DIM, generator=generator), (DIM,))
    index = deberta_distance_index(x.size(1), buckets, max_distance)
    full, chunked = attention_pair(chunk)
    full_out, full_grads = run(full, x, padding, rel, index)
    chunked_out, chunked_grads = run(chunked, x, padding, rel, index)
    real = ~padding
    torch.testing.assert_close(chunked_out[real], full_out[real], atol=TOL, rtol=0)
    assert full_out[real].abs().mean() > 0.1  # O(1) outputs: the comparison means something
    for name, grad in full_grads.items():
        torch.testing.assert_close(chunked_grads[name], grad, atol=TOL, rtol=0, msg=name)


def test_chunked_equals_hf_deberta():
    """An independent oracle: HF's DeBERTa-v2 attention (c2p + p2c, shared keys, log buckets)."""
    buckets, max_distance = POSITIONS["log_buckets"]
    hf = perturb_parameters(HFAttention(DebertaV2Config(
        hidden_size=DIM, num_attention_heads=HEADS, relative_attention=True, position_buckets=buckets,
        max_relative_positions=max_distance, pos_att_type=["p2c", "c2p"], share_att_key=True,
        hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
    )).eval(), seed=3)
    ours = DisentangledSelfAttention(DIM, HEADS, query_chunk_size=5).eval()
    for name, hf_name in (("q", "query_proj"), ("k", "key_proj"), ("v", "value_proj")):
        getattr(ours, f"{name}_proj").load_state_dict(getattr(hf, hf_name).state_dict())
    torch.nn.init.eye_(ours.out_proj.weight)  # HF's module stops before its output dense
    torch.nn.init.zeros_(ours.out_proj.bias)
    x, padding = padded([37, 22], torch.Generator().manual_seed(5))
    rel = torch.nn.functional.layer_norm(torch.randn(2 * buckets, DIM), (DIM,))
    keep = (~padding).long()
    hf_out, _ = hf(x, keep[:, None, :, None] * keep[:, None, None, :], rel_embeddings=rel)
    our_out = ours(x, padding, rel, deberta_distance_index(37, buckets, max_distance))
    torch.testing.assert_close(our_out[~padding], hf_out[~padding], atol=TOL, rtol=0)


class LargestTensor(TorchDispatchMode):
    """Records the largest storage (bytes) of any tensor an operator returns (views count as
    their storage, which they share)."""

    def __init__(self):
        super().__init__()
        self.nbytes = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        for tensor in out if isinstance(out, (tuple, list)) else [out]:
            if isinstance(tensor, torch.Tensor):
                self.nbytes = max(self.nbytes, tensor.untyped_storage().nbytes())
        return out


@pytest.mark.parametrize("chunk", [0, 16])
def test_no_tensor_grows_with_length_squared(chunk):
    """Forward and backward of a 256-token input: with chunks of 16 queries no tensor holds
    T x T entries (scores, index) -- the largest is a (B, H, c, T) chunk, the (B, H, T, 2S)
    p2c table or a (c, T) long index; the full path builds (B, H, T, T)."""
    length, buckets = 256, 8
    attention = DisentangledSelfAttention(DIM, HEADS, query_chunk_size=chunk)
    x = torch.randn(1, length, DIM, requires_grad=True)
    rel = torch.randn(2 * buckets, DIM, requires_grad=True)
    padding = torch.zeros(1, length, dtype=torch.bool)
    index = deberta_distance_index(length, buckets, 20)
    with LargestTensor() as largest:
        attention(x, padding, rel, index).sum().backward()
    fp32, int64 = 4, 8
    if chunk:
        assert largest.nbytes <= max(HEADS * max(chunk, 2 * buckets) * length * fp32, chunk * length * int64)
    else:
        assert largest.nbytes >= HEADS * length * length * fp32  # the check can see a T x T tensor


def build_encoder(**options):
    args = Namespace(encoder_embed_dim=DIM, encoder_ffn_embed_dim=2 * DIM, encoder_layers=3,
                     encoder_attention_heads=HEADS, dropout=0.0, attention_dropout=0.0, **options)
    zcodepp_tiny_architecture(args)
    d = toy_dictionary(40)
    embed = torch.nn.Embedding(len(d), DIM, padding_idx=d.pad())
    return ZCodeEncoder(TransformerConfig.from_namespace(args), d, embed), d


@pytest.mark.parametrize("fie_chunk_size", [0, 8])
@pytest.mark.parametrize("normalize_before", [False, True])
def test_encoder_chunked_equals_full_with_left_padding(fie_chunk_size, normalize_before):
    """Whole encoder (FiE on and off, pre- and post-LayerNorm), left-padded batch: the global
    layers' chunked path (chunks of 6 queries, not dividing any length) == full scores."""
    options = dict(fie_chunk_size=fie_chunk_size, encoder_normalize_before=normalize_before)
    full, d = build_encoder(attention_chunk_size=0, **options)
    chunked, _ = build_encoder(attention_chunk_size=6, **options)
    perturb_parameters(full, seed=7)
    chunked.load_state_dict(full.state_dict())
    lengths = [29, 11, 1]
    tokens = torch.full((3, 29), d.pad())
    generator = torch.Generator().manual_seed(1)
    for row, n in enumerate(lengths):
        tokens[row, 29 - n:] = torch.randint(d.nspecial, len(d), (n,), generator=generator)
    outputs = []
    for encoder in (full, chunked):
        out = encoder(tokens)["encoder_out"][0]  # (T, B, C)
        weighted = out * torch.linspace(-1, 1, out.numel()).view_as(out)
        weighted.masked_fill(tokens.eq(d.pad()).t()[..., None], 0).sum().backward()
        outputs.append((out, {name: p.grad for name, p in encoder.named_parameters()}))
    (full_out, full_grads), (chunked_out, chunked_grads) = outputs
    real = tokens.ne(d.pad()).t()  # (T, B)
    torch.testing.assert_close(chunked_out[real], full_out[real], atol=TOL, rtol=0)
    for name, grad in full_grads.items():
        torch.testing.assert_close(chunked_grads[name], grad, atol=TOL, rtol=0, msg=name)


def test_negative_chunk_size_is_an_error():
    with pytest.raises(ValueError, match="--attention-chunk-size"):
        DisentangledSelfAttention(DIM, HEADS, query_chunk_size=-1)
