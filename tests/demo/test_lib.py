"""``scripts/lib.sh``'s helpers for data folders and for the model flags a recipe reads from
``args.txt`` beside ``INIT`` (``args_from_checkpoint``, whose rules are
``fairseq_ext/cli/checkpoint_args.py``): through bash as a recipe calls them, and the rules
directly."""

import os
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def bash(script, **variables):
    env = {**os.environ, **variables}
    env["PATH"] = f"{REPO / '.venv' / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    return subprocess.run(["bash", "-c", f"set -euo pipefail; source scripts/lib.sh; {script}"], cwd=REPO,
                          env=env, capture_output=True, text=True)


def test_data_names_come_from_the_corpus_and_the_limit(tmp_path):
    done = bash(f'data_name aclsum; data_name "{tmp_path}/my corpus/" _wp; LIMIT=8 data_name aclsum_aspects _wp')
    assert done.stdout.splitlines() == ["aclsum", "my corpus_wp", "aclsum_aspects_wp-limit8"]


def test_hypotheses_in_input_order_and_the_words_of_wordpieces(tmp_path):
    """``hypotheses GENERATED OUT KIND``: D (the default), H, T lines in input order; W the H
    lines' WordPieces joined into words (what WordPiece data's D lines are without
    ``--restore-surface``, and what files2rouge scores in the main job)."""
    generated = tmp_path / "generate-test.txt"
    generated.write_text("S-10\tthe source\nT-10\tthe target .\nH-10\t-0.5\tsum ##mar ##ies , in pieces .\n"
                         "D-10\t-0.5\tSummaries, in pieces.\nH-2\t-0.1\t##s a phrase - based mt\n"
                         "D-2\t-0.1\tS a phrase-based MT\nT-2\tfirst\n", encoding="utf-8")
    kinds = {kind: tmp_path / f"{kind}.txt" for kind in "DHTW"}
    done = bash(" && ".join(f'hypotheses "{generated}" "{out}" {kind}' for kind, out in kinds.items()))
    assert done.returncode == 0, done.stderr
    lines = {kind: out.read_text(encoding="utf-8").splitlines() for kind, out in kinds.items()}
    assert lines["D"] == ["S a phrase-based MT", "Summaries, in pieces."]
    assert lines["H"] == ["##s a phrase - based mt", "sum ##mar ##ies , in pieces ."]
    assert lines["T"] == ["first", "the target ."]
    assert lines["W"] == ["s a phrase - based mt", "summaries , in pieces ."]


RECIPE = """defaults ARCH=bart_ls_large SOURCE_POSITIONS=16384 BLOCK_SIZE=1024 TARGET=7
args_from_checkpoint "$INIT" ARCH:=--arch "SOURCE_POSITIONS<=--max-source-positions" BLOCK_SIZE=--block-size
echo "$ARCH $SOURCE_POSITIONS $BLOCK_SIZE $TARGET | ${CHECKPOINT_ARGS[*]}"
"""


@pytest.fixture
def init(tmp_path):
    (tmp_path / "args.txt").write_text("--arch bart_ls_tiny --max-source-positions 512 --block-size 16 "
                                       "--instruction 'a b'\n")
    return str(tmp_path / "model.pt")


def test_unset_and_default_values_come_from_args_txt(init):
    done = bash(RECIPE, INIT=init)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == ("bart_ls_tiny 512 16 7 | --arch bart_ls_tiny --max-source-positions 512 "
                                            "--block-size 16 --instruction a b")


def test_values_set_by_the_user_must_agree(init):
    fewer = bash(RECIPE, INIT=init, SOURCE_POSITIONS="256", ARCH="bart_ls_base")
    assert fewer.stdout.splitlines()[-1].startswith("bart_ls_tiny 256 16")  # fewer positions: kept
    assert "ARCH=bart_ls_base replaced by the checkpoint's --arch bart_ls_tiny" in fewer.stderr
    too_large = (("SOURCE_POSITIONS", "1024", "--max-source-positions"), ("BLOCK_SIZE", "64", "--block-size"))
    for name, value, flag in too_large:
        refused = bash(RECIPE, INIT=init, **{name: value})
        assert refused.returncode == 2
        assert f"{name}={value} ({flag}) does not agree with the checkpoint" in refused.stderr


def test_without_args_txt_nothing_changes(tmp_path):
    done = bash(RECIPE, INIT=str(tmp_path / "model.pt"))
    assert done.stdout.splitlines()[-1] == "bart_ls_large 16384 1024 7 | "


# ---------------------------------------------------------------- the rules, in Python
WORDS = ["--arch", "bart_ls_tiny", "--max-source-positions", "512", "--block-size", "16"]
PAIRS = [("ARCH", "taken", "--arch"), ("SOURCE_POSITIONS", "at-most", "--max-source-positions"),
         ("BLOCK_SIZE", "equal", "--block-size")]


def test_each_mode_of_a_pair():
    """``:=`` takes the checkpoint's value (a note when the user's is replaced), ``<=`` lowers
    a default and keeps a smaller value, ``=`` fills an unset or defaulted value."""
    from fairseq_ext.cli.checkpoint_args import resolve

    current = {"ARCH": "bart_ls_base", "SOURCE_POSITIONS": "16384", "BLOCK_SIZE": ""}
    assignments, notes = resolve(WORDS, PAIRS, current, {"SOURCE_POSITIONS"})
    assert assignments == {"ARCH": "bart_ls_tiny", "SOURCE_POSITIONS": "512", "BLOCK_SIZE": "16"}
    assert notes == ["note: ARCH=bart_ls_base replaced by the checkpoint's --arch bart_ls_tiny (args.txt; its sizes "
                     "are the checkpoint's)"]
    assignments, notes = resolve(WORDS, PAIRS, {"SOURCE_POSITIONS": "256", "BLOCK_SIZE": "16"}, set())
    assert assignments == {"ARCH": "bart_ls_tiny"} and notes == []  # fewer positions, the same block: kept


@pytest.mark.parametrize("name, value", [("SOURCE_POSITIONS", "1024"), ("BLOCK_SIZE", "64"), ("BLOCK_SIZE", "8")])
def test_a_value_the_user_set_that_the_checkpoint_does_not_allow_names_both(name, value):
    from fairseq_ext.cli.checkpoint_args import Disagreement, resolve

    with pytest.raises(Disagreement, match=f"{name}={value} .* does not agree with the checkpoint"):
        resolve(WORDS, PAIRS, {name: value}, set())


def test_pairs_are_parsed_strictly_and_values_quoted_for_bash(tmp_path, capsys):
    from fairseq_ext.cli.checkpoint_args import main, parse_pair

    assert parse_pair("A<=--max-source-positions") == ("A", "at-most", "--max-source-positions")
    with pytest.raises(ValueError, match="not NAME=FLAG"):
        parse_pair("A;rm=--arch")
    (tmp_path / "args.txt").write_text("--instruction 'a b; $(touch x)' --arch t\n")
    assert main(["--current", "ARCH=", "--", str(tmp_path / "model.pt"), "ARCH:=--arch"]) == 0
    out = capsys.readouterr().out
    assert "'a b; $(touch x)'" in out and out.splitlines()[-1] == "ARCH=t"
