"""Input corruptions, one implementation each, shared by every family: T5 spans (:mod:`.spans`),
BERT's selection and 80/10/10 (:mod:`.bert`), MASS spans (:mod:`.mass`), ELECTRA's replaced
tokens (:mod:`.replaced_tokens`), mask and sentinel symbols (:mod:`.symbols`) and per-example
generators (:mod:`.seeding`). Every random function takes an optional ``torch.Generator``.
"""
