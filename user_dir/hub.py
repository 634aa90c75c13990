"""Hub interface: load a trained summarizer and summarize raw documents.

    from user_dir import from_pretrained
    summarizer = from_pretrained("checkpoints/aclsum", checkpoint_file="checkpoint_best.pt",
                                 data_name_or_path="data/aclsum/bin")
    summarizer.summarize(["first document ...", "second document ..."], beam=4, lenpen=2.0)

Documents are cleaned as ``preprocess.prepare`` cleans corpora (every repair logged), encoded
with the data's text codec and truncated as the model was trained; bad input is refused naming
it; nothing is read from the network.
"""

import logging
import numbers
import os
from collections.abc import Mapping
from collections.abc import Set as AbstractSet

from fairseq import hub_utils
from omegaconf import open_dict

from fairseq_ext.compat import model_file
from fairseq_ext.compat.archives import extract_archive, extracted_folders_removed
from fairseq_ext.compat.flags import data_dir_message
from fairseq_ext.data import surface
from fairseq_ext.data.cleaning import REPAIRS, Report, clean_text
from fairseq_ext.data.text_codec import CODEC_FILES

from .tasks.abstractive_summarization import AbstractiveSummarizationTask

logger = logging.getLogger(__name__)

USER_DIR = os.path.dirname(os.path.abspath(__file__))


class SummarizationHubInterface(hub_utils.GeneratorHubInterface):
    """``summarize(documents)`` on top of fairseq's :class:`GeneratorHubInterface`.

    Works for every model whose task is ``abstractive_summarization`` (or derives from it); the
    task applies the instruction prefix and the truncation. ``model_dir`` (given by
    :func:`from_pretrained`) is one more place where the text codec is looked for; the
    checkpoint's own ``--bpe`` is never built (its file names are the saving run's).
    """

    def __init__(self, cfg, task, models, model_dir=None):
        self.uses_data_codec = isinstance(task, AbstractiveSummarizationTask)
        if self.uses_data_codec and cfg.get("bpe") is not None:
            with open_dict(cfg):
                cfg.bpe = None  # text goes through the data's codec, never a file the checkpoint names
        super().__init__(cfg, task, models)
        if not self.uses_data_codec:
            return
        if model_dir:
            task.extra_text_codecs.extend((kind, os.path.join(model_dir, name)) for kind, name in CODEC_FILES)
        self.bpe = task.text_codec

    def encode(self, sentence):
        """The task's codec of the data directory when there is one; else fairseq's own
        ``--bpe``/``--tokenizer`` from the checkpoint."""
        if self.uses_data_codec:
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
        restore_surface=None,
        **kwargs,
    ):
        """Summaries of ``documents`` (a list of raw strings, or one string), in order.

        Documents are cleaned as ``preprocess`` cleans its corpora (repairs are logged); long
        ones are truncated to the model's source length, with a count logged by the task. A
        document that is not a string, or that is empty after cleaning, is an error. On
        WordPiece data each summary is written in its document's casing and spacing
        (:mod:`fairseq_ext.data.surface`); ``restore_surface`` (default: the task's
        ``--restore-surface``, on) False gives the lower-cased pieces joined.
        """
        if restore_surface not in (None, True, False):
            raise TypeError(f"restore_surface must be True, False or None (the task's --restore-surface), "
                            f"got {restore_surface!r}")
        single = isinstance(documents, str)
        documents = clean_documents([documents] if single else _as_list(documents))
        _check_generation_args(beam=beam, batch_size=batch_size, min_len=min_len, max_len_b=max_len_b,
                               max_len_a=max_len_a, lenpen=lenpen, no_repeat_ngram_size=no_repeat_ngram_size)
        if not documents:
            return []
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
        if restore_surface is None:
            restore_surface = self.uses_data_codec and self.task.restores_surface
        if restore_surface:
            summaries = [surface.restore_surface(s, doc) for s, doc in zip(summaries, documents)]
        return summaries[0] if single else summaries


def _as_list(documents):
    """``documents`` as a list: a sequence or an iterator of documents. A mapping or a set is
    refused (their iteration gives keys, in an order that is not the caller's)."""
    if isinstance(documents, (Mapping, AbstractSet)):
        raise TypeError(f"documents must be a string or a list of strings, got a {type(documents).__name__} "
                        "(a mapping or a set has no document order; pass list(...) of the texts)")
    if documents is None or isinstance(documents, (bytes, bytearray)) or not hasattr(documents, "__iter__"):
        raise TypeError(f"documents must be a string or a list of strings, got {type(documents).__name__}")
    return list(documents)


def clean_documents(documents):
    """Clean raw documents as ``preprocess`` cleans corpus lines; repairs are logged, and a
    document that is not a string or is empty after cleaning raises naming its position."""
    report = Report(documents_in=len(documents))
    cleaned = []
    for i, document in enumerate(documents):
        if not isinstance(document, str):
            hint = " (decode bytes to str first)" if isinstance(document, (bytes, bytearray)) else ""
            raise TypeError(f"documents[{i}] is {type(document).__name__}, not str{hint}")
        cleaned.append(clean_text(document, f"documents[{i}]", report))
    empty = [i for i, text in enumerate(cleaned) if not text]
    if empty:
        raise ValueError(
            f"documents at positions {empty} are empty after cleaning (only whitespace, NUL or "
            "control characters); nothing to summarize"
        )
    for repair, count in sorted(report.counts.items()):
        where = ", ".join(report.locations[repair])
        logger.warning(f"input repaired: {count} {REPAIRS[repair]}: {where}")
    report.documents_out = len(cleaned)
    return cleaned


def _check_generation_args(**values):
    """Refuse generation settings fairseq would fail on deep inside (or silently misread)."""
    at_least = {"beam": 1, "batch_size": 1, "min_len": 0, "max_len_b": 0, "no_repeat_ngram_size": 0}
    for name, least in at_least.items():
        value = values[name]
        if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < least:
            raise ValueError(f"{name} must be an integer >= {least}, got {value!r}")
    for name in ("max_len_a", "lenpen"):
        value = values[name]
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise ValueError(f"{name} must be a number, got {value!r}")
    if values["max_len_a"] < 0:
        raise ValueError(f"max_len_a must be >= 0, got {values['max_len_a']!r}")


def from_pretrained(model_dir, checkpoint_file="checkpoint_best.pt", data_name_or_path=".", trust=False, **kwargs):
    """Load ``model_dir/checkpoint_file`` with the dictionary and text codec of
    ``data_name_or_path`` and return a :class:`SummarizationHubInterface`.

    ``model_dir`` is a folder or a model archive (``.tar.gz``, extracted as data into a
    temporary folder removed when the load ends). As in fairseq, ``data_name_or_path`` is
    relative to ``model_dir`` when it starts with ``.``, else to the working directory. The
    text codec is the data directory's ``vocab.txt`` or ``spm.model``, else its parent's, else
    ``model_dir``'s; ``spm_model=PATH`` picks one. Extra keyword arguments override the
    checkpoint's configuration (e.g. ``max_source_positions=4096``). ``trust=True`` lets the
    named checkpoint select components this project has not reviewed (docs/security.md).
    Decoding settings come from :meth:`~SummarizationHubInterface.summarize`, never the file.
    """
    kwargs.setdefault("user_dir", USER_DIR)
    with extracted_folders_removed():
        if os.path.isfile(model_dir):
            model_dir = extract_archive(model_dir)
        if not os.path.isdir(model_dir):
            raise FileNotFoundError(f"model directory not found: {model_dir}")
        for name in checkpoint_file.split(os.pathsep):
            if not os.path.isfile(os.path.join(model_dir, name)):
                found = sorted(f for f in os.listdir(model_dir) if f.endswith(".pt"))
                raise FileNotFoundError(f"checkpoint not found: {os.path.join(model_dir, name)} "
                                        f"(checkpoints in {model_dir}: {found or 'none'})")
            if trust:
                model_file.trust(os.path.join(model_dir, name))
        data = os.path.join(model_dir, data_name_or_path) if data_name_or_path.startswith(".") else data_name_or_path
        if not os.path.isdir(data):
            raise FileNotFoundError(f"data directory not found: {data} (data_name_or_path={data_name_or_path!r}; "
                                    "a path starting with '.' is relative to the model directory)")
        if data_dir_message(data):
            raise FileNotFoundError(data_dir_message(data))
        loaded = hub_utils.from_pretrained(
            model_dir, checkpoint_file=checkpoint_file, data_name_or_path=data_name_or_path, **kwargs
        )
        return SummarizationHubInterface(loaded["args"], loaded["task"], loaded["models"], model_dir=model_dir)
