"""One function turns the generator fairseq builds into the plugin's: the compat fixes of
fairseq's generator (:mod:`fairseq_ext.compat.generation`), then the rules a
:class:`~.config.DecodingConfig` and the generation's args ask for, run by
:class:`~.ensemble.RuledEnsemble`."""

import logging
from typing import Callable, List, Sequence

from fairseq.sequence_generator import SequenceGenerator

from ..compat.generation import fix_decoder_beam_size, fix_ngram_blocking
from .config import RULE_FLAGS
from .document_bigrams import DocumentBigrams
from .ensemble import with_rules
from .rules import EndAtSentence, NoRepeatWord
from .word_constraint import WordConstraint, read_words_file
from .words import Word

logger = logging.getLogger(__name__)


def plugin_generator(generator, cfg, dictionary, args=None, extra_text: Callable[[], Sequence[List[Word]]] = list):
    """``generator`` (fairseq's, for ``dictionary``'s targets) with the fixes and the rules of
    ``cfg`` (a :class:`~.config.DecodingConfig`) and ``args`` (the generation's own, which win
    for :data:`~.config.RULE_FLAGS`); ``extra_text()`` gives the ``--decode-words-file`` lines,
    read only when the constraint is on."""
    generator = fix_decoder_beam_size(fix_ngram_blocking(generator))
    if cfg.decode_words != "source" and (cfg.decode_words_file or cfg.decode_words_bigram_bonus):
        logger.warning("--decode-words-file and --decode-words-bigram-bonus apply only with "
                       "--decode-words source: ignored")
    if not isinstance(generator, SequenceGenerator):
        if cfg.decode_words == "source" or any(generation_flag(cfg, args, name) for name in RULE_FLAGS):
            logger.warning(f"{type(generator).__name__} is not beam search: --decode-words, --no-repeat-word "
                           "and --end-at-sentence are ignored")
        return generator
    return with_rules(generator, decoding_rules(cfg, dictionary, args, extra_text))


def decoding_rules(cfg, dictionary, args=None, extra_text: Callable[[], Sequence[List[Word]]] = list) -> list:
    """The rules ``cfg`` and ``args`` ask for, in the order they apply (see :func:`plugin_generator`)."""
    rules = []
    if cfg.decode_words == "source":
        rules.append(WordConstraint(dictionary, extra_text(), cfg.decode_words_bigram_bonus))
    if generation_flag(cfg, args, "no_repeat_word"):
        rules.append(NoRepeatWord(dictionary))
    if generation_flag(cfg, args, "end_at_sentence"):
        rules.append(EndAtSentence(dictionary))
    if decodes_documents(cfg):
        rules.append(DocumentBigrams(dictionary))
    return rules


def decodes_documents(cfg) -> bool:
    """Whether ``cfg`` asks for documents decoded in turns (``--no-repeat-document-bigrams``);
    an error when it asks without documents of more than one line."""
    if not getattr(cfg, "no_repeat_document_bigrams", False):
        return False
    if cfg.lines_per_document < 2:
        raise ValueError(f"--no-repeat-document-bigrams needs --lines-per-document N of 2 or more "
                         f"(documents of N consecutive lines), got {cfg.lines_per_document}")
    return True


def document_rule(generator):
    """The :class:`DocumentBigrams` rule of a plugin generator (None when it has none)."""
    rules = getattr(getattr(generator, "model", None), "rules", ())
    return next((rule for rule in rules if isinstance(rule, DocumentBigrams)), None)


def generation_flag(cfg, args, name):
    """A rule flag of one generation: the generation args' own value when they have one (a key
    of ``--eval-rouge-args``, of the hub's generate), else the configuration's."""
    value = getattr(args, name, None) if args is not None else None
    if value is None:
        return getattr(cfg, name)
    if not isinstance(value, bool):
        raise ValueError(f"{name} must be true or false, got {value!r}")
    return value


def words_file_lines(path, encode, dictionary) -> List[List[Word]]:
    """The lines of ``--decode-words-file`` as lists of words (piece-id tuples; ``encode``: text
    -> piece ids of ``dictionary``), logged; none without a file."""
    if not path:
        return []
    lines = read_words_file(path, encode, dictionary)
    words = {word for line in lines for word in line}
    logger.info(f"--decode-words source: {len(words)} words of {path} allowed besides each source's")
    return lines
