"""Model pieces shared by the families (mostly attention), each once under one name.

- :mod:`.multihead`: split a model width into attention heads and merge them back.
- :mod:`.attention`: attention cores ``(q, k, v, mask[, bias]) -> out``, separate from the
  projections: torch's fused kernel with a boolean mask, and materialized fp32 scores with an
  additive bias (for position schemes that add score terms), whole or a chunk of queries at a
  time (memory linear in the length).
- :mod:`.checkpointing`: activation checkpointing (non-reentrant ``torch.utils.checkpoint``).
- :mod:`.alignment`: move every row's real tokens to the front (and back), so that blocks and
  chunks depend on the document, not on the batch padding.
- :mod:`.blocking`: pad the time axis to a block multiple and split it into blocks.
- :mod:`.lm_head`: the masked-LM head (dense, GELU, LayerNorm, tied projection).
- :mod:`.relative_position`: relative-position buckets (T5's unidirectional ones, DeBERTa's log
  buckets) and the biases gathered from them.
- :mod:`.pointer_generator`: a copy mechanism (See et al. 2017) mixing a source-attention copy
  distribution into a decoder's output distribution.
- :mod:`.table_rows`: cut a pre-training checkpoint's embedding tables to a later phase's model.
- :mod:`.transformer_config`: fairseq's ``TransformerConfig`` for fairseq layers in our models.

Pure PyTorch (fairseq's ``LayerNorm`` and ``TransformerConfig`` aside); nothing here registers anything in fairseq.
"""
