"""``python -m fairseq_ext.cli.squad_sample``: the command of :mod:`fairseq_ext.data.squad_sample`."""

import argparse
from pathlib import Path

from ..data.squad_sample import write_sample

DESCRIPTION = "A small SQuAD v1.1-format sample, written for this project, for demos and tests."


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=DESCRIPTION)
    parser.add_argument("out", type=Path, help="directory for train.json, dev.json, doclist-test.txt")
    for name, path in write_sample(parser.parse_args(argv).out).items():
        print(f"{name}: {path}")


if __name__ == "__main__":
    main()
