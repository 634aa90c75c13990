"""Validation of the configuration beside the weights, for every converter.

Two models with the same parameters can compute different functions (another activation,
another LayerNorm epsilon, another attention variant), so every converter reads the Hugging
Face ``config.json`` (or the BART checkpoint's model config) and refuses, naming the field,
any value the converted model would not compute. Each family states what it implements with
the helpers below; the messages all read ``SOURCE: field=value is not supported: why``.
"""

#: Hugging Face ``ACT2FN`` names -> fairseq ``--activation-fn`` names computing the same function.
#: HF's ``gelu`` is exact (erf), as is fairseq's; ``gelu_new`` and ``gelu_pytorch_tanh`` are the
#: tanh approximation, fairseq's ``gelu_accurate``.
HF_ACTIVATIONS = {"gelu": "gelu", "gelu_new": "gelu_accurate", "gelu_pytorch_tanh": "gelu_accurate", "relu": "relu"}

#: OpenAI GPT reads ``afn`` from its own table, where ``gelu`` is the tanh approximation
#: (``transformers.models.openai.modeling_openai.ACT_FNS``).
OPENAI_GPT_ACTIVATIONS = {"gelu": "gelu_accurate", "relu": "relu"}

#: The LayerNorm epsilon of fairseq's ``LayerNorm`` where a model does not make it a flag.
FAIRSEQ_LAYER_NORM_EPS = 1e-5

#: What a config read without a file (a dict or a ``PretrainedConfig``) is called in messages.
UNNAMED = "the Hugging Face config"


class ConversionError(ValueError):
    """Input a converter refuses: a config field, a vocabulary or weights it cannot convert.
    The message names the file (where known) and the field."""


def check_hf_types(config):
    """Refuse a ``config.json`` value whose type is not the one the Hugging Face configuration
    class of its ``model_type`` defines for that field (its default's type: a number where a
    number is expected, text where text is, ...). Unknown model types and fields are left to
    each converter's own checks; ``None`` means "unset"."""
    kind = config.get("model_type")
    defaults = _hf_defaults(kind) if isinstance(kind, str) else {}
    for field, found in config.items():
        default = defaults.get(field)
        if found is None or default is None or _same_kind(found, default):
            continue
        refuse(config, field, found, f"the {kind} configuration holds a {type(default).__name__} here")


def _same_kind(found, default):
    if isinstance(default, bool) or isinstance(found, bool):
        return isinstance(found, bool) and isinstance(default, bool)
    if isinstance(default, float):
        return isinstance(found, (int, float))
    if isinstance(default, int):
        return isinstance(found, int)
    if isinstance(default, (list, tuple)):
        return isinstance(found, (list, tuple))
    return isinstance(found, type(default))


def _hf_defaults(kind):
    """The default configuration of the Hugging Face model type ``kind`` as a dict (empty when
    transformers does not know it)."""
    try:
        from transformers import CONFIG_MAPPING

        return CONFIG_MAPPING[kind]().to_dict()
    except (ImportError, KeyError, ValueError, TypeError):
        return {}


class Config(dict):
    """A config as a plain dict that remembers where it was read (``source``, for messages)."""

    def __init__(self, fields, source=UNNAMED):
        super().__init__(fields)
        self.source = str(source)


def config_dict(config, source=None):
    """``config`` (a ``PretrainedConfig``, a ``config.json`` dict or a :class:`Config`) as a
    :class:`Config`; ``model_type`` is kept (``to_dict`` of some configs leaves it out)."""
    if config is None:
        raise ConversionError("the Hugging Face config is needed to convert (config.json beside the weights)")
    if isinstance(config, Config):
        return config
    if isinstance(config, dict):
        return Config(config, source or UNNAMED)
    fields = config.to_dict()
    fields.setdefault("model_type", getattr(config, "model_type", None))
    return Config(fields, source or UNNAMED)


def _source(config):
    return getattr(config, "source", UNNAMED)


def refuse(config, field, value, why):
    """Raise :class:`ConversionError`: ``SOURCE: field=value is not supported: why``."""
    raise ConversionError(f"{_source(config)}: {field}={value!r} is not supported: {why}")


def value(config, field):
    """``config[field]``; a missing field is an error naming it."""
    if field not in config or config[field] is None:
        raise ConversionError(f"{_source(config)}: no {field} (a field the conversion needs)")
    return config[field]


def require_model_type(config, allowed, default=None):
    """The config's ``model_type``, which must be one of ``allowed``."""
    kind = config.get("model_type", default)
    if kind not in allowed:
        refuse(config, "model_type", kind, f"only {', '.join(allowed)} checkpoints convert")
    return kind


def require(config, expected, why):
    """Every ``field: (value, default when absent)`` of ``expected`` must hold that value."""
    for field, (wanted, default) in expected.items():
        found = config.get(field, default)
        if found != wanted:
            refuse(config, field, found, f"{why} ({field}={wanted!r} only)")


def require_layer_norm_eps(config, field, default, expected=FAIRSEQ_LAYER_NORM_EPS):
    """For models whose LayerNorm epsilon is fairseq's fixed one: ``config[field]`` must equal it."""
    found = config.get(field, default)
    if found is None or abs(found - expected) > 1e-12:
        refuse(config, field, found, f"the fairseq model's LayerNorm uses eps={expected}")


def fairseq_activation(config, field, table=None, default=None):
    """fairseq's name for the activation in ``config[field]``; an unknown one is refused."""
    table = HF_ACTIVATIONS if table is None else table
    name = config.get(field, default)
    if name not in table:
        refuse(config, field, name, f"no fairseq activation computes it here (supported: {sorted(table)})")
    return table[name]


def split_names(value):
    """``"p2c|c2p"`` or ``["p2c", "c2p"]`` -> ``{"p2c", "c2p"}`` (HF accepts both forms)."""
    if value is None:
        return set()
    if isinstance(value, str):
        value = value.split("|")
    return {part.strip().lower() for part in value if part.strip()}


def check_state(converted, expected):
    """The one shape check of every converter: each converted weight has a place in the model
    (``expected``, its ``state_dict()``) and that place's shape."""
    for name, tensor in converted.items():
        if name not in expected:
            raise ConversionError(f"converted weight {name} has no place in the model")
        if tensor.shape != expected[name].shape:
            raise ConversionError(f"{name}: checkpoint shape {tuple(tensor.shape)} != model "
                                  f"{tuple(expected[name].shape)}")
