"""Criterions registered by the plugin (one module per criterion).

The modules are named, not found by listing the folder: a file that lands here (from an
archive, a copy, a stray edit) is never imported by the plugin.
"""

# registration side effects
from . import (  # noqa: F401
    bart_ls_model_based_denoising,
    ngram_language_loss,
    s2s_ft,
    transformer_sm,
    zcodepp_joint,
)
