"""The phase-one dataset: every block of text yields the inputs of all three losses::

    original     the block (RTD labels are computed against it)
    mlm_source   the block with 15% of its word tokens replaced by <mask> (generator input)
    masked       where those are
    source       the block with T5-style spans replaced by sentinels (encoder input for CSP)
    target       sentinel + span, ..., </s> (decoder target for CSP)

The collater's ``net_input`` drives the encoder-decoder (CSP), its ``pretraining`` entry the
generator and discriminator; corruptions are seeded by ``(seed, epoch, index)``.
"""

import numpy as np
import torch
from fairseq.data import FairseqDataset, data_utils

from ..noising.bert import bert_noise, select_exact
from ..noising.seeding import seeded_generator
from ..noising.spans import MIN_BODY_TOKENS, corrupt_spans, random_spans_noise_mask
from ..summarization_data import ArraySizes


class ZCodeppPretrainingDataset(ArraySizes, FairseqDataset):
    """MLM, RTD and CSP views of each block of ``dataset`` (1-D LongTensors; blocks longer than
    ``max_tokens`` are cut, ``</s>`` kept). With ``shuffle`` the order and the corruptions change
    every epoch; without (validation) they stay those of epoch 1, so losses compare across epochs."""

    def __init__(self, dataset, sizes, dictionary, mask_idx, sentinels, max_tokens,
                 mask_prob=0.15, noise_density=0.15, mean_span_length=3.0, seed=1, shuffle=True):
        super().__init__()
        self.dataset = dataset
        self.dictionary = dictionary
        self.mask_idx = mask_idx
        self.sentinels = list(sentinels)
        self.max_tokens = max_tokens
        self.mask_prob = mask_prob
        self.noise_density = noise_density
        self.mean_span_length = mean_span_length
        self.seed = seed
        self.shuffle = shuffle
        self.epoch = 1
        self._sizes = np.minimum(np.asarray(sizes), max_tokens)

    @property
    def can_reuse_epoch_itr_across_epochs(self):
        return not self.shuffle  # training corruptions and order change with the epoch

    def set_epoch(self, epoch):
        if self.shuffle:
            self.epoch = epoch

    def _block(self, index):
        tokens = self.dataset[index].long()
        eos = self.dictionary.eos()
        if tokens[-1] != eos:
            tokens = torch.cat([tokens, tokens.new([eos])])
        if len(tokens) > self.max_tokens:
            tokens = torch.cat([tokens[: self.max_tokens - 1], tokens.new([eos])])
        return tokens  # (T,)

    def __getitem__(self, index):
        generator = seeded_generator(self.seed, self.epoch, index)
        original = self._block(index)  # (T,)
        body = original[:-1]
        words = original >= self.dictionary.nspecial  # (T,)
        masked = select_exact(words, self.mask_prob, generator)  # (T,)
        mlm_source = bert_noise(original, masked, self.mask_idx, self.dictionary.nspecial, len(self.dictionary),
                                random_token_prob=0.0, leave_unmasked_prob=0.0, generator=generator)  # all masked
        if len(body) >= MIN_BODY_TOKENS:
            noise = random_spans_noise_mask(len(body), self.noise_density, self.mean_span_length, generator)
            source, target = corrupt_spans(body, noise, self.sentinels, self.dictionary.eos())
        else:  # nothing to corrupt: predict the one token from an empty context
            source, target = original.new([self.sentinels[0], self.dictionary.eos()]), original
        return {"id": index, "original": original, "mlm_source": mlm_source, "masked": masked,
                "source": source, "target": target}

    def __len__(self):
        return len(self.dataset)

    def num_tokens_vec(self, indices):
        return self._sizes[indices]

    def filter_indices_by_size(self, indices, max_sizes):
        """Nothing to filter: blocks are cut to ``max_tokens`` and the task checks that these
        and their span targets fit the model."""
        return indices, []

    def ordered_indices(self):
        if not self.shuffle:
            return np.arange(len(self))
        with data_utils.numpy_seed(self.seed, self.epoch):
            return np.random.permutation(len(self))

    def collater(self, samples):
        if not samples:
            return {}
        pad, eos = self.dictionary.pad(), self.dictionary.eos()

        def pad_all(key, pad_value=pad, move_eos_to_beginning=False):
            return data_utils.collate_tokens([s[key] for s in samples], pad_value, eos, left_pad=False,
                                             move_eos_to_beginning=move_eos_to_beginning)

        source = pad_all("source")  # (B, S)
        target = pad_all("target")  # (B, U)
        return {
            "id": torch.LongTensor([s["id"] for s in samples]),
            "nsentences": len(samples),
            "ntokens": int(target.ne(pad).sum()),
            "net_input": {
                "src_tokens": source,
                "src_lengths": source.ne(pad).sum(1),
                "prev_output_tokens": pad_all("target", move_eos_to_beginning=True),  # (B, U)
            },
            "target": target,
            "pretraining": {
                "original": pad_all("original"),  # (B, T)
                "mlm_source": pad_all("mlm_source"),  # (B, T)
                "masked": pad_all("masked", pad_value=False),  # (B, T) bool
            },
        }
