"""Shared helpers of the parity and decoding tests of every family.

* :func:`perturb_parameters` overwrites every parameter of a model (HF's or ours)
  deterministically, so that a converter that swaps two LayerNorms, drops a bias or mixes up
  two projections cannot hide behind default initialization (unit gains, zero biases, weights
  so small that outputs barely depend on them): LayerNorm gains are drawn in ``1 +- 0.1``,
  every bias is non-zero, and weights are scaled to their fan-in so that outputs are O(1).
* :func:`incremental_with_reorders` decodes step by step and reorders the beams (with
  repeats, as beam search does) in the middle of decoding, returning what a full forward pass
  over the reordered rows must equal; :data:`BEAM_REORDERS` are such reorders for
  :data:`SENTENCES` sentences of :data:`BEAMS` beams each.
"""

import math

import torch
from torch import nn

GAIN_SPREAD = 0.1  # LayerNorm gains are uniform in [1 - spread, 1 + spread]
BIAS_STD = 0.1  # every bias and LayerNorm shift ~ N(0, BIAS_STD)
EMBEDDING_STD = 1.0  # embedding tables ~ N(0, 1): O(1) inputs


def _is_layer_norm(module):
    return isinstance(module, nn.LayerNorm) or "layernorm" in type(module).__name__.lower()


def _fan_in(module, name, param):
    """Inputs per output unit of a weight: ``nn.Linear`` is ``(out, in)``, HF's ``Conv1D``
    (GPT/GPT-2) ``(in, out)``; any other matrix is taken as ``(..., in)``."""
    if type(module).__name__ == "Conv1D" and name == "weight":
        return param.size(0)
    return param.size(-1)


def perturb_parameters(model, seed=0):
    """Overwrite every parameter of ``model`` in place (deterministic in ``seed``); returns it.

    * LayerNorm (``nn.LayerNorm`` or any module whose class name contains "LayerNorm"):
      gain ``U(1 - 0.1, 1 + 0.1)``, shift ``N(0, 0.1)``;
    * embeddings (``nn.Embedding``): ``N(0, 1)``;
    * any other parameter with one dimension (biases): ``N(0, 0.1)``;
    * any other matrix: ``N(0, 1 / fan_in)`` (O(1) outputs from O(1) inputs).

    Parameters shared between modules (tied embeddings) are drawn once.
    """
    generator = torch.Generator().manual_seed(seed)
    seen = set()

    def normal(param, std):
        return torch.randn(param.shape, generator=generator) * std

    with torch.no_grad():
        for _, module in model.named_modules():
            for name, param in module.named_parameters(recurse=False):
                if id(param) in seen:
                    continue
                seen.add(id(param))
                if _is_layer_norm(module) and name == "weight":
                    value = 1 + (2 * torch.rand(param.shape, generator=generator) - 1) * GAIN_SPREAD
                elif isinstance(module, nn.Embedding):
                    value = normal(param, EMBEDDING_STD)
                elif param.dim() == 1:
                    value = normal(param, BIAS_STD)
                else:
                    value = normal(param, 1 / math.sqrt(_fan_in(module, name, param)))
                param.copy_(value.to(param.dtype))
    return model


#: A batch of decoding rows is SENTENCES sentences x BEAMS beams, sentence-major (row
#: ``s * BEAMS + k``): the source of a row is its sentence's (``src.repeat_interleave(BEAMS, 0)``).
SENTENCES, BEAMS = 3, 2
#: Reorders as fairseq's beam search makes them: beams move (and duplicate) within their
#: sentence, after the first step and in the middle of decoding, and before step 5 sentence 1
#: finishes and leaves the batch (it shrinks to 4 rows). A beam never moves to another
#: sentence: fairseq's encoder-decoder attention keeps its cached keys when the batch size is
#: unchanged, which is right only for beams of the same source.
BEAM_REORDERS = {
    1: torch.tensor([1, 0, 2, 2, 5, 4]),
    3: torch.tensor([1, 1, 3, 2, 4, 5]),
    5: torch.tensor([0, 1, 4, 4]),
}
#: decoding steps BEAM_REORDERS needs (the decoder input has at least this many tokens)
REORDER_STEPS = 7


def incremental_with_reorders(step, reorder, batch_size, num_steps, reorders):
    """Decode ``num_steps`` steps one at a time, reordering the beams in the middle.

    Args:
        step: ``step(t, rows) -> (B, V)`` output of decoding step ``t`` (0-based) for the
            current beams, whose batch rows are ``rows`` (a LongTensor ``(B,)``): the caller
            feeds ``prev_output_tokens[rows, : t + 1]`` with its incremental state.
        reorder: ``reorder(order)`` applies a beam reorder to the incremental state and the
            encoder output (what fairseq's ``SequenceGenerator`` does between steps).
        batch_size: B at the first step.
        num_steps: steps to decode.
        reorders: ``{t: order}``; ``order`` (a LongTensor of beam indices, repeats allowed,
            as long as the new batch) is applied before step ``t``; ``t >= 2`` reorders in the
            middle of decoding, not only before the first step (e.g. :data:`BEAM_REORDERS`).

    Returns ``(outputs (B', num_steps, V), rows (B',))``: each beam's history follows it
    through the reorders, so a full forward pass over the original batch rows ``rows`` must
    give ``outputs`` at every step.
    """
    rows = torch.arange(batch_size)
    outputs = []
    for t in range(num_steps):
        if t in reorders:
            order = reorders[t]
            reorder(order)
            rows = rows[order]
            outputs = [out[order] for out in outputs]
        outputs.append(step(t, rows))
    return torch.stack(outputs, 1), rows


def encoder_decoder_with_reorders(model, src, lengths, prev, full=None):
    """:func:`incremental_with_reorders` for a fairseq encoder-decoder ``model`` (its
    ``encoder``, ``decoder`` with an incremental state, ``reorder_encoder_out`` and
    ``reorder_incremental_state_scripting``) under :data:`BEAM_REORDERS`, without gradients.

    Returns ``(steps, full_output)``: the last-position logits of each step and the logits of a
    full forward pass over the reordered rows, ``full(rows)`` (default
    ``model(src[rows], lengths[rows], prev[rows])[0]``), which must be equal.
    """
    if full is None:
        def full(rows):
            return model(src[rows], lengths[rows], prev[rows])[0]

    with torch.no_grad():
        live = {"encoder_out": model.encoder(src, lengths), "state": {}}

        def step(t, rows):
            logits, _ = model.decoder(prev[rows, : t + 1], live["encoder_out"], incremental_state=live["state"])
            return logits[:, -1]

        def reorder(order):
            model.decoder.reorder_incremental_state_scripting(live["state"], order)
            live["encoder_out"] = model.encoder.reorder_encoder_out(live["encoder_out"], order)

        steps, rows = incremental_with_reorders(step, reorder, len(src), prev.size(1), BEAM_REORDERS)
        return steps, full(rows)
