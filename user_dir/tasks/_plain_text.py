"""Shared base of the pre-training tasks that read plain text.

``python -m preprocess.prepare --corpus wiki`` (or any monolingual corpus) writes
``dict.txt`` and ``{train,valid,test}.{bin,idx}``: one paragraph a line, a blank line between
documents. :class:`PlainTextTask` loads that dictionary and those lines (cut into blocks when
asked); each pre-training task adds its own noising on top. Registers nothing itself.
"""

import logging
import os
from dataclasses import dataclass, field
from typing import Optional

from fairseq import utils
from fairseq.data import Dictionary, TokenBlockDataset, data_utils
from fairseq.data.indexed_dataset import get_available_dataset_impl
from fairseq.dataclass import ChoiceEnum, FairseqDataclass
from fairseq.tasks import FairseqTask
from omegaconf import II

from fairseq_ext.compat.flags import add_dataclass_args
from fairseq_ext.data.binarized import check_binarized

from ._batch_seed import BatchSeededTrainStep

logger = logging.getLogger(__name__)

BREAK_MODES = ChoiceEnum(["none", "complete", "complete_doc", "eos"])


@dataclass
class PlainTextConfig(FairseqDataclass):
    data: str = field(default="???", metadata={"help": "binarized plain-text data (dict.txt, train.bin, ...)"})
    tokens_per_sample: int = field(default=512, metadata={"help": "tokens per block (the encoder's input length)"})
    max_source_positions: int = field(default=1024, metadata={"help": "longest encoder input"})
    max_target_positions: int = field(default=1024, metadata={"help": "longest decoder target"})
    seed: int = II("common.seed")
    dataset_impl: Optional[ChoiceEnum(get_available_dataset_impl())] = II("dataset.dataset_impl")


class PlainTextTask(BatchSeededTrainStep, FairseqTask):
    """One dictionary for both sides; lines or blocks of plain text per split."""

    def __init__(self, cfg, dictionary):
        super().__init__(cfg)
        self.dictionary = dictionary

    @classmethod
    def add_args(cls, parser):
        """fairseq's flags, with ``--x``/``--no-x`` for booleans that default to on."""
        add_dataclass_args(parser, getattr(cls, "__dataclass")())

    def check_lengths(self, longest_target, targets):
        """Refuse blocks (``--tokens-per-sample``) longer than ``--max-source-positions`` and
        targets (``targets`` up to ``longest_target`` tokens) longer than ``--max-target-positions``,
        at set-up instead of at the first long batch."""
        cfg = self.cfg
        if cfg.tokens_per_sample > cfg.max_source_positions:
            raise ValueError(f"--tokens-per-sample ({cfg.tokens_per_sample}) exceeds "
                             f"--max-source-positions ({cfg.max_source_positions})")
        if longest_target > cfg.max_target_positions:
            raise ValueError(f"{targets} reach {longest_target} tokens, more than "
                             f"--max-target-positions ({cfg.max_target_positions})")

    @classmethod
    def load_plain_dictionary(cls, cfg, task_name):
        path = os.path.join(utils.split_paths(cfg.data)[0], "dict.txt")
        if not os.path.exists(path):
            raise FileNotFoundError(f"{path} not found: {task_name} reads plain-text data "
                                    "(python -m preprocess.prepare --corpus wiki ...)")
        return Dictionary.load(path)

    def load_lines(self, split, epoch=1, combine=False):
        """The binarized lines of ``split`` (the data path rotates with the epoch)."""
        paths = utils.split_paths(self.cfg.data)
        path = os.path.join(paths[(epoch - 1) % len(paths)], split)
        if self.cfg.dataset_impl != "raw" and (os.path.isfile(path + ".idx") or os.path.isfile(path + ".bin")):
            check_binarized(path)  # names the file when it is empty, truncated or half missing
        lines = data_utils.load_indexed_dataset(path, self.dictionary, self.cfg.dataset_impl, combine=combine)
        if lines is None:
            raise FileNotFoundError(f"dataset not found: {split} ({path})")
        return lines

    def load_blocks(self, split, break_mode, epoch=1, combine=False):
        """``split`` cut into blocks of at most ``--tokens-per-sample`` tokens."""
        lines = self.load_lines(split, epoch, combine)
        blocks = TokenBlockDataset(
            lines, lines.sizes, self.cfg.tokens_per_sample, pad=self.dictionary.pad(),
            eos=self.dictionary.eos(), break_mode=break_mode,
        )
        too_long = int((blocks.sizes > self.cfg.tokens_per_sample).sum())
        logger.info(f"{split}: {len(blocks)} blocks of at most {self.cfg.tokens_per_sample} tokens "
                    f"({too_long} single lines longer than that are cut)")
        return blocks

    def max_positions(self):
        return self.cfg.max_source_positions, self.cfg.max_target_positions

    @property
    def source_dictionary(self):
        return self.dictionary

    @property
    def target_dictionary(self):
        return self.dictionary
