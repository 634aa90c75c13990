"""BART-LS document concatenation, its span-corruption datasets and model-based span selection
(the span corruption itself: tests/noising/test_noising.py)."""

import numpy as np
import pytest
import torch
from fairseq.data import ListDataset

from fairseq_ext.bart_ls.data import (
    CandidateSpansDataset,
    ConcatenatedDocumentsDataset,
    SpanCorruptionDataset,
    document_line_ranges,
)
from fairseq_ext.bart_ls.model_based import MaskedSpanScorer, select_hardest_spans, span_mean_losses
from toys import sentinel_symbols, toy_dictionary

BOS, EOS = 0, 2


def test_document_line_ranges():
    sizes = [5, 7, 1, 4, 1, 1, 6, 3]  # doc [0, 2), blank, doc [3, 4), blanks, doc [6, 8)
    starts, ends = document_line_ranges(sizes)
    assert starts.tolist() == [0, 3, 6] and ends.tolist() == [2, 4, 8]


def test_hardest_spans_are_selected():
    candidates = torch.tensor([[0, 1, 1, 0, 1, 0, 1, 1, 1, 0, 1, 0]], dtype=torch.bool)  # 4 spans
    loss = torch.tensor([[9.0, 1, 1, 9, 5, 9, 3, 3, 3, 9, 0.5, 9]])
    span_loss, exists, _ = span_mean_losses(loss, candidates)
    torch.testing.assert_close(span_loss[0], torch.tensor([1.0, 5.0, 3.0, 0.5]))
    assert exists.all()
    selected = select_hardest_spans(loss, candidates, 0.5)  # ceil(0.5 * 4) = 2 spans: 5.0 and 3.0
    assert selected[0].nonzero().squeeze(1).tolist() == [4, 6, 7, 8]
    one = select_hardest_spans(loss, candidates, 0.2)  # ceil(0.8) = 1 span
    assert one[0].nonzero().squeeze(1).tolist() == [4]


def test_hardest_spans_rows_differ_in_span_count():
    candidates = torch.tensor([[1, 0, 1, 0, 1, 0], [0, 0, 1, 1, 0, 0]], dtype=torch.bool)
    loss = torch.tensor([[1.0, 0, 2, 0, 3, 0], [0, 0, 4, 4, 0, 0]])
    selected = select_hardest_spans(loss, candidates, 0.34)
    assert selected.nonzero().tolist() == [[0, 2], [0, 4], [1, 2], [1, 3]]
    with pytest.raises(ValueError, match="fraction"):
        select_hardest_spans(loss, candidates, 0.0)


def test_scorer_is_local_and_padding_invariant():
    torch.manual_seed(0)
    scorer = MaskedSpanScorer(30, 1, 16, 2, 2, 32, block_size=8, max_positions=64).eval()
    tokens = torch.randint(4, 30, (1, 20))
    padded = torch.cat([tokens, torch.ones(1, 9, dtype=torch.long)], dim=1)
    torch.testing.assert_close(scorer(padded)[:, :20], scorer(tokens), atol=1e-5, rtol=1e-5)
    changed = tokens.clone()
    changed[0, 19] = 4 if tokens[0, 19] != 4 else 5  # in the third block of 8
    torch.testing.assert_close(scorer(changed)[:, :16], scorer(tokens)[:, :16])
    with pytest.raises(ValueError, match="positions"):
        scorer(torch.randint(4, 30, (1, 65)))


def make_lines():
    """Three documents of lines (each line ends with </s> = 2), blank lines between them."""
    docs = [[[10, 11, 12], [13, 14]], [[20, 21, 22, 23]], [[30], [31, 32, 33], [34]]]
    lines = []
    for doc in docs:
        lines += [torch.tensor(line + [EOS]) for line in doc] + [torch.tensor([EOS])]
    return ListDataset(lines, np.array([len(x) for x in lines])), docs


def test_concatenated_documents_cover_the_corpus_in_document_order():
    lines, docs = make_lines()
    bodies = ConcatenatedDocumentsDataset(lines, EOS, block_tokens=4, seed=0)
    assert bodies.sizes.tolist() == [4, 4, 4, 2] and len(bodies) == 4
    stream = torch.cat([bodies[i] for i in range(len(bodies))]).tolist()
    assert sorted(stream) == sorted(t for doc in docs for line in doc for t in line)
    # documents stay whole and in their own line order, only their order is shuffled
    doc_streams = [[t for line in doc for t in line] for doc in docs]
    position = {tuple(d): stream.index(d[0]) for d in doc_streams}
    for d in doc_streams:
        assert stream[position[tuple(d)]: position[tuple(d)] + len(d)] == d
    orders = set()
    for epoch in range(1, 6):
        bodies.set_epoch(epoch)
        orders.add(tuple(torch.cat([bodies[i] for i in range(len(bodies))]).tolist()))
    assert len(orders) > 1
    fixed = ConcatenatedDocumentsDataset(lines, EOS, block_tokens=4, seed=0, shuffle=False)
    assert torch.cat([fixed[i] for i in range(len(fixed))]).tolist() == [t for d in doc_streams for t in d]


def test_too_short_last_body_is_dropped():
    lines, _ = make_lines()  # 14 tokens
    bodies = ConcatenatedDocumentsDataset(lines, EOS, block_tokens=13, seed=0)
    assert bodies.sizes.tolist() == [13]  # a 1-token remainder cannot be corrupted
    with pytest.raises(ValueError, match="not one body"):
        ConcatenatedDocumentsDataset(ListDataset([torch.tensor([5, EOS])], np.array([2])), EOS, 8, seed=0)


def test_span_corruption_dataset_sizes_and_seeding():
    """Sizes known before any draw match the items; an epoch's noise is the same on every read
    and changes with the epoch (dynamic span lengths included); validation keeps epoch 1's."""
    d = toy_dictionary(40, *sentinel_symbols(8))
    sentinels = [d.index(symbol) for symbol in sentinel_symbols(8)]
    bodies = ListDataset([torch.randint(4, 44, (n,), generator=torch.Generator().manual_seed(n))
                          for n in (2, 9, 40, 77)], np.array([2, 9, 40, 77]))
    for span_lengths in (None, [1.0, 2.0, 4.0]):
        data = SpanCorruptionDataset(bodies, d, sentinels, 0.3, 3.0, seed=5, span_lengths=span_lengths)
        items = [data[i] for i in range(len(data))]
        for i, item in enumerate(items):
            assert (len(item["source"]), len(item["target"])) == data.size(i)
            assert item["source"][0] == d.bos() and item["target"][-1] == d.eos()
            assert torch.equal(item["source"], data[i]["source"])
        data.set_epoch(2)
        assert any(not torch.equal(item["source"], data[i]["source"]) for i, item in enumerate(items))
        for i in range(len(data)):
            assert (len(data[i]["source"]), len(data[i]["target"])) == data.size(i)
        fixed = SpanCorruptionDataset(bodies, d, sentinels, 0.3, 3.0, seed=5, vary_with_epoch=False)
        first = [fixed[i]["source"] for i in range(len(fixed))]
        fixed.set_epoch(3)
        assert all(torch.equal(a, fixed[i]["source"]) for i, a in enumerate(first))
    candidates = CandidateSpansDataset(bodies, d, 0.5, 2.0, seed=5, noise_density=0.1)
    assert all(int(candidates[i]["candidates"].sum()) == round(0.5 * n) for i, n in enumerate((2, 9, 40, 77)))
    assert torch.equal(candidates[3]["candidates"], candidates[3]["candidates"])
    state = torch.get_rng_state()  # the noise has its own seeded generators
    data[3], candidates[3], data.set_epoch(4)
    assert torch.equal(torch.get_rng_state(), state)
