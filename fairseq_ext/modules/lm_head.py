"""The masked-LM head of BERT, ELECTRA and DeBERTa: ``dense -> GELU -> LayerNorm``, then a
projection onto the (tied) token embeddings plus a bias per vocabulary entry.

s2s-ft predicts every target token with it (HF ``BertOnlyMLMHead`` / RoBERTa's ``lm_head``,
loaded one to one); Z-Code++'s generator predicts the masked tokens of phase-one pre-training
with it (Section 2.1).
"""

import torch
import torch.nn.functional as F
from fairseq.modules import LayerNorm
from torch import nn


class MaskedLMHead(nn.Module):
    """Hidden states (..., C) -> vocabulary logits (..., V) (dense, GELU, LayerNorm, tied projection).
    ``tied_weight`` is the (V, C) embedding registered here as ``weight`` (BERT's layout), or None
    when :meth:`forward` is handed the table at every call."""

    def __init__(self, embed_dim, vocab_size, layer_norm_eps=1e-5, tied_weight=None):
        super().__init__()
        self.dense = nn.Linear(embed_dim, embed_dim)
        self.layer_norm = LayerNorm(embed_dim, eps=layer_norm_eps)
        self.bias = nn.Parameter(torch.zeros(vocab_size))  # (V,)
        self.weight = tied_weight

    def forward(self, features, embedding_weight=None):
        """``features`` (..., C) -> logits (..., V), onto ``embedding_weight`` (V, C) when given,
        else onto the tied ``weight``."""
        weight = self.weight if embedding_weight is None else embedding_weight
        if weight is None:
            raise ValueError("this MaskedLMHead has no tied weight: pass embedding_weight")
        x = self.layer_norm(F.gelu(self.dense(features)))  # (..., C)
        return F.linear(x, weight, self.bias)  # (..., V)
