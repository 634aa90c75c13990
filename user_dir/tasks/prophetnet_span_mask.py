"""``prophetnet_span_mask``: ProphetNet pre-training on plain text (paper section 3.1).

MASS span masking (:mod:`fairseq_ext.noising.mass`) over blocks of ``--tokens-per-sample``
tokens: one span in every ``--span-chunk``, ``--mask-prob`` of the tokens, 80/10/10; the
n-gram loss stays inside each span. ProphetNet's pre-training code was never released; this
follows the paper. The mask symbol is ``[MASK]`` when the dictionary has it, else ``<mask>``
is appended (a summarization task drops that row again).

    fairseq-train data/wiki/bin --user-dir user_dir --task prophetnet_span_mask \\
        --arch prophetnet_summ_base --criterion ngram_language_loss ...
"""

import logging
from dataclasses import dataclass, field

from fairseq.tasks import register_task

from fairseq_ext.noising.mass import target_length
from fairseq_ext.noising.symbols import add_mask
from fairseq_ext.prophetnet.span_data import SpanMaskDataset

from ._plain_text import BREAK_MODES, PlainTextConfig, PlainTextTask

logger = logging.getLogger(__name__)

@dataclass
class ProphetNetSpanMaskConfig(PlainTextConfig):
    sample_break_mode: BREAK_MODES = field(
        default="none", metadata={"help": "how blocks are cut: 'none' cuts contiguous text anywhere (MASS); "
                                      "'complete' packs whole lines, 'complete_doc' also stops at document "
                                      "ends (a line longer than a block is cut)"}
    )
    span_chunk: int = field(default=64, metadata={"help": "one span is masked in every this many tokens"})
    mask_prob: float = field(
        default=0.15, metadata={"help": "fraction of the tokens masked: one span of this fraction of every chunk"}
    )
    random_token_prob: float = field(default=0.1, metadata={"help": "share of masked tokens replaced by random tokens"})
    leave_unmasked_prob: float = field(default=0.1, metadata={"help": "share of masked tokens left unchanged"})
    max_source_positions: int = field(default=512, metadata={"help": "longest encoder input"})
    max_target_positions: int = field(default=512, metadata={"help": "longest decoder target"})


@register_task("prophetnet_span_mask", dataclass=ProphetNetSpanMaskConfig)
class ProphetNetSpanMaskTask(PlainTextTask):
    """Span-masked plain text for ``--criterion ngram_language_loss``."""

    cfg: ProphetNetSpanMaskConfig

    def __init__(self, cfg, dictionary):
        super().__init__(cfg, dictionary)
        self.random_high = len(dictionary)  # random replacements never draw the added mask symbol
        self.mask_idx = add_mask(dictionary)
        self.check_lengths(target_length(cfg.tokens_per_sample, cfg.span_chunk, cfg.mask_prob), "masked fragments")

    @classmethod
    def setup_task(cls, cfg, **kwargs):
        dictionary = cls.load_plain_dictionary(cfg, "prophetnet_span_mask")
        logger.info(f"dictionary: {len(dictionary)} types")
        return cls(cfg, dictionary)

    def load_dataset(self, split, epoch=1, combine=False, **kwargs):
        blocks = self.load_blocks(split, self.cfg.sample_break_mode, epoch, combine)
        self.datasets[split] = SpanMaskDataset(
            blocks, blocks.sizes, self.dictionary, self.mask_idx, self.cfg.tokens_per_sample,
            chunk=self.cfg.span_chunk, mask_prob=self.cfg.mask_prob, random_token_prob=self.cfg.random_token_prob,
            leave_unmasked_prob=self.cfg.leave_unmasked_prob,
            seed=self.cfg.seed, shuffle=(split == "train"),
            random_high=self.random_high,
        )
