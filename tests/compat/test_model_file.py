"""A model file is tensors plus the description of a model (fairseq_ext/compat/model_file.py):
reviewed components only unless the caller trusts the file, the run's settings and every
environment field come from the caller, sizes agree with the tensors before memory is spent,
tensors own their bytes, the training state has fairseq's shape and never overrides the
command line; archives are bounded by the bytes they really hold."""

import argparse
import copy
import io
import json
import tarfile
import typing
from pathlib import Path

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from omegaconf import OmegaConf

import hostile
import user_dir  # noqa: F401  (installs the fixes, as --user-dir does)
from crafted import save
from fairseq_ext.compat import model_file
from fairseq_ext.compat.archives import UnsafeArchiveError, extract_archive
from fairseq_ext.compat.checkpoint import CheckpointError, load_checkpoint_to_cpu, safe_load
from fairseq_ext.compat.config_schema import _component_types, _registry
from harness import train

ARCH = "bart_summ_tiny"


@pytest.fixture(scope="module")
def good_state(bart_tiny_checkpoint):
    return torch.load(bart_tiny_checkpoint, weights_only=True)


def _models(path, data):
    from fairseq import checkpoint_utils

    return checkpoint_utils.load_model_ensemble([str(path)], arg_overrides={"data": str(data)})[0]


# ---------------------------------------------------------------- components
def test_every_text_field_of_every_reviewed_component_is_classified():
    """The review: a text field either names the environment (cleared on load) or describes the
    model; a field added to a reviewed component fails here until someone decides which."""
    unclassified = set()
    for group in model_file.COMPONENT_GROUPS:
        for name in _registry(group):
            if not model_file.is_reviewed(group, name):
                continue
            for field, tp in _component_types(group, name).items():
                if "str" in str(tp) or tp is typing.Any or tp is str:
                    if field not in model_file.ENVIRONMENT_FIELDS | model_file.DESCRIPTION_TEXT_FIELDS:
                        unclassified.add(f"{group} {name}.{field}")
    assert not unclassified


def test_an_unreviewed_component_is_refused_naming_the_field_and_how_to_trust(good_state, tmp_path, aclsum_bin):
    path = save(hostile.unreviewed_criterion(good_state, tmp_path), tmp_path / "odd.pt")
    with pytest.raises(CheckpointError, match=r"cfg\.criterion\._name = 'sentence_prediction'.*--trust-model-file"):
        safe_load(path)
    model_file.trust(path)
    try:
        assert _models(path, aclsum_bin)  # trusted: the other checks still hold, and it loads
    finally:
        model_file.os.environ.pop(model_file.TRUST_VARIABLE, None)


def test_the_trust_flag_is_taken_out_of_the_command_line(tmp_path):
    argv = ["data", "--trust-model-file", str(tmp_path / "a.pt"), "--beam", "2", f"--trust-model-file={tmp_path}/b.pt"]
    try:
        assert model_file.take_trust_flags(argv) == ["data", "--beam", "2"]
        assert model_file.is_trusted(tmp_path / "a.pt") and model_file.is_trusted(tmp_path / "b.pt")
        assert not model_file.is_trusted(tmp_path / "c.pt")
    finally:
        model_file.os.environ.pop(model_file.TRUST_VARIABLE, None)


# ---------------------------------------------------------------- environment
def test_the_run_s_settings_and_paths_are_not_taken_from_the_file(good_state, tmp_path, caplog):
    path = save(hostile.paths_to_devices(good_state, tmp_path), tmp_path / "paths.pt")
    with caplog.at_level("WARNING"):
        state = load_checkpoint_to_cpu(str(path), {"data": "/the/callers/data"})
    cfg = state["cfg"]
    assert cfg.generation.replace_unk is None and cfg.generation.sampling is False and cfg.generation.temperature == 1.0
    assert cfg.common.user_dir is None and cfg.checkpoint.save_dir == "checkpoints"
    assert cfg.model.encoder_embed_path is None and cfg.task.spm_model is None
    assert cfg.task.data == "/the/callers/data"  # the caller's resources apply
    assert "cfg.generation.sampling" in caplog.text and str(path) in caplog.text


def test_without_the_caller_s_data_directory_the_load_says_so_in_one_line(bart_tiny_checkpoint):
    from fairseq import checkpoint_utils

    with pytest.raises(CheckpointError, match=r"cfg\.task\.data: the data directory comes from the caller") as err:
        checkpoint_utils.load_model_ensemble_and_task([str(bart_tiny_checkpoint)])
    assert str(bart_tiny_checkpoint) in str(err.value) and "\n" not in str(err.value)


# a fresh interpreter that loads a model file for decoding and measures its peak: the prelude
_PEAK = """
import contextlib, re, sys
import torch
import user_dir  # noqa: F401
from fairseq import checkpoint_utils
from fairseq_ext.compat import checkpoint
def kib(field):
    return int(re.search(field + r":\\s+(\\d+)", open("/proc/self/status").read()).group(1))
def start_peak():  # the peak (VmHWM) starts again from here; the resident KiB now
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
    return kib("VmRSS")
"""
_LOAD_GROWTH = _PEAK + """
if sys.argv[3] == "keep":  # the load as it was before decoding dropped the optimizer state
    read = checkpoint.load_checkpoint_to_cpu
    checkpoint.load_checkpoint_to_cpu = lambda path, overrides=None, *a, **k: read(path, overrides)
before = start_peak()
checkpoint_utils.load_model_ensemble([sys.argv[1]], arg_overrides={"data": sys.argv[2]})
print((kib("VmHWM") - before) / 1024)
"""


@pytest.mark.parametrize("how", ["decoding", "keep"])
def test_decoding_never_reads_the_optimizer_state(how, good_state, tmp_path, aclsum_bin):
    """A file whose optimizer state is 256 MiB loads for decoding in a fraction of that: the state
    is mapped and dropped unread (``keep``, the whole file read as before, shows the test can fail)."""
    import subprocess
    import sys

    state = copy.deepcopy(good_state)
    state["last_optimizer_state"]["state"][0]["exp_avg"] = torch.ones(64, 2**20)  # 256 MiB of moments
    path = tmp_path / "checkpoint.pt"
    torch.save(state, path)
    run = subprocess.run([sys.executable, "-c", _LOAD_GROWTH, str(path), str(aclsum_bin), how],
                         capture_output=True, text=True, check=True)
    growth_mib = float(run.stdout.split()[-1])
    if how == "decoding":
        assert growth_mib < 128, run.stderr[-2000:]
    else:
        assert growth_mib > 256


_WEIGHTS_ONCE = _PEAK + """
if sys.argv[3] == "copy":  # the load as it was: the file's tensors copied into the built weights
    checkpoint.weights_taken_from_the_file = lambda path: contextlib.nullcontext()
before = start_peak()
models, _ = checkpoint_utils.load_model_ensemble([sys.argv[1]], arg_overrides={"data": sys.argv[2]})
with open(sys.argv[1], "wb") as f:  # a training copies its newest checkpoint over the file, in place
    f.write(b"cut")
with torch.no_grad():  # decoding reads every weight
    total = sum(float(p.sum()) for p in models[0].parameters())
print(len(list(models[0].parameters())), total, (kib("VmHWM") - before) / 1024)
"""


@pytest.mark.parametrize("how", ["decoding", "copy"])
def test_decoding_holds_the_weights_once(how, good_state, tmp_path, aclsum_bin):
    """A model of 64 MiB of weights a layer, loaded for decoding, its file then cut short as a
    training's copy of its newest checkpoint cuts ``checkpoint_best.pt``, and every weight read:
    the peak grows by the weights once, not by their largest tensor (32 MiB) more: each is copied
    out of the mapped file 4 MiB at a time, the file's pages dropped after each piece. Copying
    them into the weights the model was built with (``copy``, the load as it was) holds both at
    the peak, the built weights and the mapped file's pages, and shows the test can fail. Both
    read the same values, the model's tied embeddings stay one parameter, and neither reads the
    file after loading."""
    import subprocess
    import sys

    from fairseq import models, tasks

    state = copy.deepcopy(good_state)
    model_args = state["cfg"]["model"]  # the tiny BART's Namespace, its feed-forward layers made wide
    model_args.encoder_ffn_embed_dim = model_args.decoder_ffn_embed_dim = 2**23 // model_args.encoder_embed_dim
    layers = model_args.encoder_layers + model_args.decoder_layers  # fc1 + fc2: 64 MiB a layer
    task_cfg = OmegaConf.create(state["cfg"]["task"])
    task_cfg.data = str(aclsum_bin)
    model = models.build_model(model_args, tasks.setup_task(task_cfg))
    with torch.no_grad():
        for p in model.parameters():
            p.normal_()
    state["model"] = model.state_dict()
    sizes = [t.numel() * t.element_size() / 2**20 for t in state["model"].values()]
    weights_mib, largest_mib = sum(sizes), max(sizes)
    expected = sum(float(t.sum()) for t in model.parameters())
    tied = len(list(model.parameters()))  # the embeddings are one parameter (share_all_embeddings)
    del model
    path = tmp_path / "checkpoint.pt"
    torch.save(state, path)
    run = subprocess.run([sys.executable, "-c", _WEIGHTS_ONCE, str(path), str(aclsum_bin), how],
                         capture_output=True, text=True, check=True)
    parameters, total, growth_mib = map(float, run.stdout.split()[-3:])
    assert (parameters, total) == (tied, pytest.approx(expected, rel=1e-9))  # the same weights, still tied
    assert weights_mib > 64 * layers, weights_mib
    if how == "decoding":
        assert growth_mib < weights_mib + 24, (growth_mib, weights_mib, largest_mib, run.stderr[-2000:])
    else:
        assert growth_mib > 1.8 * weights_mib, (growth_mib, weights_mib)


@pytest.mark.parametrize("tensor", [
    torch.arange(10, dtype=torch.float32), torch.randn(3, 5).t(), torch.tensor(3.5), torch.empty(0),
    torch.arange(7, dtype=torch.int64), torch.tensor([True, False, True]), torch.randn(4, 3).half(),
    torch.tensor([-0.0, float("inf"), float("nan"), 1e-45]),
], ids=["float", "transposed", "0-dim", "empty", "int64", "bool", "half", "special"])
def test_a_weight_copied_out_in_pieces_is_the_weight(tensor, monkeypatch):
    """Pieces of 12 bytes (3 floats): every piece is copied, in order, and its bytes handed back
    once; a tensor that is not contiguous is cloned whole."""
    from fairseq_ext.compat import checkpoint

    monkeypatch.setattr(checkpoint, "COPY_CHUNK", 12)
    dropped = []
    copy = checkpoint._copy_out(tensor, lambda first, past: dropped.append((first, past)))
    assert copy.dtype == tensor.dtype and copy.shape == tensor.shape
    assert tensor.numel() == 0 or copy.data_ptr() != tensor.data_ptr()

    def raw(t):  # the bytes (so that -0.0 and NaN compare as themselves)
        flat = t.contiguous().reshape(-1)
        return flat if t.dtype == torch.bool else flat.view(torch.uint8)

    assert torch.equal(raw(copy), raw(tensor))
    if tensor.is_contiguous() and tensor.numel():
        size = tensor.element_size()
        assert dropped[0][0] == tensor.data_ptr() and dropped[-1][1] == tensor.data_ptr() + tensor.numel() * size
        assert all(a[1] == b[0] for a, b in zip(dropped, dropped[1:]))  # back to back, nothing skipped
        assert all(past - first <= max(12, size) for first, past in dropped)
    else:
        assert dropped == []


def test_weights_that_share_a_mapped_storage_are_all_copied_before_its_pages_go(tmp_path):
    """Two weights saved as views of one storage, the second changed in place after loading (a
    private page of its own now): both copies hold what the weights held. Dropping the storage's
    pages after the first copy would send the second back to the file's bytes."""
    from torch import nn

    from fairseq_ext.compat import checkpoint

    base = torch.arange(8192, dtype=torch.float32)  # 32 KiB: whole pages in each half
    torch.save({"a": base[:4096], "b": base[4096:]}, tmp_path / "shared.pt")
    state = torch.load(tmp_path / "shared.pt", mmap=True, weights_only=True)
    assert state["a"].untyped_storage().data_ptr() == state["b"].untyped_storage().data_ptr()
    module = nn.Module()
    module.a, module.b = nn.Parameter(state["a"], requires_grad=False), nn.Parameter(state["b"])
    with torch.no_grad():
        module.b.mul_(-1)  # written in place: its pages are the process's own copies now
    mapped = checkpoint._private_mappings(tmp_path / "shared.pt")
    assert mapped
    checkpoint._into_memory(module, mapped)
    assert torch.equal(module.a, base[:4096]) and torch.equal(module.b, -base[4096:])
    assert isinstance(module.b, nn.Parameter) and module.b.requires_grad and not module.a.requires_grad


def test_legacy_args_keep_the_model_and_lose_the_run(good_state, tmp_path):
    state = hostile.legacy_args_backslash_quote(good_state, tmp_path)
    state["args"].eval_rouge_args = None
    state["args"].save_dir, state["args"].encoder_embed_path = "/elsewhere", "/dev/zero"
    state["args"].tensorboard_logdir = "/elsewhere/logs"
    model_file.describe_only(state, tmp_path / "legacy.pt")
    assert state["args"].save_dir == "checkpoints" and state["args"].tensorboard_logdir is None
    assert state["args"].encoder_embed_path is None and state["args"].encoder_embed_dim == 32


def test_saved_decoding_settings_do_not_change_the_hub_s_summaries(good_state, tmp_path, aclsum_bin):
    from user_dir import from_pretrained

    state = copy.deepcopy(good_state)
    state["cfg"]["generation"].update(sampling=True, temperature=50.0, sampling_topk=3)
    save(state, tmp_path / "sampling.pt")
    save(good_state, tmp_path / "plain.pt")
    docs = ["we parse text with a small model .", "a second document about parsing ."]
    out = [from_pretrained(str(tmp_path), name, data_name_or_path=str(aclsum_bin)).summarize(docs, beam=2, max_len_b=6)
           for name in ("sampling.pt", "plain.pt")]
    assert out[0] == out[1]


# ---------------------------------------------------------------- sizes and tensors
@pytest.mark.parametrize("maker, field", [
    (hostile.huge_declared_ffn, "cfg.model.encoder_ffn_embed_dim = 1000000000"),
    (hostile.ffn_unlike_the_weights, "set by cfg.model.encoder_ffn_embed_dim = 60000"),
    (hostile.thousands_of_layers, "layers, but the file holds"),
    # variants no test above names: a size the model's code divides by, a number that is not
    # one, a tensor the model's own upgrade indexes
    (lambda s, w: hostile._cfg(s, "model", encoder_attention_heads=0), "cannot be built (ZeroDivisionError"),
    (lambda s, w: hostile._cfg(s, "model", dropout=float("nan")), "cfg.model.dropout = nan"),
    (lambda s, w: {**s, "model": {**s["model"], "encoder.version": torch.tensor(2.0)}}, "upgrade cannot read"),
])
def test_sizes_are_compared_with_the_tensors_before_memory_is_spent(maker, field, good_state, tmp_path, aclsum_bin):
    path = save(maker(good_state, tmp_path), tmp_path / "sizes.pt")
    with pytest.raises(CheckpointError, match="refusing model file") as err:
        _models(path, aclsum_bin)
    assert field in str(err.value) and "\n" not in str(err.value)


def test_the_meta_build_skips_initialisation_and_allocates_nothing():
    with model_file.MetaBuild():
        layer = torch.nn.Linear(1 << 20, 1 << 20)  # 4 TiB if allocated
        torch.nn.init.normal_(layer.weight)
        layer.weight.data.cpu()
    assert layer.weight.is_meta and layer.weight.shape == (1 << 20, 1 << 20)


@pytest.mark.parametrize("maker", [hostile.expanded_weight, hostile.expanded_ema, hostile.expanded_optimizer_moment,
                                   hostile.overlapping_views, hostile.list_where_a_weight_belongs])
def test_every_tensor_owns_its_bytes(maker, good_state, tmp_path):
    path = save(maker(good_state, tmp_path), tmp_path / "views.pt")
    with pytest.raises(CheckpointError, match="refusing model file"):
        safe_load(path)


def test_tied_weights_and_slices_of_one_storage_are_allowed(tmp_path):
    base, halves = torch.randn(8, 4), torch.randn(8, 4)
    state = {"tied.a": base, "tied.b": base, "half.a": halves[:4], "half.b": halves[4:],
             "transposed": torch.randn(3, 5).t()}
    assert set(safe_load(save(state, tmp_path / "ok.pt"))) == set(state)


# ---------------------------------------------------------------- training state
def test_on_restore_the_command_line_s_optimizer_settings_win(good_state, tmp_path, aclsum_bin, caplog):
    path = save(hostile.huge_weight_decay(good_state, tmp_path), tmp_path / "decay.pt")
    flags = ["--max-update", "3", "--max-tokens", "600", "--disable-validation", "--restore-file", str(path),
             "--weight-decay", "0.01", "--save-dir", str(tmp_path / "run")]
    with caplog.at_level("WARNING"):
        train(aclsum_bin, tmp_path / "run", ARCH, flags)
    trained = torch.load(tmp_path / "run" / "checkpoint_last.pt", weights_only=True)
    assert all(g["weight_decay"] == 0.01 for g in trained["last_optimizer_state"]["param_groups"])
    assert trained["model"]["encoder.embed_tokens.weight"].abs().mean() > 1e-3  # not zeroed
    assert "weight_decay = 1000.0 in the checkpoint, 0.01 on the command line" in caplog.text


@pytest.mark.parametrize("change, where", [
    (lambda s: s.pop("extra_state"), "extra_state is missing"),
    (lambda s: s["extra_state"].update(train_iterator={"epoch": -1}), "train_iterator.epoch = -1"),
    (lambda s: s["extra_state"].update(previous_training_time=float("inf")), "previous_training_time = inf"),
    (lambda s: s["optimizer_history"][-1].update(num_updates="7"), "num_updates = '7'"),
    (lambda s: s["last_optimizer_state"]["param_groups"][0].update(eps=float("nan")), "eps = nan"),
])
def test_a_training_state_of_another_shape_is_one_line(change, where, good_state, tmp_path):
    state = copy.deepcopy(good_state)
    change(state)
    with pytest.raises(CheckpointError, match="refusing model file") as err:
        safe_load(save(state, tmp_path / "state.pt"))
    assert where in str(err.value)


def test_a_legacy_args_value_hydra_cannot_parse_is_one_line_naming_the_field(good_state, tmp_path):
    path = save(hostile.legacy_args_backslash_quote(good_state, tmp_path), tmp_path / "quote.pt")
    with pytest.raises(CheckpointError) as err:
        load_checkpoint_to_cpu(str(path))
    assert str(path) in str(err.value) and "\n" not in str(err.value)


# ---------------------------------------------------------------- converters
def test_a_converter_s_config_json_larger_than_its_weights_is_one_line(tmp_path):
    from fairseq_ext.cli.convert import run

    hf = tmp_path / "hf"
    hf.mkdir()
    (hf / "config.json").write_text(json.dumps({"model_type": "bert", "vocab_size": 10, "intermediate_size": 10 ** 8}))
    torch.save({"embeddings.word_embeddings.weight": torch.zeros(10, 4)}, hf / "pytorch_model.bin")
    (tmp_path / "dict.txt").write_text("a 1\nb 1\n")
    flags = ["--hf-dir", str(hf), "--dict", str(tmp_path / "dict.txt"), "--out", str(tmp_path / "out")]
    assert run(["s2s_ft", *flags]) == 1
    assert not (tmp_path / "out" / "model.pt").exists()


@pytest.mark.parametrize("heads", [0, 3])
def test_a_converter_s_config_json_its_model_cannot_be_built_from_is_one_line(heads, tmp_path, capsys):
    """A head count the width does not divide (or zero): the model's own code raises; the
    converter says so in one line naming the folder."""
    from transformers import BertConfig, BertModel

    from fairseq_ext.cli.convert import run

    config = BertConfig(vocab_size=30, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                        intermediate_size=32, max_position_embeddings=64)
    hf = tmp_path / "hf"
    hf.mkdir()
    torch.save(BertModel(config).state_dict(), hf / "pytorch_model.bin")
    (hf / "config.json").write_text(json.dumps({**config.to_dict(), "num_attention_heads": heads}))
    (tmp_path / "dict.txt").write_text("".join(f"w{i} 1\n" for i in range(20)))
    flags = ["--hf-dir", str(hf), "--dict", str(tmp_path / "dict.txt"), "--out", str(tmp_path / "out")]
    assert run(["s2s_ft", *flags]) == 1
    error = capsys.readouterr().err.strip()
    assert error.count("\n") == 0 and str(hf) in error and "cannot be built" in error


def test_a_file_dropped_into_the_plugin_s_folders_is_never_imported():
    source = Path(user_dir.__file__).parent / "models" / "__init__.py"
    assert "listdir" not in source.read_text()


# ---------------------------------------------------------------- archives
def _tar(path, members, mode="w:gz"):
    with tarfile.open(path, mode) as archive:
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return path


def test_an_archive_that_expands_past_its_bound_is_refused_and_leaves_nothing(tmp_path):
    bomb = _tar(tmp_path / "bomb.tar.gz", [("model/model.pt", b"\0" * (64 << 20))])  # 64 MiB of zeros, 64 KB
    with pytest.raises(UnsafeArchiveError, match="more than"):
        extract_archive(str(bomb), str(tmp_path / "out"))
    assert not any((tmp_path / "out").rglob("model.pt")) if (tmp_path / "out").exists() else True


def test_a_sparse_member_is_refused(tmp_path):
    path = tmp_path / "sparse.tar"
    _tar(path, [("model/model.pt", b"x")], mode="w")
    raw = bytearray(path.read_bytes())
    raw[156] = ord("S")  # GNU sparse type flag on the first header
    raw[148:156] = b" " * 8
    raw[148:155] = f"{sum(raw[:512]):06o}\0".encode()
    path.write_bytes(bytes(raw))
    with pytest.raises(UnsafeArchiveError, match="sparse|not a readable"):
        extract_archive(str(path), str(tmp_path / "out"))


def test_the_hub_s_extracted_archive_is_removed_when_the_load_ends(bart_tiny_checkpoint, aclsum_bin, tmp_path):
    import tempfile

    from user_dir import from_pretrained

    archive = tmp_path / "model.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(bart_tiny_checkpoint, arcname="model/checkpoint_best.pt")
    before = set(Path(tempfile.gettempdir()).glob("fairseq_ext_archive_*"))
    summarizer = from_pretrained(str(archive), data_name_or_path=str(aclsum_bin))
    assert summarizer.summarize("we parse text .", beam=1, max_len_b=3) is not None
    assert set(Path(tempfile.gettempdir()).glob("fairseq_ext_archive_*")) == before


# ---------------------------------------------------------------- whole files, fuzzed
def _names(group):
    return sorted(_registry(group))


@st.composite
def whole_files(draw, good_state):
    """A good file with components drawn from all of fairseq's registries, path-like text in
    any field, sizes, and tensor views put anywhere."""
    state = copy.deepcopy(good_state)
    cfg = state["cfg"]
    for group in draw(st.lists(st.sampled_from(model_file.COMPONENT_GROUPS), max_size=3, unique=True)):
        node = cfg.get(group) or {}
        node = vars(node) if isinstance(node, argparse.Namespace) else node
        if draw(st.booleans()):  # the component alone: the fields it does not have are not in the way
            node = {}
        node["_name"] = draw(st.sampled_from(_names(group)))
        cfg[group] = node if not isinstance(cfg.get(group), argparse.Namespace) else argparse.Namespace(**node)
    groups = [g for g in cfg if isinstance(cfg[g], (dict, argparse.Namespace))]
    for _ in range(draw(st.integers(0, 3))):
        node = cfg[draw(st.sampled_from(groups))]
        values = vars(node) if isinstance(node, argparse.Namespace) else node
        key = draw(st.sampled_from(sorted(values) + ["data", "user_dir", "spm_model", "replace_unk", "save_dir"]))
        values[key] = draw(st.one_of(
            st.sampled_from(["/dev/zero", "/etc/passwd", "../../x", "~/.ssh/id_rsa", "file:///x", "\\\\host\\s"]),
            st.integers(-(1 << 40), 1 << 40), st.text(max_size=20)))
    if draw(st.booleans()):
        name = draw(st.sampled_from(sorted(state["model"])))
        size = draw(st.integers(2, 1 << 20))
        state["model"][name] = draw(st.sampled_from([
            torch.zeros(1).expand(size), torch.zeros(size)[::2], torch.zeros(2, size // 2 + 1).t(),
            torch.zeros(size)]))
    return state


FUZZ = settings(max_examples=40, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])


def test_whole_files_load_only_as_descriptions_of_a_model(good_state, tmp_path):
    """Property: a fuzzed file is refused in one line naming it, or it loads with reviewed
    components only, no environment field or run-time setting from the file, and dense
    tensors."""
    run_time = model_file._group_defaults()

    @FUZZ
    @given(whole_files(good_state))
    def check(state):
        path = save(state, tmp_path / "fuzzed.pt")
        try:
            loaded = load_checkpoint_to_cpu(str(path))
        except CheckpointError as err:
            assert str(path) in str(err) and "\n" not in str(err) and len(str(err)) <= 1000
            return
        cfg = OmegaConf.to_container(loaded["cfg"])  # plain containers, as a file holds them
        assert cfg["model"] is not None
        for where, group, name in model_file.selected_components({"cfg": cfg}):
            assert model_file.is_reviewed(group, name), where
        for group in model_file.RUN_TIME_GROUPS:  # fairseq's own defaults (interpolations resolved)
            expected = {k: v for k, v in run_time[group].items() if not (isinstance(v, str) and "${" in v)}
            assert {k: cfg[group][k] for k in expected} == expected, group
        for group in model_file.COMPONENT_GROUPS:
            node = cfg.get(group)
            values = vars(node) if isinstance(node, argparse.Namespace) else node or {}
            assert not [k for k in model_file.ENVIRONMENT_FIELDS if values.get(k) not in (None, "")], group
        for _, tensor in model_file._tensors(loaded, "state"):
            assert tensor.is_contiguous() or 0 not in tensor.stride()

    check()


def test_the_fuzzer_finds_a_component_the_review_would_miss(good_state, tmp_path, monkeypatch):
    """Broken on purpose: with the component check off, the property fails."""
    monkeypatch.setattr(model_file, "check_components", lambda state, path: None)
    with pytest.raises(AssertionError):
        test_whole_files_load_only_as_descriptions_of_a_model(good_state, tmp_path)

