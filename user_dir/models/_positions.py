"""Length limits of models whose ``--max-source/target-positions`` come from the task.

The summarization tasks default these to None, meaning "the model's" (fairseq's ``translation``
task defaults them to 1024 whatever the model takes). A model whose config reads the task's
value (``II("task.max_source_positions")``) then fills in its own default here, in
``build_model``, and the task reads the result back from ``model.max_positions()``.
"""

import contextlib

from omegaconf import DictConfig, open_dict


def fill_positions(cfg, source, target):
    """Set ``cfg.max_source_positions``/``max_target_positions`` left as None to ``source`` /
    ``target`` (``target`` first: ``source`` may be a function of the target limit)."""
    with open_dict(cfg) if isinstance(cfg, DictConfig) else contextlib.nullcontext():
        if cfg.max_target_positions is None:
            cfg.max_target_positions = target
        if cfg.max_source_positions is None:
            cfg.max_source_positions = source(cfg.max_target_positions) if callable(source) else source

