"""A copy mechanism for any decoder that attends to its source: pointer-generator mixing
(See et al. 2017, Section 2.2)::

    P(w) = p_gen * softmax(logits)[w] + (1 - p_gen) * sum_{j : source_j = w} attn_j

    hidden (B, T, C) --+
    attn   (B, T, S) --+--> PointerGenerator --> p_gen (B, T, 1)
    source (S, B, C) --+
    logits (B, T, V), p_gen, attn, source ids (B, S) --> copy_mixture --> P or log P (B, T, V)

Source and target share one vocabulary, so a token is copied by its own id; the mixture is a
normalized distribution, what ``get_normalized_probs`` returns. Coverage (Section 2.3,
:class:`Coverage`): ``c_t = sum_{t' < t} a_t'`` enters the copy scores as ``w_h * c_t,i``.
"""

import torch
from torch import nn

from .attention import masked_softmax

TINY = torch.finfo(torch.float32).tiny
"""Floor under a mixed probability before its log and under the coverage's renormalizing sum,
both computed in fp32 (only reached when a softmax underflows)."""


class PointerGenerator(nn.Module):
    """The gate ``p_gen = sigmoid(w . [hidden; context] + b)`` of See et al. (Eq. 8), with
    ``context = attn @ source_hidden`` the attention's context vector, and optionally the
    pointer's own attention (:meth:`attention`).

    Args:
        embed_dim: width of the decoder's hidden states and of the source states.
        attention_dim: when above 0, a single-head attention of this width from the decoder's
            output states over the source's output states (Vinyals et al., "Pointer Networks",
            2015), for a decoder whose own attention should not double as the copy attention.
    """

    def __init__(self, embed_dim: int, attention_dim: int = 0):
        super().__init__()
        self.gate = nn.Linear(2 * embed_dim, 1)
        self.query = nn.Linear(embed_dim, attention_dim) if attention_dim else None
        self.key = nn.Linear(embed_dim, attention_dim) if attention_dim else None

    def attention(self, hidden, source_hidden, source_padding):
        """The pointer's own attention: ``hidden (B, T, C)``, ``source_hidden (S, B, C)``,
        ``source_padding`` bool ``(B, S)`` (True = pad) -> ``attn (B, T, S)``, rows summing to 1
        and 0 on padding."""
        if self.query is None:
            raise ValueError("this pointer-generator has no attention of its own (attention_dim=0)")
        q = self.query(hidden)  # (B, T, D)
        k = self.key(source_hidden.transpose(0, 1))  # (B, S, D)
        scores = (q @ k.transpose(1, 2) * q.size(-1) ** -0.5).float()  # (B, T, S)
        return masked_softmax(scores[:, None], source_padding)[:, 0]  # (B, T, S)

    def forward(self, hidden, attn, source_hidden):
        """``hidden (B, T, C)``, ``attn (B, T, S)`` (rows sum to 1), ``source_hidden (S, B, C)``
        (fairseq's ``encoder_out["encoder_out"][0]`` layout) -> ``p_gen (B, T, 1)`` in (0, 1)."""
        context = torch.bmm(attn.to(source_hidden.dtype), source_hidden.transpose(0, 1))  # (B, T, C)
        return self.gate_probability(hidden, context)

    def gate_probability(self, hidden, context):
        """``p_gen (B, T, 1)`` from ``hidden (B, T, C)`` and the attention's context vector
        ``context (B, T, C)`` (for a caller that computes the context itself)."""
        return torch.sigmoid(self.gate(torch.cat([hidden, context], dim=-1)).float())  # (B, T, 1)


class Coverage(nn.Module):
    """The coverage mechanism of See et al. (Section 2.3) on a copy attention of ``heads`` heads.

    Each head's attention over the source, ``p_t,h = softmax(e_t,h)``, becomes
    ``softmax(e_t,h + w_h * c_t) = normalize(p_t,h * exp(w_h * c_t))``, and the copy attention
    ``a_t`` is their mean; ``c_t = sum_{t' < t} a_t'`` is the coverage vector (zero at the first
    step). The learned ``w`` starts at 0, where the attention is exactly the attention without
    coverage: a model trained without it loads (its missing ``w`` read as 0) and decodes as
    before, then learns ``w`` when fine-tuned with the coverage loss (the paper adds coverage
    to a trained model for a short phase). The steps depend on each other through ``c_t``, so
    :meth:`forward` runs them in order, a ``(B, heads, S)`` operation each, in fp32 whatever the
    model's dtype: ``exp(w_h * c_t)`` of a well-covered position is below fp16's smallest number
    after a few steps (``w c = -20``: 2e-9), and a sum of attentions up to T loses its small
    increments in bf16.
    """

    def __init__(self, heads: int):
        super().__init__()
        self.weight = nn.Parameter(torch.zeros(heads))  # (h,)

    def forward(self, probs, coverage=None):
        """``probs (B, h, T, S)``: each head's attention over the source of ``T`` consecutive
        steps, rows summing to 1 (0 on padding); ``coverage (B, S)``: the coverage before the
        first of them (None: zero, the start of a summary).

        Returns ``(attn (B, T, S), coverages (B, T, S), coverage (B, S))`` in fp32: the copy
        attention of each step, the coverage vector it saw, and the coverage after the last step."""
        B, h, T, S = probs.shape
        c = probs.new_zeros(B, S, dtype=torch.float32) if coverage is None else coverage.float()  # (B, S)
        weight = self.weight.float()[None, :, None]  # (1, h, 1)
        plain = not bool(self.weight.detach().any())  # w = 0: the attention as it is
        attns, coverages = [], []
        for t in range(T):
            p = probs[:, :, t].float()  # (B, h, S)
            if not plain:
                x = weight * c[:, None, :]  # (B, h, S)
                p = p * torch.exp(x - x.amax(dim=-1, keepdim=True).detach())
                p = p / p.sum(dim=-1, keepdim=True).clamp_min(TINY)
            coverages.append(c)
            attns.append(p.mean(dim=1))  # (B, S)
            c = c + attns[-1]
        return torch.stack(attns, dim=1), torch.stack(coverages, dim=1), c


def coverage_loss(attn, coverages):
    """``sum_i min(a_t,i, c_t,i)`` of each step (See et al., Eq. 12): ``attn`` and
    ``coverages`` ``(B, T, S)`` -> ``(B, T)``."""
    return torch.minimum(attn.float(), coverages.float()).sum(dim=-1)


def copy_distribution(attn, source_tokens, vocab_size: int):
    """Attention over source positions -> a distribution over the vocabulary: each token
    receives the attention of every position that holds it.

    ``attn (B, T, S)``, ``source_tokens (B, S)`` -> ``(B, T, vocab_size)``.
    """
    B, T, S = attn.shape
    if source_tokens.shape != (B, S):
        raise ValueError(
            f"copy attention covers {S} source positions but the source ids are {tuple(source_tokens.shape)}"
        )
    index = source_tokens[:, None, :].expand(B, T, S)  # (B, T, S)
    return attn.new_zeros(B, T, vocab_size).scatter_add_(2, index, attn)  # (B, T, V)


def copy_mixture(logits, p_gen, attn, source_tokens, log_probs: bool):
    """The pointer-generator's output distribution, computed in float32.

    Args:
        logits: ``(B, T, V)`` the generator's unnormalized scores.
        p_gen: ``(B, T, 1)`` probability of generating rather than copying.
        attn: ``(B, T, S)`` copy attention; padding positions must hold 0.
        source_tokens: ``(B, S)`` the ids at those positions.
        log_probs: return ``log P`` instead of ``P``.
    Returns ``(B, T, V)``; each row sums to 1 (in ``P``).
    """
    generate = torch.softmax(logits.float(), dim=-1)  # (B, T, V)
    copy = copy_distribution(attn.float(), source_tokens, logits.size(-1))  # (B, T, V)
    p_gen = p_gen.float()
    mixed = p_gen * generate + (1 - p_gen) * copy  # (B, T, V)
    return mixed.clamp_min(TINY).log() if log_probs else mixed
