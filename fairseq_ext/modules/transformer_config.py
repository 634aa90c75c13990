"""fairseq's :class:`TransformerConfig` for fairseq layers inside models of our own.

fairseq's Transformer layers read their sizes and rates from a ``TransformerConfig``; a family
that builds them (ProphetNet's encoder, Transformer-SM's GPT blocks) copies its dropout rates
and activation from its own config and sets one side's sizes here, in one way.
"""

from fairseq.models.transformer import TransformerConfig

RATES = ("dropout", "attention_dropout", "activation_dropout", "activation_fn")


def transformer_config(cfg, side, **sizes):
    """A ``TransformerConfig`` with ``cfg``'s :data:`RATES` and ``sizes`` (``embed_dim``,
    ``ffn_embed_dim``, ``layers``, ``attention_heads``, ``normalize_before``, ...) set on its
    ``side`` (``"encoder"`` or ``"decoder"``)."""
    tcfg = TransformerConfig()
    for name in RATES:
        setattr(tcfg, name, getattr(cfg, name))
    for name, value in sizes.items():
        setattr(getattr(tcfg, side), name, value)
    return tcfg
