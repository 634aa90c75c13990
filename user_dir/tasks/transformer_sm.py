"""``transformer_sm``: ``abstractive_summarization`` laid out for a decoder-only summarizer.

Each pair becomes the joint row of Transformer-SM::

    article (net_input.src_tokens, right-padded):       <s> a_1 .. a_K
    decoder input (net_input.prev_output_tokens):       <delim> s_1 .. s_N
    target:                                             s_1 .. s_N </s>

``<delim>`` is added to the dictionary when it is loaded; articles and summaries are truncated
(counted) to the model's limits (512 and 110, as the paper); generation starts from ``<delim>``.
"""

from dataclasses import dataclass, field
from typing import Optional

import numpy as np
import torch
from fairseq.tasks import register_task

from fairseq_ext.summarization_data import PrefixTruncateDataset, log_overlong
from fairseq_ext.transformer_sm import DELIMITER, DelimiterDataset

from ..interfaces import JointRowTask
from .abstractive_summarization import AbstractiveSummarizationConfig, AbstractiveSummarizationTask


@dataclass
class TransformerSMTaskConfig(AbstractiveSummarizationConfig):
    left_pad_source: bool = field(
        default=False, metadata={"help": "must stay off: Transformer-SM reads right-padded articles"}
    )
    max_source_positions: Optional[int] = field(
        default=None,
        metadata={"help": "article length limit, <s> included; default: the model's (--arch: 512, the paper)"},
    )
    max_target_positions: Optional[int] = field(
        default=None,
        metadata={"help": "summary length limit, </s> included; default: the model's (--arch: 110, the paper)"},
    )


@register_task("transformer_sm", dataclass=TransformerSMTaskConfig)
class TransformerSMTask(AbstractiveSummarizationTask, JointRowTask):
    """Document -> summary as ``<s> article <delim> summary </s>`` rows (see module docstring)."""

    cfg: TransformerSMTaskConfig

    def __init__(self, cfg, src_dict, tgt_dict):
        if cfg.left_pad_source or cfg.left_pad_target:
            raise ValueError("the transformer_sm task needs right padding (no --left-pad-source/--left-pad-target)")
        super().__init__(cfg, src_dict, tgt_dict)
        self.delimiter_index = tgt_dict.index(DELIMITER)
        if src_dict.index(DELIMITER) != self.delimiter_index or self.delimiter_index == tgt_dict.unk():
            raise ValueError(f"{DELIMITER} must have one index in the joined dictionary")
        self.epoch = 1

    def begin_epoch(self, epoch, model):
        """Record the training epoch (the criterion's ``--dat-epochs`` schedule reads it)."""
        super().begin_epoch(epoch, model)
        self.epoch = epoch

    @classmethod
    def load_dictionary(cls, filename):
        dictionary = super().load_dictionary(filename)
        dictionary.add_symbol(DELIMITER)
        return dictionary

    def _source_view(self, dataset, split):
        """``<s> [instruction] article`` without ``</s>``, truncated (counted) to the limit."""
        prefix = torch.cat([torch.LongTensor([self.src_dict.bos()]), self.instruction_tokens])
        limit = self.source_limit
        sizes = np.asarray(dataset.sizes) - 1 + len(prefix)
        log_overlong(split, sizes, limit, "articles (with <s>)", self.cfg.truncate_source)
        return PrefixTruncateDataset(dataset, prefix, limit if self.cfg.truncate_source else None, self.src_dict.eos(),
                                     end_with_eos=False, what="the article prefix")

    def load_dataset(self, split, epoch=1, combine=False, **kwargs):
        super().load_dataset(split, epoch=epoch, combine=combine, **kwargs)
        self.datasets[split] = DelimiterDataset(self.datasets[split], self.delimiter_index)

    def inference_step(self, generator, models, sample, prefix_tokens=None, constraints=None):
        with torch.no_grad():
            return generator.generate(
                models, sample, prefix_tokens=prefix_tokens, constraints=constraints, bos_token=self.delimiter_index
            )
