"""Gradient-disentangled embedding sharing (DeBERTa-v3; Z-Code++ Section 2.1, Equation 4).

During pre-training the discriminator (our encoder, and the encoder-decoder built on it) reads
the token embeddings ``E_D = sg(E_G) + E_delta``: the generator's table ``E_G`` learns from the
MLM loss only, ``E_delta`` (initialized to zero) learns from RTD (and CSP). On export the delta
is folded in, ``E_D = E_G + E_delta``, and the generator and RTD head are dropped
(:func:`fold_gdes_state_dict`), which leaves an ordinary encoder-decoder state dict.
"""

import torch
import torch.nn.functional as F
from torch import nn

DELTA_SUFFIX = "embed_tokens.delta"


class GDESEmbedding(nn.Module):
    """``weight = generator_embedding.weight.detach() + delta``; an ``nn.Embedding`` look-alike.

    The generator's embedding is held by reference (it is registered in the generator), so the
    state dict holds it once; only ``delta`` is a parameter of this module.
    """

    def __init__(self, generator_embedding):
        super().__init__()
        self._generator = (generator_embedding,)  # a tuple: not a second registration
        self.num_embeddings, self.embedding_dim = generator_embedding.weight.shape
        self.padding_idx = generator_embedding.padding_idx
        self.delta = nn.Parameter(torch.zeros_like(generator_embedding.weight))  # (V, C)

    @property
    def weight(self):
        return self._generator[0].weight.detach() + self.delta  # (V, C)

    def forward(self, tokens):
        return F.embedding(tokens, self.weight, self.padding_idx)  # (..., C)


class TiedOutputProjection(nn.Module):
    """Decoder output projection onto an embedding's (computed) ``weight``: no parameters."""

    def __init__(self, embedding):
        super().__init__()
        self.embedding = (embedding,)  # a tuple: owned by the encoder and the decoder already

    def forward(self, features):
        return F.linear(features, self.embedding[0].weight)  # (..., V)


def fold_gdes_state_dict(state_dict, generator_prefix="generator.", drop_prefixes=("rtd_head.",)):
    """Export a pre-training state dict in place: ``E_D = E_G + E_delta`` written to every key
    that reads the discriminator's table, the delta, the generator and the RTD head removed.

    Returns True when there was a delta to fold (False leaves ``state_dict`` untouched).
    """
    delta_keys = [k for k in state_dict if k.endswith(DELTA_SUFFIX)]
    if not delta_keys:
        return False
    generator_key = f"{generator_prefix}encoder.embed_tokens.weight"
    if generator_key not in state_dict:
        raise KeyError(f"{delta_keys[0]} found but not the generator's embedding {generator_key}")
    folded = state_dict[generator_key] + state_dict[delta_keys[0]]  # (V, C)
    for key in delta_keys:
        owner = key[: -len(DELTA_SUFFIX)]  # "encoder." or "decoder."
        del state_dict[key]
        state_dict[f"{owner}embed_tokens.weight"] = folded
        if owner == "decoder.":
            state_dict["decoder.output_projection.weight"] = folded
    for key in [k for k in state_dict if k.startswith((generator_prefix, *drop_prefixes))]:
        del state_dict[key]
    return True
