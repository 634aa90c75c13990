"""``scripts/lib.sh``'s helpers for data folders and for the model flags a recipe reads from
``args.txt`` beside ``INIT`` (fast: bash only, plus one ``python -c`` for shell quoting)."""

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
