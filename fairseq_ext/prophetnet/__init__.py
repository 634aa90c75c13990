"""ProphetNet (Qi et al., 2020): future n-gram prediction with n-stream self-attention.

Library half of the family, importable without registering anything in fairseq:

* :mod:`.masks` -- which main-stream keys every query row of the n streams may see;
* :mod:`.attention` -- the n-stream self-attention (projections + an attention core with a
  private "own slot" key per query);
* :mod:`.decoder` -- the n-stream decoder (training: main + n predicting streams;
  inference: main + the next-token stream only);
* :mod:`.loss` -- future n-gram targets and the power-attenuated stream weights (eq. 4);
* :mod:`.span_data` -- the fairseq dataset of MASS span masking for pre-training
  (section 3.1; the masking itself is :mod:`fairseq_ext.noising.mass`).

The converter from HuggingFace ``ProphetNetForConditionalGeneration`` weights is
:mod:`fairseq_ext.convert.prophetnet`, the BERT WordPiece dictionary :mod:`fairseq_ext.data.wordpiece`.

The T5-style unidirectional relative position buckets (section 2.3) and head split/merge are
shared pieces of :mod:`fairseq_ext.modules`.
"""
