"""The paired comparison of two systems (fairseq_ext/scoring/rouge/paired.py): its means are
files2rouge's corpus figures, its p-value agrees with the exact sign-flip test, identical
systems are never different, a clear winner is, swapping the systems flips the difference only,
and a fixed seed gives the same figures."""

import itertools

import numpy as np
import pytest

from fairseq_ext.cli.rouge_paired import main
from fairseq_ext.scoring.rouge.paired import compare_systems, paired_test
from fairseq_ext.scoring.rouge.scores import score_corpus


def _exact_p(d):
    """Two-sided sign-flip p-value over all 2^N sign patterns."""
    observed = abs(np.mean(d))
    flips = [abs(np.mean(np.array(signs) * d)) for signs in itertools.product((-1.0, 1.0), repeat=len(d))]
    return float(np.mean([f >= observed - 1e-12 for f in flips]))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_p_value_approaches_the_exact_sign_flip_test(seed):
    rng = np.random.default_rng(seed)
    a, b = rng.random(10), rng.random(10) * 0.8
    result = paired_test(a, b, resamples=20000, seed=seed)
    assert result.p_value == pytest.approx(_exact_p(a - b), abs=0.015)
    assert result.low <= result.difference <= result.high


def test_identical_systems_never_differ_and_a_clear_winner_does():
    same = paired_test(np.full(30, 0.4), np.full(30, 0.4))
    assert same.difference == 0 and same.p_value == 1.0 and same.low == same.high == 0
    better = paired_test(np.linspace(0.3, 0.6, 30) + 0.05, np.linspace(0.3, 0.6, 30))
    assert better.p_value < 0.001 and better.low > 0


def test_swapping_the_systems_flips_the_difference_only():
    rng = np.random.default_rng(3)
    a, b = rng.random(25), rng.random(25)
    ab, ba = paired_test(a, b, seed=5), paired_test(b, a, seed=5)
    assert ab.difference == pytest.approx(-ba.difference)
    assert ab.low == pytest.approx(-ba.high) and ab.high == pytest.approx(-ba.low)
    assert ab.p_value == ba.p_value
    assert paired_test(a, b, seed=5) == ab  # fixed seed: the same figures


def test_the_means_are_files2rouge_s_corpus_figures():
    refs = ["the model copies words from the paper .", "we parse text with a small grammar .",
            "results improve on two data sets ."]
    a = ["the model copies words .", "we parse text .", "results improve on data ."]
    b = ["a model .", "text with grammar .", "two sets ."]
    results = compare_systems([[x] for x in a], [[x] for x in b], [[x] for x in refs], resamples=200)
    # ROUGE-1.5.5 reports the mean of its bootstrap means; without resampling, the plain mean
    corpus_a, corpus_b = score_corpus(a, refs, resamples=0), score_corpus(b, refs, resamples=0)
    assert [r.key for r in results] == list(corpus_a)
    for r in results:
        assert r.mean_a == pytest.approx(corpus_a[r.key]["f"], abs=1e-5)
        assert r.mean_b == pytest.approx(corpus_b[r.key]["f"], abs=1e-5)
        assert r.difference > 0


def test_the_command_prints_a_table_and_refuses_files_of_different_lengths(tmp_path, capsys):
    for name, lines in {"a": ["one two three", "four five"], "b": ["one", "five"], "ref": ["one two", "four five"],
                        "short": ["one"]}.items():
        (tmp_path / name).write_text("".join(line + "\n" for line in lines))
    assert main([str(tmp_path / "a"), str(tmp_path / "b"), str(tmp_path / "ref"), "--resamples", "100"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("| ROUGE F | A | B |") and "| ROUGE-2 |" in out and "| ROUGE-L |" in out
    assert main([str(tmp_path / "a"), str(tmp_path / "short"), str(tmp_path / "ref")]) == 1
    assert "pair them line by line" in capsys.readouterr().err
