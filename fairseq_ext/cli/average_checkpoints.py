"""``python -m fairseq_ext.cli.average_checkpoints``: the mean of several checkpoints' weights,
written as one checkpoint that fairseq-generate, -interactive and the hub read like any other.

    fairseq-train ... --save-interval-updates 50 --keep-interval-updates 5 --save-dir CKPTS
    python -m fairseq_ext.cli.average_checkpoints --inputs CKPTS --num-update-checkpoints 3 \\
        --output CKPTS/checkpoint_avg3.pt

Averaging the last few checkpoints of a run is the step of Vaswani et al. (2017), "Attention
Is All You Need", section 6.1 (the last 5 checkpoints, written every 10 minutes), and the
flags are those of fairseq's own ``scripts/average_checkpoints.py``, which the pip package of
fairseq does not ship. Unlike that script, every input is read through the safe loader
(:func:`fairseq_ext.compat.checkpoint.safe_load`, no code runs from a file), the inputs must
describe one model (the same architecture, parameter names, shapes and dtypes; integer
tensors equal), and the output holds no optimizer state: Adam's moments belong to one point of
training, not to the mean, so a run resumed from the output starts its optimizer afresh. The
rest of the output (config, update counts) is the newest input's.
"""

import argparse
import logging
import os
import re
import sys
from pathlib import Path

import torch

from ..compat.checkpoint import safe_load
from ..compat.errors import CheckpointError
from . import register_plugin

logger = logging.getLogger("fairseq_ext.cli.average_checkpoints")

#: fairseq's name for a checkpoint written every N updates: checkpoint_<epoch>_<updates>.pt
UPDATE_CHECKPOINT = re.compile(r"^checkpoint_\d+_(\d+)\.pt$")


def update_checkpoints(folder: Path, count: int, upper_bound: int | None = None) -> list[Path]:
    """The ``count`` checkpoints of ``folder`` written at the most updates (at most
    ``upper_bound``), oldest first."""
    found = []
    for path in folder.iterdir():
        match = UPDATE_CHECKPOINT.match(path.name)
        if match and (upper_bound is None or int(match.group(1)) <= upper_bound):
            found.append((int(match.group(1)), path))
    found.sort()
    if len(found) < count:
        raise ValueError(f"{folder}: {len(found)} checkpoint(s) named checkpoint_<epoch>_<updates>.pt"
                         f"{f' up to update {upper_bound}' if upper_bound is not None else ''}, "
                         f"{count} asked for (--num-update-checkpoints)")
    return [path for _, path in found[-count:]]


def architecture(state) -> str | None:
    """The registered architecture a fairseq state names (``cfg.model`` or legacy ``args``)."""
    cfg = state.get("cfg")
    model = cfg.get("model") if isinstance(cfg, dict) else None
    for node in (model, state.get("args")):
        values = vars(node) if isinstance(node, argparse.Namespace) else node
        if isinstance(values, dict) and (values.get("arch") or values.get("_name")):
            return values.get("arch") or values.get("_name")
    return None


def average_states(states: list[dict], names: list[str]) -> dict[str, torch.Tensor]:
    """The element-wise mean of the ``model`` entries of ``states`` (named ``names`` in errors):
    floating tensors averaged in float64 and cast back to their dtype, other tensors (step
    counters, index buffers) kept only where every input agrees."""
    first, first_name = states[0]["model"], names[0]
    arch = architecture(states[0])
    for state, name in zip(states[1:], names[1:]):
        if architecture(state) != arch:
            raise ValueError(f"{name} is a {architecture(state)} model, {first_name} a {arch}: "
                             "only checkpoints of one model can be averaged")
        model = state["model"]
        if model.keys() != first.keys():
            extra, missing = sorted(model.keys() - first.keys()), sorted(first.keys() - model.keys())
            raise ValueError(f"{name} and {first_name} hold different parameters "
                             f"(only in {name}: {extra[:5]}; only in {first_name}: {missing[:5]})")
        for key, tensor in model.items():
            if tensor.shape != first[key].shape or tensor.dtype != first[key].dtype:
                raise ValueError(f"{key} is {tuple(tensor.shape)} {tensor.dtype} in {name} but "
                                 f"{tuple(first[key].shape)} {first[key].dtype} in {first_name}")
    averaged = {}
    for key, tensor in first.items():
        if tensor.is_floating_point():
            total = torch.zeros(tensor.shape, dtype=torch.float64)
            for state in states:
                total += state["model"][key].to(torch.float64)
            averaged[key] = (total / len(states)).to(tensor.dtype)
        else:
            for state, name in zip(states[1:], names[1:]):
                if not torch.equal(state["model"][key], tensor):
                    raise ValueError(f"{key} ({tensor.dtype}) differs between {name} and {first_name}; "
                                     "a tensor that is not floating point cannot be averaged")
            averaged[key] = tensor.clone()
    return averaged


def average_checkpoints(paths: list[Path], output: Path) -> dict:
    """Read ``paths`` safely, average their weights and write ``output`` (the newest input's
    state with the mean weights and no optimizer state); returns the written state."""
    if len(paths) < 1:
        raise ValueError("no checkpoints to average")
    if len(set(map(os.path.realpath, paths))) != len(paths):
        raise ValueError("a checkpoint is named twice among the inputs: each counts once in the mean")
    states = []
    for path in paths:
        state = safe_load(path, mmap=True)  # the optimizer's moments are mapped, never read
        if not isinstance(state, dict) or not isinstance(state.get("model"), dict) \
                or not {"cfg", "args"} & set(state):
            raise ValueError(f"{path} is not a fairseq checkpoint (no model, and no cfg or args)")
        states.append(state)
    names = [str(p) for p in paths]
    result = {key: value for key, value in states[-1].items() if key != "last_optimizer_state"}
    result["model"] = average_states(states, names)
    output.parent.mkdir(parents=True, exist_ok=True)
    partial = output.with_name(output.name + ".partial")
    torch.save(result, partial)
    os.replace(partial, output)
    return result


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m fairseq_ext.cli.average_checkpoints",
        description="Average the weights of several checkpoints of one model into one checkpoint.")
    parser.add_argument("--inputs", nargs="+", required=True,
                        help="checkpoint files, or one folder with --num-update-checkpoints")
    parser.add_argument("--output", required=True, help="the averaged checkpoint to write")
    parser.add_argument("--num-update-checkpoints", type=int,
                        help="average the last N checkpoint_<epoch>_<updates>.pt files of the folder in --inputs")
    parser.add_argument("--checkpoint-upper-bound", type=int,
                        help="with --num-update-checkpoints: only checkpoints written at this many updates or fewer")
    args = parser.parse_args(argv)
    logging.basicConfig(format="%(asctime)s | %(levelname)s | %(name)s | %(message)s",
                        level=logging.INFO, stream=sys.stderr)
    register_plugin()  # the names the plugin's checkpoints select
    try:
        if args.num_update_checkpoints is not None:
            if len(args.inputs) != 1 or not Path(args.inputs[0]).is_dir():
                parser.error("--num-update-checkpoints takes one folder in --inputs")
            if args.num_update_checkpoints < 1:
                parser.error("--num-update-checkpoints must be at least 1")
            paths = update_checkpoints(Path(args.inputs[0]), args.num_update_checkpoints,
                                       args.checkpoint_upper_bound)
        else:
            if args.checkpoint_upper_bound is not None:
                parser.error("--checkpoint-upper-bound needs --num-update-checkpoints")
            paths = [Path(p) for p in args.inputs]
            folders = [str(p) for p in paths if p.is_dir()]
            if folders:
                parser.error(f"{folders[0]} is a folder: name the files, or add --num-update-checkpoints N")
        logger.info(f"averaging {len(paths)} checkpoint(s): {', '.join(p.name for p in paths)}")
        state = average_checkpoints(paths, Path(args.output))
    except (ValueError, OSError, CheckpointError) as error:
        parser.exit(1, f"average_checkpoints: error: {error}\n")
    logger.info(f"wrote {args.output}: {len(state['model'])} tensors, the mean of {len(paths)} checkpoint(s)")


if __name__ == "__main__":
    main()
