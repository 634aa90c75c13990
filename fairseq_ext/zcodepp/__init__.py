"""Z-Code++ (He et al., 2022): disentangled attention (Section 2.2), fusion-in-encoder (2.3), the
encoder, gradient-disentangled embedding sharing (:mod:`.gdes`), the MLM and RTD heads, the
phase-one dataset and Table 1's instruction templates.
"""
