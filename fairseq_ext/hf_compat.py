"""What the Hugging Face converters share: reading a config, and its activation in fairseq's terms.

Every converter in this package takes the Hugging Face configuration beside the state dict
(two models with the same parameters can compute different functions: another activation,
another LayerNorm epsilon, another attention variant) and refuses, naming the field, any
value it does not implement.
"""

#: Hugging Face ``ACT2FN`` names -> fairseq ``--activation-fn`` names computing the same function.
#: HF's ``gelu`` is exact (erf), as is fairseq's; ``gelu_new`` and ``gelu_pytorch_tanh`` are the
#: tanh approximation, fairseq's ``gelu_accurate``.
HF_ACTIVATIONS = {"gelu": "gelu", "gelu_new": "gelu_accurate", "gelu_pytorch_tanh": "gelu_accurate", "relu": "relu"}

#: OpenAI GPT reads ``afn`` from its own table, where ``gelu`` is the tanh approximation
#: (``transformers.models.openai.modeling_openai.ACT_FNS``).
OPENAI_GPT_ACTIVATIONS = {"gelu": "gelu_accurate", "relu": "relu"}


def config_dict(config):
    """A Hugging Face config as a plain dict (a ``PretrainedConfig`` or a ``config.json`` dict)."""
    if config is None:
        raise ValueError("the Hugging Face config is needed to convert (config.json beside the weights)")
    if isinstance(config, dict):
        return config
    as_dict = config.to_dict()
    as_dict.setdefault("model_type", getattr(config, "model_type", None))
    return as_dict


def fairseq_activation(config, field, table=None, default=None):
    """fairseq's name for the activation in ``config[field]``; an unknown one is an error."""
    table = HF_ACTIVATIONS if table is None else table
    name = config.get(field, default)
    if name not in table:
        raise ValueError(
            f"{field}={name!r}: no fairseq activation computes it here (supported: {sorted(table)})"
        )
    return table[name]
