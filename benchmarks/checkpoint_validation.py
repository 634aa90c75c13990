"""The cost of checking a model file (fairseq_ext/compat/config_schema.py, fairseq_ext/compat/model_file.py)
when fairseq loads a base-size checkpoint.

Builds a BART-base-size model of the plugin (``bart_summ`` layout, fairseq's ``bart_base``
sizes: 6+6 layers, 768 wide, a 50,265-row vocabulary, random weights), saves it as
fairseq-train does (the whole ``cfg`` of every group, ``cfg.model`` the flat Namespace of
flags), then times, interleaved, ``--repeats`` times each, in process CPU time:
``checkpoint_utils.load_checkpoint_to_cpu`` (the plugin's loader, the funnel of every load path)
with every check, without the configuration validator, and without the model-file checks
(tensors, components, training state, describe-only); the validator alone on the state; and
``load_model_ensemble`` (what fairseq-generate does: read, build, load the weights) with and
without the size checks (declared sizes, the ``meta``-device build and shape comparison).

    python -m benchmarks.checkpoint_validation --repeats 7
"""

import argparse
import contextlib
import enum
import statistics
import tempfile
from pathlib import Path

import torch
from fairseq import checkpoint_utils
from fairseq.data import Dictionary
from fairseq.dataclass.configs import FairseqConfig
from fairseq.models.bart import BARTModel, bart_base_architecture
from omegaconf import OmegaConf

import user_dir  # noqa: F401  (registers the plugin, installs its loader)
from benchmarks.timing import once
from fairseq_ext.compat import checkpoint, model_file
from fairseq_ext.compat.config_schema import validate_checkpoint_config

VOCAB = 50265


class _Task:
    def __init__(self, dictionary):
        self.source_dictionary = self.target_dictionary = dictionary


def _dictionary():
    dictionary = Dictionary()
    for i in range(VOCAB - len(dictionary)):
        dictionary.add_symbol(f"w{i}")
    return dictionary


def base_checkpoint(path):
    """Save a base-size plugin BART checkpoint with a full fairseq-train configuration."""
    dictionary = _dictionary()
    args = argparse.Namespace(arch="bart_base", _name="bart_base", task="abstractive_summarization",
                              criterion="label_smoothed_cross_entropy", optimizer="adam", lr=[3e-5],
                              max_source_positions=1024, max_target_positions=1024, data="data/bin")
    bart_base_architecture(args)
    model = BARTModel.build_model(args, _Task(dictionary))
    cfg = OmegaConf.to_container(OmegaConf.structured(FairseqConfig()), resolve=False, throw_on_missing=False)
    cfg = {group: node for group, node in cfg.items() if isinstance(node, dict) or node is None}
    cfg = _resolved(cfg)
    cfg["model"] = args
    cfg["task"] = {"_name": "abstractive_summarization", "data": "data/bin"}
    cfg["criterion"] = {"_name": "label_smoothed_cross_entropy", "label_smoothing": 0.1}
    cfg["optimizer"] = {"_name": "adam", "adam_betas": [0.9, 0.999], "lr": [3e-5]}
    cfg["lr_scheduler"] = {"_name": "polynomial_decay", "warmup_updates": 500}
    state = {"args": None, "cfg": cfg, "model": model.state_dict(), "criterion": None,
             "optimizer_history": [{"criterion_name": "LabelSmoothedCrossEntropyCriterion", "optimizer_name": "Adam",
                                    "lr_scheduler_state": {"best": None}, "num_updates": 0}],
             "extra_state": {"train_iterator": {"epoch": 1}}, "last_optimizer_state": None}
    torch.save(state, path)
    return sum(p.numel() for p in model.parameters())


def _resolved(node):
    """Interpolated defaults (``${...}``) replaced by ``None`` and choices by their text, as a
    saved checkpoint holds them."""
    if isinstance(node, dict):
        return {k: _resolved(v) for k, v in node.items()}
    if isinstance(node, list):
        return [_resolved(v) for v in node]
    if isinstance(node, enum.Enum):
        return str(node.value)
    return None if isinstance(node, str) and ("${" in node or node == "???") else node


@contextlib.contextmanager
def switched_off(module, *names):
    """``module``'s functions ``names`` do nothing inside the block."""
    saved = {name: getattr(module, name) for name in names}
    try:
        for name in names:
            setattr(module, name, lambda *args, **kwargs: None)
        yield
    finally:
        for name, function in saved.items():
            setattr(module, name, function)


MODEL_FILE_CHECKS = ("check_tensors", "check_components", "check_training_state", "describe_only")
SIZE_CHECKS = ("check_declared_sizes", "check_model_shapes")


def model_file_checks(state, path):
    for name in MODEL_FILE_CHECKS:
        getattr(model_file, name)(state, path)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory() as tmp:
        path = str(Path(tmp) / "checkpoint_base.pt")
        params = base_checkpoint(path)
        for side in ("source", "target"):
            _dictionary().save(str(Path(tmp) / f"dict.{side}.txt"))
        overrides = {"data": tmp}
        state = checkpoint_utils.load_checkpoint_toonce(path)  # warm-up: registries, caches, page cache
        checkpoint_utils.load_model_ensemble([path], arg_overrides=overrides)
        raw = torch.load(path, weights_only=False)
        checked = torch.load(path, weights_only=False)  # describe_only sets its run-time groups back
        keys = ("all", "no validator", "no model-file checks", "alone", "checks alone", "build", "build unchecked")
        times = {key: [] for key in keys}
        load = lambda: checkpoint_utils.load_checkpoint_toonce(path)  # noqa: E731
        build = lambda: checkpoint_utils.load_model_ensemble([path], arg_overrides=overrides)  # noqa: E731
        for _ in range(args.repeats):
            times["all"].append(once(load))
            with switched_off(checkpoint, "validate_checkpoint_config"):
                times["no validator"].append(once(load))
            with switched_off(model_file, *MODEL_FILE_CHECKS):
                times["no model-file checks"].append(once(load))
            times["alone"].append(once(lambda: validate_checkpoint_config(raw, path)))
            times["checks alone"].append(once(lambda: model_file_checks(checked, path)))
            times["build"].append(once(build))
            with switched_off(model_file, *SIZE_CHECKS):
                times["build unchecked"].append(once(build))
        del state
    med = {key: statistics.median(values) for key, values in times.items()}
    print(f"base-size checkpoint: {params / 1e6:.1f}M parameters, {args.repeats} interleaved repeats, "
          "process CPU time, 1 thread")
    print("| load | median s | min s | ratio to all checks |")
    print("|---|---|---|---|")
    for key, label in (("all", "load_checkpoint_to_cpu, every check"),
                       ("no validator", "without the configuration validator"),
                       ("no model-file checks", "without the model-file checks")):
        print(f"| {label} | {med[key]:.3f} | {min(times[key]):.3f} | {med[key] / med['all']:.3f} |")
    print(f"| the validator alone | {med['alone'] * 1000:.1f} ms | {min(times['alone']) * 1000:.1f} ms | "
          f"{med['alone'] / med['all']:.4f} of a load |")
    print(f"| the model-file checks alone | {med['checks alone'] * 1000:.1f} ms | "
          f"{min(times['checks alone']) * 1000:.1f} ms | {med['checks alone'] / med['all']:.4f} of a load |")
    print(f"| load_model_ensemble, every check | {med['build']:.3f} | {min(times['build']):.3f} | 1.00 |")
    print(f"| load_model_ensemble without the size checks | {med['build unchecked']:.3f} | "
          f"{min(times['build unchecked']):.3f} | {med['build unchecked'] / med['build']:.3f} |")


if __name__ == "__main__":
    main()
