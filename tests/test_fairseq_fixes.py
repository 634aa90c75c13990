"""The two fairseq 0.12 fixes: n-gram blocking on CPU, and no batch left behind."""

import numpy as np
import pytest
import torch
from fairseq.data import data_utils
from fairseq.ngram_repeat_block import NGramRepeatBlock

import user_dir  # noqa: F401  (installs keep_last_batch, as --user-dir does)
from fairseq_ext.fairseq_fixes import PrefixNGramRepeatBlock, fix_ngram_blocking

PAD = 1


def _buffer():
    # one hypothesis "</s> 5 6 5 6" at step 4, then padding up to max_len + 2
    return torch.LongTensor([[2, 5, 6, 5, 6] + [PAD] * 7])


def test_stock_cpu_blocker_bans_nothing_ours_bans_the_repeat():
    stock = NGramRepeatBlock(3, use_extension=False)(_buffer(), torch.zeros(1, 10), 1, 1, step=4)
    assert torch.isinf(stock).sum() == 0  # the fairseq 0.12 bug this module fixes
    ours = PrefixNGramRepeatBlock(3, use_extension=False)(_buffer(), torch.zeros(1, 10), 1, 1, step=4)
    # "5 6" was followed by "5": that trigram may not repeat
    assert torch.isinf(ours[0]).nonzero().flatten().tolist() == [5]


def test_fix_ngram_blocking_swaps_only_an_existing_blocker():
    class Generator:
        repeat_ngram_blocker = NGramRepeatBlock(3, use_extension=False)

    fixed = fix_ngram_blocking(Generator())
    assert isinstance(fixed.repeat_ngram_blocker, PrefixNGramRepeatBlock)
    assert fixed.repeat_ngram_blocker.no_repeat_ngram_size == 3

    class NoBlocking:
        repeat_ngram_blocker = None

    assert fix_ngram_blocking(NoBlocking()).repeat_ngram_blocker is None


@pytest.mark.parametrize("count,max_sentences,multiple", [(12, 8, 8), (100, 16, 8), (5, 8, 8), (17, 4, 3)])
def test_batch_by_size_keeps_every_index(count, max_sentences, multiple):
    indices = np.random.RandomState(0).permutation(count)
    batches = data_utils.batch_by_size(
        indices, lambda i: 10, max_sentences=max_sentences, required_batch_size_multiple=multiple
    )
    assert np.array_equal(np.concatenate(batches), indices)
    assert all(len(b) <= max_sentences for b in batches)
    # every batch but the last keeps fairseq's rule (a multiple of N, or less than N)
    assert all(len(b) % multiple == 0 or len(b) < multiple for b in batches[:-1])


def test_batch_by_size_with_token_budget_keeps_every_index():
    sizes = np.random.RandomState(1).randint(5, 50, size=30)
    batches = data_utils.batch_by_size(
        np.arange(30), lambda i: sizes[i], max_tokens=120, required_batch_size_multiple=8
    )
    assert sorted(np.concatenate(batches).tolist()) == list(range(30))
