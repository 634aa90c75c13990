"""Hostile model files of a few kilobytes, each made from a good checkpoint of ``bart_summ_tiny``:
one per way a file could reach past the description of a model (a component with side effects,
a path, a size, a view, a training state, a setting of the run). :data:`FILES` maps a name to
``(maker, expected)``: ``"refused"`` (a :class:`CheckpointError` naming the file) or
``"ignored"`` (the load goes on, the hostile part is not acted on); either way nothing is
written, fetched, run or imported (tests/audit_run.py watches).
"""

import argparse
import copy
import os

import torch

from crafted import save


def _cfg(state, group, **fields):
    state = copy.deepcopy(state)
    node = state["cfg"].get(group)
    if node is None:
        node = state["cfg"][group] = {}
    (vars(node) if isinstance(node, argparse.Namespace) else node).update(fields)
    return state


def unreviewed_criterion(state, work):
    """A registered fairseq criterion no recipe uses (fairseq-validate builds the file's own)."""
    return _cfg(state, "criterion", _name="sentence_prediction", classification_head_name="x", regression_target=False)


def unreviewed_model(state, work):
    return _cfg(state, "model", _name="lstm", arch="lstm")


def bert_bpe_without_vocabulary(state, work):
    """fairseq's BertBPE asks a model hub for a vocabulary when the file names none."""
    return _cfg(state, "bpe", _name="bert", bpe_cased=False, bpe_vocab_file=None)


def paths_to_devices(state, work):
    """Every path-like field names a device, a FIFO or a folder with a module in it."""
    evil = work / "evil_user_dir"
    (evil / "models").mkdir(parents=True, exist_ok=True)
    (evil / "__init__.py").write_text(f"open({str(work / 'pwned')!r}, 'w').write('ran')\n")
    state = _cfg(state, "generation", replace_unk="/dev/zero", sampling=True, temperature=50.0)
    state = _cfg(state, "model", encoder_embed_path=str(work / "fifo"), decoder_embed_path="/dev/zero")
    state = _cfg(state, "task", spm_model="/dev/zero", decode_words_file=str(work / "fifo"))
    state = _cfg(state, "common", user_dir=str(evil), tensorboard_logdir=str(work / "logs"))
    return _cfg(state, "checkpoint", save_dir=str(work / "elsewhere"))


def huge_declared_ffn(state, work):
    return _cfg(state, "model", encoder_ffn_embed_dim=10 ** 9)


def ffn_unlike_the_weights(state, work):
    """Within the size bound, unlike the weights: only the meta build can tell."""
    return _cfg(state, "model", encoder_ffn_embed_dim=60000)


def thousands_of_layers(state, work):
    return _cfg(state, "model", encoder_layers=3000, decoder_layers=3000)


def expanded_weight(state, work):
    """A stride-0 view: 4 bytes on disk, 1 GiB once anything copies it."""
    state = copy.deepcopy(state)
    state["model"]["encoder.layernorm_embedding.weight"] = torch.zeros(1).expand(1 << 28)
    return state


def expanded_ema(state, work):
    state = copy.deepcopy(state)
    ema = state["extra_state"]["ema"]
    name = next(iter(ema))
    ema[name] = torch.zeros(1).expand(1 << 28)
    return state


def expanded_optimizer_moment(state, work):
    state = copy.deepcopy(state)
    moments = next(iter(state["last_optimizer_state"]["state"].values()))
    moments["exp_avg"] = torch.zeros(1).expand(1 << 28)
    return state


def overlapping_views(state, work):
    state = copy.deepcopy(state)
    base = torch.zeros(64)
    state["model"]["encoder.layernorm_embedding.weight"] = base[:32]
    state["model"]["encoder.layernorm_embedding.bias"] = base[16:48]
    return state


def list_where_a_weight_belongs(state, work):
    state = copy.deepcopy(state)
    state["model"]["encoder.layernorm_embedding.weight"] = [0.0] * 32
    return state


def no_extra_state(state, work):
    state = copy.deepcopy(state)
    del state["extra_state"]
    return state


def huge_weight_decay(state, work):
    state = copy.deepcopy(state)
    for group in state["last_optimizer_state"]["param_groups"]:
        group["weight_decay"] = 1000.0
    return state


def training_time_past_the_stop(state, work):
    state = copy.deepcopy(state)
    state["extra_state"]["previous_training_time"] = 1e9
    return state


def legacy_args_backslash_quote(state, work):
    state = copy.deepcopy(state)
    args = copy.deepcopy(state["cfg"]["model"])
    args.task, args.criterion, args.data = "abstractive_summarization", "label_smoothed_cross_entropy", "x"
    args.eval_rouge_args = "a\\'"
    state["args"], state["cfg"] = args, None
    return state


#: name -> (maker, what must happen on every path that reads the file)
FILES = {
    "unreviewed-criterion": (unreviewed_criterion, "refused"),
    "unreviewed-model": (unreviewed_model, "refused"),
    "bert-bpe-without-vocabulary": (bert_bpe_without_vocabulary, "ignored"),
    "paths-to-devices": (paths_to_devices, "ignored"),
    "huge-declared-ffn": (huge_declared_ffn, "refused"),
    "ffn-unlike-the-weights": (ffn_unlike_the_weights, "refused"),
    "thousands-of-layers": (thousands_of_layers, "refused"),
    "expanded-weight": (expanded_weight, "refused"),
    "expanded-ema": (expanded_ema, "refused"),
    "expanded-optimizer-moment": (expanded_optimizer_moment, "refused"),
    "overlapping-views": (overlapping_views, "refused"),
    "list-where-a-weight-belongs": (list_where_a_weight_belongs, "refused"),
    "no-extra-state": (no_extra_state, "refused"),
    "huge-weight-decay": (huge_weight_decay, "ignored"),
    "training-time-past-the-stop": (training_time_past_the_stop, "refused on training"),
    "legacy-args-backslash-quote": (legacy_args_backslash_quote, "refused"),
}


def make_all(good_state, work):
    """Write every file of :data:`FILES` (and the FIFO they name) under ``work``; name -> path."""
    work.mkdir(parents=True, exist_ok=True)
    if not (work / "fifo").exists():
        os.mkfifo(work / "fifo")
    return {name: save(maker(good_state, work), work / f"{name}.pt") for name, (maker, _) in FILES.items()}
