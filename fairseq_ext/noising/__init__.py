"""Input corruptions for pre-training and fine-tuning, one implementation each, shared by
every model family; importable and testable without registering anything in fairseq.

- :mod:`.spans`: T5 span corruption (BART-LS long denoising and model-based candidates,
  Z-Code++ corrupted span prediction).
- :mod:`.bert`: BERT's selection and 80/10/10 replacement (s2s-ft fine-tuning noise,
  the Z-Code++ generator's MLM, inside ProphetNet's MASS spans).
- :mod:`.mass`: MASS span masking (ProphetNet pre-training).
- :mod:`.replaced_tokens`: ELECTRA's replaced-token sampling (the Z-Code++ discriminator).
- :mod:`.symbols`: the mask and sentinel symbols and how dictionaries get them.
- :mod:`.seeding`: a ``torch.Generator`` per example from ``(seed, epoch, index)``.

Every random function takes an optional ``torch.Generator``; the flags that drive them share
one vocabulary across families (docs/flags.md).
"""
