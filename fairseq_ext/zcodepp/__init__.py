"""Z-Code++ (He et al., 2022): the building blocks, importable without fairseq registration.

- :mod:`.disentangled_attention`: disentangled self-attention (c2c + c2p + p2c), Section 2.2.
- :mod:`.fie`: fusion-in-encoder chunking (pure functions), Section 2.3.
- :mod:`.encoder`: the disentangled-attention encoder with FiE local and global layers.
- :mod:`.gdes`: gradient-disentangled embedding sharing and its export (fold) step.
- :mod:`.heads`: the generator's MLM head and the discriminator's RTD head.
- :mod:`.pretraining_data`: the phase-one dataset (one example feeds MLM, RTD and CSP), with
  the corruptions of :mod:`fairseq_ext.noising`.
- :mod:`.instructions`: Table 1 instruction templates for grounded pre-training.

Shared pieces (head split/merge, the biased attention core, real-tokens-first alignment,
blocking, DeBERTa's log buckets, the MLM head) are in :mod:`fairseq_ext.modules`.
"""
