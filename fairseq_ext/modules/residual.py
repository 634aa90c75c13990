"""The residual sublayer of a Transformer block, pre- or post-LN, in fairseq's order.

    pre-LN  (normalize_before):  x + dropout(f(norm(x)))
    post-LN:                     norm(x + dropout(f(x)))

``layer`` is a block with fairseq's attribute names (``normalize_before``, ``dropout_module``,
and for :func:`feed_forward` ``fc1``, ``fc2``, ``activation_fn``, ``activation_dropout_module``).
"""


def residual_sublayer(layer, x, norm, sublayer):
    """``sublayer`` applied to ``x`` with ``layer``'s residual connection and ``norm``."""
    residual = x
    if layer.normalize_before:
        x = norm(x)
    x = residual + layer.dropout_module(sublayer(x))
    if not layer.normalize_before:
        x = norm(x)
    return x


def feed_forward(layer, x):
    """``fc2(dropout(activation(fc1(x))))``, the block's feed-forward without its residual."""
    return layer.fc2(layer.activation_dropout_module(layer.activation_fn(layer.fc1(x))))
