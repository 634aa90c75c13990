"""Reproducible noise: one ``torch.Generator`` per example, seeded from integer keys."""

import numpy as np
import torch


def seeded_generator(*keys):
    """A CPU ``torch.Generator`` seeded from non-negative integer ``keys`` (a dataset passes
    ``seed, epoch, index``): the same keys give the same noise on every run and machine."""
    state = np.random.SeedSequence([int(key) for key in keys]).generate_state(1, np.uint64)
    return torch.Generator().manual_seed(int(state[0]))
