"""ProphetNet (Qi et al., 2020): future n-gram prediction with n-stream self-attention.

:mod:`.masks` (who sees what), :mod:`.attention` (n-stream self-attention with an "own slot"
key), :mod:`.decoder` (training: main + n streams; inference: main + the next-token stream),
:mod:`.loss` (n-gram targets, eq. 4 weights), :mod:`.span_data` (MASS pre-training data).
"""
