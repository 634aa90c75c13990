"""Datasets for BART-LS pre-training on long inputs: documents concatenated in a new random order
every epoch and cut into bodies of ``block_tokens`` (the paper's best input, section 3)
(:class:`ConcatenatedDocumentsDataset`), corrupted into source/target pairs
(:class:`SpanCorruptionDataset`) or given candidate span masks for model-based denoising
(:class:`CandidateSpansDataset`). With ``vary_with_epoch=False`` (validation) order and noise
stay those of epoch 1.
"""

import numpy as np
import torch
from fairseq.data import FairseqDataset
from fairseq.data.language_pair_dataset import collate

from ..noising.seeding import seeded_generator
from ..noising.spans import (
    MIN_BODY_TOKENS,
    corrupt_spans,
    corrupted_lengths,
    dynamic_mean_span,
    random_spans_noise_mask,
)


def document_line_ranges(sizes, separator_size=1):
    """``(starts, ends)`` line-index ranges of documents; lines of ``separator_size`` (a
    blank line binarizes to ``</s>`` alone) separate documents and belong to none."""
    sizes = np.asarray(sizes)
    is_sep = sizes <= separator_size
    idx = np.arange(len(sizes))
    doc_id = np.cumsum(is_sep)  # separators bump the id of what follows
    keep = ~is_sep
    if not keep.any():
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    ids, first = np.unique(doc_id[keep], return_index=True)
    lines = idx[keep]
    starts = lines[first]
    ends = np.append(lines[first[1:] - 1], lines[-1]) + 1
    return starts, ends


class ConcatenatedDocumentsDataset(FairseqDataset):
    """Bodies of ``block_tokens`` tokens cut from the concatenation of the corpus documents
    in a random order per epoch (line-final ``</s>`` dropped; the last body may be shorter,
    and is dropped when shorter than :data:`MIN_BODY_TOKENS`)."""

    def __init__(self, lines, eos, block_tokens, seed, shuffle=True):
        super().__init__()
        self.lines = lines
        self.eos = eos
        self.block_tokens = block_tokens
        self.seed = seed
        self.shuffle = shuffle
        self.doc_starts, self.doc_ends = document_line_ranges(lines.sizes)
        if len(self.doc_starts) == 0:
            raise ValueError("the corpus has no documents (every line is empty)")
        line_tokens = np.asarray(lines.sizes) - 1  # without the line's </s>
        self.line_tokens = line_tokens
        total = int(sum(line_tokens[s:e].sum() for s, e in zip(self.doc_starts, self.doc_ends)))
        self.total = total
        remainder = total % block_tokens
        sizes = [block_tokens] * (total // block_tokens)
        if remainder >= MIN_BODY_TOKENS:  # a shorter last body, unless too short to corrupt
            sizes.append(remainder)
        if not sizes:
            raise ValueError(f"the corpus has {total} tokens: not one body of at least {MIN_BODY_TOKENS}")
        self._sizes = np.asarray(sizes, dtype=np.int64)
        self.set_epoch(1)

    def set_epoch(self, epoch):
        self.epoch = epoch
        order = np.arange(len(self.doc_starts))
        if self.shuffle:
            order = np.random.default_rng((self.seed, epoch)).permutation(order)
        self.line_order = np.concatenate(
            [np.arange(self.doc_starts[d], self.doc_ends[d]) for d in order]
        )  # line indices in reading order
        self.line_offsets = np.concatenate([[0], np.cumsum(self.line_tokens[self.line_order])])  # (n_lines + 1,)

    @property
    def can_reuse_epoch_itr_across_epochs(self):
        return False  # the document order changes every epoch

    def __len__(self):
        return len(self._sizes)

    @property
    def sizes(self):
        return self._sizes

    def __getitem__(self, index):
        start = index * self.block_tokens
        end = start + int(self._sizes[index])
        first = int(np.searchsorted(self.line_offsets, start, side="right")) - 1
        last = int(np.searchsorted(self.line_offsets, end, side="left"))
        pieces = [self.lines[int(i)][:-1] for i in self.line_order[first:last]]
        stream = torch.cat(pieces)  # tokens of lines first..last-1
        offset = start - int(self.line_offsets[first])
        return stream[offset: offset + end - start].long()  # (block,)


class NoisedBodiesDataset(FairseqDataset):
    """What the pre-training datasets below share: the noise of item ``index`` is drawn from
    ``seeded_generator(seed, epoch, index)``; the epoch moves on only with ``vary_with_epoch``
    (validation keeps epoch 1's noise), and the bodies follow it (a new concatenation order);
    an epoch iterator is never reused."""

    def __init__(self, bodies, dictionary, seed, vary_with_epoch):
        super().__init__()
        self.vary_with_epoch = vary_with_epoch
        self.bodies = bodies
        self.dictionary = dictionary
        self.seed = seed
        self.epoch = 1

    def set_epoch(self, epoch):
        self.epoch = epoch if self.vary_with_epoch else 1
        if hasattr(self.bodies, "set_epoch"):
            self.bodies.set_epoch(self.epoch)

    @property
    def can_reuse_epoch_itr_across_epochs(self):
        return False

    def __len__(self):
        return len(self.bodies)

    def generator(self, index):
        return seeded_generator(self.seed, self.epoch, index)


class SpanCorruptionDataset(NoisedBodiesDataset):
    """``{"id", "source", "target"}`` by T5 span corruption of each body, collated like
    fairseq's ``LanguagePairDataset`` (``net_input`` with ``prev_output_tokens``)."""

    def __init__(self, bodies, dictionary, sentinel_ids, noise_density, mean_span_length, seed,
                 span_lengths=None, left_pad_source=True, vary_with_epoch=True):
        super().__init__(bodies, dictionary, seed, vary_with_epoch)
        self.sentinel_ids = torch.as_tensor(sentinel_ids, dtype=torch.long)
        self.noise_density = noise_density
        self.mean_span_length = mean_span_length
        self.span_lengths = span_lengths
        self.left_pad_source = left_pad_source
        self.set_epoch(1)

    def set_epoch(self, epoch):
        super().set_epoch(epoch)
        if self.span_lengths:
            generator = seeded_generator(self.seed, epoch, 0)
            self.mean_spans = dynamic_mean_span(self.span_lengths, len(self.bodies), generator)
        else:
            self.mean_spans = np.full(len(self.bodies), float(self.mean_span_length))
        self.src_sizes, self.tgt_sizes = corrupted_lengths(self.bodies.sizes, self.noise_density, self.mean_spans)

    @property
    def sizes(self):
        return self.src_sizes

    def __getitem__(self, index):
        body = self.bodies[index]
        mean_span = float(self.mean_spans[index])
        mask = random_spans_noise_mask(len(body), self.noise_density, mean_span, self.generator(index))
        source, target = corrupt_spans(body, mask, self.sentinel_ids, self.dictionary.eos(), bos=self.dictionary.bos())
        return {"id": index, "source": source, "target": target}

    def collater(self, samples):
        return collate(samples, self.dictionary.pad(), self.dictionary.eos(),
                       left_pad_source=self.left_pad_source, left_pad_target=False)

    def num_tokens(self, index):
        return max(int(self.src_sizes[index]), int(self.tgt_sizes[index]))

    def size(self, index):
        return int(self.src_sizes[index]), int(self.tgt_sizes[index])

    def ordered_indices(self):
        order = np.random.default_rng((self.seed, self.epoch, 1)).permutation(len(self))
        return order[np.argsort(self.src_sizes[order], kind="mergesort")]


class CandidateSpansDataset(NoisedBodiesDataset):
    """``{"id", "tokens", "candidates"}``: a body and a dense span mask (density
    ``candidate_density``) from which the model-based criterion keeps the hardest spans;
    ``noise_density`` (what the kept spans amount to) sizes the targets for batching."""

    def __init__(self, bodies, dictionary, candidate_density, mean_span_length, seed, noise_density,
                 vary_with_epoch=True):
        super().__init__(bodies, dictionary, seed, vary_with_epoch)
        self.noise_density = noise_density
        self.candidate_density = candidate_density
        self.mean_span_length = mean_span_length

    @property
    def sizes(self):
        return self.bodies.sizes

    def __getitem__(self, index):
        body = self.bodies[index]
        mask = random_spans_noise_mask(len(body), self.candidate_density, self.mean_span_length,
                                       self.generator(index))
        return {"id": index, "tokens": body, "candidates": mask}

    def collater(self, samples):
        """Right-padded ``tokens`` (B, T) and ``candidates`` (B, T) (False on padding)."""
        if not samples:
            return {}
        width = max(len(s["tokens"]) for s in samples)
        tokens = torch.full((len(samples), width), self.dictionary.pad(), dtype=torch.long)
        candidates = torch.zeros(len(samples), width, dtype=torch.bool)
        for row, s in enumerate(samples):
            tokens[row, : len(s["tokens"])] = s["tokens"]
            candidates[row, : len(s["tokens"])] = s["candidates"]
        return {
            "id": torch.tensor([s["id"] for s in samples]),
            "nsentences": len(samples),
            "ntokens": int(sum(len(s["tokens"]) for s in samples)),
            "tokens": tokens,
            "candidates": candidates,
        }

    def num_tokens(self, index):
        return int(self.bodies.sizes[index]) + 2

    def size(self, index):
        """Source length and the expected target length (at the final ``noise_density``)."""
        length = int(self.bodies.sizes[index])
        _, target = corrupted_lengths(length, self.noise_density, self.mean_span_length)
        return length + 2, int(target)

    def ordered_indices(self):
        return np.random.default_rng((self.seed, self.epoch, 1)).permutation(len(self))
