"""Decoding: what beam search may write, and the generator that applies it.

==================  ==========================================================================
:mod:`.words`       which symbols start a word, words of a sequence, a trie of allowed words
:mod:`.rules`       the rule protocol (``start`` / ``reorder`` / ``apply``) and the word rules
                    (``--no-repeat-word``, ``--end-at-sentence``)
:mod:`.word_constraint`  the rule that writes only words of the source (``--decode-words``)
:mod:`.document_bigrams`  a document's lines decoded in turn, no word bigram twice across them
:mod:`.ensemble`    the one ensemble that runs rules (and skips within-sentence encoder reorders)
:mod:`.config`      the decoding flags, a dataclass the summarization task's config inherits
:mod:`.generator`   :func:`plugin_generator`: fairseq's generator made the plugin's
:mod:`.mbr`         choosing among the n best after the search: minimum Bayes risk, repeated phrases
==================  ==========================================================================
"""

from .config import DecodingConfig
from .generator import plugin_generator

__all__ = ["DecodingConfig", "plugin_generator"]
