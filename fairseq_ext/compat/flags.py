"""fairseq 0.12.3's command line: boolean flags that default to on, ``--bf16`` without
``--tpu``, and one-line errors for an ``--arch`` typo or a data path above ``bin/``.
"""

import argparse
import difflib
import functools
import os
import sys

from fairseq.dataclass.utils import gen_parser_from_dataclass, interpret_dc_type

from .model_file import take_trust_flags


def true_boolean_fields(dataclass_instance):
    """Names of the bool fields of a fairseq dataclass that default to True."""
    return [
        name for name in dataclass_instance._get_all_attributes()
        if interpret_dc_type(dataclass_instance._get_type(name)) is bool
        and dataclass_instance._get_default(name) is True
    ]


def add_dataclass_args(parser, dataclass_instance, delete_default=False):
    """fairseq's ``gen_parser_from_dataclass``, except that a bool field defaulting to True
    becomes the pair ``--x`` (on) / ``--no-x`` (off) instead of an inverted ``--x``.
    ``delete_default`` as in fairseq (models: the value is absent unless given, so that
    architecture functions can fill it)."""
    for name in true_boolean_fields(dataclass_instance):
        flag = "--" + name.replace("_", "-")
        default = {} if delete_default else {"default": True}
        help_text = dataclass_instance._get_help(name) or name
        try:
            parser.add_argument(flag, dest=name, action="store_true", help=f"{help_text} (on by default)", **default)
            parser.add_argument("--no-" + flag[2:], dest=name, action="store_false", help=f"turn {flag} off",
                                **default)
        except argparse.ArgumentError:
            pass  # registered elsewhere already (fairseq skips such duplicates the same way)
    gen_parser_from_dataclass(parser, dataclass_instance, delete_default=delete_default)


def unknown_arch_message(arch, registry):
    """What to say about ``--arch ARCH`` missing from ``registry`` (fairseq's
    ``ARCH_CONFIG_REGISTRY``: name -> the function that sets the sizes): the closest names among
    the plugin's architectures (those not defined inside fairseq itself), and their list."""
    own = sorted(name for name, function in registry.items()
                 if not getattr(function, "__module__", "fairseq").startswith("fairseq."))
    close = difflib.get_close_matches(arch, own, n=3, cutoff=0.6)
    hint = f"did you mean {' or '.join(close)}? " if close else ""
    return (f"--arch {arch} is not a registered architecture; {hint}the plugin's are: {', '.join(own)} "
            "(fairseq's own: fairseq-train --help)")


def data_dir_message(data):
    """What to say when fairseq's data path ``data`` holds no dictionary but its ``bin/`` does
    (``python -m preprocess.prepare --out OUT`` writes the binarized data to ``OUT/bin``); None
    when the path is not that case."""
    first = str(data).split(os.pathsep)[0]
    if not os.path.isdir(first) or any(name.startswith("dict") and name.endswith(".txt")
                                       for name in os.listdir(first)):
        return None
    inner = os.path.join(first, "bin")
    if os.path.isdir(inner) and any(name.startswith("dict") and name.endswith(".txt") for name in os.listdir(inner)):
        return (f"{first} holds no dictionary (dict.*.txt): the binarized data are in {inner}; "
                f"pass {inner} instead (python -m preprocess.prepare --out OUT writes them to OUT/bin)")
    return None


def _given_arch(argv):
    for i, arg in enumerate(argv):
        if arg in ("--arch", "-a") and i + 1 < len(argv):
            return argv[i + 1]
        if arg.startswith("--arch="):
            return arg.split("=", 1)[1]
    return None


def checked_parse_args_and_arch(parse_args_and_arch):
    """Wrap ``options.parse_args_and_arch``.

    * an ``--arch`` typo and a data directory one level above ``bin/`` end with one line that
      says what to pass (exit 2, as argparse), instead of argparse's list of every registered
      architecture (4,000 characters, wav2vec included) or a 30-line traceback that ends in
      ``dict.source.txt``;
    * ``--trust-model-file FILE`` (any number) is taken out and FILE trusted to select
      components this project has not reviewed (:func:`.model_file.trust`);
    * ``--bf16`` no longer implies ``--tpu`` (fairseq 0.12.3 sets ``args.tpu = True`` whenever
      ``--bf16`` is given, so the trainer looked for ``torch_xla`` on CPU and CUDA); an explicit
      ``--tpu`` keeps it on.
    """

    @functools.wraps(parse_args_and_arch)
    def wrapped(parser, input_args=None, *args, **kwargs):
        from fairseq.models import ARCH_CONFIG_REGISTRY

        given = take_trust_flags(sys.argv[1:] if input_args is None else [str(x) for x in input_args])
        input_args = given
        arch = _given_arch(given)
        if arch is not None and arch not in ARCH_CONFIG_REGISTRY:
            parser.exit(2, f"{parser.prog}: error: {unknown_arch_message(arch, ARCH_CONFIG_REGISTRY)}\n")
        result = parse_args_and_arch(parser, input_args, *args, **kwargs)
        parsed = result[0] if isinstance(result, tuple) else result
        if getattr(parsed, "bf16", False) and getattr(parsed, "tpu", False) and "--tpu" not in given:
            parsed.tpu = False
        message = data_dir_message(getattr(parsed, "data", None) or "")
        if message:
            parser.exit(2, f"{parser.prog}: error: {message}\n")
        return result

    return wrapped
