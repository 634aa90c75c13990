"""Shared helpers of the fp16/bf16 tests (``tests/training/test_mixed_precision.py``,
``tests/training/test_half_precision_steps.py``): every family built by its own task and
criterion on real tiny data, its weights perturbed, and batches whose rows are padded.

* :func:`perturb`: matrices ~ N(0, 1/fan_in), LayerNorm gains 1 +- 0.1, non-zero biases: O(1)
  activations and logits spread over several nats, not the near-uniform outputs of a fresh init;
* :func:`build`: ``(task, model, criterion)`` from fairseq-train's own arguments;
* :func:`summarization_rows`: examples of the ``valid`` split cut to given lengths (a 1-token
  source among them);
* :func:`plain_text_corpus`: the source side of a summarization corpus seen as the plain-text
  corpus the pre-training tasks read (no second corpus to prepare).
"""

import argparse
import os
import shutil

import torch
from fairseq import options, tasks, utils
from fairseq.dataclass.utils import convert_namespace_to_omegaconf

from harness import USER_DIR, train_argv

HALF = (torch.float16, torch.bfloat16)
#: max |log p_fp16/bf16 - log p_fp32| of a target token (tests/training/test_mixed_precision.py
#: derives it)
LOGPROB_TOLERANCE = {torch.float16: 0.02, torch.bfloat16: 0.16}

#: family -> (arch, task, flags) of its summarization fine-tuning.
FAMILIES = {
    "bart": ("bart_summ_tiny", "abstractive_summarization", []),
    "prophetnet": ("prophetnet_summ_tiny", "abstractive_summarization", []),
    "bart_ls": ("bart_ls_tiny", "abstractive_summarization",
                ["--block-size", "16", "--pooling-layers", "1", "--max-source-positions", "256"]),
    "zcodepp": ("zcodepp_tiny", "abstractive_summarization", []),
    "s2s_ft": ("s2s_ft_tiny", "s2s_ft_summarization", ["--max-source-positions", "96", "--max-target-positions", "48"]),
    "transformer_sm": ("transformer_sm_tiny", "transformer_sm",
                       ["--max-source-positions", "128", "--max-target-positions", "48"]),
}  # fmt: skip


def perturb(model, seed=0):
    """Overwrite every parameter of ``model`` deterministically (see the module docstring)."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, weight in model.named_parameters():
            if weight.dim() >= 2:
                weight.copy_(torch.randn(weight.shape, generator=gen) * weight.size(-1) ** -0.5)
            elif "norm" in name and name.endswith("weight"):
                weight.copy_(1 + 0.2 * (torch.rand(weight.shape, generator=gen) - 0.5))
            else:
                weight.copy_(0.1 * torch.randn(weight.shape, generator=gen))
    return model


def build(data, arch, task_name, flags=(), criterion="label_smoothed_cross_entropy"):
    """``(task, model, criterion)`` as fairseq-train builds them from ``data --arch ARCH --task
    TASK --criterion CRITERION FLAGS``; the model's weights :func:`perturb`-ed, in eval mode."""
    utils.import_user_module(argparse.Namespace(user_dir=USER_DIR))
    argv = train_argv(data, "unused", arch, flags, task=task_name, criterion=criterion)
    cfg = convert_namespace_to_omegaconf(options.parse_args_and_arch(options.get_training_parser(), argv))
    task = tasks.setup_task(cfg.task)
    torch.manual_seed(0)
    model = perturb(task.build_model(cfg.model)).eval()
    return task, model, task.build_criterion(cfg.criterion)


def shorten(tokens, length, eos):
    """The first ``length`` tokens, keeping a final ``</s>`` (``None``: all of them)."""
    if length is None or len(tokens) <= length:
        return tokens
    return torch.cat([tokens[: length - 1], tokens[-1:]]) if tokens[-1] == eos else tokens[:length]


def summarization_rows(task, lengths, split="valid"):
    """Examples of ``split`` for one batch (``task.dataset(split).collater`` collates them):
    row ``i`` is example ``i`` cut to ``lengths[i]`` ``(source, target)`` tokens (``None``: as
    the task gives it)."""
    if split not in task.datasets:
        task.load_dataset(split)
    dataset = task.dataset(split)
    eos = task.source_dictionary.eos()
    rows = []
    for index, (source, target) in enumerate(lengths):
        item = dict(dataset[index])
        item["source"], item["target"] = shorten(item["source"], source, eos), shorten(item["target"], target, eos)
        rows.append(item)
    return rows


def plain_text_corpus(summarization_bin, out_dir):
    """A plain-text corpus (``dict.txt``, ``{split}.{bin,idx}``) made of the source documents
    of a binarized summarization corpus (``dict.source.txt``, ``{split}.source-target.source.*``):
    the same dictionary and token files, one document a line."""
    os.makedirs(out_dir, exist_ok=True)
    shutil.copyfile(os.path.join(summarization_bin, "dict.source.txt"), os.path.join(out_dir, "dict.txt"))
    for split in ("train", "valid", "test"):
        for ext in ("bin", "idx"):
            shutil.copyfile(os.path.join(summarization_bin, f"{split}.source-target.source.{ext}"),
                            os.path.join(out_dir, f"{split}.{ext}"))  # fmt: skip
    return out_dir
