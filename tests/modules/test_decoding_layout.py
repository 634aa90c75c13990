"""Weights laid out for decoding's few rows (fairseq_ext.modules.decoding_layout): the same
parameters (names, shapes, values, state_dict) in another memory layout, and a fused product
that is used only while the parameters still lie fused."""

import pytest
import torch
import torch.nn as nn

from fairseq_ext.modules.decoding_layout import fuse_projections_, fused_projection, store_transposed_, widens


def linears(outs, width=6, bias=True, seed=0):
    torch.manual_seed(seed)
    return [nn.Linear(width, out, bias=bias) for out in outs]


@pytest.mark.parametrize("shape", [(1, 1), (1, 5), (5, 1), (6, 6), (3, 9), (9, 3)])
def test_a_transposed_weight_is_the_same_parameter(shape):
    fan_in, fan_out = shape
    (linear,) = linears([fan_out], width=fan_in)
    before, parameter = linear.weight.detach().clone(), linear.weight
    x = torch.randn(4, fan_in)
    expected = linear(x)
    store_transposed_(linear)
    assert linear.weight is parameter and linear.weight.shape == (fan_out, fan_in)
    assert linear.weight.t().is_contiguous()  # an (in, out) buffer
    assert torch.equal(linear.weight, before)
    torch.testing.assert_close(linear(x), expected)
    fresh = nn.Linear(fan_in, fan_out)
    fresh.load_state_dict(linear.state_dict())
    assert torch.equal(fresh.weight, before)
    assert widens(linear) == (fan_in <= fan_out)


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("outs", [(4,), (4, 5, 3), (6, 6, 6), (1, 2)])
def test_fused_projections_are_one_product_of_the_same_weights(outs, bias):
    projections = linears(outs, bias=bias)
    x = torch.randn(7, 6)
    expected = [p(x) for p in projections]
    values = [p.weight.detach().clone() for p in projections]
    assert fused_projection(*projections) is None  # not fused yet
    fuse_projections_(*projections)
    for p, value, out in zip(projections, values, outs):
        assert p.weight.shape == (out, 6) and torch.equal(p.weight, value)
    weight, fused_bias = fused_projection(*projections)
    assert weight.shape == (6, sum(outs)) and weight.is_contiguous()
    assert (fused_bias is None) == (not bias)
    product = x @ weight if fused_bias is None else torch.addmm(fused_bias, x, weight)
    torch.testing.assert_close(product, torch.cat(expected, dim=1))
    for p, e in zip(projections, expected):  # each still works alone
        torch.testing.assert_close(p(x), e)


def test_loading_weights_into_fused_projections_updates_the_fused_product():
    projections = linears((4, 5, 3))
    fuse_projections_(*projections)
    others = linears((4, 5, 3), seed=1)
    for p, other in zip(projections, others):
        p.load_state_dict(other.state_dict())
    weight, bias = fused_projection(*projections)
    x = torch.randn(3, 6)
    torch.testing.assert_close(torch.addmm(bias, x, weight), torch.cat([o(x) for o in others], dim=1))


def test_a_rebound_or_converted_projection_is_no_longer_fused():
    projections = linears((4, 5, 3))
    fuse_projections_(*projections)
    assert fused_projection(*projections) is not None
    assert fused_projection(*reversed(projections)) is None  # another order is not those columns
    assert fused_projection(*projections[:2]) is None  # a part: its columns are not the whole buffer
    converted = [p.double() for p in linears((4, 5, 3))]
    fuse_projections_(*converted)
    for p in converted:
        p.float()  # each parameter gets its own tensor
    assert fused_projection(*converted) is None
    projections[1].weight = nn.Parameter(torch.randn(5, 6))
    assert fused_projection(*projections) is None
    projections = linears((4, 5, 3))
    fuse_projections_(*projections)
    projections[2].bias = nn.Parameter(torch.randn(3))
    assert fused_projection(*projections) is None


def test_projections_with_and_without_a_bias_do_not_fuse():
    with_bias, without = linears((4,)), linears((5,), bias=False)
    with pytest.raises(ValueError, match="all or none"):
        fuse_projections_(*with_bias, *without)
