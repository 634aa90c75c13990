"""Run ``fairseq-preprocess`` in-process (through its own argument parser) on encoded text."""

from pathlib import Path

PAIR_LANGS = ("source", "target")


def binarize(
    text_dir: Path,
    bin_dir: Path,
    dictionary: Path,
    splits: list[str],
    pairs: bool,
    workers: int = 1,
) -> list[str]:
    """Binarize ``text_dir/{split}.{source,target}`` (``pairs``) or ``text_dir/{split}.txt``
    into ``bin_dir`` with the fixed ``dictionary``; returns the fairseq argv it used.

    Pairs get ``--joined-dictionary`` (``dict.source.txt == dict.target.txt``), plain text
    ``--only-source`` (``dict.txt``, ``{split}.bin/.idx``).
    """
    from fairseq import options
    from fairseq_cli import preprocess

    argv = ["--destdir", str(bin_dir), "--srcdict", str(dictionary), "--workers", str(workers)]
    if pairs:
        argv += ["--source-lang", PAIR_LANGS[0], "--target-lang", PAIR_LANGS[1]]
        argv += ["--joined-dictionary"]
    else:
        argv += ["--only-source"]
    for split in splits:
        prefix = Path(text_dir) / (split if pairs else f"{split}.txt")
        argv += [f"--{split}pref", str(prefix)]
    args = options.get_preprocessing_parser().parse_args(argv)
    handlers = list(preprocess.logger.handlers)
    try:
        preprocess.main(args)
    finally:  # fairseq adds a log-file handler on every call; close it
        for handler in set(preprocess.logger.handlers) - set(handlers):
            preprocess.logger.removeHandler(handler)
            handler.close()
    return argv
