"""Pre-training heads: the generator's MLM head and the discriminator's RTD head (ELECTRA,
DeBERTa-v3; Z-Code++ Section 2.1). Both are ``dense -> GELU -> LayerNorm`` and then a
projection: onto the (tied) token embeddings for MLM, onto one logit for RTD."""

import torch
import torch.nn.functional as F
from fairseq.modules import LayerNorm
from torch import nn


class MLMHead(nn.Module):
    """Hidden states (..., C) -> vocabulary logits (..., V) through the tied embedding table."""

    def __init__(self, embed_dim, vocab_size):
        super().__init__()
        self.dense = nn.Linear(embed_dim, embed_dim)
        self.layer_norm = LayerNorm(embed_dim)
        self.bias = nn.Parameter(torch.zeros(vocab_size))  # (V,)

    def forward(self, features, embedding_weight):
        x = self.layer_norm(F.gelu(self.dense(features)))  # (..., C)
        return F.linear(x, embedding_weight, self.bias)  # (..., V)


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
    """The RTD generator: a (shallower) Z-Code++ encoder with an MLM head on its own embeddings."""

    def __init__(self, encoder, head):
        super().__init__()
        self.encoder = encoder
        self.head = head

    def forward(self, tokens, masked):
        """tokens (B, T) with ``<mask>`` at ``masked`` (B, T) -> logits (M, V) at the M masked slots."""
        features = self.encoder(tokens)["encoder_out"][0].transpose(0, 1)  # (B, T, C)
        return self.head(features[masked], self.encoder.embed_tokens.weight)  # (M, V)
