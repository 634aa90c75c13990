"""Index arithmetic of the joint ``article <delim> summary`` sequence (pure functions).

Articles are right-padded, so the joint training row has a gap of padding between the two
parts; the gap is masked as keys and never predicted::

    row 0:  <s> a1 a2 a3 | <delim> s1 s2        (article length 4)
    row 1:  <s> a1 pad pad | <delim> s1 pad     (article length 2)

    source ids          0  0  0  0 | 1  1  1
    positions, restart  0  1  2  3 | 0  1  2   (the public code: the summary restarts at 0)
    positions, continue 0  1  2  3 | 4  5  6   (row 1: 0 1 2 3 | 2 3 4; the paper's Eq. 1)
"""

import torch

#: The delimiter symbol between article and summary (the public code's ``_delimiter_``).
DELIMITER = "<delim>"

#: Source-embedding ids (the paper's d_a and d_s).
ARTICLE = 0
SUMMARY = 1

#: How summary positions are numbered.
POSITION_MODES = ("restart", "continue")


def causal_mask(length, device=None, dtype=torch.float32):
    """Additive ``(length, length)`` mask: query ``i`` sees keys ``0..i``; a blocked entry is
    ``dtype``'s own minimum (``min``), finite in fp16/bf16/fp32 alike.

        i\\j  0    1    2
        0    0  min  min
        1    0    0  min
        2    0    0    0
    """
    blocked = torch.ones(length, length, dtype=torch.bool, device=device).triu(1)  # (T, T)
    return torch.zeros(length, length, dtype=dtype, device=device).masked_fill(blocked, torch.finfo(dtype).min)


def article_positions(article_tokens):
    """``0..M-1`` for every row of a right-padded ``(B, M)`` article."""
    bsz, length = article_tokens.shape
    return torch.arange(length, device=article_tokens.device).expand(bsz, length)  # (B, M)


def summary_positions(article_lengths, start, length, mode="restart"):
    """Positions of summary tokens ``start .. start+length-1`` (``(B, length)``).

    ``restart`` numbers the summary from 0 (Andrew03/transformer-abstractive-summarization);
    ``continue`` numbers it after each row's own article, as one absolute sequence.
    """
    if mode not in POSITION_MODES:
        raise ValueError(f"summary position mode must be one of {POSITION_MODES}, got {mode!r}")
    steps = torch.arange(start, start + length, device=article_lengths.device)  # (N,)
    if mode == "restart":
        return steps.expand(article_lengths.size(0), length)  # (B, N)
    return article_lengths[:, None] + steps[None, :]  # (B, N)


def article_targets(article_tokens, pad):
    """Next-token targets of a right-padded article (domain-adaptive training's article half):
    each token predicts the next article token, and the last one predicts nothing; the paper
    trains on article and summary tokens only, and the authors' loss mask is 0 at the
    delimiter, so ``<delim>`` is never a target::

        input   <s> a1 a2  pad
        target  a1  a2 pad pad
    """
    following = article_tokens[:, 1:]  # (B, M - 1)
    return torch.cat([following, article_tokens.new_full((article_tokens.size(0), 1), pad)], dim=1)  # (B, M)
