"""Training words/s on 1 and 2 CPU processes (gloo), and the scaling efficiency.

Every configuration runs the real ``fairseq-train --user-dir user_dir`` (torchrun for two
processes, default ``--ddp-backend pytorch_ddp``) on the same data, model and per-process
batch, and reads fairseq's own JSON log:

* ``1 proc x 1 thread``: the baseline;
* ``1 proc x 2 threads``: what the same cores give one process without distributed training;
* ``2 procs x 1 thread``: one job over two processes (each with the baseline's batch).

words/s is fairseq's ``wps`` (target tokens per second over all processes), summed over the
logged steps after ``--warmup`` updates as total words / total time. Scaling efficiency =
words/s of the 2-process job / (2 x the baseline's).

    python -m benchmarks.distributed_scaling --updates 20 --warmup 4
"""

import argparse
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
LINE = re.compile(r"\| train_inner \| (\{.*\})\s*$")


def prepare_data(out, limit):
    from preprocess import prepare

    prepare.main(["--corpus", "aclsum", "--out", str(out), "--vocab-size", "4000", "--limit", str(limit)])
    return out / "bin"


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def run(config, data, args, work):
    procs, threads = config
    train = [
        str(data), "--user-dir", str(REPO / "user_dir"), "--task", "abstractive_summarization",
        "--arch", args.arch, "--criterion", "label_smoothed_cross_entropy", "--label-smoothing", "0.1",
        "--optimizer", "adam", "--lr", "1e-4", "--batch-size", str(args.batch_size),
        "--required-batch-size-multiple", "1", "--max-source-positions", str(args.max_source),
        "--max-target-positions", "160", "--max-update", str(args.updates), "--disable-validation", "--no-save",
        "--cpu", "--num-workers", "0", "--seed", "1", "--log-format", "json", "--log-interval", "1",
        "--no-progress-bar", "--save-dir", str(work / f"ckpt{procs}x{threads}"),
    ]  # fmt: skip
    if procs == 1:
        command = [str(BIN / "fairseq-train"), *train]
    else:
        command = [str(BIN / "torchrun"), "--nproc_per_node", str(procs), "--master_port", str(free_port()),
                   str(BIN / "fairseq-train"), *train]  # fmt: skip
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), MKL_NUM_THREADS=str(threads))
    for name in ("MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE", "RANK", "LOCAL_RANK"):
        env.pop(name, None)
    start = time.time()
    result = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"{command[0]} failed:\n{result.stdout[-2000:]}\n{result.stderr[-2000:]}")
    steps = [json.loads(m.group(1)) for m in map(LINE.search, result.stdout.splitlines()) if m]
    measured = [s for s in steps if int(s["num_updates"]) > args.warmup]
    if not measured:
        raise RuntimeError(f"no train_inner lines after update {args.warmup} in the log")
    words = sum(float(s["wpb"]) for s in measured)
    seconds = sum(float(s["wpb"]) / float(s["wps"]) for s in measured if float(s["wps"]) > 0)
    return {"words_per_s": words / seconds, "updates": len(measured), "words_per_update": words / len(measured),
            "wall_s": time.time() - start}  # fmt: skip


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=None, help="binarized ACLSum (default: prepared into a temp dir)")
    parser.add_argument("--limit", type=int, default=48, help="ACLSum papers per split when preparing the data")
    parser.add_argument("--arch", default="bart_summ_small", help="model architecture (3+3 layers, 256 wide)")
    parser.add_argument("--batch-size", type=int, default=4, help="documents per batch and process")
    parser.add_argument("--max-source", type=int, default=512, help="--max-source-positions")
    parser.add_argument("--updates", type=int, default=20, help="updates per configuration")
    parser.add_argument("--warmup", type=int, default=4, help="first updates left out of the figures")
    args = parser.parse_args(argv)

    load = os.getloadavg()
    print(f"load average at start: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} ({os.cpu_count()} cores)")
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        data = args.data or prepare_data(work / "aclsum", args.limit)
        configs = [(1, 1), (1, 2), (2, 1)]
        results = {}
        for config in configs:
            print(f"running {config[0]} proc x {config[1]} thread(s) ...", flush=True)
            results[config] = run(config, data, args, work)
    base = results[(1, 1)]["words_per_s"]
    print(f"\n{args.arch}, batch {args.batch_size} documents per process, {args.updates} updates "
          f"(first {args.warmup} left out)\n")  # fmt: skip
    print("| configuration | words/s | x baseline | words per update | scaling efficiency |")
    print("|---|---|---|---|---|")
    for (procs, threads), r in results.items():
        speed = r["words_per_s"] / base
        efficiency = f"{speed / procs:.2f}" if procs > 1 else "-"
        print(f"| {procs} proc x {threads} thread{'s' if threads > 1 else ''} | {r['words_per_s']:.0f} | "
              f"{speed:.2f} | {r['words_per_update']:.0f} | {efficiency} |")  # fmt: skip
    load = os.getloadavg()
    print(f"\nload average at end: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")


if __name__ == "__main__":
    main()
