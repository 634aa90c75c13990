"""The cost of validating a checkpoint's configuration (fairseq_ext/compat/config_schema.py) when fairseq
loads a base-size checkpoint.

Builds a BART-base-size model of the plugin (``bart_summ`` layout, fairseq's ``bart_base``
sizes: 6+6 layers, 768 wide, a 50,265-row vocabulary, random weights), saves it as
fairseq-train does (the whole ``cfg`` of every group, ``cfg.model`` the flat Namespace of
flags), then times ``checkpoint_utils.load_checkpoint_to_cpu`` (the plugin's loader, the funnel
of every load path) with the validator and with it switched off, interleaved, ``--repeats``
times each, in process CPU time; and the validator alone on the state.

    python -m benchmarks.checkpoint_validation --repeats 7
"""

import argparse
import enum
import statistics
import tempfile
import time
from pathlib import Path

import torch
from fairseq import checkpoint_utils
from fairseq.data import Dictionary
from fairseq.dataclass.configs import FairseqConfig
from fairseq.models.bart import BARTModel, bart_base_architecture
from omegaconf import OmegaConf

import user_dir  # noqa: F401  (registers the plugin, installs its loader)
from fairseq_ext.compat import checkpoint
from fairseq_ext.compat.config_schema import validate_checkpoint_config

VOCAB = 50265


class _Task:
    def __init__(self, dictionary):
        self.source_dictionary = self.target_dictionary = dictionary


def base_checkpoint(path):
    """Save a base-size plugin BART checkpoint with a full fairseq-train configuration."""
    dictionary = Dictionary()
    for i in range(VOCAB - len(dictionary)):
        dictionary.add_symbol(f"w{i}")
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


def _cpu(fn):
    start = time.process_time()
    fn()
    return time.process_time() - start


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory() as tmp:
        path = str(Path(tmp) / "checkpoint_base.pt")
        params = base_checkpoint(path)
        state = checkpoint_utils.load_checkpoint_to_cpu(path)  # warm-up: registries, caches, page cache
        raw = torch.load(path, weights_only=False)
        on, off, alone = [], [], []
        real = checkpoint.validate_checkpoint_config
        for _ in range(args.repeats):
            on.append(_cpu(lambda: checkpoint_utils.load_checkpoint_to_cpu(path)))
            checkpoint.validate_checkpoint_config = lambda state, source: None
            try:
                off.append(_cpu(lambda: checkpoint_utils.load_checkpoint_to_cpu(path)))
            finally:
                checkpoint.validate_checkpoint_config = real
            alone.append(_cpu(lambda: validate_checkpoint_config(raw, path)))
        del state
    med_on, med_off, med_alone = (statistics.median(x) for x in (on, off, alone))
    print(f"base-size checkpoint: {params / 1e6:.1f}M parameters, {args.repeats} interleaved repeats, "
          "process CPU time, 1 thread")
    print("| load | median s | min s | ratio to no validation |")
    print("|---|---|---|---|")
    print(f"| without the validator | {med_off:.3f} | {min(off):.3f} | 1.00 |")
    print(f"| with the validator | {med_on:.3f} | {min(on):.3f} | {med_on / med_off:.3f} |")
    print(f"| the validator alone | {med_alone * 1000:.1f} ms | {min(alone) * 1000:.1f} ms | "
          f"{med_alone / med_off:.4f} of a load |")


if __name__ == "__main__":
    main()
