"""Model-based denoising of BART-LS (section 2.2): a small encoder-only LM picks the spans.

Many candidate spans are masked (the paper: 5,120 tokens instead of 1,024); an encoder-only
masked LM with local (block) attention, :class:`MaskedSpanScorer`, predicts them; only the
hardest fraction of spans by mean token loss (20% in the paper, 0.5 in the public code)
becomes the text-to-text targets -- spans whose recovery needs more than local context.
The scorer is either frozen or trained jointly with its masked-LM loss (ELECTRA-style).
"""

import torch
import torch.nn.functional as F
from torch import nn

from .attention import BlockSparseSelfAttention, build_block_core


class ScorerLayer(nn.Module):
    """Post-LN Transformer encoder layer around :class:`BlockSparseSelfAttention`."""

    def __init__(self, embed_dim, heads, ffn_dim, block_size, dropout=0.0):
        super().__init__()
        core = build_block_core("block", dropout=dropout)
        self.self_attn = BlockSparseSelfAttention(embed_dim, heads, core, block_size)
        self.attn_norm = nn.LayerNorm(embed_dim)
        self.fc1 = nn.Linear(embed_dim, ffn_dim)
        self.fc2 = nn.Linear(ffn_dim, embed_dim)
        self.ffn_norm = nn.LayerNorm(embed_dim)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x, padding_mask):
        """x (T, B, C), padding_mask (B, T) -> (T, B, C)."""
        attn, _ = self.self_attn(x, x, x, key_padding_mask=padding_mask)
        x = self.attn_norm(x + self.dropout(attn))
        return self.ffn_norm(x + self.dropout(self.fc2(F.gelu(self.fc1(x)))))


class MaskedSpanScorer(nn.Module):
    """Encoder-only masked LM with block attention; ``forward`` gives (B, T, V) logits.

    Its vocabulary is the text-to-text model's plus one ``<mask>`` row (id ``mask_idx``), so
    that the seq2seq dictionary (and converted BART checkpoints) stay unchanged.
    """

    def __init__(self, vocab_size, padding_idx, embed_dim, layers, heads, ffn_dim, block_size,
                 max_positions, dropout=0.0):
        super().__init__()
        self.mask_idx = vocab_size
        self.padding_idx = padding_idx
        self.embed_tokens = nn.Embedding(vocab_size + 1, embed_dim, padding_idx=padding_idx)
        self.embed_positions = nn.Embedding(max_positions, embed_dim)
        self.embed_norm = nn.LayerNorm(embed_dim)
        self.layers = nn.ModuleList(
            [ScorerLayer(embed_dim, heads, ffn_dim, block_size, dropout) for _ in range(layers)]
        )
        nn.init.normal_(self.embed_tokens.weight, std=embed_dim**-0.5)
        nn.init.normal_(self.embed_positions.weight, std=embed_dim**-0.5)

    def forward(self, tokens):
        """tokens (B, T) right-padded -> logits (B, T, V + 1)."""
        padding_mask = tokens.eq(self.padding_idx)  # (B, T)
        if tokens.size(1) > self.embed_positions.num_embeddings:
            raise ValueError(
                f"scorer input of {tokens.size(1)} tokens exceeds its {self.embed_positions.num_embeddings} positions"
            )
        positions = torch.arange(tokens.size(1), device=tokens.device)
        x = self.embed_norm(self.embed_tokens(tokens) + self.embed_positions(positions))  # (B, T, C)
        x = x.transpose(0, 1)  # (T, B, C)
        for layer in self.layers:
            x = layer(x, padding_mask)
        return F.linear(x.transpose(0, 1), self.embed_tokens.weight)  # (B, T, V + 1)


def span_mean_losses(token_loss, candidates):
    """Mean loss per span.

    Args:
        token_loss: (B, T) float, loss of every token (ignored off candidates).
        candidates: (B, T) bool, candidate span tokens.
    Returns:
        ``(span_loss, span_exists, span_of_token)``: (B, S) mean loss, (B, S) bool, and (B, T)
        span index of each token (-1 off candidates), ``S`` the most spans in a row.
    """
    previous = F.pad(candidates[:, :-1], (1, 0), value=False)
    starts = candidates & ~previous  # (B, T)
    span_of_token = (starts.long().cumsum(1) - 1).masked_fill(~candidates, -1)  # (B, T)
    n_spans = int(starts.sum(1).max()) if candidates.any() else 0
    index = span_of_token.clamp(min=0)  # (B, T)
    weights = candidates.to(token_loss.dtype)
    totals = token_loss.new_zeros(token_loss.size(0), max(n_spans, 1)).scatter_add(1, index, token_loss * weights)
    counts = token_loss.new_zeros(token_loss.size(0), max(n_spans, 1)).scatter_add(1, index, weights)
    return totals / counts.clamp(min=1), counts > 0, span_of_token


def select_hardest_spans(token_loss, candidates, fraction):
    """(B, T) bool: tokens of the ``ceil(fraction * spans)`` highest-loss spans of each row
    (at least one span per row that has any)."""
    if not 0 < fraction <= 1:
        raise ValueError(f"the kept fraction of spans must be in (0, 1], got {fraction}")
    span_loss, exists, span_of_token = span_mean_losses(token_loss, candidates)
    ranked = span_loss.masked_fill(~exists, float("-inf")).argsort(dim=1, descending=True)  # (B, S)
    rank = ranked.argsort(dim=1)  # (B, S): 0 for the hardest span
    keep_count = torch.ceil(exists.sum(1, keepdim=True) * fraction)  # (B, 1)
    keep_span = (rank < keep_count) & exists  # (B, S)
    return keep_span.gather(1, span_of_token.clamp(min=0)) & candidates  # (B, T)


def scorer_mask_input(tokens, candidates, mask_idx):
    """The scorer's input: candidate tokens replaced by ``mask_idx``."""
    return tokens.masked_fill(candidates, mask_idx)

