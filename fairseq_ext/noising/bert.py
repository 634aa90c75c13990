"""BERT's token noise (Devlin et al. 2019, section 3.1, appendix C.2) with fairseq's
``masked_lm`` shares (``--random-token-prob`` 0.1, ``--leave-unmasked-prob`` 0.1, 0.8 masked)::

    tokens   : a  b  c  d  e  f
    selected : .  x  .  x  x  .        (select_tokens / select_exact)
    noised   : a  M  c  d  q  f        (80% -> M, 10% -> random q, 10% kept: d)

:func:`select_tokens` draws each token independently (s2s-ft), :func:`select_exact` exactly
``round(prob * n)`` of a row (the Z-Code++ generator); :func:`bert_noise` replaces.
"""

from typing import Optional

import torch


def mask_share(random_token_prob: float, leave_unmasked_prob: float) -> float:
    """The share of selected tokens that become the mask symbol, checking both other shares."""
    if random_token_prob < 0 or leave_unmasked_prob < 0 or random_token_prob + leave_unmasked_prob > 1.0:
        raise ValueError(f"random_token_prob {random_token_prob} and leave_unmasked_prob "
                         f"{leave_unmasked_prob} must be >= 0 with a sum <= 1")
    return 1.0 - leave_unmasked_prob - random_token_prob


def _check_prob(prob):
    if not 0.0 <= prob <= 1.0:
        raise ValueError(f"noise probability must be in [0, 1], got {prob}")


def select_tokens(
    eligible: torch.Tensor,
    prob: float,
    generator: Optional[torch.Generator] = None,
    at_least_one: bool = False,
) -> torch.Tensor:
    """Each ``eligible`` position is selected independently with probability ``prob``.

    Args:
        eligible: bool ``(..., T)``, the positions that may be noised (not padding, not specials).
        at_least_one: select one random eligible position in rows where none was drawn (masked
            fine-tuning: every target then contributes to the loss).
    Returns a bool tensor shaped like ``eligible``.
    """
    _check_prob(prob)
    draw = torch.rand(eligible.shape, generator=generator, device=eligible.device)  # (..., T)
    selected = eligible & (draw < prob)
    if at_least_one:
        empty = ~selected.any(dim=-1, keepdim=True) & eligible.any(dim=-1, keepdim=True)  # (..., 1)
        pick = draw.masked_fill(~eligible, -1.0).argmax(dim=-1, keepdim=True)  # (..., 1)
        forced = torch.zeros_like(selected).scatter_(-1, pick, True) & empty
        selected = selected | forced
    return selected


def select_exact(eligible: torch.Tensor, prob: float, generator: Optional[torch.Generator] = None) -> torch.Tensor:
    """Exactly ``round(prob * n)`` (at least one) of each row's ``n`` eligible positions, every
    such choice equally likely; a row with no eligible position selects nothing.

    Args:
        eligible: bool ``(..., T)``.
    Returns a bool tensor shaped like ``eligible``.
    """
    _check_prob(prob)
    available = eligible.sum(dim=-1, keepdim=True)  # (..., 1)
    count = torch.minimum(available, torch.round(available * prob).clamp(min=1))  # (..., 1)
    scores = torch.rand(eligible.shape, generator=generator, device=eligible.device).masked_fill(~eligible, 2.0)
    rank = scores.argsort(dim=-1).argsort(dim=-1)  # (..., T): 0 for the lowest score
    return eligible & (rank < count)


def bert_noise(
    tokens: torch.Tensor,
    selected: torch.Tensor,
    mask_idx: int,
    vocab_low: int,
    vocab_high: int,
    random_token_prob: float = 0.1,
    leave_unmasked_prob: float = 0.1,
    generator: Optional[torch.Generator] = None,
) -> torch.Tensor:
    """Replace the ``selected`` positions of ``tokens`` by mask / random / unchanged tokens.

    Args:
        tokens: LongTensor ``(..., T)``.
        selected: bool, shaped like ``tokens``.
        mask_idx: index of the mask symbol.
        vocab_low, vocab_high: random tokens are drawn from ``[vocab_low, vocab_high)``.
        random_token_prob, leave_unmasked_prob: shares of the selected positions that become a
            random token and that stay unchanged; the rest become ``mask_idx``.
    Returns a new LongTensor shaped like ``tokens``.
    """
    masked_share = mask_share(random_token_prob, leave_unmasked_prob)
    if vocab_high <= vocab_low:
        raise ValueError(f"empty random-token range [{vocab_low}, {vocab_high})")
    draw = torch.rand(tokens.shape, generator=generator, device=tokens.device)  # (..., T)
    to_mask = selected & (draw < masked_share)
    to_random = selected & (draw >= masked_share) & (draw < masked_share + random_token_prob)
    random_tokens = torch.randint(
        vocab_low, vocab_high, tokens.shape, generator=generator, device=tokens.device
    )  # (..., T)
    noised = torch.where(to_random, random_tokens, tokens)
    return noised.masked_fill(to_mask, mask_idx)

