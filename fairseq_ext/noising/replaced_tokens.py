"""Replaced-token corruption (Clark et al., "ELECTRA", section 2), as the Z-Code++
discriminator is trained (section 2.1, RTD): masked tokens are replaced by samples of the MLM
generator, and the discriminator tells replaced tokens from original ones::

    original   a  b  c  d        generator input  a  M  c  d
    replaced   a  b' c  d        b' ~ softmax(generator logits); label 1 iff b' != b
"""

import torch


def sample_replacements(logits, temperature=1.0, blocked_ids=None):
    """Tokens (M,) sampled from ``softmax(logits / temperature)`` (M, V); ``blocked_ids`` (pad,
    ``<mask>``, sentinels, ...) are never drawn. No gradient flows back into ``logits``."""
    logits = logits.detach().float() / temperature
    if blocked_ids is not None:
        logits[:, blocked_ids] = float("-inf")
    return torch.multinomial(torch.softmax(logits, dim=-1), 1).squeeze(1)  # (M,)
