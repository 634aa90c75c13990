"""ROUGE-1.5.5 command-line arguments (files2rouge's ``-a/--args``), parsed as the Perl script does.

``ROUGE-1.5.5.pl`` reads its options with Perl's ``Getopt::Std`` and the spec
``ahHb:c:de:f:l:mMn:p:st:r:2:3:w:uUvxz:``: single letters, bundling allowed (``-am``), a value
either glued (``-c95``) or in the next word (``-c 95``), the last occurrence winning. The Perl
backend passes every option on (``-e`` made absolute); the rouge-score backend implements the
subset in :data:`ROUGE_SCORE_OPTIONS` and refuses the rest.
"""

import shlex
from dataclasses import dataclass, field

from .scores import DEFAULT_ALPHA, DEFAULT_CONFIDENCE, DEFAULT_RESAMPLES

DEFAULT_ROUGE_ARGS = "-c 95 -r 1000 -n 2 -a"  # files2rouge's default
VALUE_OPTIONS = frozenset("bceflnprt23wz")  # the letters followed by ":" in the spec
FLAG_OPTIONS = frozenset("ahHdmMsuUvx")  # the others
FILES2ROUGE_OWNED = frozenset("z")  # files2rouge writes the file list and passes -z SEE itself
ROUGE_SCORE_OPTIONS = {
    "a": "evaluate all systems (there is one)",
    "c": "confidence level of the interval",
    "d": "print per-evaluation scores",
    "e": "ROUGE data directory (used by the Perl backend only)",
    "f": "A or B: model average or best model (the same with one reference)",
    "m": "Porter stemming",
    "n": "compute ROUGE-1 .. ROUGE-n",
    "p": "alpha, the weight of recall in F",
    "r": "number of bootstrap resamples",
    "t": "0 only: average over pairs",
    "x": "do not compute ROUGE-L",
}


@dataclass
class Rouge155Options:
    """Parsed ROUGE-1.5.5 arguments: ``argv`` as given, ``flags`` letter -> value (True for flags)."""

    argv: list[str]
    flags: dict[str, object] = field(default_factory=dict)

    @classmethod
    def parse(cls, args: str | None = None) -> "Rouge155Options":
        """Parse an argument string (``None`` or empty: files2rouge's ``-c 95 -r 1000 -n 2 -a``)."""
        argv = shlex.split(args or DEFAULT_ROUGE_ARGS)
        flags = {}
        pending = list(argv)
        while pending:
            word = pending.pop(0)
            if word == "--" or not word.startswith("-") or len(word) < 2:
                raise ValueError(f"ROUGE arguments must be options only, got {word!r} "
                                 "(files2rouge writes the configuration file itself)")
            letters = word[1:]
            while letters:
                letter, letters = letters[0], letters[1:]
                if letter in FILES2ROUGE_OWNED:
                    raise ValueError(f"ROUGE option -{letter} is set by files2rouge itself")
                if letter in VALUE_OPTIONS:
                    if not letters and not pending:
                        raise ValueError(f"ROUGE option -{letter} needs a value")
                    flags[letter] = letters or pending.pop(0)
                    letters = ""
                elif letter in FLAG_OPTIONS:
                    flags[letter] = True
                else:
                    raise ValueError(f"unknown ROUGE-1.5.5 option -{letter}")
        options = cls(argv, flags)
        options.validate()
        return options

    def validate(self) -> None:
        """Refuse what ROUGE-1.5.5 would die on, with its reasons."""
        if not 0 <= self.confidence <= 100:
            raise ValueError("ROUGE -c: the confidence level must be within 0 and 100")
        if not 0 <= self.alpha <= 1:
            raise ValueError("ROUGE -p: alpha must be between 0 and 1")
        if self.resamples < 1:
            raise ValueError("ROUGE -r: at least one bootstrap resample is needed")
        if "l" in self.flags and "b" in self.flags:
            raise ValueError("ROUGE: give a length limit in words (-l) or bytes (-b), not both")
        if self.max_n is not None and self.max_n < 0:
            raise ValueError("ROUGE -n: the n-gram size must be positive")

    def _number(self, letter: str, default, kind):
        value = self.flags.get(letter, default)
        try:
            return kind(value)
        except ValueError:
            raise ValueError(f"ROUGE -{letter}: {value!r} is not a valid number") from None

    @property
    def max_n(self) -> int | None:
        """``-n``: ROUGE-1..n; ``None`` when absent (ROUGE-1.5.5 then computes no ROUGE-N)."""
        return self._number("n", None, int) if "n" in self.flags else None

    @property
    def stemming(self) -> bool:
        return "m" in self.flags

    @property
    def rouge_l(self) -> bool:
        return "x" not in self.flags and "3" not in self.flags

    @property
    def per_eval(self) -> bool:
        return "d" in self.flags

    @property
    def confidence_label(self) -> str:
        """``-c`` as typed: ROUGE-1.5.5 prints it verbatim in ``95%-conf.int.``."""
        return str(self.flags.get("c", f"{DEFAULT_CONFIDENCE:g}"))

    @property
    def confidence(self) -> float:
        return self._number("c", DEFAULT_CONFIDENCE, float)

    @property
    def resamples(self) -> int:
        return self._number("r", DEFAULT_RESAMPLES, int)

    @property
    def alpha(self) -> float:
        return self._number("p", DEFAULT_ALPHA, float)

    def unsupported_by_rouge_score(self) -> list[str]:
        """Options the rouge-score backend cannot honour (``-t`` other than 0 included)."""
        letters = [f"-{letter}" for letter in self.flags if letter not in ROUGE_SCORE_OPTIONS]
        if "t" in self.flags and self._number("t", 0, float) in (1, 2):  # token-level counts
            letters.append(f"-t {self.flags['t']}")
        return letters
