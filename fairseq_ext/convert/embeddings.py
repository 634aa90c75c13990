"""The one rule for token-embedding rows: the converted table follows the fairseq dictionary.

Each converter maps every dictionary symbol to a checkpoint row (its token map) and
:func:`embedding_rows` builds the table: a mapped symbol takes its row; an unmapped one gets
the model's initialization or a row from ``N(0, std)`` (the padding row zero); unmapped
checkpoint rows are dropped. The three counts are logged.
"""

import logging
from typing import NamedTuple

import torch

from .validate import ConversionError

logger = logging.getLogger(__name__)


class RowCounts(NamedTuple):
    """How the rows of a converted table were filled."""

    pretrained: int  # dictionary symbols that took a checkpoint row
    new: int  # symbols the checkpoint has no row for (new rows)
    dropped: int  # checkpoint rows that no symbol maps to

    def __str__(self):
        return (f"{self.pretrained} rows from the checkpoint, {self.new} new (symbols it lacks), "
                f"{self.dropped} checkpoint rows unused (dropped)")


def embedding_rows(pretrained, token_map, *, init=None, std=None, pad=None, generator=None, name="embeddings"):
    """The ``(len(token_map), C)`` table for a dictionary whose symbol ``i`` is row ``token_map[i]``
    of ``pretrained`` ``(R, C)`` (``-1``: no row, then a row of ``init`` or one drawn from
    ``N(0, std)``; an unmapped padding row is zero). Returns ``(rows, RowCounts)``."""
    token_map = torch.as_tensor(token_map, dtype=torch.long)
    rows, dim = pretrained.shape
    if token_map.numel() and int(token_map.max()) >= rows:
        raise ConversionError(f"{name}: a symbol maps to row {int(token_map.max())}, the checkpoint has {rows} rows")
    known = token_map >= 0  # (V,)
    kept = pretrained[token_map[known]]  # (K, C)
    unknown = int((~known).sum())
    if init is not None:
        if tuple(init.shape) != (len(token_map), dim):
            raise ConversionError(f"{name}: the model's table is {tuple(init.shape)}, "
                                  f"the dictionary and checkpoint need {(len(token_map), dim)}")
        out = init.detach().clone().to(pretrained.dtype)
    else:
        spread = float(kept.float().std()) if std is None else std
        out = torch.empty(len(token_map), dim, dtype=pretrained.dtype)
        out[~known] = (torch.randn(unknown, dim, generator=generator) * spread).to(pretrained.dtype)
    out[known] = kept
    if pad is not None and not known[pad]:
        out[pad] = 0.0
    counts = RowCounts(int(known.sum()), unknown, rows - len(set(token_map[known].tolist())))
    logger.info(f"{name}: {counts}")
    return out, counts


def identity_map(num_symbols, num_rows):
    """Symbol ``i`` is checkpoint row ``i`` where the checkpoint has one (symbols appended
    after the checkpoint's vocabulary, e.g. sentinels, get new rows)."""
    return torch.where(torch.arange(num_symbols) < num_rows, torch.arange(num_symbols), -1)
