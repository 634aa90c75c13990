"""Minimum Bayes risk choice among a beam's candidates (fairseq_ext.decoding.mbr) and its command."""

import itertools
import math
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fairseq_ext.cli import mbr as cli
from fairseq_ext.decoding.mbr import (
    Candidate,
    choose_document,
    ngram_f,
    ngrams,
    repeated_bigram_count,
    utilities,
    weights,
)
from fairseq_ext.scoring.rouge.scores import sentence_rouge


def test_ngram_f_is_rouge_n_f():
    """The utility's F-measure equals the project's files2rouge-compatible ROUGE-2 F on one pair."""
    rng = random.Random(3)
    vocab = "the model learns a phrase based translation of words".split()
    for _ in range(50):
        a = " ".join(rng.choice(vocab) for _ in range(rng.randint(2, 15)))
        b = " ".join(rng.choice(vocab) for _ in range(rng.randint(2, 15)))
        ours = ngram_f(ngrams(a.split(), 2), ngrams(b.split(), 2))
        assert ours == pytest.approx(sentence_rouge(a, b)["rouge2"], abs=1e-9)


def test_utilities_pick_the_consensus():
    """Two candidates that agree outweigh a third that shares nothing with them."""
    cands = [Candidate(-0.1, "zebra crossing yonder"), Candidate(-0.5, "the phrase based model translates"),
             Candidate(-0.6, "the phrase based model learns")]
    u = utilities(cands)
    assert u[0] == 0.0 and u[1] > 0 and u[1] == pytest.approx(u[2])
    assert choose_document([cands]) == [1]  # a tie keeps the beam's order
    assert choose_document([cands], mbr=False) == [0]


def test_temperature_weights():
    assert weights([0.0, 0.0], math.inf) == [0.5, 0.5]
    w = weights([-1.0, 0.0], 1.0)
    assert w[1] / w[0] == pytest.approx(math.e)
    assert sum(weights([-30.0, 2.0, 5.0], 0.1)) == pytest.approx(1.0)
    with pytest.raises(ValueError):
        weights([0.0], 0.0)


def test_repeat_penalty_chooses_across_lines():
    """Alone each line keeps its best candidate; with the penalty the second line avoids the
    first line's phrase."""
    first = [Candidate(0.0, "statistical machine translation works")]
    second = [Candidate(-0.1, "statistical machine translation is used"), Candidate(-0.2, "a parser is used")]
    both = ["statistical machine translation works", "statistical machine translation is used"]
    assert repeated_bigram_count(both) == 2
    assert choose_document([first, second], mbr=False) == [0, 0]
    assert choose_document([first, second], mbr=False, repeat_penalty=0.06) == [0, 1]
    assert choose_document([first, second], mbr=False, repeat_penalty=0.04) == [0, 0]


def test_refusals():
    with pytest.raises(ValueError, match="at least one candidate"):
        choose_document([[Candidate(0, "a")], []])
    with pytest.raises(ValueError, match="orders"):
        utilities([Candidate(0, "a b")], orders=(0,))
    many = [[Candidate(0, f"w{i}") for i in range(300)]] * 2
    with pytest.raises(ValueError, match="joint choices"):
        choose_document(many, repeat_penalty=1.0)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.tuples(st.floats(-20, 0), st.text("ab c", max_size=12)), min_size=1, max_size=4),
                min_size=1, max_size=3),
       st.floats(0, 1))
def test_joint_choice_is_the_best_of_all(lines, penalty):
    """The joint choice reaches the objective's maximum over every combination (brute force)."""
    cands = [[Candidate(s, t) for s, t in line] for line in lines]
    picks = choose_document(cands, repeat_penalty=penalty, mbr=False)
    assert len(picks) == len(cands) and all(0 <= p < len(line) for p, line in zip(picks, cands))

    def value(choice):
        return (sum(line[i].score for line, i in zip(cands, choice))
                - penalty * repeated_bigram_count([line[i].text for line, i in zip(cands, choice)]))
    best = max(value(c) for c in itertools.product(*(range(len(line)) for line in cands)))
    assert value(picks) == pytest.approx(best)
    if not penalty:  # line by line, ties to the beam's order
        assert picks == [max(range(len(line)), key=lambda i, line=line: (line[i].score, -i)) for line in cands]


def _generate_output(path, nbest_lists):
    lines = []
    for sid, hyps in enumerate(nbest_lists):
        lines.append(f"S-{sid}\tsource")
        for score, pieces, text in hyps:
            lines += [f"H-{sid}\t{score}\t{pieces}", f"D-{sid}\t{score}\t{text}", f"P-{sid}\t-0.1 -0.2"]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def test_command_writes_the_choice(tmp_path):
    gen = tmp_path / "generate.txt"
    _generate_output(gen, [
        [(-0.1, "phrase - based trans ##lation", "Phrase-based translation"),
         (-0.5, "a parser", "A parser")],
        [(-0.1, "phrase - based trans ##lation is good", "Phrase-based translation is good"),
         (-0.3, "a tagger is good", "A tagger is good")],
    ])
    out, words = tmp_path / "out.txt", tmp_path / "words.txt"
    cli.main([str(gen), "--out", str(out), "--out-words", str(words), "--lines-per-document", "2", "--no-mbr",
              "--repeat-penalty", "1.0"])
    assert out.read_text().splitlines() == ["Phrase-based translation", "A tagger is good"]
    assert words.read_text().splitlines() == ["phrase - based translation", "a tagger is good"]
    cli.main([str(gen), "--out", str(out), "--no-mbr"])
    assert out.read_text().splitlines() == ["Phrase-based translation", "Phrase-based translation is good"]


def test_command_refuses_broken_output(tmp_path, capsys):
    gen = tmp_path / "generate.txt"
    _generate_output(gen, [[(-0.1, "a", "A"), (-0.2, "b", "B")], [(-0.1, "c", "C")]])
    with pytest.raises(SystemExit):
        cli.main([str(gen), "--out", str(tmp_path / "o")])
    assert "id 1 has 1 H- and 1 D- lines, expected 2" in capsys.readouterr().err
    _generate_output(gen, [[(-0.1, "a", "A")], [(-0.1, "c", "C")], [(-0.1, "d", "D")]])
    with pytest.raises(SystemExit):
        cli.main([str(gen), "--out", str(tmp_path / "o"), "--lines-per-document", "2"])
    assert "3 sources are not documents of 2 lines" in capsys.readouterr().err
    gen.write_text("H-1\t-0.1\ta\nD-1\t-0.1\tA\n")
    with pytest.raises(SystemExit):
        cli.main([str(gen), "--out", str(tmp_path / "o")])
    assert "no hypotheses for id(s) [0]" in capsys.readouterr().err
    gen.write_text("H-0\tnan-ish\ta\n")
    with pytest.raises(SystemExit):
        cli.main([str(gen), "--out", str(tmp_path / "o")])
    assert "is not a number" in capsys.readouterr().err
