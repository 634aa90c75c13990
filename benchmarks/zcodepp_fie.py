"""Fusion-in-encoder: encoder time and peak memory at 1K-8K tokens, FiE (chunk 256) against the
full disentangled-attention encoder (Z-Code++ issue, "Measure"; goal: at 8K, at most a third of
the full encoder's time).

    OMP_NUM_THREADS=2 python benchmarks/zcodepp_fie.py [--lengths 1024 2048 4096 8192]

Each (length, encoder) point runs in a fresh subprocess so that its peak resident memory
(``ru_maxrss`` after the forward passes minus before them) is its own. The encoder is a
4-layer, 256-wide, 4-head Z-Code++ encoder (3 local + 1 global layer with FiE, as the paper
fuses with the last layer), one example, forward under ``torch.no_grad`` (inference, as when
summarizing a long document). Prints a markdown table with FiE/full ratios from this run.
"""

import argparse
import json
import resource
import subprocess
import sys
from argparse import Namespace

import torch

from benchmarks.timing import CLOCKS, interleaved


def build_encoder(layers, dim, heads, chunk):
    from fairseq.data import Dictionary
    from fairseq.models.transformer import TransformerConfig

    from fairseq_ext.zcodepp.encoder import ZCodeEncoder
    from user_dir.models.zcodepp import zcodepp_base_architecture

    args = Namespace(encoder_embed_dim=dim, encoder_ffn_embed_dim=4 * dim, encoder_layers=layers,
                     encoder_attention_heads=heads, fie_chunk_size=chunk, fie_global_layers=1)
    zcodepp_base_architecture(args)
    dictionary = Dictionary()
    for i in range(1000):
        dictionary.add_symbol(f"w{i}")
    embed = torch.nn.Embedding(len(dictionary), dim, padding_idx=dictionary.pad())
    return ZCodeEncoder(TransformerConfig.from_namespace(args), dictionary, embed).eval()


def measure(length, chunk, layers, dim, heads, repeats, clock):
    """One point, in this process: best seconds and peak extra resident MiB."""
    torch.manual_seed(0)
    encoder = build_encoder(layers, dim, heads, chunk)
    tokens = torch.randint(4, 1000, (1, length))
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with torch.no_grad():  # one warm-up run, then the best of N (shared machine)
        (seconds,) = interleaved([lambda: encoder(tokens)], 1, repeats, CLOCKS[clock], reduce=min)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {"seconds": seconds, "peak_mib": (peak - before) / 1024}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--lengths", type=int, nargs="+", default=[1024, 2048, 4096, 8192])
    parser.add_argument("--chunk", type=int, default=256, help="FiE chunk size")
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--dim", type=int, default=256)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=2, help="timed runs per point (the best is reported)")
    parser.add_argument("--clock", choices=sorted(CLOCKS), default="cpu",
                        help="cpu: process CPU seconds (default; robust on a shared machine), wall: elapsed")
    parser.add_argument("--one", type=int, nargs=2, metavar=("LENGTH", "CHUNK"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    shape = (args.layers, args.dim, args.heads, args.repeats, args.clock)
    if args.one:
        print(json.dumps(measure(*args.one, *shape)))
        return

    def point(length, chunk):
        cmd = [sys.executable, __file__, "--one", str(length), str(chunk), "--layers", str(args.layers),
               "--dim", str(args.dim), "--heads", str(args.heads), "--repeats", str(args.repeats),
               "--clock", args.clock]
        out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
        return json.loads(out.strip().splitlines()[-1])

    print(f"encoder forward, 1 x T tokens, {args.layers} layers, width {args.dim}, {args.heads} heads, "
          f"FiE chunk {args.chunk} (last layer global), {torch.get_num_threads()} threads, "
          f"{args.clock} time, best of {args.repeats}\n")
    print(f"| tokens | full {args.clock} s | FiE {args.clock} s | FiE / full time | full peak MiB | FiE peak MiB "
          "| FiE / full memory |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for length in args.lengths:
        full, fie = point(length, 0), point(length, args.chunk)
        print(f"| {length} | {full['seconds']:.2f} | {fie['seconds']:.2f} | {fie['seconds'] / full['seconds']:.2f} "
              f"| {full['peak_mib']:.0f} | {fie['peak_mib']:.0f} | {fie['peak_mib'] / max(full['peak_mib'], 1):.2f} |",
              flush=True)


if __name__ == "__main__":
    main()
