"""End-to-end harness in the style of fairseq's ``tests/utils.py``: preprocess -> train ->
generate, in-process, with ``--user-dir user_dir``. Every model's tests reuse it:

    data = prepare_corpus("aclsum", tmp / "aclsum", limit=12)      # real ACLSum subset
    train(data, tmp / "ckpt", "bart_summ_tiny", ["--max-epoch", "1"])
    hyps = generate(data, tmp / "ckpt" / "checkpoint_last.pt", ["--beam", "2"])

All calls run fairseq's own CLI entry points (``fairseq_cli.train.main``,
``fairseq_cli.generate.main``, ``fairseq_cli.interactive.main``) on argument lists, exactly
as the command line does.
"""

import argparse
import contextlib
import io
import re
from pathlib import Path

from fairseq import checkpoint_utils, distributed_utils, options, utils
from fairseq.dataclass.utils import convert_namespace_to_omegaconf
from fairseq_cli import generate as generate_cli
from fairseq_cli import interactive as interactive_cli
from fairseq_cli import train as train_cli

REPO = Path(__file__).resolve().parents[2]
USER_DIR = str(REPO / "user_dir")
TASK, CRITERION = "abstractive_summarization", "label_smoothed_cross_entropy"  # the harness defaults


def prepare_corpus(corpus, out_dir, limit=None, vocab_size=500, extra=()):
    """Run ``python -m preprocess.prepare`` in-process; return the binarized data dir."""
    from preprocess import prepare

    argv = ["--corpus", str(corpus), "--out", str(out_dir), "--vocab-size", str(vocab_size)]
    if limit is not None:
        argv += ["--limit", str(limit)]
    prepare.main(argv + list(extra))
    return Path(out_dir) / "bin"


def train(data_dir, save_dir, arch, extra=(), task=TASK, criterion=CRITERION):
    """``fairseq-train DATA --user-dir user_dir --task ... --arch ARCH`` with small defaults
    (adam, lr 1e-3, one epoch, 2,000 tokens a batch); ``extra`` overrides any of them."""
    args = training_args(data_dir, save_dir, arch, extra, task, criterion)
    cfg = convert_namespace_to_omegaconf(args)
    # fairseq keeps the best validation score on a function attribute: start each run as a
    # fresh process would (a resumed run reloads it from checkpoint_last.pt)
    if hasattr(checkpoint_utils.save_checkpoint, "best"):
        del checkpoint_utils.save_checkpoint.best
    distributed_utils.call_main(cfg, train_cli.main)
    return Path(save_dir)


def train_argv(data_dir, save_dir, arch, extra=(), task=TASK, criterion=CRITERION):
    """The command-line arguments :func:`train` hands to fairseq-train (also usable with the
    real ``fairseq-train`` binary, e.g. under torchrun)."""
    argv = [
        str(data_dir), "--user-dir", USER_DIR, "--task", task, "--arch", arch,
        "--criterion", criterion, "--save-dir", str(save_dir),
        "--optimizer", "adam", "--lr", "1e-3", "--max-tokens", "2000", "--max-epoch", "1",
        "--no-progress-bar", "--num-workers", "0", "--seed", "1", "--log-format", "simple",
        "--log-interval", "1", "--no-epoch-checkpoints",
        "--max-source-positions", "256", "--max-target-positions", "128",
    ]
    return argv + [str(x) for x in extra]


def training_args(data_dir, save_dir, arch, extra=(), task=TASK, criterion=CRITERION):
    """The ``argparse.Namespace`` that :func:`train` parses (what legacy checkpoints store as ``args``)."""
    # the real fairseq-train imports --user-dir from sys.argv before it parses anything
    # (options.get_parser); with an argument list, import it the same way first
    utils.import_user_module(argparse.Namespace(user_dir=USER_DIR))
    parser = options.get_training_parser()
    return options.parse_args_and_arch(parser, train_argv(data_dir, save_dir, arch, extra, task, criterion))


def generate(data_dir, checkpoint, extra=(), subset="test", task="abstractive_summarization"):
    """``fairseq-generate`` on ``subset``; returns the detokenized hypotheses in input order."""
    argv = [
        str(data_dir), "--user-dir", USER_DIR, "--task", task, "--path", str(checkpoint),
        "--gen-subset", subset, "--beam", "2", "--batch-size", "8", "--max-len-b", "20",
        "--no-progress-bar", "--num-workers", "0",
        "--max-source-positions", "256", "--max-target-positions", "128",
    ]
    parser = options.get_generation_parser()
    args = options.parse_args_and_arch(parser, argv + [str(x) for x in extra])
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        generate_cli.main(args)
    return parse_generate_output(out.getvalue())


def interactive(data_dir, checkpoint, lines, extra=(), task="abstractive_summarization"):
    """``fairseq-interactive --input FILE`` on raw ``lines``; returns the detokenized hypotheses."""
    source = Path(checkpoint).parent / "interactive.input"
    source.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    argv = [
        str(data_dir), "--user-dir", USER_DIR, "--task", task, "--path", str(checkpoint),
        "--input", str(source), "--beam", "2", "--max-len-b", "20", "--no-progress-bar",
        "--max-source-positions", "256", "--max-target-positions", "128",
    ]
    parser = options.get_interactive_generation_parser()
    args = options.parse_args_and_arch(parser, argv + [str(x) for x in extra])
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        distributed_utils.call_main(convert_namespace_to_omegaconf(args), interactive_cli.main)
    return parse_generate_output(out.getvalue())


def parse_generate_output(text, prefix="D"):
    """The ``D-<id>`` (detokenized) or ``H-<id>`` lines of fairseq-generate, sorted by id."""
    rows = {}
    for line in text.splitlines():
        match = re.match(rf"^{prefix}-(\d+)\t[^\t]*\t(.*)$", line)
        if match:
            rows[int(match.group(1))] = match.group(2)
    return [rows[i] for i in sorted(rows)]


def read_lines(path):
    with open(path, encoding="utf-8") as f:
        return [line.rstrip("\n") for line in f]
