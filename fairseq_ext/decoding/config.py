"""The decoding flags of the summarization tasks, one dataclass that their configurations
inherit: which words beam search may write, and which rules it keeps."""

from dataclasses import dataclass, field
from typing import Optional

from fairseq.dataclass import ChoiceEnum, FairseqDataclass

DECODE_WORDS_CHOICES = ChoiceEnum(["any", "source"])

#: Flags that a generation's own args may override (``--eval-rouge-args``, the hub's generate).
RULE_FLAGS = ("no_repeat_word", "end_at_sentence")


@dataclass
class DecodingConfig(FairseqDataclass):
    decode_words: DECODE_WORDS_CHOICES = field(
        default="any",
        metadata={"help": "words generation may write: any, or only words of the source (and of "
                  "--decode-words-file); see fairseq_ext.decoding.word_constraint"},
    )
    decode_words_file: Optional[str] = field(
        default=None,
        metadata={"help": "with --decode-words source: a text file whose words may be written too "
                  "(e.g. the training summaries), encoded with the data's sentencepiece or WordPiece model"},
    )
    decode_words_bigram_bonus: float = field(
        default=0.0,
        metadata={"help": "with --decode-words source: added to the log-probability of a word that "
                  "follows the word before it somewhere in the source or --decode-words-file"},
    )
    no_repeat_word: bool = field(
        default=False,
        metadata={"help": "generation never writes a whole word twice in a row (WordPiece or sentencepiece "
                  "words, not pieces); also a key of --eval-rouge-args and of the hub's generate; see "
                  "fairseq_ext.decoding.rules"},
    )
    end_at_sentence: bool = field(
        default=False,
        metadata={"help": "generation ends a hypothesis at its first sentence end: after a standalone '.', "
                  "'?' or '!' (not after a number) only </s> may follow; also a key of --eval-rouge-args "
                  "and of the hub's generate"},
    )
    lines_per_document: int = field(
        default=1,
        metadata={"help": "consecutive source lines that make one document (ACLSum's aspects: 3); line "
                  "N*d+k is turn k of document d; read by --no-repeat-document-bigrams"},
    )
    no_repeat_document_bigrams: bool = field(
        default=False,
        metadata={"help": "with --lines-per-document N > 1: fairseq-generate decodes each document's lines "
                  "in turn, each blocking the word bigrams the document's earlier lines wrote; batches hold "
                  "whole documents; see fairseq_ext.decoding.document_bigrams"},
    )
