"""Checkpoint safety on torch >= 2.6: fairseq's types load under weights_only=True, anything
that would run code is refused naming the file, corrupt files give a clear error."""

import argparse
import os
import pickle

import pytest
import torch
from fairseq import checkpoint_utils

import user_dir  # noqa: F401  (installs the allowlist and the guard, as --user-dir does)
from fairseq_ext.checkpoint import (
    CorruptCheckpointError,
    UntrustedCheckpointError,
    safe_load,
)


class _RunsCode:
    """Unpickling this calls ``os.system`` (writes a marker file): the classic exploit."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def _fairseq_like_state():
    return {
        "args": argparse.Namespace(arch="bart_summ_tiny", lr=[1e-3]),
        "cfg": None,
        "model": {"w": torch.ones(2, 2)},
        "optimizer_history": [{"criterion_name": "X", "num_updates": 3}],
        "extra_state": {"train_iterator": {"epoch": 2}, "val_loss": 1.5},
    }


@pytest.mark.parametrize("zipfile", [True, False], ids=["zip", "legacy"])
def test_crafted_checkpoint_is_refused_naming_the_file(tmp_path, zipfile):
    marker = tmp_path / "pwned"
    path = tmp_path / "evil.pt"
    state = _fairseq_like_state()
    state["model"]["payload"] = _RunsCode(marker)
    torch.save(state, path, _use_new_zipfile_serialization=zipfile)

    with pytest.raises(UntrustedCheckpointError) as err:
        checkpoint_utils.load_checkpoint_to_cpu(str(path))
    assert str(path) in str(err.value)
    if zipfile:  # the zip format lets us name the offending global
        assert "posix.system" in str(err.value) or "os.system" in str(err.value)
    assert not marker.exists(), "the payload ran"

    with pytest.raises(UntrustedCheckpointError):
        safe_load(str(path))
    assert not marker.exists()


def test_fairseq_types_load_with_weights_only(tmp_path):
    path = tmp_path / "good.pt"
    torch.save(_fairseq_like_state(), path)
    state = safe_load(str(path))
    assert state["args"].arch == "bart_summ_tiny"
    assert torch.equal(state["model"]["w"], torch.ones(2, 2))
    # the default stays weights_only=True: a plain torch.load still refuses code
    evil = tmp_path / "evil.pt"
    torch.save({"x": _RunsCode(tmp_path / "m")}, evil)
    with pytest.raises(pickle.UnpicklingError):
        torch.load(evil)


def test_truncated_checkpoint_gives_clear_error(tmp_path):
    path = tmp_path / "good.pt"
    torch.save(_fairseq_like_state(), path)
    data = path.read_bytes()
    truncated = tmp_path / "truncated.pt"
    truncated.write_bytes(data[: len(data) // 2])
    with pytest.raises(CorruptCheckpointError) as err:
        checkpoint_utils.load_checkpoint_to_cpu(str(truncated))
    assert str(truncated) in str(err.value) and "truncated or corrupt" in str(err.value)


def test_garbage_file_gives_clear_error(tmp_path):
    path = tmp_path / "garbage.pt"
    path.write_bytes(b"this is not a checkpoint\x00\x01\x02" * 10)
    with pytest.raises(CorruptCheckpointError) as err:
        checkpoint_utils.load_checkpoint_to_cpu(str(path))
    assert str(path) in str(err.value)


def test_missing_checkpoint_names_the_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="missing.pt"):
        safe_load(str(tmp_path / "missing.pt"))
