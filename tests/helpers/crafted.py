"""Crafted checkpoints for the checkpoint-trust tests. Each one would run code if a loader
executed it: the code touches a sentinel file, so a test proves it did not run by asserting
the sentinel does not exist.

Two families: pickle payloads (a reducer calling ``os.system`` or ``subprocess.Popen``,
placed in the weights, ``cfg``, ``args``, a list or a dict; zip or legacy torch format) and
data-only payloads (plain strings, which ``weights_only=True`` lets through, in a field that
fairseq passes to ``eval()``).
"""

import argparse
import copy
import os
import subprocess

import torch


class Reducer:
    """Unpickling this calls ``func(*args)``: the classic pickle exploit."""

    def __init__(self, func, args):
        self.func, self.args = func, args

    def __reduce__(self):
        return self.func, self.args


def system_payload(sentinel):
    return Reducer(os.system, (f"touch {sentinel}",))  # pickled as posix.system


def popen_payload(sentinel):
    return Reducer(subprocess.Popen, (["touch", str(sentinel)],))  # pickled as commands.Popen


def eval_payload(sentinel):
    """A string that runs code when fairseq ``eval()``s it, and still reads as a list."""
    return f"__import__('pathlib').Path({str(sentinel)!r}).touch() or [100]"


def set_field(node, key, value):
    """``node.key = value`` for the Namespace or dict configs fairseq stores."""
    if isinstance(node, argparse.Namespace):
        setattr(node, key, value)
    else:
        node[key] = value


def place_pickle(state, place, payload):
    """``state`` with ``payload`` put in the weights, ``cfg``, ``args``, a list or a dict."""
    state = copy.deepcopy(state)
    if place == "model":
        state["model"]["payload"] = payload
    elif place == "cfg":
        set_field(state["cfg"]["model"], "payload", payload)
    elif place == "args":
        state["args"] = argparse.Namespace(arch="bart_summ_tiny", task="abstractive_summarization", payload=payload)
    elif place == "list":
        state["optimizer_history"].append({"payload": [payload]})
    elif place == "dict":
        state["extra_state"]["payload"] = {"nested": {"deeper": payload}}
    else:
        raise ValueError(place)
    return state


def place_in_cfg(state, group, field, value, arch=None):
    """``state`` with ``cfg.<group>.<field> = value`` (and the model's ``_name`` set to ``arch``)."""
    state = copy.deepcopy(state)
    node = state["cfg"][group]
    if node is None:
        node = state["cfg"][group] = {"_name": None}
    set_field(node, field, value)
    if arch is not None:
        set_field(state["cfg"]["model"], "_name", arch)
        set_field(state["cfg"]["model"], "arch", arch)
    return state


def as_legacy(state, args, **fields):
    """``state`` as fairseq < 0.10 wrote it: the flat ``args`` Namespace and no ``cfg``."""
    state = copy.deepcopy(state)
    args = copy.deepcopy(args)
    for key, value in fields.items():
        setattr(args, key, value)
    state["args"], state["cfg"] = args, None
    return state


def save(state, path, zip_format=True):
    torch.save(state, str(path), _use_new_zipfile_serialization=zip_format)
    return path
