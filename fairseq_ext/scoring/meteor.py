"""METEOR through nltk, only where the WordNet data it needs are installed (never downloaded;
otherwise :func:`meteor_unavailable_reason` says so). The figure is the mean sentence METEOR of
nltk, not the METEOR 1.5 behind published question-generation figures.
"""

from sacrebleu.tokenizers.tokenizer_13a import Tokenizer13a

METEOR_NAME = "nltk METEOR (exact + Porter stem + WordNet synonyms; not METEOR 1.5)"


def meteor_unavailable_reason() -> str | None:
    """``None`` when nltk can load WordNet, else why METEOR cannot be computed."""
    try:
        import nltk
        from nltk.corpus import wordnet
    except ImportError:
        return "nltk is not installed"
    try:
        wordnet.ensure_loaded()
    except LookupError:
        return ("nltk's METEOR needs the WordNet corpus, which is not installed here (searched "
                f"{', '.join(nltk.data.path)}); nothing is downloaded. With nltk_data/corpora/wordnet "
                "in one of those places it is computed")
    return None


def corpus_meteor(hyps: list[str], refs: list[str], wordnet=None) -> float:
    """Mean sentence METEOR x 100 (13a-tokenized, lower-cased); ``wordnet`` defaults to
    nltk's corpus reader (raise ``LookupError`` if it is not installed)."""
    from nltk.translate.meteor_score import single_meteor_score

    if wordnet is None:
        from nltk.corpus import wordnet
    if len(hyps) != len(refs):
        raise ValueError(f"{len(hyps)} hypotheses but {len(refs)} references")
    tokenize = Tokenizer13a()
    scores = [single_meteor_score(tokenize(ref.lower()).split(), tokenize(hyp.lower()).split(), wordnet=wordnet)
              for hyp, ref in zip(hyps, refs)]  # fmt: skip
    return 100.0 * sum(scores) / max(len(scores), 1)
