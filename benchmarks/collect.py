"""Rebuild ``benchmarks/RESULTS.md``: the summary table, then every page of ``results/``.

    python -m benchmarks.collect
"""

import argparse
from pathlib import Path

HERE = Path(__file__).resolve().parent
ORDER = (
    "prophetnet", "bart_ls", "zcodepp", "long_inputs", "s2s_ft", "transformer_sm", "distributed", "aclsum_summaries",
)


def demote(markdown):
    """Every heading one level down, so that each page becomes a section."""
    return "\n".join("#" + line if line.startswith("#") else line for line in markdown.splitlines())


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--summary", default=HERE / "summary.md", type=Path, help="the summary page")
    parser.add_argument("--out", default=HERE / "RESULTS.md", type=Path, help="where to write")
    args = parser.parse_args(argv)
    parts = [args.summary.read_text(encoding="utf-8").rstrip()]
    for family in ORDER:
        page = HERE / "results" / f"{family}.md"
        parts.append(demote(page.read_text(encoding="utf-8").rstrip()))
    args.out.write_text("\n\n".join(parts) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
