"""Instruction templates for grounded pre-training (Z-Code++ Section 2.1, Table 1):
:data:`PAPER_TEMPLATES` (the paper's) and :data:`PROJECT_TEMPLATES` (ACLSum's, same style).

:class:`InstructionDataset` draws one template per example, seeded by ``(seed, epoch, corpus,
index)``, and truncates the document so that instruction + document + ``</s>`` fit::

    templates: [t1 t2 t3], [u1 u2]        document: d1 d2 d3 d4 </s>      max_len = 6
    draw 0  ->  t1 t2 t3 d1 d2 </s>
    draw 1  ->  u1 u2 d1 d2 d3 </s>
"""

import numpy as np
from fairseq.data import FairseqDataset, LanguagePairDataset

from ..summarization_data import ArraySizes, prefix_truncate

PAPER_TEMPLATES = {
    "mediasum": [
        "Summarize the following interview script into a two sentences summary.",
        "How can the following interview script be rephrased into a few sentences summary.",
    ],
    "multinews": [
        "Summarize the news article into a one sentence summary.",
        "Rephrase the news article with a few sentences.",
    ],
    "newsroom": [
        "Summarize the news article into a one sentence summary.",
        "Rephrase the news article concisely with a few sentences.",
    ],
    "wikihow": [
        "Summarize the paragraph into a one sentence summary.",
        "Summarize the paragraph with a few words.",
    ],
}

PROJECT_TEMPLATES = {
    "aclsum": [
        "Summarize the scientific paper into a few sentences summary.",
        "Rephrase the challenge, approach and outcome of the paper concisely with a few sentences.",
    ],
    "aclsum_long": [
        "Summarize the scientific paper into an abstract.",
        "Rephrase the full paper concisely as a one paragraph abstract.",
    ],
}


def default_templates():
    """Table 1 of the paper plus this project's lists (a fresh dict: callers may change it)."""
    return {name: list(texts) for name, texts in {**PAPER_TEMPLATES, **PROJECT_TEMPLATES}.items()}


def load_templates(path):
    """Templates file -> ``{corpus: [instruction, ...]}``. One ``corpus<TAB>instruction`` per
    line; blank lines and lines starting with ``#`` are skipped."""
    templates = {}
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            corpus, sep, text = line.partition("\t")
            if not sep or not corpus.strip() or not text.strip():
                raise ValueError(f"{path}:{number}: expected 'corpus<TAB>instruction', got {line!r}")
            templates.setdefault(corpus.strip(), []).append(text.strip())
    if not templates:
        raise ValueError(f"{path}: no templates")
    return templates


class InstructionDataset(ArraySizes, FairseqDataset):
    """``template + document[:-1]`` cut to ``max_len - 1`` tokens, then ``eos``.

    Args:
        dataset: documents (1-D LongTensors ending with ``eos``).
        templates: list of encoded instructions (1-D LongTensors, no ``eos``).
        max_len: longest output (instruction and ``eos`` included), or None.
        eos: end-of-sentence index.
        seed, stream: the draw of example ``i`` in epoch ``e`` is seeded by (seed, stream, e, i).
    """

    def __init__(self, dataset, templates, max_len, eos, seed=1, stream=0):
        super().__init__()
        if not templates:
            raise ValueError("InstructionDataset needs at least one template")
        longest = max(len(t) for t in templates)
        if max_len is not None and longest + 1 >= max_len:
            raise ValueError(f"an instruction has {longest} tokens, which leaves no room for the "
                             f"document in {max_len} source positions")
        self.dataset = dataset
        self.templates = [t.long() for t in templates]
        self.max_len = max_len
        self.eos = eos
        self.seed = seed
        self.stream = stream
        self.epoch = 1
        sizes = np.asarray(dataset.sizes) + longest
        self._sizes = sizes if max_len is None else np.minimum(sizes, max_len)

    @property
    def can_reuse_epoch_itr_across_epochs(self):
        return False

    def set_epoch(self, epoch):
        self.epoch = epoch

    def template_index(self, index):
        rng = np.random.default_rng((self.seed, self.stream, self.epoch, index))
        return int(rng.integers(len(self.templates)))

    def __getitem__(self, index):
        prefix = self.templates[self.template_index(index)]
        return prefix_truncate(self.dataset[index], prefix, self.max_len, self.eos)  # (T,)

    def __len__(self):
        return len(self.dataset)


class EpochLanguagePairDataset(LanguagePairDataset):
    """fairseq's ``LanguagePairDataset`` that passes ``set_epoch`` on to its source and target
    (so that per-epoch draws such as :class:`InstructionDataset`'s change every epoch)."""

    def set_epoch(self, epoch):
        super().set_epoch(epoch)
        for part in (self.src, self.tgt):
            if part is not None and hasattr(part, "set_epoch"):
                part.set_epoch(epoch)

    @property
    def can_reuse_epoch_itr_across_epochs(self):
        return False
