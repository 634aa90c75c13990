"""``zcodepp_pretraining``: Z-Code++ phase one (Section 2.1) on plain text: each block of
``--tokens-per-sample`` tokens gives the generator its MLM input (15% masked) and the
encoder-decoder a corrupted-span input and target (T5 spans, mean 3, 15%); the criterion
``zcodepp_joint`` builds the RTD input from the generator's samples. ``<mask>`` and
``--num-sentinels`` sentinels are appended to the dictionary (a summarization task drops them).
"""

import logging
from dataclasses import dataclass, field

from fairseq.tasks import register_task

from fairseq_ext.noising.spans import corrupted_lengths, span_counts
from fairseq_ext.noising.symbols import add_mask, add_sentinels
from fairseq_ext.zcodepp.pretraining_data import ZCodeppPretrainingDataset

from ..interfaces import ReplacedTokenDetectionModel, ReplacedTokenDetectionTask
from ._plain_text import BREAK_MODES, PlainTextConfig, PlainTextTask

logger = logging.getLogger(__name__)

@dataclass
class ZCodeppPretrainingConfig(PlainTextConfig):
    sample_break_mode: BREAK_MODES = field(
        default="complete", metadata={"help": "how blocks are cut: 'complete' packs whole sentences, "
                                      "'complete_doc' also stops at document ends, 'none' cuts anywhere"}
    )
    mask_prob: float = field(default=0.15, metadata={"help": "fraction of word tokens masked for the generator"})
    noise_density: float = field(default=0.15, metadata={"help": "fraction of tokens in corrupted spans (CSP)"})
    mean_span_length: float = field(default=3.0, metadata={"help": "mean corrupted span length (CSP)"})
    num_sentinels: int = field(default=100, metadata={"help": "sentinel symbols added to the dictionary"})


@register_task("zcodepp_pretraining", dataclass=ZCodeppPretrainingConfig)
class ZCodeppPretrainingTask(PlainTextTask, ReplacedTokenDetectionTask):
    """RTD + MLM + CSP data for the ``zcodepp_joint`` criterion."""

    cfg: ZCodeppPretrainingConfig

    def __init__(self, cfg, dictionary):
        super().__init__(cfg, dictionary)
        self.mask_idx = add_mask(dictionary)
        self.sentinels = add_sentinels(dictionary, cfg.num_sentinels)
        _, needed = span_counts(cfg.tokens_per_sample, cfg.noise_density, cfg.mean_span_length)
        if needed > cfg.num_sentinels:
            raise ValueError(f"blocks of {cfg.tokens_per_sample} tokens make up to {needed} spans: "
                             f"--num-sentinels must be at least that (got {cfg.num_sentinels})")
        _, longest_target = corrupted_lengths(cfg.tokens_per_sample, cfg.noise_density,
                                              cfg.mean_span_length, bos=False)
        self.check_lengths(longest_target, "corrupted-span targets")

    @classmethod
    def setup_task(cls, cfg, **kwargs):
        dictionary = cls.load_plain_dictionary(cfg, "zcodepp_pretraining")
        logger.info(f"dictionary: {len(dictionary)} types (+ <mask> and {cfg.num_sentinels} sentinels)")
        return cls(cfg, dictionary)

    @property
    def special_ids(self):
        """Symbols the generator must never sample as replacements."""
        d = self.dictionary
        return [d.bos(), d.pad(), d.eos(), d.unk(), self.mask_idx, *self.sentinels]

    def load_dataset(self, split, epoch=1, combine=False, **kwargs):
        blocks = self.load_blocks(split, self.cfg.sample_break_mode, epoch, combine)
        self.datasets[split] = ZCodeppPretrainingDataset(
            blocks, blocks.sizes, self.dictionary, self.mask_idx, self.sentinels, self.cfg.tokens_per_sample,
            mask_prob=self.cfg.mask_prob, noise_density=self.cfg.noise_density,
            mean_span_length=self.cfg.mean_span_length, seed=self.cfg.seed,
            shuffle=(split == "train"),
        )

    def build_model(self, cfg, from_checkpoint=False):
        model = super().build_model(cfg, from_checkpoint)
        if not (isinstance(model, ReplacedTokenDetectionModel) and model.has_generator()):
            raise ValueError("zcodepp_pretraining trains a generator: give --generator-layers N "
                             f"(6 in the paper) with a zcodepp architecture (got {type(model).__name__})")
        return model
