"""``s2s_ft_summarization``: abstractive summarization for s2s-ft models.

The foundation task with three additions:

* a mask token: BERT WordPiece data carry ``[MASK]``; a dictionary without one (sentencepiece
  data) gets ``<mask>`` appended, on both sides, when the task is set up (so training,
  generation and the hub agree on the vocabulary);
* WordPiece text: when the data directory holds ``vocab.txt`` (written by
  ``python -m fairseq_ext.s2s_ft.prepare_wordpiece``), ``encode_text``/``decode_tokens``, the
  hub and fairseq-generate's detokenized ``D-`` lines use WordPiece instead of sentencepiece.
"""

import logging
import os
from dataclasses import dataclass, field
from typing import Optional

from fairseq import utils
from fairseq.tasks import register_task
from omegaconf import open_dict

from fairseq_ext.s2s_ft.model import MASK_SYMBOLS
from fairseq_ext.s2s_ft.wordpiece import WordPieceCodec

from .abstractive_summarization import AbstractiveSummarizationConfig, AbstractiveSummarizationTask

logger = logging.getLogger(__name__)

WORDPIECE_VOCAB = "vocab.txt"
ADDED_MASK = "<mask>"


@dataclass
class S2SFTSummarizationConfig(AbstractiveSummarizationConfig):
    wordpiece_vocab: Optional[str] = field(
        default=None,
        metadata={"help": "WordPiece vocab.txt of the data; default: vocab.txt in the data directory "
                  "if there is one (else the data are sentencepiece)"},
    )


@register_task("s2s_ft_summarization", dataclass=S2SFTSummarizationConfig)
class S2SFTSummarizationTask(AbstractiveSummarizationTask):
    """Document -> summary with a mask token and optional WordPiece text."""

    cfg: S2SFTSummarizationConfig

    @classmethod
    def setup_task(cls, cfg, **kwargs):
        task = super().setup_task(cfg, **kwargs)
        for dictionary in (task.src_dict, task.tgt_dict):
            if not any(symbol in dictionary.indices for symbol in MASK_SYMBOLS):
                dictionary.add_symbol(ADDED_MASK)
        return task

    @property
    def wordpiece_vocab_path(self):
        if self.cfg.wordpiece_vocab:
            return self.cfg.wordpiece_vocab
        path = os.path.join(utils.split_paths(self.cfg.data)[0], WORDPIECE_VOCAB)
        return path if os.path.isfile(path) else None

    @property
    def spm(self):
        """The data's text codec: WordPiece when the data have a ``vocab.txt``, else the
        foundation's sentencepiece."""
        if self._spm is None and self.wordpiece_vocab_path:
            self._spm = WordPieceCodec(self.wordpiece_vocab_path)
        return AbstractiveSummarizationTask.spm.fget(self)

    def build_bpe(self, args):
        """WordPiece data: fairseq-generate's ``D-`` lines join the pieces (a ``--bpe`` given
        for sentencepiece data, such as run_demo.sh's, does not apply and is ignored)."""
        name = getattr(args, "_name", None)
        if self.wordpiece_vocab_path:
            if name is not None:
                logger.warning(f"WordPiece data ({self.wordpiece_vocab_path}): ignoring --bpe {name}")
            return self.spm
        return super().build_bpe(args)

    def build_model(self, cfg, from_checkpoint=False):
        if from_checkpoint and getattr(cfg, "init_from_hf", None):
            with open_dict(cfg):
                cfg.init_from_hf = None  # the checkpoint holds the weights
        return super().build_model(cfg, from_checkpoint)
