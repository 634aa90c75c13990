"""``python -m fairseq_ext.cli.zcodepp_export``: the command of :mod:`fairseq_ext.zcodepp.export`."""

import argparse
import logging

from ..zcodepp.export import export

DESCRIPTION = "Export a phase-one Z-Code++ checkpoint: fold the GDES delta in, drop the generator and the RTD head."
logger = logging.getLogger(__name__)


def main(argv=None):
    parser = argparse.ArgumentParser(description=DESCRIPTION)
    parser.add_argument("source", help="phase-one checkpoint (trained with --generator-layers N)")
    parser.add_argument("destination", help="where to write the exported checkpoint")
    args = parser.parse_args(argv)
    export(args.source, args.destination)
    logger.info(f"wrote {args.destination}")


if __name__ == "__main__":
    main()
