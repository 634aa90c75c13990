"""``bart_ls_long_denoising``: BART-LS pre-training by T5 span corruption on long inputs: the
documents of fairseq monolingual data concatenated in a random order every epoch, cut into
bodies of ``--tokens-per-sample`` tokens, spans corrupted (:mod:`fairseq_ext.noising.spans`).
``--num-sentinels`` symbols are appended to the dictionary (convert BART with the same number).
"""

import logging
from dataclasses import dataclass, field
from typing import Optional

from fairseq.tasks import register_task
from omegaconf import II

from fairseq_ext.bart_ls.data import ConcatenatedDocumentsDataset, SpanCorruptionDataset
from fairseq_ext.noising.symbols import add_sentinels

from ._plain_text import PlainTextConfig, PlainTextTask

logger = logging.getLogger(__name__)

@dataclass
class BartLSDenoisingConfig(PlainTextConfig):
    tokens_per_sample: int = field(
        default=8190, metadata={"help": "tokens of text per example (before corruption, without <s> </s>)"}
    )
    noise_density: float = field(default=0.0625, metadata={"help": "fraction of tokens cut into spans"})
    mean_span_length: float = field(default=3.0, metadata={"help": "mean length of a corrupted span"})
    dynamic_span_length: Optional[str] = field(
        default=None,
        metadata={"help": "comma-separated mean span lengths to draw from per example "
                  "(the paper's dynamic variant: '4,8,12'); overrides --mean-span-length"},
    )
    num_sentinels: int = field(
        default=256, metadata={"help": "sentinel symbols added to the dictionary (reused cyclically)"}
    )
    shuffle_documents: bool = field(
        default=True, metadata={"help": "concatenate documents in a new random order every epoch"}
    )
    max_source_positions: int = field(default=16384, metadata={"help": "longest source the model takes"})
    max_target_positions: int = field(default=1024, metadata={"help": "longest target the model takes"})
    left_pad_source: bool = field(default=True, metadata={"help": "left-pad sources (fairseq's default)"})
    train_subset: str = II("dataset.train_subset")


@register_task("bart_ls_long_denoising", dataclass=BartLSDenoisingConfig)
class BartLSLongDenoisingTask(PlainTextTask):
    """T5 span denoising on long concatenated documents (BART-LS pre-training)."""

    cfg: BartLSDenoisingConfig

    def __init__(self, cfg, dictionary):
        super().__init__(cfg, dictionary)
        self.sentinel_ids = add_sentinels(dictionary, cfg.num_sentinels)

    @classmethod
    def setup_task(cls, cfg, **kwargs):
        dictionary = cls.load_plain_dictionary(cfg, "bart_ls_long_denoising")
        logger.info(f"dictionary: {len(dictionary)} types + {cfg.num_sentinels} sentinels")
        return cls(cfg, dictionary)

    def span_lengths(self):
        if not self.cfg.dynamic_span_length:
            return None
        return [float(x) for x in self.cfg.dynamic_span_length.split(",")]

    def load_bodies(self, split, epoch=1):
        """Concatenated-document bodies of ``split``; only the training split is reshuffled."""
        return ConcatenatedDocumentsDataset(
            self.load_lines(split, epoch), self.dictionary.eos(), self.cfg.tokens_per_sample, self.cfg.seed,
            shuffle=self.cfg.shuffle_documents and split == self.cfg.train_subset,
        )

    def load_dataset(self, split, epoch=1, combine=False, **kwargs):
        bodies = self.load_bodies(split, epoch)
        self.datasets[split] = SpanCorruptionDataset(
            bodies, self.dictionary, self.sentinel_ids, self.cfg.noise_density, self.cfg.mean_span_length,
            self.cfg.seed, span_lengths=self.span_lengths(), left_pad_source=self.cfg.left_pad_source,
            vary_with_epoch=split == self.cfg.train_subset,
        )
        logger.info(f"{split}: {len(bodies)} inputs of up to {self.cfg.tokens_per_sample} tokens")
