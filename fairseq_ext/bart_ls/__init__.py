"""BART-LS (long-document BART): block-sparse encoder attention, pooled attention, span
corruption, model-based span selection and the BART -> BART-LS checkpoint extension.

Importable and testable without registering anything in fairseq; ``user_dir`` holds the
fairseq face (model ``bart_ls``, tasks ``bart_ls_long_denoising`` and
``bart_ls_model_based_denoising``, criterion ``bart_ls_model_based_denoising``).
"""
