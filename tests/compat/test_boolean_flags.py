"""Boolean flags keep fairseq's meaning: ``--x`` turns x on, ``--no-x`` turns it off.

fairseq 0.12's ``gen_parser_from_dataclass`` makes a bool field that defaults to True a
``store_false`` flag of the same name, so ``--truncate-source`` (fairseq's BART recipe: "truncate")
switched truncation off. Every task and model of the plugin is checked, field by field.
"""

import dataclasses

import pytest
from fairseq import options
from fairseq.dataclass.utils import convert_namespace_to_omegaconf, interpret_dc_type
from fairseq.models import ARCH_MODEL_NAME_REGISTRY, MODEL_DATACLASS_REGISTRY
from fairseq.tasks import TASK_DATACLASS_REGISTRY

import user_dir  # noqa: F401  (registers the plugin)
from harness import USER_DIR

SUMMARIZATION_CRITERION = "label_smoothed_cross_entropy"


def _plugin(registry):
    return {name: dc for name, dc in registry.items() if dc.__module__.startswith("user_dir.")}


def _true_booleans(dc):
    return [f.name for f in dataclasses.fields(dc)
            if not f.name.startswith("_") and interpret_dc_type(f.type) is bool and f.default is True]


def _first_arch(model_name):
    return next(arch for arch, model in ARCH_MODEL_NAME_REGISTRY.items() if model == model_name)


def _parse(task, arch, flags):
    """The flat namespace fairseq's CLIs build (the configs are copied from it); a model flag
    not given is absent from it, and the dataclass default applies."""
    argv = ["DATA", "--user-dir", USER_DIR, "--task", task, "--arch", arch, "--criterion",
            SUMMARIZATION_CRITERION, *flags]
    return options.parse_args_and_arch(options.get_training_parser(), argv)


TASK_FLAGS = [(task, name) for task, dc in _plugin(TASK_DATACLASS_REGISTRY).items() for name in _true_booleans(dc)]
MODEL_FLAGS = [(model, name) for model, dc in _plugin(MODEL_DATACLASS_REGISTRY).items() for name in _true_booleans(dc)]


def test_the_known_cases_are_covered():
    assert ("abstractive_summarization", "truncate_source") in TASK_FLAGS
    assert ("abstractive_summarization", "truncate_target") in TASK_FLAGS
    assert ("prophetnet_summ", "share_all_embeddings") in MODEL_FLAGS
    assert ("s2s_ft", "prepend_bos") in MODEL_FLAGS


@pytest.mark.parametrize("task,name", TASK_FLAGS)
def test_task_flag_means_on_and_no_flag_means_off(task, name):
    flag = name.replace("_", "-")
    assert getattr(_parse(task, "bart_summ_tiny", []), name) is True
    assert getattr(_parse(task, "bart_summ_tiny", [f"--{flag}"]), name) is True
    assert getattr(_parse(task, "bart_summ_tiny", [f"--no-{flag}"]), name) is False


@pytest.mark.parametrize("model,name", MODEL_FLAGS)
def test_model_flag_means_on_and_no_flag_means_off(model, name):
    flag, arch = name.replace("_", "-"), _first_arch(model)
    task = "s2s_ft_summarization" if model == "s2s_ft" else "abstractive_summarization"
    assert getattr(_parse(task, arch, []), name, True) is True
    assert getattr(_parse(task, arch, [f"--{flag}"]), name) is True
    assert getattr(_parse(task, arch, [f"--no-{flag}"]), name) is False


def test_truncate_source_reaches_the_task_config_as_given():
    """The issue's case end to end: fairseq's BART recipe passes --truncate-source."""
    task = "abstractive_summarization"
    on = convert_namespace_to_omegaconf(_parse(task, "bart_summ_tiny", ["--truncate-source"]))
    off = convert_namespace_to_omegaconf(_parse(task, "bart_summ_tiny", ["--no-truncate-source"]))
    assert on.task.truncate_source is True and off.task.truncate_source is False
