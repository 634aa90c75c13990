"""ROUGE-1.5.5's tokenizer and Porter stemmer, in Python.

Tokens are the maximal runs of ASCII letters and digits, lower-cased (``readText``,
``createNGram`` of ``ROUGE-1.5.5.pl``). With ``-m`` tokens longer than three characters are
stemmed by :func:`porter_stem`, a line-by-line port of the script's ``stem`` (Lin's 2004 change
to step 4; NLTK's stemmer differs on about 2% of the ACLSum vocabulary); the WordNet exception
lists are not applied, so irregular forms may differ from the Perl backend.
"""

import re
from functools import lru_cache

from rouge_score.tokenizers import Tokenizer

MIN_STEM_LENGTH = 4  # ROUGE-1.5.5 stems only tokens longer than three characters

_TOKEN = re.compile(r"[a-z0-9]+")
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")

# The Porter stemmer's measure patterns, named as in the Perl release.
_CONS_SEQ = "[^aeiou][^aeiouy]*"  # $C: consonant sequence
_VOWEL_SEQ = "[aeiouy][aeiou]*"  # $V: vowel sequence
_MGR0 = re.compile(f"^({_CONS_SEQ})?{_VOWEL_SEQ}{_CONS_SEQ}")  # [C]VC... is m>0
_MEQ1 = re.compile(f"^({_CONS_SEQ})?{_VOWEL_SEQ}{_CONS_SEQ}({_VOWEL_SEQ})?$")  # [C]VC[V] is m=1
_MGR1 = re.compile(f"^({_CONS_SEQ})?{_VOWEL_SEQ}{_CONS_SEQ}{_VOWEL_SEQ}{_CONS_SEQ}")  # m>1
_VOWEL_IN_STEM = re.compile(f"^({_CONS_SEQ})?[aeiouy]")
_SHORT_CVC = re.compile(f"^{_CONS_SEQ}[aeiouy][^aeiouwxy]$")

_STEP2 = {
    "ational": "ate", "tional": "tion", "enci": "ence", "anci": "ance", "izer": "ize",
    "bli": "ble", "alli": "al", "entli": "ent", "eli": "e", "ousli": "ous", "ization": "ize",
    "ation": "ate", "ator": "ate", "alism": "al", "iveness": "ive", "fulness": "ful",
    "ousness": "ous", "aliti": "al", "iviti": "ive", "biliti": "ble", "logi": "log",
}
_STEP3 = {
    "icate": "ic", "ative": "", "alize": "al", "iciti": "ic", "ical": "ic", "ful": "", "ness": "",
}
# The alternations keep the Perl order: the leftmost match wins, then the first alternative.
_STEP2_SUFFIX = re.compile(
    "(ational|tional|enci|anci|izer|bli|alli|entli|eli|ousli|ization|ation|ator|alism|iveness"
    "|fulness|ousness|aliti|iviti|biliti|logi)$"
)
_STEP3_SUFFIX = re.compile("(icate|ative|alize|iciti|ical|ful|ness)$")
_STEP4_SUFFIX = re.compile("(al|ance|ence|er|ic|able|ible|ant|ement|ou|ism|ate|iti|ous|ive|ize)$")


@lru_cache(maxsize=1 << 16)
def porter_stem(word: str) -> str:
    """ROUGE-1.5.5's Porter stemmer (the Perl ``stem`` sub) applied to a lowercase token.

    >>> [porter_stem(w) for w in ("running", "agreement", "generalization", "analogy")]
    ['run', 'agreem', 'gener', 'analog']
    """
    if len(word) < 3:
        return word
    initial_y = word[0] == "y"
    if initial_y:  # an initial y is a consonant: hide it from the vowel patterns
        word = "Y" + word[1:]

    # Step 1a: plurals.
    if match := re.search("(ss|i)es$", word):
        word = word[: match.start()] + match.group(1)
    elif match := re.search("([^s])s$", word):
        word = word[: match.start()] + match.group(1)
    # Step 1b: -eed, -ed, -ing.
    if match := re.search("eed$", word):
        if _MGR0.search(word[: match.start()]):
            word = word[:-1]
    elif match := re.search("(ed|ing)$", word):
        stem = word[: match.start()]
        if _VOWEL_IN_STEM.search(stem):
            word = stem
            if re.search("(at|bl|iz)$", word):
                word += "e"
            elif re.search(r"([^aeiouylsz])\1$", word):
                word = word[:-1]
            elif _SHORT_CVC.search(word):
                word += "e"
    # Step 1c: y -> i after a vowel.
    if match := re.search("y$", word):
        stem = word[: match.start()]
        if _VOWEL_IN_STEM.search(stem):
            word = stem + "i"
    # Step 2: double suffixes.
    if match := _STEP2_SUFFIX.search(word):
        stem = word[: match.start()]
        if _MGR0.search(stem):
            word = stem + _STEP2[match.group(1)]
    # Step 3: -ic-, -full, -ness.
    if match := _STEP3_SUFFIX.search(word):
        stem = word[: match.start()]
        if _MGR0.search(stem):
            word = stem + _STEP3[match.group(1)]
    # Step 4: suffixes dropped when m>1 (Lin's 2004 change: -ement does not hide -ment, -ent).
    if match := _STEP4_SUFFIX.search(word):
        stem = word[: match.start()]
        if _MGR1.search(stem):
            word = stem
    if match := re.search("ment$", word):
        stem = word[: match.start()]
        if _MGR1.search(stem):
            word = stem
    if match := re.search("ent$", word):
        stem = word[: match.start()]
        if _MGR1.search(stem):
            word = stem
    elif match := re.search("(s|t)(ion)$", word):
        stem = word[: match.start()] + match.group(1)
        if _MGR1.search(stem):
            word = stem
    # Step 5: final -e and -ll.
    if match := re.search("e$", word):
        stem = word[: match.start()]
        if _MGR1.search(stem) or (_MEQ1.search(stem) and not _SHORT_CVC.search(stem)):
            word = stem
    if re.search("ll$", word) and _MGR1.search(word):
        word = word[:-1]

    if initial_y:
        word = word[0].lower() + word[1:]
    return word


def rouge155_tokens(text: str, use_stemmer: bool = False) -> list[str]:
    """The tokens ROUGE-1.5.5 scores for ``text``, stemmed when ``use_stemmer`` (its ``-m``).

    >>> rouge155_tokens("State-of-the-art MT (BLEU) systems.", use_stemmer=True)
    ['state', 'of', 'the', 'art', 'mt', 'bleu', 'system']
    """
    tokens = _TOKEN.findall(text.translate(_ASCII_LOWER))
    if use_stemmer:
        tokens = [porter_stem(t) if len(t) >= MIN_STEM_LENGTH else t for t in tokens]
    return tokens


class Rouge155Tokenizer(Tokenizer):
    """A ``rouge_score`` tokenizer that splits and stems as ROUGE-1.5.5 does."""

    def __init__(self, use_stemmer: bool = False):
        self.use_stemmer = use_stemmer

    def tokenize(self, text):
        return rouge155_tokens(text, self.use_stemmer)
