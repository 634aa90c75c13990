"""Export a phase-one Z-Code++ checkpoint (``python -m fairseq_ext.cli.zcodepp_export``): fold the
GDES delta in, drop the generator, the RTD head and the optimizer state (Section 2.1). The
result loads as an ordinary ``zcodepp`` model; ``--finetune-from-model`` folds the same way on
the fly.
"""

import argparse
import logging

import torch
from omegaconf import OmegaConf

from fairseq_ext.compat import checkpoint as safe_checkpoint
from fairseq_ext.compat import model_file

from .gdes import fold_gdes_state_dict

logger = logging.getLogger(__name__)


def export(source, destination):
    """Fold ``source`` into ``destination``; returns the exported state."""
    state = safe_checkpoint.load_checkpoint_to_cpu(str(source))
    model_file.check_declared_sizes(state["cfg"]["model"], state["model"], source)
    if not fold_gdes_state_dict(state["model"]):
        raise ValueError(f"{source} has no GDES delta: it is not a phase-one (--generator-layers) checkpoint")
    model_cfg = state["cfg"]["model"]
    if isinstance(model_cfg, argparse.Namespace):
        model_cfg.generator_layers = 0
    else:
        model_cfg["generator_layers"] = 0
    state["last_optimizer_state"] = None
    if OmegaConf.is_config(state["cfg"]):
        state["cfg"] = OmegaConf.to_container(state["cfg"], resolve=True, enum_to_str=True)  # as fairseq saves
    torch.save(state, str(destination))
    return state
