"""``s2s_ft_summarization``: the summarization task with a mask token (BERT data's ``[MASK]``,
else ``<mask>`` appended on both sides) and WordPiece text for WordPiece data (a ``--bpe``
meant for sentencepiece data is then ignored).
"""

import logging
from dataclasses import dataclass

from fairseq.tasks import register_task

from fairseq_ext.data.wordpiece import WordPieceCodec
from fairseq_ext.noising.symbols import add_mask

from .abstractive_summarization import AbstractiveSummarizationConfig, AbstractiveSummarizationTask

logger = logging.getLogger(__name__)

@dataclass
class S2SFTSummarizationConfig(AbstractiveSummarizationConfig):
    """The foundation's flags (``--wordpiece-vocab`` included)."""


@register_task("s2s_ft_summarization", dataclass=S2SFTSummarizationConfig)
class S2SFTSummarizationTask(AbstractiveSummarizationTask):
    """Document -> summary with a mask token and optional WordPiece text."""

    cfg: S2SFTSummarizationConfig

    @classmethod
    def setup_task(cls, cfg, **kwargs):
        task = super().setup_task(cfg, **kwargs)
        for dictionary in (task.src_dict, task.tgt_dict):
            add_mask(dictionary)
        return task

    def build_bpe(self, args):
        """WordPiece data: fairseq-generate's ``D-`` lines join the pieces (a ``--bpe`` given
        for sentencepiece data, such as run_demo.sh's, does not apply and is ignored)."""
        name = getattr(args, "_name", None)
        if name is not None and isinstance(self.text_codec_or_none(), WordPieceCodec):
            logger.warning(f"WordPiece data ({self.text_codec.vocab_path}): ignoring --bpe {name}")
            return self.output_codec()
        return super().build_bpe(args)

    def text_codec_or_none(self):
        try:
            return self.text_codec
        except FileNotFoundError:
            return None
