"""Summaries in their source's casing and spacing, from text decoded out of uncased WordPieces.

BERT's uncased tokenizer lower-cases, strips accents and splits punctuation off words, so
decoding its pieces gives ``phrase - based statistical mt ( pbsmt )``; the words were mostly
copied from the source, which says how they are written::

    source       ... a phrase-based statistical MT (PBSMT) engine ...
    hypothesis   phrase - based statistical mt ( pbsmt ) outperforms it .
    restored     Phrase-based statistical MT (PBSMT) outperforms it.

1. The source is tokenized as the WordPiece tokenizer does before it splits words into pieces
   (:func:`source_tokens`), each token keeping the characters it came from and whether it is
   written against the token before it (``phrase|-|based``, ``3|.|5``, ``e|.|g|.``).
2. The hypothesis's tokens are matched greedily against the source, the longest source span
   first. A span takes its most frequent form among its occurrences: each token as written there,
   except at the start of a sentence (there the casing is the grammar's, not the word's: the
   token takes its most frequent casing elsewhere), and the joints the source writes without a
   space.
3. Other joints follow English spacing: punctuation against the word before it (``word,``),
   brackets against what they enclose, a hyphen or a slash between two words and a point between
   two numbers without spaces (when the source did not space them), clitics (``'s``, ``n't``).
   A sentence's first word takes a capital; words the source lacks are otherwise as generated.

Only case, accents and spaces change: :func:`normalize` of the restored text, whitespace
removed, is that of the hypothesis (ROUGE, which lower-cases and keeps runs of ASCII letters and
digits, sees the same words unless an accent comes back).
"""

import logging
import os
import re
import unicodedata
from collections import Counter, defaultdict
from dataclasses import dataclass
from functools import lru_cache

logger = logging.getLogger(__name__)

#: Tokens written against the word before them.
ATTACH_LEFT = frozenset(",.;:!?%)]}")
#: Tokens the next word is written against.
ATTACH_RIGHT = frozenset("([{")
#: Between two words, written without spaces unless the source spaces them (``phrase-based``).
JOINERS = frozenset("-/")
#: English clitics after an apostrophe (``model's``, ``n't``, ``we'll``).
CLITICS = frozenset({"s", "t", "d", "m", "ll", "re", "ve"})
#: Tokens that end a sentence in a summary.
SENTENCE_ENDS = frozenset(".!?")
#: Tokens after which the source's casing is no evidence of a word's own (a colon included:
#: the demo's ``challenge: Handling terminology ...`` prefixes, headings).
SOURCE_SENTENCE_ENDS = SENTENCE_ENDS | {":"}
#: BERT's CJK ideograph blocks: each such character is a token of its own.
CJK_RANGES = ((0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0x20000, 0x2A6DF), (0x2A700, 0x2B73F),
              (0x2B740, 0x2B81F), (0x2B820, 0x2CEAF), (0xF900, 0xFAFF), (0x2F800, 0x2FA1F))
MATCHED_OCCURRENCES = 1000
"""Source occurrences of a token where a match may start (the first ones): bounds the work on
repetitive text to this many steps a hypothesis token."""
CACHED_SOURCES = 32
"""Sources whose analysis is kept (fairseq-generate decodes a document's source, reference and
hypotheses in turn; the demo summarizes each paper three times)."""
CACHED_CHARACTERS = 1 << 16
"""Characters whose normalization is kept (a text uses few; the cache stays small on any text)."""


@lru_cache(maxsize=CACHED_CHARACTERS)
def _normalized(char: str) -> str:
    """One character as BERT's uncased normalizer writes it: removed (NUL, U+FFFD, control and
    format characters), accents stripped (NFD without non-spacing marks), lower-cased."""
    category = unicodedata.category(char)
    if char in "\x00\ufffd" or (category.startswith("C") and char not in "\t\n\r"):
        return ""
    decomposed = unicodedata.normalize("NFD", char)
    return "".join(c for c in decomposed if unicodedata.category(c) != "Mn").lower()


def normalize(text: str) -> str:
    """``text`` as BERT's uncased tokenizer normalizes it, character by character (whitespace
    kept): the form restoration never changes."""
    return "".join(_normalized(c) for c in text)


@lru_cache(maxsize=CACHED_CHARACTERS)
def _splits(char: str) -> bool:
    """The pre-tokenizer makes ``char`` a token of its own: punctuation (ASCII's or Unicode's
    P* categories) or a CJK ideograph."""
    code = ord(char)
    if 33 <= code <= 47 or 58 <= code <= 64 or 91 <= code <= 96 or 123 <= code <= 126:
        return True
    return unicodedata.category(char).startswith("P") or any(low <= code <= high for low, high in CJK_RANGES)


@dataclass(slots=True)
class SourceToken:
    """A token of the source as the WordPiece tokenizer sees it, and where it came from."""

    norm: str  # normalized: what a hypothesis writes
    start: int  # text[start:end] is the surface (characters the normalizer removes included)
    end: int
    glued: bool  # written against the token before it (no whitespace between them)


_CHUNK = re.compile(r"\S+")
_ASCII_TOKEN = re.compile(r"[A-Za-z0-9]+|[!-/:-@\[-`{-~]")  # a word, or an ASCII punctuation mark


def source_tokens(text: str) -> list:
    """The :class:`SourceToken` s of ``text``: split at whitespace, punctuation and CJK
    characters of the normalized text, as BERT's basic tokenizer splits."""
    tokens = []
    for chunk in _CHUNK.finditer(text):
        word, offset = chunk.group(), chunk.start()
        if word.isascii() and word.isprintable():  # the common case, at regular-expression speed
            tokens.extend(SourceToken(m.group().lower(), offset + m.start(), offset + m.end(), m.start() > 0)
                          for m in _ASCII_TOKEN.finditer(word))
        else:
            _chunk_tokens(word, offset, tokens)
    return tokens


def _chunk_tokens(word, offset, tokens):
    """Append the tokens of ``word`` (no whitespace in it), which starts at ``offset``."""
    in_word, first = False, True
    for k, char in enumerate(word):
        i = offset + k
        normalized = _normalized(char)
        if not normalized:  # removed by the normalizer: part of the token it follows
            if not first:
                tokens[-1].end = i + 1
            continue
        for c in normalized:  # one character may normalize to several ("İ" -> "i")
            if c.isspace():
                in_word = False
                first = True
            elif _splits(c):
                tokens.append(SourceToken(c, i, i + 1, glued=not first))
                in_word, first = False, False
            elif in_word:
                tokens[-1].norm += c
                tokens[-1].end = i + 1
            else:
                tokens.append(SourceToken(c, i, i + 1, glued=not first))
                in_word, first = True, False


def _has_alnum(word: str) -> bool:
    return any(c.isalnum() for c in word)


def _recased(word: str, new: str) -> str:
    """``new`` when it only changes the case of ``word`` (``"ß".upper()`` is ``"SS"``: refused)."""
    return new if normalize(new) == normalize(word) else word


def _capitalized(word: str) -> str:
    """``word`` with a capital first letter, when it is written without one."""
    if not word[:1].isalpha() or word != word.lower():
        return word
    return _recased(word, word[0].upper() + word[1:])


def _uncapitalized(word: str) -> str:
    """``Handling`` -> ``handling`` (a capital at a sentence start); ``MT``, ``PBSMT``, ``iPhone``
    are kept."""
    if not word[:1].isupper() or any(c.isupper() for c in word[1:]):
        return word
    return _recased(word, word[0].lower() + word[1:])


def _sentence_starts(words, ends, joined_next, abbreviations=frozenset()):
    """``starts[k]``: word ``k`` is the first word with a letter or digit after a sentence end
    (or in the text). A point written against the next token (``e.g``, ``3.5``) or after an
    abbreviation (``al.``) ends no sentence."""
    starts, expecting = [], True
    for k, word in enumerate(words):
        alnum = _has_alnum(word)
        starts.append(expecting and alnum)
        if alnum:
            expecting = False
        if word in ends and not joined_next[k] and not (word == "." and k and words[k - 1] in abbreviations):
            expecting = True
    return starts


def _joints(words, glue):
    """``joined[k]``: word ``k`` is written against word ``k - 1``. ``glue[k]`` is the source's
    say (True: written together there; False: spaced; None: nothing to say)."""
    joined = [False] * len(words)
    quotes = 0  # double quotes so far: an even count opens the next one
    opening = [False] * len(words)
    for k, word in enumerate(words):
        if word == '"':
            opening[k] = quotes % 2 == 0
            quotes += 1
    for k in range(1, len(words)):
        before = words[k - 2] if k >= 2 else ""
        a, b = words[k - 1], words[k]
        after = words[k + 1] if k + 1 < len(words) else ""
        after2 = words[k + 2] if k + 2 < len(words) else ""
        if glue[k]:
            joined[k] = True
        elif b in ATTACH_LEFT or a in ATTACH_RIGHT:
            joined[k] = True
        elif (b == "'" and after in CLITICS) or (a == "'" and b in CLITICS and _has_alnum(before)):
            joined[k] = True  # model 's, n't
        elif b == "'" and a.endswith("s") and _has_alnum(after):
            joined[k] = True  # users ' ideology
        elif b == "n" and after == "'" and after2 == "t":
            joined[k] = True  # do n't
        elif (b == '"' and not opening[k]) or (a == '"' and opening[k - 1]):
            joined[k] = True
        elif glue[k] is None:  # the source has nothing to say: a word-word hyphen or slash, a decimal point
            joined[k] = (a in JOINERS and _has_alnum(before) and _has_alnum(b)) \
                or (b in JOINERS and _has_alnum(a) and _has_alnum(after)) \
                or (a == "." and before.isdigit() and b.isdigit())
    return joined


def _most_frequent(counts):
    """The most frequent of ``counts``' forms; on a tie the lower-cased one if it is there, else
    the first seen (equal evidence leaves a word as generated)."""
    top = max(counts.values())
    tied = [form for form, n in counts.items() if n == top]
    return next((form for form in tied if "".join(form) == "".join(form).lower()), tied[0])


class SurfaceForms:
    """What a source says about how its tokens are written; :meth:`restore` applies it."""

    def __init__(self, source: str):
        self.source = source
        self.tokens = source_tokens(source)
        norms = [t.norm for t in self.tokens]
        self.positions = defaultdict(list)  # norm -> indices of its tokens
        for i, norm in enumerate(norms):
            self.positions[norm].append(i)
        glued_next = [i + 1 < len(norms) and self.tokens[i + 1].glued for i in range(len(norms))]
        self.starts = _sentence_starts(norms, SOURCE_SENTENCE_ENDS, glued_next)
        self.words = self._words()
        casings = defaultdict(Counter)  # a word's norms -> its surfaces where the casing is its own
        for first, last in dict.fromkeys(self.words):
            if not self.starts[first]:
                casings[self._key(first, last)][self._surfaces(first, last)] += 1
        self.usual = {key: _most_frequent(counts) for key, counts in casings.items()}
        self.abbreviations = self._abbreviations()

    def surface(self, i: int) -> str:
        return self.source[self.tokens[i].start:self.tokens[i].end]

    def _abbreviations(self):
        """Words whose point is mostly followed by a lower-case word (``et al. (2007) show``,
        ``e.g. syntactic``): that point ends no sentence. A capital after the point counts
        against only on a word usually written without one (``e.g. SST`` says nothing)."""
        votes = Counter()
        for i, token in enumerate(self.tokens):
            if token.norm != "." or i == 0 or not self.tokens[i - 1].norm.isalpha():
                continue
            for j in range(i + 1, len(self.tokens)):
                if self.tokens[j].norm in SENTENCE_ENDS:
                    break
                first = self.surface(j)[:1]
                if first.isalpha():
                    if first.islower():
                        votes[self.tokens[i - 1].norm] += 1
                    elif self._usually_lower(j):
                        votes[self.tokens[i - 1].norm] -= 1
                    break
        return frozenset(word for word, vote in votes.items() if vote > 0)

    def _usually_lower(self, i):
        usual = self.usual.get(self._key(*self.words[i]))
        return usual is not None and not any(c.isupper() for c in "".join(usual))

    def _words(self):
        """``words[i]``: ``(first, last)`` token indices of the word token ``i`` belongs to, a
        word being tokens written together, punctuation on its ends left out (``(PBSMT).``
        holds the word ``PBSMT``; ``phrase-based`` and ``3.5`` are one word)."""
        words = [(i, i) for i in range(len(self.tokens))]
        i = 0
        while i < len(self.tokens):
            j = i
            while j + 1 < len(self.tokens) and self.tokens[j + 1].glued:
                j += 1
            while i < j and not _has_alnum(self.tokens[i].norm):
                i += 1
            last = j
            while last > i and not _has_alnum(self.tokens[last].norm):
                last -= 1
            for k in range(i, last + 1):
                words[k] = (i, last)
            i = j + 1
        return words

    def _key(self, first, last):
        return tuple(t.norm for t in self.tokens[first:last + 1])

    def _surfaces(self, first, last):
        return tuple(self.surface(k) for k in range(first, last + 1))

    def cased(self, i: int) -> str:
        """Token ``i`` in its word's most frequent casing where the casing is the word's own
        (not at a sentence start); a word seen only at sentence starts loses a capital that is
        only the sentence's."""
        first, last = self.words[i]
        usual = self.usual.get(self._key(first, last))
        if usual is not None:
            return usual[i - first]
        surface = self.surface(i)
        return _uncapitalized(surface) if i == first else surface
    def longest_match(self, words, p):
        """``(length, starts)``: the longest run of source tokens equal to ``words[p:]``'s
        beginning, and every source index where it occurs."""
        best, starts = 0, []
        for i in self.positions.get(words[p], ())[:MATCHED_OCCURRENCES]:
            n = 1
            while p + n < len(words) and i + n < len(self.tokens) and self.tokens[i + n].norm == words[p + n]:
                n += 1
            if n > best:
                best, starts = n, [i]
            elif n == best:
                starts.append(i)
        return best, starts

    def restore(self, hypothesis: str) -> str:
        """``hypothesis`` (normalized tokens separated by spaces) in the source's forms."""
        words = hypothesis.split()
        forms, glue = [], []
        p = 0
        while p < len(words):
            length, starts = self.longest_match(words, p)
            if not length:  # not in the source: as generated
                forms.append(words[p])
                glue.append(None)
                p += 1
                continue
            occurrences = Counter(
                (tuple(self.cased(i + k) for k in range(length)),
                 tuple(self.tokens[i + k].glued for k in range(1, length)))
                for i in starts
            )
            (span, joints), _ = occurrences.most_common(1)[0]  # ties: the first in the source
            forms.extend(span)
            glue.extend((None, *joints))
            p += length
        joined = _joints(words, glue)
        joined_next = joined[1:] + [False]
        starts = _sentence_starts(words, SENTENCE_ENDS, joined_next, self.abbreviations)
        pieces = []
        for k, form in enumerate(forms):
            if k and not joined[k]:
                pieces.append(" ")
            pieces.append(_capitalized(form) if starts[k] else form)
        return "".join(pieces)


@lru_cache(maxsize=CACHED_SOURCES)
def surface_forms(source: str) -> SurfaceForms:
    """The :class:`SurfaceForms` of ``source`` (cached: a source serves several hypotheses)."""
    return SurfaceForms(source)


def restore_surface(hypothesis: str, source: str) -> str:
    """``hypothesis``, text decoded from uncased WordPieces, in ``source``'s casing and spacing
    (the module's docstring says how)."""
    return surface_forms(source).restore(hypothesis)


class SurfaceCodec:
    """A text codec (fairseq BPE's ``encode``/``decode``) whose ``decode`` restores the surface
    against the documents being summarized.

    Which documents: fairseq-interactive encodes a buffer of input lines, then decodes their
    hypotheses: those lines (one with its default ``--buffer-size 1``). fairseq-generate reads
    binarized sources: the task hands each batch's raw documents to :meth:`expect`, keyed by
    the source as fairseq-generate prints it (its ``S-`` line, decoded just before that
    document's target and hypotheses), which narrows them to that one document.
    """

    def __init__(self, codec):
        self.codec = codec
        self.documents = []  # what the next hypotheses are restored against
        self.batch = {}  # source pieces -> raw document, for fairseq-generate's current batch
        self._decoding = False  # the last call was a decode: the next encode starts a new buffer

    def expect(self, documents: dict):
        """The documents of the next batch, keyed by their (dictionary-string) source pieces."""
        self.batch = dict(documents)
        self.documents = list(dict.fromkeys(self.batch.values()))

    def encode(self, text: str) -> str:
        if self._decoding:
            self.documents, self._decoding = [], False
        self.documents.append(text)
        return self.codec.encode(text)

    def decode(self, pieces: str) -> str:
        if pieces in self.batch:
            self.documents = [self.batch[pieces]]
        self._decoding = True
        return restore_surface(self.codec.decode(pieces), "\n".join(self.documents))


def raw_documents(data_dir, split, suffix, count):
    """The raw documents of a binarized ``split``: ``raw/{split}.{suffix}`` beside ``data_dir``
    (the layout of ``prepare`` and ``prepare_wordpiece``), one a line; None (logged) when there
    is no such file or its line count is not ``count``, the split's."""
    path = os.path.join(os.path.dirname(os.path.abspath(data_dir)), "raw", f"{split}.{suffix}")
    if not os.path.isfile(path):
        logger.info(f"no {path}: summaries restored without their sources (spacing and sentence capitals only)")
        return None
    with open(path, encoding="utf-8", errors="replace", newline="\n") as f:
        documents = f.read().split("\n")
    if documents and documents[-1] == "":
        documents.pop()
    if len(documents) != count:
        logger.warning(f"{path} has {len(documents)} lines for {count} sources: summaries restored without "
                       "their sources (spacing and sentence capitals only)")
        return None
    return documents
