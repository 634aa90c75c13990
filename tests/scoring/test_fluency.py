"""Fluency figures (``fairseq_ext.scoring.fluency``) and the fluency columns of scripts/rouge_table.py."""

import subprocess
import sys
from pathlib import Path

import pytest

from fairseq_ext.cli.fluency import main
from fairseq_ext.cli.lead import aclsum_lead_lines
from fairseq_ext.scoring.fluency import back_to_back, fluency, repeated_bigrams, words

REPO = Path(__file__).resolve().parents[2]
ISSUE_EXAMPLES = ["machine translation translation systems", "analogical learning learning",
                  "propose a new new models", "a statistical statistical model"]


def test_words_drop_punctuation_and_lower_case():
    assert words("We propose ( a ) New model , 2 x .") == ["we", "propose", "a", "new", "model", "2", "x"]


@pytest.mark.parametrize("summary", ISSUE_EXAMPLES)
def test_the_issues_stutters_count(summary):
    assert len(back_to_back(summary)) == 1


@pytest.mark.parametrize("summary", [
    "learning , learning", ". .", ", ,", "( ( a )", "the model models", "a b a b", "",
])
def test_punctuation_and_non_adjacent_words_do_not_count(summary):
    assert back_to_back(summary) == []


def test_repeats_are_case_insensitive():
    assert back_to_back("The the model") == ["the"]


def test_repeated_bigrams_count_every_repeat_after_the_first():
    assert repeated_bigrams("a b a b a b") == (3, 5)  # (a b) x3 -> 2 repeats, (b a) x2 -> 1
    assert repeated_bigrams("a b . a b") == (1, 3)  # punctuation dropped: a b, b a, a b
    assert repeated_bigrams("one") == (0, 0)


def test_fluency_pools_over_the_file():
    f = fluency(ISSUE_EXAMPLES + ["a clean summary .", "another clean one ."])
    assert (f.summaries, f.with_repeat) == (6, 4)
    assert f.repeat_share == pytest.approx(100 * 4 / 6)
    bigrams = sum(repeated_bigrams(s)[1] for s in ISSUE_EXAMPLES) + 2 + 2
    assert f.bigrams == bigrams and f.bigram_repeats == 0  # "translation translation" is one bigram
    assert f.stutters["translation"] == 1


def test_aclsum_lead3_does_not_stutter():
    """The issue's baseline: LEAD-3 of ACLSum's test papers repeats no word back to back."""
    assert fluency(aclsum_lead_lines("test")).with_repeat == 0


def test_cli_and_rouge_table(tmp_path, capsys):
    hyp = tmp_path / "hyp.txt"
    hyp.write_text("\n".join(ISSUE_EXAMPLES[:1] + ["fine ."]) + "\n")
    ref = tmp_path / "ref.txt"
    ref.write_text("fine .\nfine too .\n")
    main([f"model={hyp}", f"refs={ref}"])
    out = capsys.readouterr().out
    assert "| model | 50% (1/2) |" in out and "| refs | 0% (0/2) |" in out and "translation (1)" in out
    rouge = tmp_path / "rouge.txt"
    rouge.write_text("1 ROUGE-1 Average_F: 0.40500 (95%-conf.int. 0.38000 - 0.42000)\n"
                     "1 ROUGE-2 Average_F: 0.13980 (95%-conf.int. 0.12000 - 0.15000)\n"
                     "1 ROUGE-L Average_F: 0.29560 (95%-conf.int. 0.28000 - 0.31000)\n")
    table = subprocess.run(
        [sys.executable, "scripts/rouge_table.py", f"model={rouge}", f"LEAD-3={rouge}",
         "--summaries", f"model={hyp}", "--references", str(ref)],
        cwd=REPO, capture_output=True, text=True, check=True,
    ).stdout.splitlines()
    assert table[0] == "| system | ROUGE-1 F | ROUGE-2 F | ROUGE-L F | back-to-back repeats | repeated bigrams |"
    assert table[2] == "| model | 40.50 (38.00-42.00) | 13.98 (12.00-15.00) | 29.56 (28.00-31.00) | 50% (1/2) | 0.0% |"
    assert table[3].endswith("| - | - |")  # LEAD-3 without --summaries
    assert table[4] == "| references | - | - | - | 0% (0/2) | 0.0% |"
    plain = subprocess.run([sys.executable, "scripts/rouge_table.py", f"model={rouge}"],
                           cwd=REPO, capture_output=True, text=True, check=True).stdout.splitlines()
    assert plain[0] == "| system | ROUGE-1 F | ROUGE-2 F | ROUGE-L F |"
