"""``python -m fairseq_ext.cli.convert FAMILY [flags]``: every converter behind one command.

Each family module gives ``add_args(parser)`` (its input flags) and ``convert(args)``, which
writes ``--out`` (:mod:`fairseq_ext.convert.write`) and returns the path of ``model.pt``.
"""

import argparse
import importlib
import logging
import sys

from ..compat.checkpoint import CheckpointError
from ..convert.validate import ConversionError
from . import register_plugin

#: family -> what it converts (the order of ``--help``)
FAMILIES = {
    "prophetnet": "Hugging Face ProphetNet -> prophetnet_summ",
    "bart_ls": "fairseq BART -> bart_ls (long positions, sentinels, pooling)",
    "s2s_ft": "Hugging Face BERT / RoBERTa -> s2s_ft",
    "transformer_sm": "Hugging Face GPT / GPT-2 -> transformer_sm",
    "zcodepp": "Hugging Face DeBERTa-v2/v3 -> the zcodepp encoder",
}
#: what a user can fix: printed as one line instead of a traceback
USER_ERRORS = (ConversionError, CheckpointError, FileNotFoundError, NotADirectoryError)


def get_parser():
    parser = argparse.ArgumentParser(
        prog="python -m fairseq_ext.cli.convert",
        description="Convert released weights (local files only) to a fairseq checkpoint of the plugin: "
                    "OUT/model.pt, OUT/args.txt (the model flags), OUT/dict*.txt (the dictionary).",
    )  # fmt: skip
    families = parser.add_subparsers(dest="family", required=True, metavar="FAMILY")
    for name, summary in FAMILIES.items():
        module = importlib.import_module(f"fairseq_ext.convert.{name}")
        sub = families.add_parser(name, help=summary, description=module.__doc__.split("\n\n")[0])
        module.add_args(sub)
        sub.add_argument("--out", required=True, help="output directory (model.pt, args.txt, dict*.txt)")
        sub.set_defaults(convert=module.convert)
    return parser


def main(argv=None):
    """Parse ``argv`` and convert; returns the path of the written ``model.pt``."""
    args = get_parser().parse_args(argv)
    register_plugin()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s | %(levelname)s | %(name)s | %(message)s")
    try:
        return args.convert(args)
    except KeyError as err:  # a weight the configured model needs and the file lacks
        raise ConversionError(f"the weights lack {err.args[0]!r}, which the model that config.json describes "
                              "needs: the configuration does not describe these weights") from None
    except (ArithmeticError, ValueError, IndexError, TypeError, RuntimeError) as err:
        if isinstance(err, USER_ERRORS):
            raise
        source = getattr(args, "hf_dir", None) or getattr(args, "bart", None)
        raise ConversionError(f"{source}: the model its configuration describes cannot be built or filled "
                              f"({type(err).__name__}: {err})") from None


def run(argv=None):
    """:func:`main` for the command line: a refusal is one ``error:`` line and exit status 1."""
    try:
        path = main(argv)
    except USER_ERRORS as err:
        print(f"python -m fairseq_ext.cli.convert: error: {err}", file=sys.stderr)
        return 1
    print(path)
    return 0


if __name__ == "__main__":
    sys.exit(run())
