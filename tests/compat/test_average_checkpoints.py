"""``python -m fairseq_ext.cli.average_checkpoints``: the mean of real fairseq-train checkpoints,
computed here independently, loads and decodes through fairseq-generate; inputs that are not
one model, a hostile file and a folder short of checkpoints are refused naming the cause."""

import shutil
import subprocess
import sys

import pytest
import torch

import user_dir  # noqa: F401  (installs the safe loader, as --user-dir does)
from crafted import place_pickle, save, set_field, system_payload
from fairseq_ext.cli.average_checkpoints import average_checkpoints, main, update_checkpoints
from fairseq_ext.compat.checkpoint import safe_load
from harness import generate, train


@pytest.fixture(scope="module")
def run(aclsum_bin, tmp_path_factory):
    """Three updates of ``bart_summ_tiny`` (one epoch), a checkpoint after each, all kept."""
    flags = ["--max-update", "3", "--max-tokens", "600", "--disable-validation",
             "--save-interval-updates", "1", "--keep-interval-updates", "3", "--no-last-checkpoints"]
    return train(aclsum_bin, tmp_path_factory.mktemp("avg_run"), "bart_summ_tiny", flags)


def weights(path):
    return torch.load(path, map_location="cpu", weights_only=False)["model"]  # our own files: trusted here


def test_mean_of_the_last_update_checkpoints_decodes(run, aclsum_bin, tmp_path):
    paths = update_checkpoints(run, 2)
    assert [p.name for p in paths] == ["checkpoint_1_2.pt", "checkpoint_1_3.pt"]  # the last two, oldest first
    out = tmp_path / "avg.pt"
    main(["--inputs", str(run), "--num-update-checkpoints", "2", "--output", str(out)])
    a, b, mean = weights(paths[0]), weights(paths[1]), weights(out)
    assert mean.keys() == a.keys()
    moved = 0
    for key, tensor in mean.items():
        assert tensor.dtype == a[key].dtype
        expected = ((a[key].double() + b[key].double()) / 2).to(a[key].dtype)
        assert torch.equal(tensor, expected), key
        moved += not torch.equal(a[key], b[key])
    assert moved > 10  # the two checkpoints differ: the mean is not one of them
    state = safe_load(out)  # the written file passes the safe loader's every check
    assert "last_optimizer_state" not in state
    assert state["optimizer_history"][-1]["num_updates"] == 3  # the rest is the newest input's
    hypotheses = generate(aclsum_bin, out, subset="valid")
    assert len(hypotheses) == 8


def test_one_checkpoint_is_its_own_mean(run, tmp_path):
    [path] = update_checkpoints(run, 1)
    out = average_checkpoints([path], tmp_path / "one.pt")
    source = weights(path)
    assert all(torch.equal(out["model"][k], source[k]) for k in source)


def test_a_different_model_is_refused_naming_the_parameter(run, tmp_path, capsys):
    paths = update_checkpoints(run, 2)
    other = tmp_path / "other.pt"
    state = torch.load(paths[1], map_location="cpu", weights_only=False)
    key = next(k for k, v in state["model"].items() if v.dim() == 2)
    state["model"][key] = torch.zeros(3, 3)
    torch.save(state, other)
    with pytest.raises(SystemExit) as exit_info:
        main(["--inputs", str(paths[0]), str(other), "--output", str(tmp_path / "x.pt")])
    assert exit_info.value.code == 1
    assert key in capsys.readouterr().err
    assert not (tmp_path / "x.pt").exists()

    del state["model"][key]
    torch.save(state, other)
    with pytest.raises(ValueError, match="different parameters"):
        average_checkpoints([paths[0], other], tmp_path / "x.pt")

    state = torch.load(paths[1], map_location="cpu", weights_only=False)
    set_field(state["cfg"]["model"], "arch", "bart_summ_small")
    set_field(state["cfg"]["model"], "_name", "bart_summ_small")
    torch.save(state, other)
    with pytest.raises(ValueError, match="one model"):
        average_checkpoints([paths[0], other], tmp_path / "x.pt")


def test_hostile_duplicate_and_short_inputs_are_refused(run, tmp_path, capsys):
    paths = update_checkpoints(run, 2)
    hostile = tmp_path / "hostile.pt"
    state = torch.load(paths[1], map_location="cpu", weights_only=False)
    sentinel = tmp_path / "ran"
    save(place_pickle(state, "dict", system_payload(sentinel)), hostile)
    with pytest.raises(SystemExit):
        main(["--inputs", str(paths[0]), str(hostile), "--output", str(tmp_path / "x.pt")])
    assert not sentinel.exists()
    assert str(hostile) in capsys.readouterr().err

    copy = tmp_path / "copy"
    copy.mkdir()
    shutil.copy(paths[0], copy / paths[0].name)
    with pytest.raises(SystemExit):
        main(["--inputs", str(copy), "--num-update-checkpoints", "2", "--output", str(tmp_path / "x.pt")])
    assert "1 checkpoint(s)" in capsys.readouterr().err
    with pytest.raises(ValueError, match="named twice"):
        average_checkpoints([paths[0], copy / ".." / "copy" / paths[0].name, paths[0]], tmp_path / "x.pt")
    with pytest.raises(SystemExit):
        main(["--inputs", str(run), "--output", str(tmp_path / "x.pt")])
    assert "is a folder" in capsys.readouterr().err


def test_the_command_in_a_fresh_process_reads_the_plugin_s_checkpoints(run, tmp_path):
    """``python -m fairseq_ext.cli.average_checkpoints`` as a user runs it: a process that has not
    imported the plugin still knows the names its checkpoints select."""
    out = tmp_path / "fresh.pt"
    done = subprocess.run([sys.executable, "-m", "fairseq_ext.cli.average_checkpoints", "--inputs", str(run),
                           "--num-update-checkpoints", "3", "--output", str(out)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "the mean of 3 checkpoint(s)" in done.stderr
    assert safe_load(out)["optimizer_history"][-1]["num_updates"] == 3
