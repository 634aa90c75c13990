"""BART-LS span corruption, document concatenation and model-based span selection."""

import numpy as np
import pytest
import torch

from fairseq.data import ListDataset

from fairseq_ext.bart_ls.data import ConcatenatedDocumentsDataset, document_line_ranges
from fairseq_ext.bart_ls.model_based import MaskedSpanScorer, select_hardest_spans, span_mean_losses
from fairseq_ext.bart_ls.noising import (
    corrupt_spans,
    corrupted_lengths,
    noise_counts,
    random_spans_noise_mask,
    span_ids,
)

BOS, EOS = 0, 2


def test_corrupt_spans_picture():
    body = torch.tensor([10, 11, 12, 13, 14, 15, 16, 17])  # a b c d e f g h
    noise = torch.tensor([0, 0, 1, 1, 0, 0, 1, 0], dtype=torch.bool)
    source, target = corrupt_spans(body, noise, torch.tensor([100, 101]), BOS, EOS)
    assert source.tolist() == [BOS, 10, 11, 100, 14, 15, 101, 17, EOS]
    assert target.tolist() == [BOS, 100, 12, 13, 101, 16, EOS]


def test_sentinels_are_reused_cyclically():
    body = torch.arange(10, 16)
    noise = torch.tensor([1, 0, 1, 0, 1, 0], dtype=torch.bool)
    source, target = corrupt_spans(body, noise, torch.tensor([100, 101]), BOS, EOS)
    assert source.tolist() == [BOS, 100, 11, 101, 13, 100, 15, EOS]
    assert target.tolist() == [BOS, 100, 10, 101, 12, 100, 14, EOS]


@pytest.mark.parametrize("length,density,mean", [(8190, 0.0625, 3.0), (500, 0.0625, 12.0), (37, 0.3125, 3.0)])
def test_noise_mask_counts_and_lengths(length, density, mean):
    gen = torch.Generator().manual_seed(0)
    mask = random_spans_noise_mask(length, density, mean, gen)
    num_noise, num_spans = noise_counts(length, density, mean)
    assert int(mask.sum()) == num_noise
    assert int(span_ids(mask).max()) + 1 == num_spans
    assert not mask[0]  # a clean span comes first
    source, target = corrupt_spans(torch.arange(length) + 10, mask, torch.arange(100, 108), BOS, EOS)
    src_len, tgt_len = corrupted_lengths(length, density, mean)
    assert (len(source), len(target)) == (int(src_len), int(tgt_len))


def test_reconstruction_from_source_and_target():
    """Filling each sentinel of the source with its span from the target gives the body back."""
    gen = torch.Generator().manual_seed(3)
    body = torch.randint(10, 90, (200,), generator=gen)
    mask = random_spans_noise_mask(200, 0.15, 3.0, gen)
    sentinels = torch.arange(1000, 1100)
    source, target = corrupt_spans(body, mask, sentinels, BOS, EOS)
    spans, current = {}, None
    for tok in target[1:-1].tolist():
        if tok >= 1000:
            current = tok
            spans[current] = []
        else:
            spans[current].append(tok)
    rebuilt = [t for tok in source[1:-1].tolist() for t in (spans[tok] if tok >= 1000 else [tok])]
    assert rebuilt == body.tolist()


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


def test_corrupted_lengths_vectorized():
    src, tgt = corrupted_lengths(np.array([100, 1000]), 0.0625, np.array([3.0, 12.0]))
    assert src.tolist() == [100 - 6 + 2 + 2, 1000 - 62 + 5 + 2] and tgt.tolist() == [6 + 2 + 2, 62 + 5 + 2]


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
