"""Training randomness keyed to the batch, not to how batches are laid out over processes.

:class:`BatchSeededTrainStep` seeds every training batch from ``(--seed, update number, the ids
of its examples)``, so N processes train exactly as one with ``--update-freq N`` and a resumed
run draws what the uninterrupted one would have::

    one process, --update-freq 2     update k: batch b0 (seed of b0), batch b1 (seed of b1)
    two processes                    update k: rank 0 b0 (seed of b0) | rank 1 b1 (seed of b1)

The global random state is restored after each batch.
"""

import zlib

import numpy as np
from fairseq import utils


def batch_seed(seed, update_num, ids):
    """A 31-bit seed from the run's ``seed``, the update number and the example ids
    (a sequence of ints, or None when the batch has none)."""
    digest = 0 if ids is None else zlib.crc32(np.asarray(ids, dtype=np.int64).tobytes())
    count = 0 if ids is None else len(ids)
    state = np.random.SeedSequence([int(seed), int(update_num), digest, count]).generate_state(1)[0]
    return int(state) & 0x7FFFFFFF


class BatchSeededTrainStep:
    """Task mixin (put it before the fairseq task class): ``train_step`` runs under a torch
    seed derived from the batch (see the module docstring). Needs ``cfg.seed``."""

    def train_step(self, sample, model, criterion, optimizer, update_num, ignore_grad=False, **kwargs):
        ids = sample.get("id") if isinstance(sample, dict) else None
        ids = ids.tolist() if ids is not None and hasattr(ids, "tolist") else ids
        with utils.set_torch_seed(batch_seed(self.cfg.seed, update_num, ids)):
            return super().train_step(sample, model, criterion, optimizer, update_num, ignore_grad, **kwargs)
