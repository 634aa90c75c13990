"""Flags renamed to the one vocabulary of docs/flags.md, and how older checkpoints are read.

:func:`upgrade_checkpoint_config` maps every old name of :data:`RENAMED_FLAGS` to its new one in
the section of the task or model that owned it (an old mask share becomes
``leave_unmasked_prob = 1 - mask - random``); :func:`add_new_fields` gives a checkpoint the
options added since it was saved, at their defaults. :mod:`.checkpoint` applies both to every
checkpoint read.
"""

import logging
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Optional

logger = logging.getLogger(__name__)

#: Decimals kept when a share is computed from older ones (1 - 0.8 - 0.1 is 0.1, not 0.0999...).
SHARE_DECIMALS = 10


@dataclass(frozen=True)
class RenamedFlag:
    """``old`` became ``new`` in the config of the task or model registered as ``owner``."""

    owner: str
    old: str
    new: str
    value: Optional[Callable[[Mapping[str, Any]], Any]] = None
    """The new value from the old config section; ``None``: the old value as it is."""


def _unchanged_share(mask_share, random_share, random_default=0.1):
    """``leave_unmasked_prob`` from an old section's mask and random-token shares."""

    def value(section):
        random = section.get(random_share, random_default)
        return round(1.0 - section[mask_share] - random, SHARE_DECIMALS)

    return value


#: Every renamed flag (the table in docs/flags.md lists them with their families).
RENAMED_FLAGS = (
    RenamedFlag("prophetnet_span_mask", "mask_ratio", "mask_prob"),
    RenamedFlag("prophetnet_span_mask", "mask_replace_prob", "leave_unmasked_prob",
                _unchanged_share("mask_replace_prob", "random_replace_prob")),
    RenamedFlag("prophetnet_span_mask", "random_replace_prob", "random_token_prob"),
    RenamedFlag("prophetnet_summ", "num_buckets", "relative_buckets"),
    RenamedFlag("s2s_ft", "mask_ratio", "leave_unmasked_prob", _unchanged_share("mask_ratio", "random_ratio")),
    RenamedFlag("s2s_ft", "random_ratio", "random_token_prob"),
    RenamedFlag("zcodepp", "rel_pos_buckets", "relative_buckets"),
    RenamedFlag("zcodepp", "max_relative_positions", "relative_max_distance"),
    RenamedFlag("zcodepp_pretraining", "mean_noise_span_length", "mean_span_length"),
)


def rename_fields(section, owners, renamed=RENAMED_FLAGS):
    """Rename, in place, the old fields of ``section`` (a dict-like config or an
    ``argparse.Namespace``) whose owner is in ``owners`` (earlier owners win a name both
    renamed); returns the ``(old, new)`` pairs renamed."""
    fields = section if hasattr(section, "keys") else vars(section)
    before = {flag.old: fields[flag.old] for flag in renamed if flag.old in fields}  # what the old section said
    done = []
    for owner in owners:
        for flag in renamed:
            if flag.owner != owner or flag.old not in fields:
                continue
            if flag.new not in fields:
                fields[flag.new] = before[flag.old] if flag.value is None else flag.value(before)
            del fields[flag.old]
            done.append((flag.old, flag.new))
    return done


def model_owners(name):
    """The registered names of the model that the architecture or model ``name`` selects."""
    from fairseq.models import ARCH_MODEL_REGISTRY, MODEL_REGISTRY

    model = ARCH_MODEL_REGISTRY.get(name) or MODEL_REGISTRY.get(name)
    if model is None:
        return [name]
    return [registered for registered, cls in MODEL_REGISTRY.items() if cls is model]


def _section_owners(kind, section, task_name):
    """Whose renames apply to a config section: the task's for ``task``; for ``model`` the
    model's, then the task's when the model takes fairseq's legacy arguments (its section is
    the whole argument namespace, task options included)."""
    from fairseq.models import MODEL_DATACLASS_REGISTRY

    if kind == "task":
        return [task_name]
    name = _get(section, "_name") or _get(section, "arch")
    owners = model_owners(name) if name else []
    if not any(owner in MODEL_DATACLASS_REGISTRY for owner in owners):
        owners.append(task_name)
    return owners


def _get(section, key):
    return getattr(section, key, None) if not hasattr(section, "get") else section.get(key)


def upgrade_checkpoint_config(state, path="checkpoint"):
    """Rename old flag fields of a fairseq checkpoint state, in place: ``cfg.task``,
    ``cfg.model`` and a legacy ``args`` namespace. Each rename is logged naming ``path``."""
    renamed = []
    cfg = state.get("cfg")
    if cfg is not None:
        task = cfg.get("task")
        task_name = _get(task, "_name") if task is not None else None
        for kind in ("task", "model"):
            section = cfg.get(kind)
            if section is not None:
                owners = _section_owners(kind, section, task_name)
                renamed += [f"cfg.{kind}.{old} -> {new}" for old, new in rename_fields(section, owners)]
    args = state.get("args")
    if args is not None:
        owners = [*model_owners(getattr(args, "arch", None) or ""), getattr(args, "task", None)]
        renamed += [f"args.{old} -> {new}" for old, new in rename_fields(args, owners)]
    if renamed:
        logger.info(f"{path}: renamed flags of an older version: {', '.join(renamed)}")
    return renamed


def add_new_fields(cfg, path="checkpoint"):
    """Give ``cfg.task``, ``cfg.model`` and ``cfg.criterion`` (in place) every field of their
    registered dataclass that they lack, at its default: an option added after a checkpoint was
    saved (e.g. ``--coverage``) reads as the behaviour the checkpoint was trained with. Fields
    whose default refers to another field (``II(...)``) or that have none are left out. Returns
    the dotted names added."""
    import dataclasses

    from fairseq.criterions import CRITERION_DATACLASS_REGISTRY
    from fairseq.models import MODEL_DATACLASS_REGISTRY
    from fairseq.tasks import TASK_DATACLASS_REGISTRY

    registries = {"task": TASK_DATACLASS_REGISTRY, "model": MODEL_DATACLASS_REGISTRY,
                  "criterion": CRITERION_DATACLASS_REGISTRY}  # fmt: skip
    added = []
    for kind, registry in registries.items():
        section = cfg.get(kind)
        name = _get(section, "_name") if section is not None and hasattr(section, "keys") else None
        if kind == "model" and name is not None:  # an architecture's name: its model's dataclass
            name = next((owner for owner in model_owners(name) if owner in registry), name)
        if name not in registry:
            continue
        for field in dataclasses.fields(registry[name]):
            if field.name in section or field.name.startswith("_"):
                continue
            if field.default is not dataclasses.MISSING:
                default = field.default
            elif field.default_factory is not dataclasses.MISSING:
                default = field.default_factory()
            else:
                continue
            if isinstance(default, str) and "${" in default:
                continue
            section[field.name] = default
            added.append(f"cfg.{kind}.{field.name}")
    if added:
        logger.info(f"{path}: options added since it was saved, at their defaults: {', '.join(added)}")
    return added
