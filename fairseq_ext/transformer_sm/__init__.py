"""Transformer-SM (Hoang et al.): a GPT-style decoder-only summarizer over the joint sequence::

    <s> a_1 ... a_M <delim> s_1 ... s_N </s>
    |--- article (source 0) --|-- summary (source 1) --|

with token, position and source embeddings and fully causal attention.
"""

from .data import DelimiterDataset
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
    "DelimiterDataset",
    "JointEmbedding",
    "article_targets",
    "causal_mask",
    "init_source_embeddings",
    "mean_row_norm",
    "summary_positions",
]
