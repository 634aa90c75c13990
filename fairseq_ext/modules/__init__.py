"""Model pieces shared by the families (mostly attention), each once under one name: heads
(:mod:`.multihead`), attention cores (:mod:`.attention`), activation checkpointing, real-token
alignment and blocking, the masked-LM head, relative positions, the pointer-generator copy,
embedding-table cuts and fairseq's ``TransformerConfig``. Nothing here registers anything.
"""
