"""``bart_ls_model_based_denoising``: BART-LS pre-training with model-picked spans: the long inputs
of ``bart_ls_long_denoising`` with a dense candidate span mask (``--candidate-density``, five
times the final noise density by default, as the paper's 5,120 -> 1,024 tokens); the criterion
scores the spans and keeps the hardest.
"""

import logging
from dataclasses import dataclass, field

from fairseq.tasks import register_task

from fairseq_ext.bart_ls.data import CandidateSpansDataset

from .bart_ls_long_denoising import BartLSDenoisingConfig, BartLSLongDenoisingTask

logger = logging.getLogger(__name__)


@dataclass
class BartLSModelBasedDenoisingConfig(BartLSDenoisingConfig):
    candidate_density: float = field(
        default=0.3125,
        metadata={"help": "fraction of tokens masked as candidate spans for the scorer "
                  "(noise density / kept fraction: 0.0625 / 0.2)"},
    )


@register_task("bart_ls_model_based_denoising", dataclass=BartLSModelBasedDenoisingConfig)
class BartLSModelBasedDenoisingTask(BartLSLongDenoisingTask):
    """Long inputs with candidate spans; the criterion picks the targets."""

    cfg: BartLSModelBasedDenoisingConfig

    def load_dataset(self, split, epoch=1, combine=False, **kwargs):
        bodies = self.load_bodies(split, epoch)
        self.datasets[split] = CandidateSpansDataset(
            bodies, self.dictionary, self.cfg.candidate_density, self.cfg.mean_span_length, self.cfg.seed,
            noise_density=self.cfg.noise_density, vary_with_epoch=split == self.cfg.train_subset,
        )
        logger.info(f"{split}: {len(bodies)} inputs of up to {self.cfg.tokens_per_sample} tokens")
