"""``python -m benchmarks.peers``: one table per family, ours against its peer (see the package)."""

import argparse
import importlib
import os
import platform

import torch

from . import run_comparisons, table

FAMILIES = ("transformer_sm", "prophetnet", "zcodepp", "bart_ls", "s2s_ft")


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m benchmarks.peers", description=__doc__)
    parser.add_argument("--families", nargs="+", choices=FAMILIES, default=list(FAMILIES))
    parser.add_argument("--size", choices=("paper", "small"), default="paper",
                        help="paper: the sizes of the issue's table (base models); small: a quick look")
    parser.add_argument("--lengths", type=int, nargs="+", default=None,
                        help="input lengths where a family sweeps them (BART-LS: 1024 .. 16384)")
    parser.add_argument("--warmup", type=int, default=1, help="untimed rounds first")
    parser.add_argument("--repeats", type=int, default=3, help="timed rounds (the median is kept)")
    parser.add_argument("--threads", type=int, default=1, help="torch threads (one: CPU time is the work)")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    print(f"torch {torch.__version__}, {args.threads} thread(s), {platform.processor() or platform.machine()}, "
          f"{os.cpu_count()} cores, load average at start {os.getloadavg()[0]:.2f}; warm-up {args.warmup}, "
          f"median of {args.repeats} interleaved rounds\n")
    for family in args.families:
        module = importlib.import_module(f"benchmarks.peers.{family}")
        setting, comparisons = module.comparisons(args)
        print(table(family, setting, run_comparisons(comparisons, args.warmup, args.repeats)), "\n", flush=True)


if __name__ == "__main__":
    main()
