"""Datasets that lay out fairseq's document -> summary pairs as Transformer-SM's joint rows.

The binarized pair ``(a_1 .. a_M </s>, s_1 .. s_N </s>)`` becomes

    article (encoder side):   <s> [instruction] a_1 .. a_K            K <= max_len - 1 - |instruction|
    decoder input:            <delim> s_1 .. s_N
    decoder target:           s_1 .. s_N </s>

``<s>`` is the public code's ``_start_``, ``<delim>`` its ``_delimiter_`` and ``</s>`` its
``_classify_`` (end) token.
"""

import numpy as np
from fairseq.data import BaseWrapperDataset, FairseqDataset


class DelimiterDataset(BaseWrapperDataset):
    """A :class:`~fairseq.data.LanguagePairDataset` whose decoder input starts with ``delim``
    instead of fairseq's ``</s>``: ``<delim> s_1 .. s_N`` for the target ``s_1 .. s_N </s>``.

    A row costs ``article + summary`` tokens (one sequence), not the ``max`` of the two that
    ``LanguagePairDataset`` counts, so ``--max-tokens`` batches by the joint length.
    """

    def __init__(self, dataset, delim):
        super().__init__(dataset)
        if dataset.left_pad_target:
            raise ValueError("Transformer-SM needs right-padded targets (--left-pad-target False)")
        self.delim = delim
        src_sizes = np.asarray(dataset.src_sizes)
        tgt_sizes = np.asarray(dataset.tgt_sizes) if dataset.tgt_sizes is not None else 0
        self._joint_sizes = src_sizes + tgt_sizes

    def num_tokens(self, index):
        return int(self._joint_sizes[index])

    def num_tokens_vec(self, indices):
        return self._joint_sizes[indices]

    def batch_by_size(self, indices, max_tokens=None, max_sentences=None, required_batch_size_multiple=1):
        # FairseqDataset's batching over this wrapper's joint lengths (not the inner dataset's)
        return FairseqDataset.batch_by_size(
            self, indices, max_tokens=max_tokens, max_sentences=max_sentences,
            required_batch_size_multiple=required_batch_size_multiple,
        )  # fmt: skip

    @property
    def src(self):
        return self.dataset.src

    @property
    def tgt(self):
        return self.dataset.tgt

    def collater(self, samples):
        batch = self.dataset.collater(samples)
        net_input = batch.get("net_input", {})
        if "prev_output_tokens" in net_input:
            net_input["prev_output_tokens"][:, 0] = self.delim  # (B, N+1): <delim> s_1 .. s_N
        return batch
