"""A fairseq dataset of MASS span-masked blocks (:mod:`fairseq_ext.noising.mass`) for
ProphetNet pre-training."""

import numpy as np
import torch
from fairseq.data import FairseqDataset, data_utils

from ..noising.mass import span_mask, target_length
from ..noising.seeding import seeded_generator


class SpanMaskDataset(FairseqDataset):
    """Blocks of plain text -> ``{source, target, segment_start}`` with fresh spans every epoch.

    Batches look like the translation task's (left-padded ``src_tokens``, ``prev_output_tokens``
    = ``</s>`` + target) plus ``target_segment_start`` for the n-gram loss.
    """

    def __init__(self, blocks, sizes, dictionary, mask_idx, max_length, chunk=64, mask_prob=0.15,
                 random_token_prob=0.1, leave_unmasked_prob=0.1, seed=1, shuffle=True, random_high=None):
        self.blocks = blocks
        self.max_length = max_length  # whole-sentence blocks can exceed the block size: cut them
        self.src_sizes = np.minimum(np.asarray(sizes, dtype=np.int64), max_length)
        self.tgt_sizes = np.array([target_length(int(n), chunk, mask_prob) for n in self.src_sizes], dtype=np.int64)
        self.dictionary = dictionary
        self.mask_idx = mask_idx
        self.chunk, self.mask_prob = chunk, mask_prob
        self.random_token_prob, self.leave_unmasked_prob = random_token_prob, leave_unmasked_prob
        self.seed = seed
        self.shuffle = shuffle
        self.random_high = random_high if random_high is not None else len(dictionary)
        self.epoch = 1

    @property
    def can_reuse_epoch_itr_across_epochs(self):
        return False  # new spans every epoch

    def set_epoch(self, epoch):
        self.epoch = epoch

    def __len__(self):
        return len(self.blocks)

    def __getitem__(self, index):
        tokens = self.blocks[index][: self.max_length].long()
        source, target, segment = span_mask(
            tokens, self.mask_idx, self.dictionary.eos(), self.dictionary.nspecial, self.random_high,
            self.chunk, self.mask_prob, self.random_token_prob, self.leave_unmasked_prob,
            seeded_generator(self.seed, self.epoch, index),
        )
        return {"id": index, "source": source, "target": target, "segment_start": segment}

    def collater(self, samples):
        if not samples:
            return {}
        pad, eos = self.dictionary.pad(), self.dictionary.eos()
        src = data_utils.collate_tokens([s["source"] for s in samples], pad, eos, left_pad=True)
        target = data_utils.collate_tokens([s["target"] for s in samples], pad, eos, left_pad=False)
        prev = data_utils.collate_tokens([s["target"] for s in samples], pad, eos, left_pad=False,
                                         move_eos_to_beginning=True)
        segment = data_utils.collate_tokens([s["segment_start"] for s in samples], 0, left_pad=False)
        return {
            "id": torch.LongTensor([s["id"] for s in samples]),
            "nsentences": len(samples),
            "ntokens": int(target.ne(pad).sum()),
            "net_input": {"src_tokens": src, "src_lengths": src.ne(pad).sum(1), "prev_output_tokens": prev},
            "target": target,
            "target_segment_start": segment,
        }

    def num_tokens(self, index):
        return max(self.src_sizes[index], self.tgt_sizes[index])

    def size(self, index):
        return self.src_sizes[index], self.tgt_sizes[index]

    @property
    def sizes(self):
        return self.src_sizes

    def ordered_indices(self):
        order = np.random.permutation(len(self)) if self.shuffle else np.arange(len(self))
        return order[np.argsort(self.src_sizes[order], kind="mergesort")]
