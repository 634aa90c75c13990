"""``python -m fairseq_ext.cli.checkpoint_args [--defaulted NAMES] [--current NAME=VALUE]... -- INIT PAIR...``:
the model flags a recipe takes from ``args.txt`` beside ``INIT`` (what a converter writes beside
``OUT/model.pt``, or a pre-training recipe beside its checkpoints), as bash for ``eval``
(``scripts/lib.sh``'s ``args_from_checkpoint``).

A PAIR ties a recipe variable to a flag of ``args.txt``:

==============  =============================================================================
``NAME=FLAG``    must agree: a NAME the user set to another value is an error naming both
``NAME:=FLAG``   is the checkpoint's (``--arch``, whose sizes ``args.txt`` lists); a value the
                 user set is replaced, with a note
``NAME<=FLAG``   may be smaller (positions): a default above it is lowered to it, a value set
                 above it is an error
==============  =============================================================================

A NAME listed in ``--defaulted`` holds the recipe's default, not the user's choice. Prints
``CHECKPOINT_ARGS=(...)`` (``args.txt``'s words, to pass before the recipe's own flags) and the
NAMEs to set, each value shell-quoted; notes go to stderr; a disagreement exits with status 2.
Without ``args.txt`` it prints ``CHECKPOINT_ARGS=()`` and changes nothing.
"""

import argparse
import os
import re
import shlex
import sys

PAIR = re.compile(r"^(?P<name>[A-Za-z_][A-Za-z0-9_]*)(?P<mode><=|:=|=)(?P<flag>-[-A-Za-z0-9]+)$")
MODES = {"=": "equal", ":=": "taken", "<=": "at-most"}


class Disagreement(ValueError):
    """A value the user set that the checkpoint's flags do not allow."""


def parse_pair(text):
    """``(name, mode, flag)`` of ``NAME=FLAG``, ``NAME:=FLAG`` or ``NAME<=FLAG``."""
    match = PAIR.match(text)
    if match is None:
        raise ValueError(f"{text!r} is not NAME=FLAG, NAME:=FLAG or NAME<=FLAG")
    return match["name"], MODES[match["mode"]], match["flag"]


def flag_value(words, flag):
    """The value after the last ``flag`` in ``words`` (None when absent or last)."""
    value = None
    for i, word in enumerate(words):
        if word == flag and i + 1 < len(words):
            value = words[i + 1]
    return value


def resolve(words, pairs, current, defaulted, source="args.txt"):
    """``(assignments, notes)``: the NAMEs to set from the checkpoint's flag ``words``, and the
    notes to print; ``current`` maps NAME to its value ("" when unset), ``defaulted`` holds the
    NAMEs whose value is the recipe's default. Raises :class:`Disagreement` naming both values."""
    assignments, notes = {}, []
    for name, mode, flag in pairs:
        value, mine = flag_value(words, flag), current.get(name, "")
        if not value or mine == value:
            continue
        if mode == "taken":
            if mine and name not in defaulted:
                notes.append(f"note: {name}={mine} replaced by the checkpoint's {flag} {value} ({source}; its sizes "
                             "are the checkpoint's)")
            assignments[name] = value
        elif not mine or (name in defaulted and (mode == "equal" or _larger(mine, value, name))):
            assignments[name] = value
        elif mode == "equal" or _larger(mine, value, name):
            smaller = " or less" if mode == "at-most" else ""
            raise Disagreement(f"{name}={mine} ({flag}) does not agree with the checkpoint: {source} has {flag} "
                               f"{value}. Every stage must use the checkpoint's {flag}{smaller}; unset {name} to take "
                               f"it from {source}")
    return assignments, notes


def _larger(mine, value, name):
    try:
        return int(mine) > int(value)
    except ValueError:
        raise Disagreement(f"{name}={mine}: a whole number is needed to compare with the checkpoint's "
                           f"{value}") from None


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m fairseq_ext.cli.checkpoint_args",
                                     description=__doc__.split("\n")[0])
    parser.add_argument("init", help="the checkpoint a recipe starts from (args.txt is looked for beside it)")
    parser.add_argument("pairs", nargs="*", help="NAME=FLAG, NAME:=FLAG or NAME<=FLAG")
    parser.add_argument("--defaulted", default="", help="space-separated NAMEs that hold the recipe's default")
    parser.add_argument("--current", action="append", default=[], metavar="NAME=VALUE", help="a NAME's value")
    args = parser.parse_args(argv)
    path = os.path.join(os.path.dirname(args.init or "."), "args.txt")
    if not args.init or not os.path.isfile(path):
        print("CHECKPOINT_ARGS=()")
        return 0
    with open(path, encoding="utf-8") as f:
        words = shlex.split(f.read())
    print(f"model flags from {path}: {' '.join(words)}", file=sys.stderr)
    current = dict(item.split("=", 1) for item in args.current)
    try:
        assignments, notes = resolve(words, [parse_pair(p) for p in args.pairs], current, set(args.defaulted.split()),
                                     path)
    except Disagreement as err:
        print(err, file=sys.stderr)
        return 2
    for note in notes:
        print(note, file=sys.stderr)
    print("CHECKPOINT_ARGS=(" + " ".join(shlex.quote(w) for w in words) + ")")
    for name, value in assignments.items():
        print(f"{name}={shlex.quote(value)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
