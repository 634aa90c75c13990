"""The shared corruptions of ``fairseq_ext.noising``: T5 span corruption (exhaustive sweeps of
small cases against T5's counting rule), BERT selection and 80/10/10 replacement, MASS spans,
replaced-token sampling, the mask/sentinel symbols and per-example seeding."""

import itertools
from math import comb

import numpy as np
import pytest
import torch
from fairseq.data import Dictionary

from fairseq_ext.noising.bert import bert_noise, select_exact, select_tokens
from fairseq_ext.noising.mass import span_lengths, span_mask, target_length
from fairseq_ext.noising.replaced_tokens import sample_replacements
from fairseq_ext.noising.seeding import seeded_generator
from fairseq_ext.noising.spans import (
    corrupt_spans,
    corrupted_lengths,
    dynamic_mean_span,
    random_spans_noise_mask,
    span_counts,
    span_starts,
)
from fairseq_ext.noising.symbols import BERT_MASK, MASK, SENTINEL, add_mask, add_sentinels, find_mask

BOS, EOS = 0, 2
LENGTHS = range(2, 41)
DENSITIES = (0.0, 0.0625, 0.15, 0.3125, 0.5, 0.8, 1.0)
MEAN_SPANS = (0.25, 0.5, 1.0, 1.5, 2.0, 3.0, 8.0, 12.0)
SMALL_CASES = list(itertools.product(LENGTHS, DENSITIES, MEAN_SPANS))
MASK_CASES = list(itertools.product(range(2, 21), DENSITIES, (0.5, 1.0, 1.5, 3.0, 8.0)))


def t5_counts(length, density, mean):
    """T5's ``random_spans_noise_mask`` counts, written from its description (no cap)."""
    noise = min(max(int(round(length * density)), 1), length - 1)
    return noise, max(int(round(noise / mean)), 1)


def runs(mask):
    """Lengths of the alternating runs of a 1-D bool list, and whether the first is noise."""
    lengths = [len(list(group)) for _, group in itertools.groupby(mask)]
    return lengths, bool(mask[0])


# ---------------------------------------------------------------- T5 span corruption
def test_span_counts_are_t5s_wherever_t5s_split_exists():
    capped = 0
    for length, density, mean in SMALL_CASES:
        noise, spans = (int(x) for x in span_counts(length, density, mean))
        t5_noise, t5_spans = t5_counts(length, density, mean)
        assert noise == t5_noise
        if t5_spans <= min(noise, length - noise):  # T5 can split the tokens into that many spans
            assert spans == t5_spans, (length, density, mean)
        else:  # more non-empty spans than tokens: the largest possible number instead
            assert spans == min(noise, length - noise), (length, density, mean)
            capped += 1
    assert capped > 0  # the sweep reaches the capped cases


def test_one_noise_token_makes_one_span():
    """Length 3, density 0.0625, mean span 0.5: 1 noise token, so 1 span (not 2)."""
    assert tuple(int(x) for x in span_counts(3, 0.0625, 0.5)) == (1, 1)
    mask = random_spans_noise_mask(3, 0.0625, 0.5, torch.Generator().manual_seed(0))
    assert int(mask.sum()) == 1 and not mask[0]


def test_noise_mask_properties_over_small_cases():
    generator = torch.Generator().manual_seed(0)
    for length, density, mean in MASK_CASES:
        mask = random_spans_noise_mask(length, density, mean, generator)
        noise, spans = (int(x) for x in span_counts(length, density, mean))
        assert mask.shape == (length,) and mask.dtype == torch.bool
        assert int(mask.sum()) == noise
        run_lengths, noise_first = runs(mask.tolist())
        assert not noise_first and len(run_lengths) == 2 * spans and mask[-1]  # clean, noise, ..., noise
        assert int(span_starts(mask).sum()) == spans
        source, target = corrupt_spans(torch.arange(length) + 10, mask, torch.arange(100, 100 + spans), EOS, bos=BOS)
        assert (len(source), len(target)) == tuple(int(x) for x in corrupted_lengths(length, density, mean))
        source, target = corrupt_spans(torch.arange(length) + 10, mask, torch.arange(100, 100 + spans), EOS)
        assert (len(source), len(target)) == tuple(int(x) for x in corrupted_lengths(length, density, mean, bos=False))


def test_noise_mask_is_deterministic_under_a_seed_and_varies_without():
    for length, density, mean in [(8, 0.3, 1.0), (37, 0.15, 3.0), (500, 0.0625, 3.0)]:
        first = random_spans_noise_mask(length, density, mean, torch.Generator().manual_seed(7))
        again = random_spans_noise_mask(length, density, mean, torch.Generator().manual_seed(7))
        assert torch.equal(first, again)
        others = {tuple(random_spans_noise_mask(length, density, mean, torch.Generator().manual_seed(s)).tolist())
                  for s in range(20)}
        assert len(others) > 1


@pytest.mark.parametrize("length,density,mean", [(8, 3 / 8, 1.5), (6, 2 / 6, 1.0)])
def test_every_mask_is_reachable_and_about_equally_likely(length, density, mean):
    """S noise spans over N noise and C clean tokens: C(N-1, S-1) * C(C-1, S-1) masks."""
    noise, spans = (int(x) for x in span_counts(length, density, mean))
    expected = comb(noise - 1, spans - 1) * comb(length - noise - 1, spans - 1)
    assert expected > 1
    generator = torch.Generator().manual_seed(1)
    counts = {}
    draws = 150 * expected
    for _ in range(draws):
        key = tuple(random_spans_noise_mask(length, density, mean, generator).tolist())
        counts[key] = counts.get(key, 0) + 1
    assert len(counts) == expected
    assert all(abs(c / draws - 1 / expected) < 0.35 / expected for c in counts.values())


def test_mean_span_length_is_kept_on_average():
    generator = torch.Generator().manual_seed(0)
    lengths = []
    for _ in range(200):
        mask = random_spans_noise_mask(512, 0.15, 3.0, generator)
        lengths.append(int(mask.sum()) / int(span_starts(mask).sum()))
    assert abs(np.mean(lengths) - 3.0) < 0.1


def test_bad_span_arguments_are_refused():
    with pytest.raises(ValueError, match="at least 2 tokens"):
        random_spans_noise_mask(1, 0.15, 3.0)
    with pytest.raises(ValueError, match="mean span length"):
        span_counts(10, 0.15, 0.0)
    with pytest.raises(ValueError, match="noise density"):
        span_counts(10, 1.5, 3.0)


def test_corrupt_spans_picture_with_bos():
    body = torch.tensor([10, 11, 12, 13, 14, 15, 16, 17])  # a b c d e f g h
    noise = torch.tensor([0, 0, 1, 1, 0, 0, 1, 0], dtype=torch.bool)
    source, target = corrupt_spans(body, noise, torch.tensor([100, 101]), EOS, bos=BOS)
    assert source.tolist() == [BOS, 10, 11, 100, 14, 15, 101, 17, EOS]
    assert target.tolist() == [BOS, 100, 12, 13, 101, 16, EOS]


def test_corrupt_spans_without_bos():
    tokens = torch.arange(100, 120)
    mask = torch.zeros(20, dtype=torch.bool)
    mask[[3, 4, 5, 11, 17, 18]] = True
    source, target = corrupt_spans(tokens, mask, [7, 8, 9], eos=2)
    assert source.tolist() == [100, 101, 102, 7, 106, 107, 108, 109, 110, 8, 112, 113, 114, 115, 116, 9, 119, 2]
    assert target.tolist() == [7, 103, 104, 105, 8, 111, 9, 117, 118, 2]


def test_sentinels_are_reused_cyclically():
    body = torch.arange(10, 16)
    noise = torch.tensor([1, 0, 1, 0, 1, 0], dtype=torch.bool)
    source, target = corrupt_spans(body, noise, torch.tensor([100, 101]), EOS, bos=BOS)
    assert source.tolist() == [BOS, 100, 11, 101, 13, 100, 15, EOS]
    assert target.tolist() == [BOS, 100, 10, 101, 12, 100, 14, EOS]


def test_reconstruction_from_source_and_target():
    """Filling each sentinel of the source with its span from the target gives the body back."""
    generator = torch.Generator().manual_seed(3)
    body = torch.randint(10, 90, (200,), generator=generator)
    mask = random_spans_noise_mask(200, 0.15, 3.0, generator)
    source, target = corrupt_spans(body, mask, torch.arange(1000, 1100), EOS, bos=BOS)
    spans, current = {}, None
    for tok in target[1:-1].tolist():
        if tok >= 1000:
            current = tok
            spans[current] = []
        else:
            spans[current].append(tok)
    rebuilt = [t for tok in source[1:-1].tolist() for t in (spans[tok] if tok >= 1000 else [tok])]
    assert rebuilt == body.tolist()


def test_corrupted_lengths_vectorized():
    src, tgt = corrupted_lengths(np.array([100, 1000]), 0.0625, np.array([3.0, 12.0]))
    assert src.tolist() == [100 - 6 + 2 + 2, 1000 - 62 + 5 + 2] and tgt.tolist() == [6 + 2 + 2, 62 + 5 + 2]


def test_dynamic_mean_span_draws_from_the_choices_reproducibly():
    first = dynamic_mean_span([4, 8, 12], 300, torch.Generator().manual_seed(0))
    assert set(first.tolist()) == {4.0, 8.0, 12.0} and first.dtype == np.float64
    assert np.array_equal(first, dynamic_mean_span([4, 8, 12], 300, torch.Generator().manual_seed(0)))


# ---------------------------------------------------------------- BERT
def test_noise_80_10_10_and_eligibility():
    gen = torch.Generator().manual_seed(0)
    tokens = torch.randint(10, 100, (64, 128), generator=gen)
    eligible = torch.ones_like(tokens, dtype=torch.bool)
    eligible[:, :8] = False
    selected = select_tokens(eligible, 0.5, gen)
    noised = bert_noise(tokens, selected, mask_idx=5, vocab_low=10, vocab_high=100, generator=gen)
    assert not selected[:, :8].any() and torch.equal(noised[:, :8], tokens[:, :8])
    assert torch.equal(noised[~selected], tokens[~selected])
    rate = selected[:, 8:].float().mean().item()
    assert abs(rate - 0.5) < 0.02
    masked = (noised == 5) & selected
    changed = (noised != tokens) & (noised != 5) & selected
    assert abs(masked.sum().item() / selected.sum().item() - 0.8) < 0.02
    # random replacements are 10%, minus the 1/90 that draw the original token again
    assert abs(changed.sum().item() / selected.sum().item() - 0.1 * 89 / 90) < 0.015
    assert noised.min() >= 5 and noised.max() < 100


@pytest.mark.parametrize("random_token_prob,leave_unmasked_prob", [(0.0, 0.0), (0.3, 0.2), (0.0, 1.0)])
def test_replacement_shares_follow_the_flags(random_token_prob, leave_unmasked_prob):
    tokens = torch.full((200, 100), 50)
    selected = torch.ones_like(tokens, dtype=torch.bool)
    noised = bert_noise(tokens, selected, 5, 60, 100, random_token_prob, leave_unmasked_prob,
                        torch.Generator().manual_seed(0))
    total = noised.numel()
    assert abs((noised == 5).sum().item() / total - (1 - random_token_prob - leave_unmasked_prob)) < 0.01
    assert abs((noised >= 60).sum().item() / total - random_token_prob) < 0.01
    assert abs((noised == 50).sum().item() / total - leave_unmasked_prob) < 0.01


def test_select_at_least_one_and_errors():
    eligible = torch.tensor([[True, True, False], [False, False, False]])
    selected = select_tokens(eligible, 0.0, at_least_one=True)
    assert selected[0].sum() == 1 and not selected[0, 2] and not selected[1].any()
    with pytest.raises(ValueError):
        select_tokens(eligible, 1.5)
    with pytest.raises(ValueError):
        bert_noise(torch.zeros(1, 2, dtype=torch.long), eligible[:1, :2], 1, 0, 4,
                   random_token_prob=0.9, leave_unmasked_prob=0.2)


def test_select_exact_counts_every_row():
    candidates = torch.ones(100, dtype=torch.bool)
    candidates[::10] = False  # e.g. sentence ends are never masked
    mask = select_exact(candidates, 0.15, torch.Generator().manual_seed(0))
    assert mask.sum() == round(0.15 * 90) and not (mask & ~candidates).any()
    generator = torch.Generator().manual_seed(1)
    for width in range(0, 30):
        eligible = torch.rand(6, width, generator=generator) < torch.linspace(0, 1, 6)[:, None]  # (6, width)
        for prob in (0.0, 0.15, 0.5, 1.0):
            rows = select_exact(eligible, prob, generator)
            for row, allowed in zip(rows, eligible):
                n = int(allowed.sum())
                assert int(row.sum()) == (min(n, max(1, round(prob * n))) if n else 0)
                assert not (row & ~allowed).any()


def test_selection_is_deterministic_under_a_seed():
    eligible = torch.ones(4, 50, dtype=torch.bool)
    for select in (select_tokens, select_exact):
        first = select(eligible, 0.3, torch.Generator().manual_seed(3))
        assert torch.equal(first, select(eligible, 0.3, torch.Generator().manual_seed(3)))
        assert not torch.equal(first, select(eligible, 0.3, torch.Generator().manual_seed(4)))


# ---------------------------------------------------------------- MASS
MASK_ID = 99


def _mass(tokens, seed=0, **kwargs):
    return span_mask(torch.as_tensor(tokens), MASK_ID, EOS, 4, 90, generator=torch.Generator().manual_seed(seed),
                     **kwargs)


def test_one_contiguous_span_per_chunk_and_fifteen_percent():
    tokens = torch.arange(10, 10 + 512) % 80 + 10
    assert span_lengths(512).tolist() == [10] * 8  # round(64 * 0.15) in each of the 8 chunks
    source, target, segment = _mass(tokens, random_token_prob=0.0, leave_unmasked_prob=0.0)
    masked = torch.nonzero(source == MASK_ID).squeeze(1)
    assert len(masked) == 80 and abs(len(masked) / 512 - 0.15) < 0.01
    for chunk in range(8):  # exactly one run of 10 inside each chunk of 64
        inside = masked[(masked >= 64 * chunk) & (masked < 64 * (chunk + 1))]
        assert len(inside) == 10 and torch.all(torch.diff(inside) == 1)
    assert target[:-1].tolist() == tokens[masked].tolist() and target[-1] == EOS
    assert segment.tolist() == [10 * (i // 10) for i in range(80)] + [70]


def test_mass_replacement_is_80_10_10():
    tokens = torch.full((64 * 400,), 50)
    source, _, _ = _mass(tokens, seed=3, chunk=64, mask_prob=0.5)
    changed = source[source != 50]
    masked = int(np.rint(64 * 0.5)) * 400
    as_mask = (changed == MASK_ID).sum().item() / masked
    as_random = (changed != MASK_ID).sum().item() / masked  # a random draw equal to 50 counts as kept
    assert abs(as_mask - 0.8) < 0.02 and abs(as_random - 0.1) < 0.02
    assert changed[changed != MASK_ID].min() >= 4 and changed.max() <= MASK_ID


def test_mass_short_blocks_and_lengths_known_in_advance():
    for length in (1, 2, 7, 64, 65, 130, 512):
        source, target, segment = _mass(torch.arange(length) + 10)
        assert len(target) == target_length(length) and len(segment) == len(target) and len(source) == length
    assert span_lengths(1).tolist() == [0]  # a one-token chunk is left alone
    with pytest.raises(ValueError):
        span_lengths(10, mask_prob=1.5)


def test_mass_is_deterministic_under_a_seed():
    tokens = torch.arange(10, 200)
    first, again = _mass(tokens, seed=5), _mass(tokens, seed=5)
    assert all(torch.equal(a, b) for a, b in zip(first, again))
    assert not torch.equal(first[0], _mass(tokens, seed=6)[0])


# ---------------------------------------------------------------- replaced tokens, symbols, seeding
def test_sampled_replacements_avoid_blocked_ids():
    torch.manual_seed(0)
    logits = torch.zeros(500, 10)
    logits[:, 1] = 10.0  # pad is by far the most likely
    draws = sample_replacements(logits, blocked_ids=[1, 4])
    assert not draws.eq(1).any() and not draws.eq(4).any() and draws.unique().numel() == 8


def test_mask_symbol_prefers_the_dictionarys_own():
    plain = Dictionary()
    plain.add_symbol("w")
    assert find_mask(plain) is None
    index = add_mask(plain)
    assert plain[index] == MASK and index == len(plain) - 1 and add_mask(plain) == index
    bert = Dictionary()
    bert_mask = bert.add_symbol(BERT_MASK)
    bert.add_symbol("w")
    assert find_mask(bert) == bert_mask and add_mask(bert) == bert_mask and MASK not in bert.indices


def test_sentinels_are_appended_in_order():
    d = Dictionary()
    d.add_symbol("w")
    ids = add_sentinels(d, 3)
    assert [d[i] for i in ids] == [SENTINEL.format(i) for i in range(3)] == ["<sentinel_0>", "<sentinel_1>",
                                                                            "<sentinel_2>"]
    assert ids == list(range(len(d) - 3, len(d))) and add_sentinels(d, 3) == ids


def test_seeded_generator_is_a_function_of_its_keys():
    def draw(*keys):
        return torch.rand(4, generator=seeded_generator(*keys))

    assert torch.equal(draw(1, 2, 3), draw(1, 2, 3))
    assert not torch.equal(draw(1, 2, 3), draw(1, 2, 4)) and not torch.equal(draw(1, 2, 3), draw(1, 3, 2))
