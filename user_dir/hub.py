"""Hub interface: load a trained summarizer and summarize raw documents.

    from user_dir import from_pretrained
    summarizer = from_pretrained("checkpoints/aclsum", checkpoint_file="checkpoint_best.pt",
                                 data_name_or_path="data/aclsum/bin")
    summarizer.summarize(["first document ...", "second document ..."], beam=4, lenpen=2.0)

The same object comes back from fairseq's own loader when the plugin is named:
``fairseq.hub_utils.from_pretrained(model_dir, checkpoint_file, data_name_or_path,
user_dir="user_dir")`` followed by :class:`SummarizationHubInterface`. Sentencepiece,
truncation (with the instruction prefix the model was trained with) and batching are done
here and in the task; nothing is read from the network.
"""

import logging
import os

from fairseq import hub_utils

logger = logging.getLogger(__name__)

USER_DIR = os.path.dirname(os.path.abspath(__file__))


class SummarizationHubInterface(hub_utils.GeneratorHubInterface):
    """``summarize(documents)`` on top of fairseq's :class:`GeneratorHubInterface`.

    Works for every model whose task is ``abstractive_summarization`` (or any task with
    ``encode_text``/``spm``); the task applies the instruction prefix and the truncation.
    """

    def __init__(self, cfg, task, models):
        super().__init__(cfg, task, models)
        try:  # the data's own text codec, not a path stored at training time
            self.bpe = task.spm
            self.uses_data_spm = True
        except (AttributeError, FileNotFoundError):  # e.g. WordPiece data with --bpe bert
            self.uses_data_spm = False

    def encode(self, sentence):
        """The task's codec of the data directory when there is one; else fairseq's own
        ``--bpe``/``--tokenizer`` from the checkpoint (e.g. ``bert`` for WordPiece data)."""
        if self.uses_data_spm:
            return self.task.encode_text(sentence, append_eos=True)
        return super().encode(sentence)

    def summarize(
        self,
        documents,
        beam=4,
        lenpen=1.0,
        min_len=1,
        max_len_b=128,
        max_len_a=0.0,
        no_repeat_ngram_size=3,
        batch_size=8,
        **kwargs,
    ):
        """Summaries of ``documents`` (a list of raw strings, or one string), in order.

        Long documents are truncated to the model's source length, with a count logged by
        the task; empty documents are an error (there is nothing to summarize).
        """
        single = isinstance(documents, str)
        documents = [documents] if single else list(documents)
        empty = [i for i, doc in enumerate(documents) if not doc.strip()]
        if empty:
            raise ValueError(f"documents at positions {empty} are empty; nothing to summarize")
        self.cfg.dataset.batch_size = batch_size
        tokens = [self.encode(doc) for doc in documents]
        hypos = self.generate(
            tokens,
            beam=beam,
            lenpen=lenpen,
            min_len=min_len,
            max_len_a=max_len_a,
            max_len_b=max_len_b,
            no_repeat_ngram_size=no_repeat_ngram_size,
            **kwargs,
        )
        summaries = [self.decode(h[0]["tokens"]) for h in hypos]
        return summaries[0] if single else summaries


def from_pretrained(model_dir, checkpoint_file="checkpoint_best.pt", data_name_or_path=".", **kwargs):
    """Load ``model_dir/checkpoint_file`` with the dictionary and ``spm.model`` of
    ``data_name_or_path`` (relative to ``model_dir`` unless absolute) and return a
    :class:`SummarizationHubInterface`. Extra keyword arguments override the checkpoint's
    configuration (e.g. ``max_source_positions=4096``)."""
    kwargs.setdefault("user_dir", USER_DIR)
    loaded = hub_utils.from_pretrained(
        model_dir, checkpoint_file=checkpoint_file, data_name_or_path=data_name_or_path, **kwargs
    )
    return SummarizationHubInterface(loaded["args"], loaded["task"], loaded["models"])

