"""``python -m fairseq_ext.convert``, the command README.md names, runs :mod:`fairseq_ext.cli.convert`."""

import sys

from ..cli.convert import run

sys.exit(run())
