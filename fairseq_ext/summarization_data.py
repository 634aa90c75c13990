"""Source-side dataset wrappers for document -> summary training and inference:
:class:`PrefixTruncateDataset` puts an instruction prefix before every source and truncates to
``max_len`` tokens, ``</s>`` kept; :func:`log_overlong` reports what was cut::

    item:   d1 d2 d3 d4 d5 d6 </s>          (binarized source, 7 tokens)
    prefix: p1 p2                            (instruction, already encoded)
    max_len = 6  ->  p1 p2 d1 d2 d3 </s>
"""

import logging

import numpy as np
import torch
from fairseq.data import BaseWrapperDataset

logger = logging.getLogger(__name__)


def prefix_truncate(item, prefix, max_len, eos, end_with_eos=True):
    """``prefix + item`` with ``item``'s final ``eos`` dropped, cut so that the result (and the
    ``eos`` put back when ``end_with_eos``) fits ``max_len`` tokens (``None``: no limit)."""
    body = item[:-1] if len(item) > 0 and item[-1] == eos else item  # (T,)
    tail = item.new([eos]) if end_with_eos else item.new([])
    if max_len is not None:
        body = body[: max_len - len(prefix) - len(tail)]
    return torch.cat([prefix.to(item), body, tail])  # (<= max_len,)


class ArraySizes:
    """``sizes``, ``size`` and ``num_tokens`` of a dataset whose lengths are the array
    ``self._sizes`` (one entry per example), as fairseq's batching asks for them."""

    @property
    def sizes(self):
        return self._sizes

    def size(self, index):
        return int(self._sizes[index])

    def num_tokens(self, index):
        return int(self._sizes[index])


class PrefixTruncateDataset(ArraySizes, BaseWrapperDataset):
    """``prefix + item[:-1]`` cut to ``max_len - 1`` tokens, then ``eos`` (``end_with_eos=False``:
    cut to ``max_len`` tokens, no ``eos``, as Transformer-SM's article rows are).

    Args:
        dataset: a dataset of 1-D LongTensors ending with ``eos``.
        prefix: LongTensor of tokens put before every item (may be empty).
        max_len: the longest output, prefix and ``eos`` included; ``None`` for no limit.
        eos: the end-of-sentence index.
        what: what the prefix is, for the error when it leaves no room.
    """

    def __init__(self, dataset, prefix, max_len, eos, end_with_eos=True, what="the instruction prefix"):
        super().__init__(dataset)
        self.prefix = prefix.long()
        self.max_len = max_len
        self.eos = eos
        self.end_with_eos = end_with_eos
        tail = 1 if end_with_eos else 0
        if max_len is not None and len(self.prefix) + tail >= max_len:
            raise ValueError(
                f"{what} has {len(self.prefix)} tokens, which leaves no room for the document in "
                f"{max_len} source positions"
            )
        # every binarized item ends with eos (fairseq-preprocess appends it)
        sizes = np.asarray(dataset.sizes) + len(self.prefix) - (1 - tail)
        self._sizes = sizes if max_len is None else np.minimum(sizes, max_len)

    def __getitem__(self, index):
        return prefix_truncate(self.dataset[index], self.prefix, self.max_len, self.eos, self.end_with_eos)  # (T,)


def count_overlong(sizes, max_len):
    """``(count, longest)`` of the entries of ``sizes`` above ``max_len``."""
    sizes = np.asarray(sizes)
    if max_len is None or len(sizes) == 0:
        return 0, int(sizes.max()) if len(sizes) else 0
    return int((sizes > max_len).sum()), int(sizes.max())


def log_overlong(split, sizes, limit, what, truncated):
    """Log how many of ``sizes`` are above ``limit`` and what becomes of them (every task
    reports its over-long examples this way); returns the count."""
    n_long, longest = count_overlong(sizes, limit)
    if n_long:
        action = "truncated" if truncated else "left to the size filter"
        logger.info(f"{split}: {n_long} of {len(sizes)} {what} are longer than {limit} tokens "
                    f"(longest {longest}): {action}")
    return n_long
