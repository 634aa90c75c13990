"""BART-LS (long-document BART): block-sparse and pooled encoder attention, long-input data and
model-based span selection; the fairseq face is in ``user_dir``, the BART -> BART-LS
conversion in :mod:`fairseq_ext.convert.bart_ls`.
"""
