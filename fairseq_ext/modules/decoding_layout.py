"""Linear weights laid out in memory for decoding's few rows (same values, same shapes).

A decoding step multiplies a handful of rows (batch x beam) by every weight of the model, so
its time is the time to stream the weights from memory; how fast the matrix library streams
them depends on how they lie. ``nn.Linear`` keeps its weight as ``(out, in)`` rows and computes
``x @ W^T``; stored as its transpose instead (a ``(in, out)`` buffer seen as ``(out, in)``,
GPT-2's ``Conv1D`` layout), the same product is a plain ``x @ B``. Measured with one thread on
an AMD EPYC and torch's MKL (``benchmarks/RESULTS.md``, "Transformer-SM greedy"), two rows
by a 768 x 3072 weight run at 7.7 GB/s as ``(out, in)`` and 11.2 GB/s as ``(in, out)``, while
the narrowing 3072 x 768 weight runs faster as it is (10.7 against 7.9 GB/s): so a weight is
re-laid only where it widens or keeps the width (``in <= out``). That is a property of the
machine, not of the product: on an Intel Xeon where torch's kernels run AVX-512, the same
two rows by 768 x 3072 ran at 10.9 GB/s transposed and 11.4 as nn.Linear keeps it, 768 x 2304
at 12.3 and 17.4, and Transformer-SM's greedy decoding took 3-6% longer laid out
(``python -m benchmarks.decoding_layout``); so weights are transposed only where torch's CPU
kernels run AVX2 (:func:`transposed_layout_pays`), the machine they were measured faster on.
Projections that read the same input (attention's q, k and v) become column blocks of one
``(in, q + k + v)`` buffer, one product instead of three (on the Xeon, one fused product took
as long as the three).

Nothing is computed differently: the parameters keep their names, shapes and values (views of
the new buffers), ``state_dict`` and ``load_state_dict`` see the same tensors, and the products
are the same multiply-adds in another kernel's order (last-bit rounding). Used by
``make_generation_fast_`` (fairseq-generate, -interactive and the hub call it through
``prepare_for_inference_``), after which fairseq refuses to train the model.
"""

import torch
import torch.nn as nn


def transposed_layout_pays() -> bool:
    """Whether few rows stream faster from transposed weights on this machine: where torch's CPU
    kernels run AVX2 (an AMD EPYC, measured), not AVX-512 (an Intel Xeon, measured: slower there;
    the module's docstring). One answer per machine, so that a machine decodes the same bits
    every run."""
    return torch.backends.cpu.get_cpu_capability() == "AVX2"


def widens(linear: nn.Linear) -> bool:
    """Whether ``linear`` keeps or widens the width (``in <= out``), the products that stream
    faster from the transposed layout where :func:`transposed_layout_pays`."""
    return linear.in_features <= linear.out_features


def transpose_pays(linear: nn.Linear) -> bool:
    """Whether to :func:`store_transposed_` ``linear`` for decoding on this machine."""
    return widens(linear) and transposed_layout_pays()


def store_transposed_(linear: nn.Linear):
    """Keep ``linear``'s weight as an ``(in, out)`` buffer seen as its ``(out, in)`` shape."""
    with torch.no_grad():
        linear.weight.data = linear.weight.data.t().contiguous().t()


def fuse_projections_(*linears: nn.Linear):
    """Rebind the weights (and biases) of ``linears``, which all read the same input, as column
    blocks of one ``(in, sum of outs)`` buffer (one ``(sum of outs,)`` bias), in order."""
    with torch.no_grad():
        weight = torch.cat([linear.weight.t() for linear in linears], dim=1).contiguous()  # (in, sum out)
        has_bias = [linear.bias is not None for linear in linears]
        if any(has_bias) and not all(has_bias):
            raise ValueError("projections fuse only when all or none have a bias")
        bias = torch.cat([linear.bias for linear in linears]) if all(has_bias) else None
        start = 0
        for linear in linears:
            end = start + linear.out_features
            linear.weight.data = weight[:, start:end].t()
            if bias is not None:
                linear.bias.data = bias[start:end]
            start = end


def fused_projection(*linears: nn.Linear):
    """``(weight (in, sum of outs), bias or None)`` when ``linears`` still lie as
    :func:`fuse_projections_` left them, else ``None`` (after ``.half()``, ``.to()`` or any
    rebinding each parameter has its own tensor again, and the caller runs them one by one)."""
    sizes = [linear.out_features for linear in linears]
    total = sum(sizes)
    weights = [linear.weight for linear in linears]
    if weights[0].dim() != 2 or not _one_run(weights, sizes, (1, total), weights[0]):
        return None
    weight = weights[0].as_strided((weights[0].size(1), total), (total, 1))  # (in, sum out)
    biases = [linear.bias for linear in linears]
    if all(b is None for b in biases):
        return weight, None
    if any(b is None for b in biases) or not _one_run(biases, sizes, (1,), weights[0]):
        return None
    return weight, biases[0].as_strided((total,), (1,))


def _one_run(tensors, sizes, stride, like):
    """Whether ``tensors`` (each with ``stride`` and ``like``'s dtype and device) lie one after
    another in memory, ``sizes[i]`` elements of the run apart (columns of one buffer, or one
    vector's pieces)."""
    start, offset = tensors[0].data_ptr(), 0
    for tensor, size in zip(tensors, sizes):
        if (tensor.dtype != like.dtype or tensor.device != like.device or tensor.stride() != stride
                or tensor.data_ptr() != start + offset * tensor.element_size()):
            return False
        offset += size
    return True
