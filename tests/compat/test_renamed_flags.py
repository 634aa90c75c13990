"""Renamed flags (fairseq_ext/compat/renamed_flags.py): every new name is a flag of its owner and the
old one is gone; checkpoints saved under the old names load with their own values, through
fairseq's loader (the hub, fairseq-generate), for each family that renamed a flag."""

import argparse

import pytest
import torch
from fairseq import checkpoint_utils, options, tasks
from fairseq.dataclass.utils import convert_namespace_to_omegaconf
from fairseq.models import MODEL_REGISTRY
from fairseq.tasks import TASK_REGISTRY
from omegaconf import OmegaConf

import user_dir  # noqa: F401  (registers the owners; installs the checkpoint loader, as --user-dir does)
from fairseq_ext.compat.renamed_flags import RENAMED_FLAGS, upgrade_checkpoint_config
from harness import USER_DIR

WORDS = 30


def flags_of(owner):
    parser = argparse.ArgumentParser()
    (TASK_REGISTRY.get(owner) or MODEL_REGISTRY[owner]).add_args(parser)
    return {s for action in parser._actions for s in action.option_strings}


@pytest.mark.parametrize("flag", RENAMED_FLAGS, ids=lambda f: f"{f.owner}.{f.old}")
def test_new_names_are_the_owners_flags_and_old_ones_are_gone(flag):
    flags = flags_of(flag.owner)
    assert "--" + flag.new.replace("_", "-") in flags
    assert "--" + flag.old.replace("_", "-") not in flags


def test_one_flag_one_meaning():
    """``--mask-ratio`` meant two things; each old name now has one new name per owner, and
    no new name is an old name of another owner."""
    olds = {f.old for f in RENAMED_FLAGS}
    assert not olds & {f.new for f in RENAMED_FLAGS}
    assert len({(f.owner, f.old) for f in RENAMED_FLAGS}) == len(RENAMED_FLAGS)


def test_sections_are_renamed_by_their_owner():
    """s2s-ft's ``mask_ratio`` (mask share 0.7) and ProphetNet's (fraction 0.2) in one config."""
    state = {"cfg": OmegaConf.create({
        "model": {"_name": "s2s_ft_tiny", "mask_ratio": 0.7, "random_ratio": 0.2, "layers": 2},
        "task": {"_name": "prophetnet_span_mask", "mask_ratio": 0.2, "mask_replace_prob": 0.8,
                 "random_replace_prob": 0.1, "span_chunk": 64},
    })}
    renamed = upgrade_checkpoint_config(state)
    assert len(renamed) == 5
    model, task = state["cfg"].model, state["cfg"].task
    assert dict(model) == {"_name": "s2s_ft_tiny", "leave_unmasked_prob": 0.1, "random_token_prob": 0.2, "layers": 2}
    assert dict(task) == {"_name": "prophetnet_span_mask", "mask_prob": 0.2, "leave_unmasked_prob": 0.1,
                          "random_token_prob": 0.1, "span_chunk": 64}


def test_legacy_model_sections_hold_the_task_options_too():
    """Z-Code++ takes fairseq's legacy arguments: its model section is the whole namespace."""
    state = {"cfg": OmegaConf.create({
        "model": {"_name": "zcodepp_tiny", "rel_pos_buckets": 8, "max_relative_positions": 20,
                  "mean_noise_span_length": 2.5, "task": "zcodepp_pretraining"},
        "task": {"_name": "zcodepp_pretraining", "mean_noise_span_length": 2.5},
    }), "args": argparse.Namespace(arch="prophetnet_summ_tiny", task="prophetnet_span_mask", num_buckets=8,
                                   mask_ratio=0.3)}
    upgrade_checkpoint_config(state)
    assert dict(state["cfg"].model) == {"_name": "zcodepp_tiny", "relative_buckets": 8, "relative_max_distance": 20,
                                        "mean_span_length": 2.5, "task": "zcodepp_pretraining"}
    assert dict(state["cfg"].task) == {"_name": "zcodepp_pretraining", "mean_span_length": 2.5}
    assert vars(state["args"]) == {"arch": "prophetnet_summ_tiny", "task": "prophetnet_span_mask",
                                   "relative_buckets": 8, "mask_prob": 0.3}
    assert upgrade_checkpoint_config(state) == []  # nothing left to rename


# ---------------------------------------------------------------- real checkpoints
def data_dir(tmp_path):
    lines = "".join(f"w{i} {100 - i}\n" for i in range(WORDS))
    for name in ("dict.txt", "dict.source.txt", "dict.target.txt"):
        (tmp_path / name).write_text(lines)
    return tmp_path


def save_with_old_names(tmp_path, argv, renames):
    """Build the model ``argv`` trains, save it as fairseq does, with ``renames`` applied to the
    stored config (``{(section, new): (old, old value)}``); returns the path and the model."""
    parser = options.get_training_parser()
    cfg = convert_namespace_to_omegaconf(options.parse_args_and_arch(parser, argv))
    task = tasks.setup_task(cfg.task)
    model = task.build_model(cfg.model)
    stored = OmegaConf.to_container(cfg, resolve=True, enum_to_str=True)
    for (section, new), (old, value) in renames.items():
        fields = stored[section] if isinstance(stored[section], dict) else vars(stored[section])  # legacy: Namespace
        assert new in fields
        del fields[new]
        fields[old] = value
    path = tmp_path / "old.pt"
    torch.save({"cfg": stored, "model": model.state_dict(), "args": None, "extra_state": {},
                "optimizer_history": [{"criterion_name": "x", "optimizer_name": "x", "num_updates": 0,
                                       "lr_scheduler_state": {"best": None}}],
                "last_optimizer_state": None}, path)
    return path, model


def train_argv(data, task, arch, criterion, *flags):
    return [str(data), "--user-dir", USER_DIR, "--task", task, "--arch", arch, "--criterion", criterion, *flags]


def load(path, data):
    """The model, config and task of ``path``, with the caller's data directory (a model file
    names none)."""
    models, cfg, task = checkpoint_utils.load_model_ensemble_and_task([str(path)], arg_overrides={"data": str(data)})
    return models[0], cfg, task


def same_weights(a, b):
    sa, sb = a.state_dict(), b.state_dict()
    return sa.keys() == sb.keys() and all(torch.equal(sa[k], sb[k]) for k in sa)


def test_old_zcodepp_checkpoint_keeps_its_relative_positions(tmp_path):
    data = data_dir(tmp_path)
    argv = train_argv(data, "zcodepp_pretraining", "zcodepp_tiny", "zcodepp_joint", "--generator-layers", "1",
                      "--tokens-per-sample", "64", "--max-source-positions", "64", "--max-target-positions", "64",
                      "--num-sentinels", "20", "--relative-buckets", "8", "--relative-max-distance", "20",
                      "--mean-span-length", "2.5")
    path, built = save_with_old_names(tmp_path, argv, {
        ("model", "relative_buckets"): ("rel_pos_buckets", 8),
        ("model", "relative_max_distance"): ("max_relative_positions", 20),
        ("model", "mean_span_length"): ("mean_noise_span_length", 2.5),
        ("task", "mean_span_length"): ("mean_noise_span_length", 2.5),
    })
    model, cfg, task = load(path, data)
    assert (model.encoder.relative_buckets, model.encoder.relative_max_distance) == (8, 20)
    assert task.cfg.mean_span_length == 2.5 and same_weights(model, built)


def test_old_s2s_ft_checkpoint_keeps_its_noise_shares(tmp_path):
    data = data_dir(tmp_path)
    argv = train_argv(data, "s2s_ft_summarization", "s2s_ft_tiny", "s2s_ft", "--source-lang", "source",
                      "--target-lang", "target", "--random-token-prob", "0.3", "--leave-unmasked-prob", "0.2")
    path, built = save_with_old_names(tmp_path, argv, {
        ("model", "random_token_prob"): ("random_ratio", 0.3),
        ("model", "leave_unmasked_prob"): ("mask_ratio", 0.5),
    })
    model, _, _ = load(path, data)
    assert (model.cfg.random_token_prob, model.cfg.leave_unmasked_prob) == (0.3, 0.2)
    assert same_weights(model, built)


def test_old_prophetnet_pretraining_checkpoint_keeps_its_masking(tmp_path):
    data = data_dir(tmp_path)
    argv = train_argv(data, "prophetnet_span_mask", "prophetnet_summ_tiny", "ngram_language_loss",
                      "--tokens-per-sample", "128", "--max-source-positions", "128", "--max-target-positions", "128",
                      "--relative-buckets", "8", "--mask-prob", "0.2", "--random-token-prob", "0.05",
                      "--leave-unmasked-prob", "0.15")
    path, built = save_with_old_names(tmp_path, argv, {
        ("model", "relative_buckets"): ("num_buckets", 8),
        ("task", "mask_prob"): ("mask_ratio", 0.2),
        ("task", "random_token_prob"): ("random_replace_prob", 0.05),
        ("task", "leave_unmasked_prob"): ("mask_replace_prob", 0.8),
    })
    model, cfg, task = load(path, data)
    assert cfg.model.relative_buckets == 8 and same_weights(model, built)
    assert (task.cfg.mask_prob, task.cfg.random_token_prob, task.cfg.leave_unmasked_prob) == (0.2, 0.05, 0.15)


def test_options_added_after_a_checkpoint_was_saved_read_as_their_defaults():
    """A checkpoint saved before ``--coverage``, ``--no-repeat-word`` and
    ``--coverage-loss-weight`` existed: its sections get them at their defaults (the
    behaviour it was trained with), its own values stay, and fields whose default refers to
    another field are left to fairseq."""
    from fairseq_ext.compat.renamed_flags import add_new_fields

    cfg = OmegaConf.create({
        "model": {"_name": "s2s_ft_tiny", "copy_heads": 2, "layers": 2},
        "task": {"_name": "s2s_ft_summarization", "data": "bin"},
        "criterion": {"_name": "s2s_ft", "label_smoothing": 0.1},
    })
    added = add_new_fields(cfg, "old.pt")
    assert {"cfg.model.coverage", "cfg.task.no_repeat_word", "cfg.criterion.coverage_loss_weight"} <= set(added)
    assert cfg.model.coverage is False and cfg.task.no_repeat_word is False
    assert cfg.criterion.coverage_loss_weight == 0.0
    assert cfg.model.copy_heads == 2 and cfg.model.layers == 2 and cfg.task.data == "bin"
    assert not any("${" in str(v) for section in cfg.values() for v in section.values())
    assert add_new_fields(cfg) == []  # nothing left to add
