"""``python -m benchmarks.peers``: one table per family, ours against its peer (see the package)."""

import argparse
import importlib
import json
import os
import platform
import subprocess
import sys
import tempfile

import torch

from . import memory_table, run_comparisons, status_mib, table

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
    parser.add_argument("--memory", action="store_true",
                        help="also each side's memory, in a fresh process a side: the model read from its "
                             "files, then one decoding (families that define memory sides)")
    parser.add_argument("--memory-child", nargs=3, metavar=("FAMILY", "SIDE", "WORKDIR"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    if args.memory_child:
        family, side, workdir = args.memory_child
        module = importlib.import_module(f"benchmarks.peers.{family}")  # both sides import the same libraries
        marks = {"imports": status_mib("VmRSS")}
        module.memory_side(args, side, workdir, lambda name: marks.__setitem__(name, status_mib("VmRSS")))
        marks["peak"] = status_mib("VmHWM")
        print(json.dumps(marks))
        return
    print(f"torch {torch.__version__}, {args.threads} thread(s), {platform.processor() or platform.machine()}, "
          f"{os.cpu_count()} cores, load average at start {os.getloadavg()[0]:.2f}; warm-up {args.warmup}, "
          f"median of {args.repeats} interleaved rounds\n")
    for family in args.families:
        module = importlib.import_module(f"benchmarks.peers.{family}")
        setting, comparisons = module.comparisons(args)
        print(table(family, setting, run_comparisons(comparisons, args.warmup, args.repeats)), "\n", flush=True)
        if args.memory and hasattr(module, "memory_sides"):
            print(memory_table(family, memory_rows(module, family, args)), "\n", flush=True)


def memory_rows(module, family, args):
    """Each side of ``module.memory_sides`` measured in a fresh process over the files it prepared."""
    rows = []
    with tempfile.TemporaryDirectory() as workdir:
        sides = module.memory_sides(args, workdir)
        for side in sides:
            command = [sys.executable, "-m", "benchmarks.peers", "--size", args.size, "--threads", str(args.threads),
                       "--memory-child", family, side, workdir]
            done = subprocess.run(command, capture_output=True, text=True, check=False)
            if done.returncode != 0:
                raise RuntimeError(f"memory side {side} failed:\n{done.stderr[-3000:]}")
            rows.append((side, json.loads(done.stdout.strip().splitlines()[-1])))
    return rows


if __name__ == "__main__":
    main()
