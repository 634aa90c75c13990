"""What a checkpoint's configuration may be, checked as data before fairseq reads any of it.

:func:`validate_checkpoint_config` refuses, naming the file and the dotted field, anything else:

==================  =========================================================================
every value          ``None``, ``bool``, ``int``, ``float``, ``str``, or a list, tuple, dict or
                     Namespace of them (keys are text), at most :data:`MAX_DEPTH` deep
every text           no OmegaConf interpolation (``${``), no URL or remote path (``://``, a
                     leading ``//``), at most :data:`MAX_TEXT` characters, and inert: if Python
                     can parse it as an expression, only literals, names, operators,
                     subscripts and plain attributes (no call, lambda, comprehension, f-string,
                     ``__dunder__``), so ``eval()`` of it anywhere cannot run code
registered names     ``model``/``arch``, ``task``, ``criterion``, ``optimizer``,
                     ``lr_scheduler``, ``bpe``, ``tokenizer``, ``scoring``: registered in
                     fairseq (or by the plugin)
typed fields         a field of a registered dataclass or a legacy model's ``add_args`` flag
                     holds a value of its type; ``None`` always means "unset"
defaults             the named components' defaults hold no URL either (``--bpe gpt2``)
==================  =========================================================================

:data:`ADDRESS_FIELDS` (the saving run's process-group address) may hold a ``tcp://``,
``env://`` or ``file://`` address.
"""

import argparse
import ast
import dataclasses
import enum
import functools
import re
import typing

#: The longest text a configuration value may hold (file lists and JSON options fit easily).
MAX_TEXT = 65536

#: How deep containers may nest in a configuration.
MAX_DEPTH = 32

#: Fields that name a process-group address, with the schemes they may use.
ADDRESS_FIELDS = {"distributed_init_method": ("tcp", "env", "file")}

#: Flat (legacy ``args``) keys that name a registered component, and their registry group.
NAME_FIELDS = {
    "arch": "arch", "task": "task", "criterion": "criterion", "optimizer": "optimizer",
    "lr_scheduler": "lr_scheduler", "bpe": "bpe", "tokenizer": "tokenizer", "scoring": "scoring",
}

#: ``cfg`` groups whose ``_name`` selects a registered component.
REGISTRY_GROUPS = ("model", "task", "criterion", "optimizer", "lr_scheduler", "bpe", "tokenizer", "scoring")

_INTERPOLATION = "${"
_PLUGIN_HINT = "; the plugin's are registered by importing user_dir"
_REMOTE = re.compile(r"://|^\s*(//|\\\\)")
#: AST nodes an inert text may parse to (literals, names, operators, subscripts, attributes).
_INERT_NODES = (
    ast.Expression, ast.Constant, ast.Name, ast.Load, ast.Tuple, ast.List, ast.Set, ast.Dict,
    ast.BinOp, ast.UnaryOp, ast.BoolOp, ast.Compare, ast.Attribute, ast.Subscript, ast.Slice,
    ast.operator, ast.unaryop, ast.boolop, ast.cmpop, ast.expr_context,
)
_SCALARS = (type(None), bool, int, float, str)


class ConfigRefused(ValueError):
    """A configuration value that is not what a configuration may be (message: file, field)."""


def validate_checkpoint_config(state, source):
    """Refuse ``state`` (a checkpoint dict read from ``source``) unless its ``cfg`` and ``args``
    are what a configuration may be (module docstring); raises :class:`ConfigRefused` listing
    each refused field as ``source: cfg.model.dropout = '...' (why)``."""
    problems = []
    if isinstance(state, dict):
        if state.get("cfg") is not None:
            _check_cfg(state["cfg"], "cfg", problems)
        if state.get("args") is not None:
            _check_flat(state["args"], "args", problems)
    _raise(problems, source)


def validate_values(node, where, source):
    """The data rules alone (types of containers and texts), for overrides and nested configs."""
    problems = []
    _check_data(node, where, problems)
    _raise(problems, source)


def _raise(problems, source):
    if problems:
        shown = "; ".join(problems[:8]) + (f"; and {len(problems) - 8} more" if len(problems) > 8 else "")
        raise ConfigRefused(f"refusing the configuration of {source}: {shown}. See docs/security.md.")


# ------------------------------------------------------------------ data rules
def _check_data(node, where, problems, depth=0):
    """Containers of scalars only; every text inert (:func:`text_problem`)."""
    if depth > MAX_DEPTH:
        problems.append(f"{where} nests deeper than {MAX_DEPTH} levels")
        return
    if isinstance(node, argparse.Namespace):
        node = vars(node)
    if isinstance(node, dict):
        for key, value in node.items():
            at = f"{where}.{key}"
            if not isinstance(key, (str, int)) or isinstance(key, bool):
                problems.append(f"{where} has a key of type {type(key).__name__}: {_preview(key)}")
            elif isinstance(key, str) and (why := text_problem(key)):
                problems.append(f"{where} has a key {_preview(key)} ({why})")
            else:
                _check_data(value, at, problems, depth + 1)
    elif isinstance(node, (list, tuple)):
        for i, item in enumerate(node):
            _check_data(item, f"{where}[{i}]", problems, depth + 1)
    elif not isinstance(node, _SCALARS) or type(node) not in _SCALARS:
        problems.append(f"{where} is a {type(node).__name__}, not configuration data")
    elif isinstance(node, str) and (why := text_problem(node, where)):
        problems.append(f"{where} = {_preview(node)} ({why})")


def text_problem(text, where=""):
    """Why ``text`` may not be a configuration value, or ``None`` if it may."""
    if len(text) > MAX_TEXT:
        return f"text longer than {MAX_TEXT} characters"
    if _INTERPOLATION in text:
        return "an OmegaConf interpolation; a configuration holds values, not references"
    if _REMOTE.search(text) and not _allowed_address(text, where):
        return "a URL or remote path; loading never touches the network"
    if not _inert(text):
        return "text Python would run if evaluated (a call, lambda, comprehension or dunder)"
    return None


def is_remote(path):
    """Whether ``path`` names a URL or a remote location rather than a local file."""
    return bool(_REMOTE.search(str(path)))


def _allowed_address(text, where):
    schemes = ADDRESS_FIELDS.get(where.rpartition(".")[2], ())
    return any(text.startswith(f"{scheme}://") for scheme in schemes)


def _inert(text):
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError:
        return True  # free text: eval() would fail before running anything
    except (ValueError, MemoryError, RecursionError):
        return False
    for node in ast.walk(tree):
        if not isinstance(node, _INERT_NODES):
            return False
        name = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else ""
        if name.startswith("__"):
            return False
    return True


# ------------------------------------------------------------------ structure and types
def _check_cfg(cfg, where, problems):
    """``cfg``: a dict of groups; each group against its dataclass (or the flat rules)."""
    _check_data(cfg, where, problems)
    if problems:
        return
    if not isinstance(cfg, dict):
        problems.append(f"{where} is a {type(cfg).__name__}, not a dict of groups")
        return
    top = _top_level_types()
    for group, node in cfg.items():
        at = f"{where}.{group}"
        if node is None or group == "_name":
            continue
        if isinstance(node, argparse.Namespace):  # legacy models store all their flags here
            _check_flat(node, at, problems, number_text=True)
            continue
        if not isinstance(node, dict):
            problems.append(f"{at} is a {type(node).__name__}, not a group")
            continue
        if group in REGISTRY_GROUPS:
            name = node.get("_name")
            kind = "model" if group == "model" else group
            if name is not None and not _registered(kind, name):
                problems.append(f"{at}._name = {_preview(name)} (no {group} of that name is registered{_PLUGIN_HINT})")
                continue
            types = _component_types(kind, name)
            arch = node.get("arch")
            if group == "model" and arch is not None and not _registered("arch", arch):
                problems.append(f"{at}.arch = {_preview(arch)} (no architecture of that name is registered)")
        elif group in top:
            types = _dataclass_types(top[group])
        else:
            continue  # a group fairseq does not define: the data rules above hold
        _check_types(node, at, {k: [t] for k, t in types.items()}, problems)
        if group in REGISTRY_GROUPS:
            _check_defaults(_component_dataclass(kind, name), node, at, problems)


def _check_flat(namespace, where, problems, number_text=False):
    """A flat Namespace (legacy ``args``, a legacy ``cfg.model``): every flag of every group;
    ``number_text``: plain number literals stand for numbers (as fairseq writes ``cfg.model``)."""
    values = vars(namespace) if isinstance(namespace, argparse.Namespace) else dict(namespace)
    _check_data(values, where, problems)
    if problems:
        return
    types = {}
    for dc in _top_level_types().values():
        _merge(types, _dataclass_types(dc))
    for key, kind in NAME_FIELDS.items():
        name = values.get(key)
        if name is None:
            continue
        if not isinstance(name, str) or not _registered(kind, name):
            problems.append(f"{where}.{key} = {_preview(name)} (no {kind} of that name is registered{_PLUGIN_HINT})")
            continue
        kind = "model" if kind == "arch" else kind
        _merge(types, _component_types(kind, name))
        _check_defaults(_component_dataclass(kind, name), values, where, problems)
    name = values.get("_name")
    if isinstance(name, str) and not _registered("model", name) and not _registered("arch", name):
        problems.append(f"{where}._name = {_preview(name)} (no model of that name is registered)")
    _check_types(values, where, types, problems, number_text=number_text)


def _merge(types, more):
    for key, tp in more.items():
        types.setdefault(key, []).append(tp)


#: a plain number literal, which fairseq itself writes for a number flag in a legacy model's
#: Namespace (``cfg.model`` of a model with ``add_args`` holds every flag, the ones it passed as
#: overrides as text: ``--total-num-update 1`` is ``'1'`` there)
NUMBER_TEXT = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?")


def _number_text_conforms(value, tp):
    """Whether ``value`` is a plain number literal whose number is a value of ``tp``."""
    return isinstance(value, str) and NUMBER_TEXT.fullmatch(value) is not None \
        and conforms(ast.literal_eval(value), tp)


def _check_types(values, where, types, problems, number_text=False):
    """Each value against its field's types; ``number_text``: a plain number literal may stand
    for a number (a legacy Namespace, as fairseq writes it), nothing else written as text may."""
    for key, value in values.items():
        expected = types.get(key)
        if expected and not any(
            conforms(value, tp) or (number_text and _number_text_conforms(value, tp)) for tp in expected
        ):
            wanted = " or ".join(sorted({_type_name(tp) for tp in expected}))
            problems.append(f"{where}.{key} = {_preview(value)} (a {_type_name(type(value))} "
                            f"where the field holds {wanted})")


def _check_defaults(dataclass, values, where, problems):
    """A default that fairseq fills in for an absent field may not be a URL either."""
    if dataclass is None:
        return
    for field in dataclasses.fields(dataclass):
        if field.name in values or field.default is dataclasses.MISSING:
            continue
        if isinstance(field.default, str) and _REMOTE.search(field.default) \
                and not _allowed_address(field.default, field.name):
            problems.append(f"{where}.{field.name} is absent and its default is a URL "
                            f"({_preview(field.default)}); loading never touches the network")


def conforms(value, tp):
    """Whether ``value`` (configuration data) is a value of the field type ``tp``. ``None``
    (unset) fits every field; ``typing.Any`` and types this check does not know fit anything
    (the data rules still hold)."""
    if value is None or tp is typing.Any:
        return True
    if tp is type(None):
        return False
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin is typing.Union:
        return any(conforms(value, arg) for arg in args)
    if origin in (list, tuple):
        item = args[0] if args else typing.Any
        return isinstance(value, (list, tuple)) and all(conforms(v, item) for v in value)
    if isinstance(tp, _Choices):
        return isinstance(value, str) and value in tp.names
    if isinstance(tp, enum.EnumMeta):
        return isinstance(value, str) and value in {str(m.value) for m in tp} | set(tp.__members__)
    if tp is bool:
        return isinstance(value, bool)
    if tp is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if tp is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if tp is str:
        return isinstance(value, str)
    return True


class _Choices:
    """The choices of a legacy ``add_args`` flag, as a field type."""

    def __init__(self, names):
        self.names = frozenset(str(n) for n in names)

    __name__ = "choice"


def _type_name(tp):
    if isinstance(tp, _Choices):
        return "one of " + "/".join(sorted(tp.names)[:6])
    if typing.get_origin(tp) is not None:
        return str(tp).replace("typing.", "")
    return getattr(tp, "__name__", None) or str(tp).replace("typing.", "")


def _preview(value, limit=80):
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


# ------------------------------------------------------------------ registries
def _ensure_registered():
    """fairseq's components are registered on import; the plugin's when ``user_dir`` is imported
    (by ``--user-dir``, the hub, and the converter and export programs): the library never
    imports the plugin."""
    import fairseq.criterions  # noqa: F401
    import fairseq.models  # noqa: F401
    import fairseq.optim  # noqa: F401
    import fairseq.optim.lr_scheduler  # noqa: F401
    import fairseq.scoring  # noqa: F401
    import fairseq.tasks  # noqa: F401
    from fairseq.data import encoders  # noqa: F401


def _registry(kind):
    _ensure_registered()
    from fairseq import registry
    from fairseq.models import ARCH_MODEL_REGISTRY, MODEL_REGISTRY
    from fairseq.tasks import TASK_REGISTRY

    if kind == "arch":
        return ARCH_MODEL_REGISTRY
    if kind == "model":
        return {**ARCH_MODEL_REGISTRY, **MODEL_REGISTRY}
    if kind == "task":
        return TASK_REGISTRY
    return registry.REGISTRIES[kind]["registry"]


def _registered(kind, name):
    return isinstance(name, str) and name in _registry(kind)


def _component_dataclass(kind, name):
    """The dataclass registered with component ``name`` of ``kind`` (``None`` for legacy ones)."""
    if name is None:
        return None
    from fairseq import registry
    from fairseq.models import ARCH_MODEL_NAME_REGISTRY, MODEL_DATACLASS_REGISTRY
    from fairseq.tasks import TASK_DATACLASS_REGISTRY

    if kind == "model":
        return MODEL_DATACLASS_REGISTRY.get(ARCH_MODEL_NAME_REGISTRY.get(name, name))
    if kind == "task":
        return TASK_DATACLASS_REGISTRY.get(name)
    return registry.REGISTRIES[kind]["dataclass_registry"].get(name)


def _component_types(kind, name):
    """Field -> type for the registered component: its dataclass, else its ``add_args``."""
    if name is None:
        return {}
    dataclass = _component_dataclass(kind, name)
    if dataclass is not None:
        return _dataclass_types(dataclass)
    cls = _registry(kind).get(name)
    return _argparse_types(cls) if cls is not None else {}


@functools.cache
def _top_level_types():
    from fairseq.dataclass.configs import FairseqConfig

    return {f.name: f.type for f in dataclasses.fields(FairseqConfig) if dataclasses.is_dataclass(f.type)}


@functools.cache
def _dataclass_types(dataclass):
    hints = typing.get_type_hints(dataclass)
    return {f.name: hints.get(f.name, typing.Any) for f in dataclasses.fields(dataclass)}


@functools.cache
def _argparse_types(cls):
    """Field -> type of a legacy component's ``add_args`` flags (store_true: bool; int, float,
    str; choices; ``nargs`` lists). Other ``type=`` callables parse text fairseq then keeps
    as it is: ``typing.Any``."""
    add_args = getattr(cls, "add_args", None)
    if add_args is None:
        return {}
    parser = argparse.ArgumentParser(add_help=False, conflict_handler="resolve")
    try:
        add_args(parser)
    except Exception:  # a component whose flags need more context: the data rules hold
        return {}
    types = {}
    for action in parser._actions:
        if isinstance(action, (argparse._StoreTrueAction, argparse._StoreFalseAction)):
            tp = bool
        elif action.choices is not None:
            tp = _Choices(action.choices)
        elif action.type in (int, float, str):
            tp = action.type
        else:
            tp = typing.Any
        if action.nargs in ("+", "*") or (isinstance(action.nargs, int) and action.nargs > 0):
            tp = typing.List[tp]
        types[action.dest] = tp
    return types
