"""Pre-training heads (ELECTRA, DeBERTa-v3; Z-Code++ Section 2.1): the discriminator's RTD
head and the generator, whose MLM head is the shared
:class:`~fairseq_ext.modules.lm_head.MaskedLMHead`. Both heads are ``dense -> GELU -> LayerNorm``
and then a projection: onto the (tied) token embeddings for MLM, onto one logit for RTD."""

import torch.nn.functional as F
from fairseq.modules import LayerNorm
from torch import nn


class RTDHead(nn.Module):
    """Hidden states (..., C) -> one replaced-token logit per position (...)."""

    def __init__(self, embed_dim):
        super().__init__()
        self.dense = nn.Linear(embed_dim, embed_dim)
        self.layer_norm = LayerNorm(embed_dim)
        self.out = nn.Linear(embed_dim, 1)

    def forward(self, features):
        return self.out(self.layer_norm(F.gelu(self.dense(features)))).squeeze(-1)  # (...)


class Generator(nn.Module):
    """The RTD generator: a (shallower) Z-Code++ encoder with a
    :class:`~fairseq_ext.modules.lm_head.MaskedLMHead` on its own embeddings."""

    def __init__(self, encoder, head):
        super().__init__()
        self.encoder = encoder
        self.head = head

    def forward(self, tokens, masked):
        """tokens (B, T) with ``<mask>`` at ``masked`` (B, T) -> logits (M, V) at the M masked slots."""
        features = self.encoder(tokens)["encoder_out"][0].transpose(0, 1)  # (B, T, C)
        return self.head(features[masked], self.encoder.embed_tokens.weight)  # (M, V)
