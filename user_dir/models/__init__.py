"""Models and their named architectures (one module per model family).

The modules are named, not found by listing the folder: a file that lands here (from an
archive, a copy, a stray edit) is never imported by the plugin.
"""

# registration side effects
from . import (  # noqa: F401
    bart_ls,
    bart_summ,
    prophetnet,
    s2s_ft,
    transformer_sm,
    zcodepp,
)
