"""Transformer-SM (Hoang et al., "Efficient Adaptation of Pretrained Transformers for
Abstractive Summarization"): a GPT-style decoder-only summarizer over the joint sequence

    <s> a_1 ... a_M <delim> s_1 ... s_N </s>
    |--- article (source 0) --|-- summary (source 1) --|

with token, position and source embeddings, fully causal attention, domain-adaptive training
(loss on every token) then end-task training (loss on summary tokens only).

Pieces here are plain PyTorch and fairseq data utilities; the fairseq registrations live in
``user_dir/models/transformer_sm.py``, ``user_dir/tasks/transformer_sm.py`` and
``user_dir/criterions/transformer_sm.py``.
"""

from .data import ArticleDataset, DelimiterDataset
from .embedding import JointEmbedding, init_source_embeddings, mean_row_norm
from .layout import (
    ARTICLE,
    DELIMITER,
    SUMMARY,
    article_targets,
    causal_mask,
    summary_positions,
)

__all__ = [
    "ARTICLE",
    "DELIMITER",
    "SUMMARY",
    "ArticleDataset",
    "DelimiterDataset",
    "JointEmbedding",
    "article_targets",
    "causal_mask",
    "init_source_embeddings",
    "mean_row_norm",
    "summary_positions",
]
