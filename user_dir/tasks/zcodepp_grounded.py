"""``zcodepp_grounded``: Z-Code++ phase two, grounded pre-training (Section 2.1, Table 1).

Document -> summary pairs from several corpora (one dictionary and sentencepiece model, the
first ``DATA`` directory's), each source prefixed by an instruction drawn per example and epoch
from its corpus's templates (``fairseq_ext/zcodepp/instructions.py``, or
``--instruction-templates FILE``); the rest is ``abstractive_summarization``.

    fairseq-train data/wiki_aclsum/bin --user-dir user_dir --task zcodepp_grounded \\
        --grounded-corpora aclsum:data/wiki_aclsum/bin,aclsum_long:data/wiki_aclsum_long/bin \\
        --arch zcodepp_base --finetune-from-model PHASE1/checkpoint_best.pt ...
"""

import logging
import os
from dataclasses import dataclass, field
from typing import Optional

from fairseq.data import ConcatDataset
from fairseq.tasks import register_task
from fairseq.tasks.translation import load_langpair_dataset
from omegaconf import II

from fairseq_ext.zcodepp.instructions import (
    EpochLanguagePairDataset,
    InstructionDataset,
    default_templates,
    load_templates,
)

from .abstractive_summarization import AbstractiveSummarizationConfig, AbstractiveSummarizationTask

logger = logging.getLogger(__name__)


@dataclass
class ZCodeppGroundedConfig(AbstractiveSummarizationConfig):
    grounded_corpora: Optional[str] = field(
        default=None,
        metadata={"help": "comma-separated NAME:DIR pairs of binarized document->summary corpora "
                  "(NAME picks the template list), e.g. aclsum:data/a/bin,aclsum_long:data/b/bin; "
                  "default: the DATA directory under the name of its parent folder"},
    )
    instruction_templates: Optional[str] = field(
        default=None,
        metadata={"help": "file of 'corpus<TAB>instruction' lines adding to (or replacing, per corpus) "
                  "the default templates (the paper's Table 1 and this project's ACLSum lists)"},
    )
    seed: int = II("common.seed")


@register_task("zcodepp_grounded", dataclass=ZCodeppGroundedConfig)
class ZCodeppGroundedTask(AbstractiveSummarizationTask):
    """Grounded pre-training: multi-corpus summarization with per-example instructions."""

    cfg: ZCodeppGroundedConfig

    def __init__(self, cfg, src_dict, tgt_dict):
        super().__init__(cfg, src_dict, tgt_dict)
        self.corpora = self._parse_corpora(cfg)
        templates = default_templates()
        if cfg.instruction_templates:
            templates.update(load_templates(cfg.instruction_templates))
        missing = [name for name, _ in self.corpora if name not in templates]
        if missing:
            raise ValueError(f"no instruction templates for corpora {missing}: give them in "
                             f"--instruction-templates (known: {sorted(templates)})")
        self.templates = {name: templates[name] for name, _ in self.corpora}

    @staticmethod
    def _parse_corpora(cfg):
        if not cfg.grounded_corpora:
            data = cfg.data.split(os.pathsep)[0].rstrip("/")
            parent = os.path.basename(os.path.dirname(data)) if os.path.basename(data) == "bin" else data
            return [(os.path.basename(parent), data)]
        corpora = []
        for entry in cfg.grounded_corpora.split(","):
            name, sep, path = entry.strip().partition(":")
            if not sep or not name or not path:
                raise ValueError(f"--grounded-corpora entries are NAME:DIR, got {entry!r}")
            corpora.append((name, path))
        return corpora

    def _encoded_templates(self, name):
        return [self.encode_text(text) for text in self.templates[name]]

    def load_dataset(self, split, epoch=1, combine=False, **kwargs):
        sources, targets = [], []
        for stream, (name, path) in enumerate(self.corpora):
            if not os.path.exists(os.path.join(path, f"{split}.{self.cfg.source_lang}-{self.cfg.target_lang}."
                                               f"{self.cfg.source_lang}.idx")):
                logger.info(f"{split}: corpus {name} has no {split} split ({path}); skipped")
                continue
            self.check_split(path, split)
            pair = load_langpair_dataset(
                path, split, self.cfg.source_lang, self.src_dict, self.cfg.target_lang, self.tgt_dict,
                combine=combine, dataset_impl=self.cfg.dataset_impl, upsample_primary=1,
                left_pad_source=self.cfg.left_pad_source, left_pad_target=self.cfg.left_pad_target,
                max_source_positions=self.source_limit, max_target_positions=self.target_limit,
                truncate_source=False,
            )
            limit = self.source_limit if self.cfg.truncate_source else None
            sources.append(InstructionDataset(pair.src, self._encoded_templates(name), limit,
                                              self.src_dict.eos(), seed=self.cfg.seed, stream=stream))
            targets.append(self._target_view(pair.tgt, f"{split} ({name})"))
            logger.info(f"{split}: {len(pair)} pairs from {name} with {len(self.templates[name])} templates")
        if not sources:
            raise FileNotFoundError(f"no corpus has a {split} split: {self.corpora}")
        src, tgt = ConcatDataset(sources), ConcatDataset(targets)
        self.datasets[split] = EpochLanguagePairDataset(
            src, src.sizes, self.src_dict, tgt, tgt.sizes, self.tgt_dict,
            left_pad_source=self.cfg.left_pad_source, left_pad_target=self.cfg.left_pad_target,
            shuffle=(split != "test"),
        )
