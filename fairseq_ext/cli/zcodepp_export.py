"""``python -m fairseq_ext.cli.zcodepp_export``: the command of :mod:`fairseq_ext.zcodepp.export`."""

import argparse
import logging
import sys

from ..compat.checkpoint import CheckpointError
from ..zcodepp.export import export
from . import register_plugin

DESCRIPTION = "Export a phase-one Z-Code++ checkpoint: fold the GDES delta in, drop the generator and the RTD head."
logger = logging.getLogger(__name__)


def main(argv=None):
    parser = argparse.ArgumentParser(description=DESCRIPTION)
    parser.add_argument("source", help="phase-one checkpoint (trained with --generator-layers N)")
    parser.add_argument("destination", help="where to write the exported checkpoint")
    args = parser.parse_args(argv)
    register_plugin()
    export(args.source, args.destination)
    logger.info(f"wrote {args.destination}")


def run(argv=None):
    """:func:`main` for the command line: a refused checkpoint is one ``error:`` line, exit 1."""
    try:
        main(argv)
    except (CheckpointError, FileNotFoundError) as err:
        print(f"python -m fairseq_ext.cli.zcodepp_export: error: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(run())
