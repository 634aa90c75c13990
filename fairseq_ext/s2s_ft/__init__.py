"""s2s-ft (Bao et al.): source and target read by one BERT/RoBERTa-shaped Transformer
(:mod:`.transformer`) under seq2seq masks (:mod:`.masks`); causal, masked and pseudo-masked
fine-tuning differ in how target rows are laid out and noised; decoding caches every layer's
keys and values (:mod:`.model`).
"""

from .masks import decode_step_mask, pseudo_masked_attention_mask, seq2seq_attention_mask  # noqa: F401
