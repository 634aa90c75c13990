"""Fluency beside ROUGE: how often summaries stutter and repeat themselves, on whole words.

A *word* is a whitespace token with a letter or digit in it. Two figures, in percent:

=======================  ==============================================================
back-to-back repeats     share of summaries where a word is immediately followed by the
                         same word (case-insensitive; ``learning , learning`` does not count)
repeated bigrams         over all word bigrams of the file (punctuation dropped first), the
                         share that repeat a bigram written earlier in the same summary
=======================  ==============================================================
"""

from collections import Counter
from dataclasses import dataclass
from typing import Iterable, List, Sequence

from .rouge.files import read_lines


def words(summary: str) -> List[str]:
    """The lower-cased words of a summary, punctuation-only tokens dropped."""
    return [token.lower() for token in summary.split() if any(c.isalnum() for c in token)]


def back_to_back(summary: str) -> List[str]:
    """The words written twice in a row in a summary (one entry per repeat).

    >>> back_to_back("a statistical statistical model , model . . it it")
    ['statistical', 'it']
    """
    tokens = [token.lower() for token in summary.split()]
    return [a for a, b in zip(tokens, tokens[1:]) if a == b and any(c.isalnum() for c in a)]


def repeated_bigrams(summary: str) -> tuple:
    """``(repeats, bigrams)``: word bigrams that repeat an earlier one of the summary, and all.

    >>> repeated_bigrams("the model , the model learns the model")
    (2, 6)
    """
    ws = words(summary)
    bigrams = list(zip(ws, ws[1:]))
    return len(bigrams) - len(set(bigrams)), len(bigrams)


@dataclass
class Fluency:
    """The fluency figures of a file of summaries (percentages, and the counts behind them)."""

    summaries: int
    with_repeat: int
    bigram_repeats: int
    bigrams: int
    stutters: Counter

    @property
    def repeat_share(self) -> float:
        """Percent of summaries with a word repeated back to back."""
        return 100.0 * self.with_repeat / max(self.summaries, 1)

    @property
    def bigram_share(self) -> float:
        """Percent of word bigrams that repeat an earlier bigram of their summary."""
        return 100.0 * self.bigram_repeats / max(self.bigrams, 1)


def fluency(summaries: Iterable[str]) -> Fluency:
    """The :class:`Fluency` of summaries, one string each."""
    count = with_repeat = repeats = total = 0
    stutters = Counter()
    for summary in summaries:
        count += 1
        stuttered = back_to_back(summary)
        with_repeat += bool(stuttered)
        stutters.update(stuttered)
        r, n = repeated_bigrams(summary)
        repeats, total = repeats + r, total + n
    return Fluency(count, with_repeat, repeats, total, stutters)


def fluency_of_file(path: str) -> Fluency:
    return fluency(read_lines(path))


HEADER = ("back-to-back repeats", "repeated bigrams")


def cells(f: Fluency) -> List[str]:
    """The two table cells of :data:`HEADER`: ``41% (41/100)``, ``3.2%``."""
    return [f"{f.repeat_share:.0f}% ({f.with_repeat}/{f.summaries})", f"{f.bigram_share:.1f}%"]


def table(systems: Sequence[tuple]) -> str:
    """A Markdown table of ``(name, Fluency)`` pairs."""
    lines = ["| system | " + " | ".join(HEADER) + " | most repeated |", "|---|---|---|---|"]
    for name, f in systems:
        common = ", ".join(f"{w} ({n})" for w, n in f.stutters.most_common(3)) or "-"
        lines.append(f"| {name} | " + " | ".join(cells(f)) + f" | {common} |")
    return "\n".join(lines)
