"""BART-LS (long-document BART): block-sparse encoder attention, pooled attention, span
corruption and model-based span selection (the BART -> BART-LS checkpoint extension is
:mod:`fairseq_ext.convert.bart_ls`).

Importable and testable without registering anything in fairseq; ``user_dir`` holds the
fairseq face (model ``bart_ls``, tasks ``bart_ls_long_denoising`` and
``bart_ls_model_based_denoising``, criterion ``bart_ls_model_based_denoising``).
"""
