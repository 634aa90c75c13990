"""BERT-style token noise for s2s-ft fine-tuning (the "80/10/10" rule).

A fraction ``prob`` of the eligible tokens is selected; of those, ``mask_ratio`` become the
mask token, ``random_ratio`` a token drawn uniformly from ``[vocab_low, vocab_high)`` and the
rest stay as they are. Masked fine-tuning predicts the selected target tokens; pseudo-masked
and causal fine-tuning use the same noise on their teacher-forced target context (as the
reference's ``--target_mask_prob``) and source noise is ``--source_mask_prob``.

    tokens   : a  b  c  d  e  f
    selected : .  x  .  x  x  .        (prob of eligible tokens)
    noised   : a  M  c  d  q  f        (80% -> M, 10% -> random q, 10% kept: d)
"""

from typing import Optional, Tuple

import torch


def select_tokens(
    eligible: torch.Tensor,
    prob: float,
    generator: Optional[torch.Generator] = None,
    at_least_one: bool = False,
) -> torch.Tensor:
    """Each ``eligible`` position is selected independently with probability ``prob``.

    Args:
        eligible: bool ``(B, T)``, the positions that may be noised (not padding, not specials).
        at_least_one: select one random eligible position in rows where none was drawn (masked
            fine-tuning: every target then contributes to the loss).
    Returns a bool ``(B, T)`` tensor.
    """
    if not 0.0 <= prob <= 1.0:
        raise ValueError(f"noise probability must be in [0, 1], got {prob}")
    draw = torch.rand(eligible.shape, generator=generator, device=eligible.device)  # (B, T)
    selected = eligible & (draw < prob)
    if at_least_one:
        empty = ~selected.any(dim=1) & eligible.any(dim=1)  # (B,)
        pick = draw.masked_fill(~eligible, -1.0).argmax(dim=1)  # (B,)
        forced = torch.zeros_like(selected).scatter_(1, pick[:, None], True) & empty[:, None]
        selected = selected | forced
    return selected


def bert_noise(
    tokens: torch.Tensor,
    selected: torch.Tensor,
    mask_idx: int,
    vocab_low: int,
    vocab_high: int,
    mask_ratio: float = 0.8,
    random_ratio: float = 0.1,
    generator: Optional[torch.Generator] = None,
) -> torch.Tensor:
    """Replace the ``selected`` positions of ``tokens`` by mask / random / unchanged tokens.

    Args:
        tokens: LongTensor ``(B, T)``.
        selected: bool ``(B, T)`` from :func:`select_tokens`.
        mask_idx: index of the mask token.
        vocab_low, vocab_high: random replacements are drawn from ``[vocab_low, vocab_high)``.
        mask_ratio, random_ratio: shares of the selected positions that become the mask and a
            random token (their sum must not exceed 1; the rest stays unchanged).
    Returns a new LongTensor ``(B, T)``.
    """
    if mask_ratio < 0 or random_ratio < 0 or mask_ratio + random_ratio > 1.0:
        raise ValueError(f"mask_ratio {mask_ratio} + random_ratio {random_ratio} must lie in [0, 1]")
    if vocab_high <= vocab_low:
        raise ValueError(f"empty random-token range [{vocab_low}, {vocab_high})")
    draw = torch.rand(tokens.shape, generator=generator, device=tokens.device)  # (B, T)
    to_mask = selected & (draw < mask_ratio)
    to_random = selected & (draw >= mask_ratio) & (draw < mask_ratio + random_ratio)
    random_tokens = torch.randint(
        vocab_low, vocab_high, tokens.shape, generator=generator, device=tokens.device
    )  # (B, T)
    noised = torch.where(to_random, random_tokens, tokens)
    return noised.masked_fill(to_mask, mask_idx)  # (B, T)


def noise_tokens(
    tokens: torch.Tensor,
    eligible: torch.Tensor,
    prob: float,
    mask_idx: int,
    vocab_low: int,
    vocab_high: int,
    mask_ratio: float = 0.8,
    random_ratio: float = 0.1,
    generator: Optional[torch.Generator] = None,
    at_least_one: bool = False,
) -> Tuple[torch.Tensor, torch.Tensor]:
    """:func:`select_tokens` then :func:`bert_noise`: returns ``(noised, selected)``."""
    selected = select_tokens(eligible, prob, generator, at_least_one)
    noised = bert_noise(tokens, selected, mask_idx, vocab_low, vocab_high, mask_ratio, random_ratio, generator)
    return noised, selected
