"""s2s-ft: sequence-to-sequence fine-tuning of one shared bidirectional Transformer.

Bao et al., "s2s-ft: Fine-Tuning Pretrained Transformer Encoders for Sequence-to-Sequence
Learning". The source and the target are read by the same BERT/RoBERTa-shaped Transformer
under seq2seq self-attention masks (:mod:`.masks`); the three fine-tuning methods (causal,
masked, pseudo-masked) differ only in how target rows are laid out and noised
(:mod:`fairseq_ext.noising.bert`); decoding caches every layer's keys and values (:mod:`.model`);
:mod:`fairseq_ext.convert.s2s_ft` maps HF BERT/RoBERTa weights onto :mod:`.transformer`.
"""

from .masks import decode_step_mask, pseudo_masked_attention_mask, seq2seq_attention_mask  # noqa: F401
