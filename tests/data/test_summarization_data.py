"""PrefixTruncateDataset: instruction prefix + counted truncation that keeps </s>."""

import numpy as np
import pytest
import torch
from fairseq.data import ListDataset

from fairseq_ext.summarization_data import PrefixTruncateDataset, count_overlong

EOS = 2


def _dataset(*lengths):
    items = [torch.arange(10, 10 + n - 1).tolist() + [EOS] for n in lengths]
    return ListDataset([torch.LongTensor(x) for x in items], np.array(lengths))


def test_prefix_and_truncation_keep_eos():
    ds = PrefixTruncateDataset(_dataset(7, 3), torch.LongTensor([5, 6]), max_len=6, eos=EOS)
    assert ds[0].tolist() == [5, 6, 10, 11, 12, EOS]
    assert ds[1].tolist() == [5, 6, 10, 11, EOS]
    assert ds.sizes.tolist() == [6, 5]
    assert [ds.size(i) for i in range(2)] == [len(ds[i]) for i in range(2)]


def test_no_limit_only_prefixes():
    ds = PrefixTruncateDataset(_dataset(4), torch.LongTensor([5]), max_len=None, eos=EOS)
    assert ds[0].tolist() == [5, 10, 11, 12, EOS]
    assert ds.sizes.tolist() == [5]


def test_empty_prefix_short_items_unchanged():
    ds = PrefixTruncateDataset(_dataset(3), torch.LongTensor(), max_len=8, eos=EOS)
    assert ds[0].tolist() == [10, 11, EOS]


def test_prefix_leaving_no_room_is_an_error():
    with pytest.raises(ValueError, match="no room"):
        PrefixTruncateDataset(_dataset(3), torch.LongTensor([5, 6, 7]), max_len=4, eos=EOS)


def test_count_overlong():
    assert count_overlong(np.array([3, 9, 12, 5]), 8) == (2, 12)
    assert count_overlong(np.array([], dtype=int), 8) == (0, 0)
