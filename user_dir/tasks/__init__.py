"""Tasks registered by the plugin (one module per task).

The modules are named, not found by listing the folder: a file that lands here (from an
archive, a copy, a stray edit) is never imported by the plugin.
"""

# registration side effects
from . import (  # noqa: F401
    abstractive_summarization,
    bart_ls_long_denoising,
    bart_ls_model_based_denoising,
    prophetnet_span_mask,
    s2s_ft,
    transformer_sm,
    zcodepp_grounded,
    zcodepp_pretraining,
)
