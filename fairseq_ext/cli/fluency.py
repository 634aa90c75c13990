"""``python -m fairseq_ext.cli.fluency``: the command of :mod:`fairseq_ext.scoring.fluency`."""

import argparse

from ..scoring.fluency import fluency_of_file, table

DESCRIPTION = "Fluency beside ROUGE: how often summaries stutter and repeat themselves, on whole words."


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=DESCRIPTION)
    parser.add_argument("systems", nargs="+", metavar="NAME=FILE", help="summaries, one a line, per system")
    args = parser.parse_args(argv)
    systems = []
    for item in args.systems:
        name, sep, path = item.partition("=")
        if not sep or not path:
            parser.error(f"{item!r}: expected NAME=FILE")
        try:
            systems.append((name, fluency_of_file(path)))
        except (ValueError, OSError) as error:
            parser.exit(1, f"fluency: error: {error}\n")
    print(table(systems))


if __name__ == "__main__":
    main()
