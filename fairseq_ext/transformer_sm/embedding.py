"""Input representation of Transformer-SM (paper Sec. 2.1, Eq. 2-3)::

    h_0[t] = e[x_t] + p[pos_t] + d[src_t]        d = d_a for article tokens, d_s for summary tokens

The new source embeddings ``d`` are drawn at ``ratio`` (one half) of the mean word-embedding
norm, so they do not drown the pretrained ones; ``source_embeddings=False`` drops ``d``.
"""

import torch
import torch.nn as nn

#: Number of source-embedding rows: article and summary.
NUM_SOURCES = 2


def mean_row_norm(weight, padding_idx=None):
    """Mean L2 norm of the rows of ``weight`` (``(V, C)``), the padding row left out."""
    norms = weight.detach().float().norm(dim=1)  # (V,)
    if padding_idx is not None:  # slices, not a mask: the same rows in order, and shapes known in advance
        norms = torch.cat([norms[:padding_idx], norms[padding_idx + 1:]])
    return norms.mean()


@torch.no_grad()
def init_source_embeddings(source_weight, word_weight, ratio, padding_idx=None, generator=None):
    """Fill ``source_weight`` (``(2, C)``) with random directions whose norms are all
    ``ratio * mean_row_norm(word_weight)``."""
    if ratio <= 0:
        raise ValueError(f"the source-embedding norm ratio must be positive, got {ratio}")
    target = ratio * mean_row_norm(word_weight, padding_idx)
    source_weight.normal_(generator=generator)
    source_weight.mul_(target / source_weight.float().norm(dim=1, keepdim=True).to(source_weight))
    return source_weight


class JointEmbedding(nn.Module):
    """Token + learned position (+ source, unless the Transformer-LM ablation) embeddings of the
    joint sequence, then dropout; the source embeddings' norm is ``source_norm_ratio`` of the mean
    word-embedding norm."""

    def __init__(
        self,
        num_tokens,
        embed_dim,
        padding_idx,
        max_positions,
        source_embeddings=True,
        dropout=0.0,
        init_std=0.02,
        source_norm_ratio=0.5,
    ):
        super().__init__()
        self.padding_idx = padding_idx
        self.max_positions = max_positions
        self.source_norm_ratio = source_norm_ratio
        self.tokens = nn.Embedding(num_tokens, embed_dim, padding_idx=padding_idx)
        self.positions = nn.Embedding(max_positions, embed_dim)
        self.sources = nn.Embedding(NUM_SOURCES, embed_dim) if source_embeddings else None
        self.dropout = nn.Dropout(dropout)
        nn.init.normal_(self.tokens.weight, std=init_std)
        nn.init.normal_(self.positions.weight, std=init_std)
        with torch.no_grad():
            self.tokens.weight[padding_idx].zero_()
        self.reset_source_embeddings()

    def reset_source_embeddings(self):
        """Redraw ``d_a``, ``d_s`` against the current word embeddings (e.g. after loading GPT)."""
        if self.sources is not None:
            init_source_embeddings(self.sources.weight, self.tokens.weight, self.source_norm_ratio, self.padding_idx)

    def forward(self, tokens, positions, sources):
        """``tokens``, ``positions``: ``(B, T)``; ``sources``: ``(B, T)`` ids or one int."""
        x = self.tokens(tokens) + self.positions(positions)  # (B, T, C)
        if self.sources is not None:
            if isinstance(sources, int):
                x = x + self.sources.weight[sources]  # (B, T, C)
            else:
                x = x + self.sources(sources)  # (B, T, C)
        return self.dropout(x)
