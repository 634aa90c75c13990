"""Checkpoint safety on torch >= 2.6: fairseq's types load under weights_only=True; a pickle
that would run code, a config field that fairseq would eval() with code in it, a TorchScript
archive are refused naming the file; TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD cannot turn the guard
off; corrupt files give a clear error. Every user path (CLIs, hub, converters) is exercised
in tests/compat/test_checkpoint_paths.py."""

import argparse
import logging
import re
from pathlib import Path

import pytest
import torch
from fairseq import checkpoint_utils

import user_dir  # noqa: F401  (installs the loader, as --user-dir does)
from crafted import (
    as_legacy,
    eval_payload,
    place_in_cfg,
    place_pickle,
    popen_payload,
    save,
    system_payload,
)
from fairseq_ext.compat import checkpoint
from fairseq_ext.compat.checkpoint import (
    BARE_LOAD_FIELDS,
    EVAL_FIELDS,
    MODEL_EVAL_FIELDS,
    NO_WEIGHTS_ONLY_VARIABLE,
    CorruptCheckpointError,
    UntrustedCheckpointError,
    safe_load,
)

REPO = Path(__file__).resolve().parents[2]
LOADERS = {
    "safe_load": safe_load,
    "fairseq.load_checkpoint_to_cpu": lambda path: checkpoint_utils.load_checkpoint_to_cpu(str(path)),
}
PAYLOADS = {"os.system": (system_payload, "posix.system"), "subprocess.Popen": (popen_payload, "subprocess.Popen")}
# where each eval'd field lives in a hydra config (the check itself looks at every depth)
FIELD_GROUPS = {
    "left_pad_source": "task", "left_pad_target": "task", "feature_encoder_spec": "task",
    "adam_betas": "optimizer", "adamax_betas": "optimizer", "lamb_betas": "optimizer",
    "adafactor_eps": "optimizer", "wer_args": "criterion",
}
FAMILY_ARCH = {
    "fairseq.models.fconv.FConvModel": "fconv",
    "fairseq.models.fconv_lm.FConvLanguageModel": "fconv_lm",
    "fairseq.models.fconv_self_att.FConvModelSelfAtt": "fconv_self_att",
    "fairseq.models.lstm.LSTMModel": "lstm",
}
EVAL_CASES = (
    [(field, None) for field in sorted(EVAL_FIELDS | BARE_LOAD_FIELDS)]
    + [(field, FAMILY_ARCH[cls]) for cls, fields in sorted(MODEL_EVAL_FIELDS.items()) for field in fields]
)


def _fairseq_like_state():
    """What fairseq-train writes for a plugin model, without training one."""
    return {
        "args": None,
        "cfg": {
            "common": {"seed": 1, "user_dir": None},
            "model": argparse.Namespace(_name="bart_summ_tiny", arch="bart_summ_tiny", encoder_layers=2,
                                        adaptive_softmax_cutoff=None),
            "task": {"_name": "abstractive_summarization", "data": "data-bin", "left_pad_source": True},
            "criterion": {"_name": "label_smoothed_cross_entropy"},
            "optimizer": {"_name": "adam", "adam_betas": "(0.9, 0.999)"},
        },
        "model": {"w": torch.ones(2, 2)},
        "optimizer_history": [{"criterion_name": "X", "num_updates": 3}],
        "extra_state": {"train_iterator": {"epoch": 2}, "val_loss": 1.5},
    }


def _legacy_args():
    return argparse.Namespace(arch="bart_summ_tiny", task="abstractive_summarization", lr=[1e-3])


@pytest.fixture
def sentinel(tmp_path):
    path = tmp_path / "pwned"
    yield path
    assert not path.exists(), "the payload ran"


@pytest.mark.parametrize("loader", LOADERS)
@pytest.mark.parametrize("variable", [False, True], ids=["no-env", "env-var-set"])
@pytest.mark.parametrize("payload", PAYLOADS)
@pytest.mark.parametrize("zip_format", [True, False], ids=["zip", "legacy"])
@pytest.mark.parametrize("place", ["model", "cfg", "args", "list", "dict"])
def test_pickle_payload_is_refused_naming_the_file_and_real_global(
    tmp_path, sentinel, monkeypatch, place, zip_format, payload, variable, loader
):
    if variable:
        monkeypatch.setenv(NO_WEIGHTS_ONLY_VARIABLE, "1")
    make, real_name = PAYLOADS[payload]
    path = save(place_pickle(_fairseq_like_state(), place, make(sentinel)), tmp_path / "evil.pt", zip_format)
    with pytest.raises(UntrustedCheckpointError) as err:
        LOADERS[loader](path)
    message = str(err.value)
    assert str(path) in message and real_name in message
    assert "commands." not in message  # protocol-2 module names are mapped back
    assert "weights_only=False" not in message  # never torch's advice to turn the guard off


@pytest.mark.parametrize("loader", LOADERS)
@pytest.mark.parametrize("where", ["cfg", "args"])
@pytest.mark.parametrize("field, arch", EVAL_CASES, ids=[f"{f}-{a}" if a else f for f, a in EVAL_CASES])
def test_data_only_payload_in_an_eval_field_is_refused(tmp_path, sentinel, field, arch, where, loader):
    payload = eval_payload(sentinel)
    state = _fairseq_like_state()
    if where == "cfg":
        group = "model" if arch else FIELD_GROUPS.get(field, "model")
        state = place_in_cfg(state, group, field, payload, arch=arch)
        dotted = f"cfg.{group}.{field}"
    else:
        state = as_legacy(state, _legacy_args(), **({"arch": arch} if arch else {}), **{field: payload})
        dotted = f"args.{field}"
    path = save(state, tmp_path / "evil.pt")
    with pytest.raises(UntrustedCheckpointError) as err:
        LOADERS[loader](path)
    assert str(path) in str(err.value) and dotted in str(err.value)


@pytest.mark.parametrize("nest, dotted", [
    (lambda p: {"model": {"_name": "wav2vec2", "conv_feature_layers": p}},
     "cfg.model.w2v_args.model.conv_feature_layers"),
    (lambda p: [{"_name": "x"}, {"conv_feature_layers": p}], "cfg.model.w2v_args[1].conv_feature_layers"),
    (lambda p: argparse.Namespace(arch="fconv", decoder_layers=p), "cfg.model.w2v_args.decoder_layers"),
], ids=["dict", "list", "namespace-with-arch"])
def test_eval_fields_are_found_at_any_depth(tmp_path, sentinel, nest, dotted):
    state = place_in_cfg(_fairseq_like_state(), "model", "w2v_args", nest(eval_payload(sentinel)))
    path = save(state, tmp_path / "evil.pt")
    with pytest.raises(UntrustedCheckpointError, match=re.escape(dotted)):
        safe_load(path)


@pytest.mark.parametrize("field, value", [
    ("adaptive_softmax_cutoff", "10000,50000,200000"),
    ("adaptive_softmax_cutoff", [100, 200]),
    ("adaptive_softmax_cutoff", None),
    ("adaptive_softmax_cutoff", ""),
    ("adam_betas", "(0.9, 0.98)"),
    ("character_filters", "[(1, 64), (2, 128), (3, 192)]"),
    ("xformers_att_config", '{"name": "scaled_dot_product"}'),
    ("left_pad_source", "True"),
    ("left_pad_source", False),
    ("encoder_attention", "block"),  # BART-LS's free text under a name only fconv_self_att evals
])
def test_literals_and_other_models_text_load(tmp_path, field, value):
    path = save(place_in_cfg(_fairseq_like_state(), "model", field, value), tmp_path / "ok.pt")
    assert safe_load(path)["cfg"]["model"].arch == "bart_summ_tiny"


@pytest.mark.parametrize("field, value, arch", [
    ("encoder_attention", "block", "fconv_self_att"),  # the same text where fconv_self_att evals it
    ("decoder_layers", "[(512, 3)] * 20", "fconv"),  # fairseq's own fconv default is an expression
    ("adaptive_softmax_cutoff", b"[100]", None),  # eval() runs bytes too
    ("adaptive_softmax_cutoff", "${oc.env:HOME}", None),  # not a literal: refused, not resolved
])
def test_anything_but_a_literal_is_refused(tmp_path, field, value, arch):
    path = save(place_in_cfg(_fairseq_like_state(), "model", field, value, arch=arch), tmp_path / "x.pt")
    with pytest.raises(UntrustedCheckpointError, match=f"cfg.model.{field}"):
        safe_load(path)


def test_the_variable_cannot_turn_the_guard_off(tmp_path, monkeypatch, caplog):
    marker = tmp_path / "ran"
    path = save({"model": {"x": system_payload(marker)}}, tmp_path / "evil.pt")
    monkeypatch.setenv(NO_WEIGHTS_ONLY_VARIABLE, "1")
    monkeypatch.setattr(checkpoint, "_warned_about_variable", False)
    # the variable is live in this process: a torch.load that does not pass weights_only runs code
    with pytest.warns(UserWarning, match=NO_WEIGHTS_ONLY_VARIABLE):
        torch.load(path)
    assert marker.exists()
    marker.unlink()

    with caplog.at_level(logging.WARNING, logger="fairseq_ext.compat.checkpoint"):
        for load in (safe_load, LOADERS["fairseq.load_checkpoint_to_cpu"]):
            with pytest.raises(UntrustedCheckpointError, match="posix.system"):
                load(path)
    assert not marker.exists()
    said = [r for r in caplog.records if NO_WEIGHTS_ONLY_VARIABLE in r.getMessage()]
    assert len(said) == 1 and "ignored for checkpoint loading" in said[0].getMessage()


def test_fairseq_types_load_with_weights_only(tmp_path):
    path = save(_fairseq_like_state(), tmp_path / "good.pt")
    state = safe_load(str(path))
    assert state["cfg"]["model"].arch == "bart_summ_tiny"
    assert torch.equal(state["model"]["w"], torch.ones(2, 2))
    legacy = save(as_legacy(_fairseq_like_state(), _legacy_args()), tmp_path / "legacy.pt", zip_format=False)
    assert safe_load(legacy)["args"].arch == "bart_summ_tiny"


def test_fairseq_reads_through_the_safe_loader():
    assert checkpoint_utils.load_checkpoint_to_cpu.__wrapped__ is checkpoint.load_checkpoint_to_cpu
    assert checkpoint_utils.load_ema_from_checkpoint.__wrapped__ is checkpoint.load_ema_from_checkpoint


def test_ema_seed_model_loads_the_ema_weights_in_fp32(tmp_path, sentinel):
    state = _fairseq_like_state()
    state["extra_state"]["ema"] = {"w": torch.full((2, 2), 0.5, dtype=torch.half)}
    loaded = checkpoint_utils.load_ema_from_checkpoint(str(save(state, tmp_path / "ema.pt")))
    assert loaded["model"]["w"].dtype == torch.float32 and loaded["model"]["w"].eq(0.5).all()
    evil = save(place_pickle(state, "dict", system_payload(sentinel)), tmp_path / "evil.pt")
    with pytest.raises(UntrustedCheckpointError, match=re.escape(str(evil))):
        checkpoint_utils.load_ema_from_checkpoint(str(evil))


@pytest.mark.parametrize("zip_format", [True, False], ids=["zip", "legacy"])
def test_truncated_checkpoint_gives_clear_error_at_any_length(tmp_path, zip_format):
    data = save(_fairseq_like_state(), tmp_path / "good.pt", zip_format).read_bytes()
    truncated = tmp_path / "truncated.pt"
    for fraction in (0.02, 0.1, 0.3, 0.5, 0.7, 0.9, 0.99):
        truncated.write_bytes(data[: int(len(data) * fraction)])
        for load in LOADERS.values():
            with pytest.raises(CorruptCheckpointError) as err:
                load(truncated)
            assert str(truncated) in str(err.value) and "truncated or corrupt" in str(err.value)
            assert "weights_only" not in str(err.value)


def test_garbage_file_gives_clear_error(tmp_path):
    path = tmp_path / "garbage.pt"
    path.write_bytes(b"this is not a checkpoint\x00\x01\x02" * 10)
    with pytest.raises(CorruptCheckpointError) as err:
        checkpoint_utils.load_checkpoint_to_cpu(str(path))
    assert str(path) in str(err.value)


def test_missing_checkpoint_or_a_directory_names_the_path(tmp_path):
    with pytest.raises(FileNotFoundError, match="missing.pt"):
        safe_load(str(tmp_path / "missing.pt"))
    with pytest.raises(FileNotFoundError, match=re.escape(str(tmp_path))):
        safe_load(tmp_path)


def test_weights_that_are_not_a_fairseq_checkpoint_are_named(tmp_path):
    path = save({"encoder.weight": torch.ones(2)}, tmp_path / "pytorch_model.bin")
    assert torch.equal(safe_load(path)["encoder.weight"], torch.ones(2))  # HF weights: fine for converters
    with pytest.raises(CorruptCheckpointError, match="not a fairseq checkpoint"):
        checkpoint_utils.load_checkpoint_to_cpu(str(path))


def test_torchscript_archive_is_refused(tmp_path):
    path = tmp_path / "scripted.pt"
    torch.jit.save(torch.jit.script(torch.nn.Linear(2, 2)), str(path))
    with pytest.raises(UntrustedCheckpointError, match="TorchScript") as err:
        safe_load(path)
    assert str(path) in str(err.value) and "weights_only" not in str(err.value)


def test_safetensors_load_and_corrupt_ones_are_named(tmp_path):
    from safetensors.torch import save_file

    path = tmp_path / "model.safetensors"
    save_file({"w": torch.arange(4.0)}, str(path))
    assert torch.equal(safe_load(path)["w"], torch.arange(4.0))
    path.write_bytes(path.read_bytes()[:20])
    with pytest.raises(CorruptCheckpointError, match=re.escape(str(path))):
        safe_load(path)


def _fairseq_eval_sites():
    """``fairseq/…py:LINE`` of every line of the installed fairseq that calls ``eval()`` or its
    ``eval_str_list``/``eval_str_dict``/``eval_bool`` wrappers (examples/ excluded)."""
    import fairseq

    root = Path(fairseq.__file__).parent.parent
    call = re.compile(r"(?<![\w.])eval\(|\beval_str_list\(|\beval_str_dict\(|\beval_bool\b")
    sites = []
    for package in ("fairseq", "fairseq_cli"):
        for source in sorted((root / package).rglob("*.py")):
            if "examples" in source.relative_to(root).parts:
                continue
            for number, line in enumerate(source.read_text(encoding="utf-8").splitlines(), 1):
                code = line.split("#")[0]
                if call.search(code) and not re.match(r"\s*(def |from |import )", code):
                    sites.append(f"{source.relative_to(root).as_posix()}:{number}")
    return sites


def test_docs_list_every_fairseq_eval_site_and_field():
    docs = (REPO / "docs" / "security.md").read_text(encoding="utf-8")
    sites = _fairseq_eval_sites()
    assert len(sites) > 50  # the scan found fairseq's sites (not an empty directory)
    assert [s for s in sites if s not in docs] == []
    fields = EVAL_FIELDS | BARE_LOAD_FIELDS | {f for fs in MODEL_EVAL_FIELDS.values() for f in fs}
    assert [f for f in sorted(fields) if f"`{f}`" not in docs] == []
