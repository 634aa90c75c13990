"""Encoder forward time and peak memory of BART-LS attention vs full attention and HF LED.

For each input length (default 1K..16K tokens) and each encoder -- ``full`` (fairseq BART's
encoder as it runs on this stack: torch picks a fused, memory-efficient attention kernel),
``full_math`` (the same encoder forced onto torch's plain kernel, which materializes the
``T x T`` scores as fairseq's own attention code does), ``block``, ``overlapping``, ``global``
and ``pooled`` (block + pooling in the top layers) from ``bart_ls``, and HF
``LEDForConditionalGeneration``'s encoder with a 1,024 window at the same sizes -- it runs
``--repeats`` inference forwards of one sequence and records the best wall time and the peak
memory of the forward (CUDA allocator peak on a GPU; on CPU the growth of the peak resident set,
each measurement in a fresh process). Prints a markdown table with ratios to full attention at
the same length and to the same encoder at the shortest length.

    OMP_NUM_THREADS=2 python -m benchmarks.bart_ls_encoder_scaling --lengths 1024 2048 4096 8192 16384

Its builders serve ``python -m benchmarks.peers --families bart_ls`` (generation and encoder
against LED at every length, in the table of every family against its peer).
"""

import argparse
import gc
import json
import os
import resource
import subprocess
import sys
import time
from argparse import Namespace

import torch
from torch.nn.attention import SDPBackend, sdpa_kernel

MECHANISMS = ("full", "full_math", "block", "overlapping", "global", "pooled", "led")


def rss_bytes():
    with open(f"/proc/{os.getpid()}/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def peak_rss_bytes():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def build_fairseq_model(mechanism, args, max_len, decoder_layers=1):
    """``(model, dictionary)``: BART-LS with ``mechanism``'s encoder (``full``: fairseq's BART) at
    ``args``' sizes, random init, source positions up to ``max_len``."""
    from fairseq.data import Dictionary
    from fairseq.models.bart.model import BARTModel

    import user_dir  # noqa: F401
    from user_dir.models.bart_ls import BartLSModel, bart_ls_base_architecture

    dictionary = Dictionary()
    for i in range(args.vocab - 4):
        dictionary.add_symbol(f"w{i}")
    sizes = Namespace(
        encoder_layers=args.layers, decoder_layers=decoder_layers, encoder_embed_dim=args.dim,
        decoder_embed_dim=args.dim, encoder_ffn_embed_dim=4 * args.dim, decoder_ffn_embed_dim=4 * args.dim,
        encoder_attention_heads=args.heads, decoder_attention_heads=args.heads,
        max_source_positions=max_len, max_target_positions=1024, block_size=args.block_size,
        pooling_layers=args.pooling_layers if mechanism == "pooled" else 0,
        encoder_attention="block" if mechanism == "pooled" else mechanism,
        dropout=0.0, attention_dropout=0.0,
    )
    bart_ls_base_architecture(sizes)
    task = Namespace(source_dictionary=dictionary, target_dictionary=dictionary)
    model = BartLSModel.build_model(sizes, task) if mechanism != "full" else BARTModel.build_model(sizes, task)
    return model, dictionary


def build_fairseq_encoder(mechanism, args, max_len):
    encoder = build_fairseq_model(mechanism, args, max_len)[0].encoder

    def forward(tokens):
        return encoder(tokens, torch.full((1,), tokens.size(1)))["encoder_out"][0]

    return encoder, forward


def build_led_model(args, max_len, decoder_layers=1):
    """HF ``LEDForConditionalGeneration`` at ``args``' sizes, window ``args.block_size``, random init."""
    from transformers import LEDConfig, LEDForConditionalGeneration

    config = LEDConfig(
        vocab_size=args.vocab, d_model=args.dim, encoder_layers=args.layers, decoder_layers=decoder_layers,
        encoder_attention_heads=args.heads, decoder_attention_heads=args.heads,
        encoder_ffn_dim=4 * args.dim, decoder_ffn_dim=4 * args.dim, attention_window=args.block_size,
        max_encoder_position_embeddings=max_len, max_decoder_position_embeddings=1024, dropout=0.0,
        attention_dropout=0.0,
    )
    return LEDForConditionalGeneration(config)


def build_led_encoder(args, max_len):
    encoder = build_led_model(args, max_len).get_encoder()

    def forward(tokens):
        return encoder(input_ids=tokens, attention_mask=torch.ones_like(tokens)).last_hidden_state

    return encoder, forward


def measure_here(mechanism, length, args, device):
    """``(best seconds, peak bytes)`` of one encoder forward, in this process.

    Peak memory: on CUDA the allocator's peak above the model; on CPU the growth of the
    process's peak resident set (``ru_maxrss``) over the resident set before the first
    forward -- so each CPU measurement runs in a fresh process (see :func:`measure`).
    """
    torch.manual_seed(0)
    if mechanism == "led":
        module, forward = build_led_encoder(args, length)
    elif mechanism == "full_math":
        module, fused_forward = build_fairseq_encoder("full", args, length)

        def forward(tokens):
            with sdpa_kernel(SDPBackend.MATH):
                return fused_forward(tokens)
    else:
        module, forward = build_fairseq_encoder(mechanism, args, length)
    module.to(device).eval()
    tokens = torch.randint(4, args.vocab, (1, length), device=device)
    gc.collect()
    with torch.inference_mode():
        if device.type == "cuda":
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
            before = torch.cuda.memory_allocated()
        else:
            before = max(rss_bytes(), peak_rss_bytes())
        forward(tokens)
        if device.type == "cuda":
            torch.cuda.synchronize()
            peak = torch.cuda.max_memory_allocated() - before
        else:
            peak = peak_rss_bytes() - before
        times = []
        for _ in range(args.repeats):
            start = time.perf_counter()
            forward(tokens)
            if device.type == "cuda":
                torch.cuda.synchronize()
            times.append(time.perf_counter() - start)
    return min(times), peak


def measure(mechanism, length, args, device, argv):
    """Run :func:`measure_here` in a fresh process (a clean peak resident set)."""
    command = [sys.executable, "-m", "benchmarks.bart_ls_encoder_scaling", *argv, "--one", mechanism, str(length)]
    out = subprocess.run(command, check=True, capture_output=True, text=True).stdout
    result = json.loads(out.strip().splitlines()[-1])
    return result["seconds"], result["peak"]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lengths", type=int, nargs="+", default=[1024, 2048, 4096, 8192, 16384])
    parser.add_argument("--mechanisms", nargs="+", default=list(MECHANISMS), choices=MECHANISMS)
    parser.add_argument("--layers", type=int, default=2, help="encoder layers")
    parser.add_argument("--dim", type=int, default=256, help="model width")
    parser.add_argument("--heads", type=int, default=4, help="attention heads")
    parser.add_argument("--vocab", type=int, default=1000, help="vocabulary size")
    parser.add_argument("--block-size", type=int, default=1024, help="BART-LS block and LED window")
    parser.add_argument("--pooling-layers", type=int, default=1, help="pooled layers of 'pooled'")
    parser.add_argument("--repeats", type=int, default=2, help="timed forwards (best kept)")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--math-max-length", type=int, default=8192,
                        help="skip full_math above this length (its O(T^2) memory on a shared machine)")
    parser.add_argument("--one", nargs=2, metavar=("MECHANISM", "LENGTH"), help=argparse.SUPPRESS)
    argv = sys.argv[1:] if argv is None else argv
    args = parser.parse_args(argv)
    device = torch.device(args.device)
    if args.one:
        seconds, peak = measure_here(args.one[0], int(args.one[1]), args, device)
        print(json.dumps({"seconds": seconds, "peak": peak}))
        return
    parent_argv = [a for a in argv]

    results = {}
    for length in args.lengths:
        for mechanism in args.mechanisms:
            if mechanism == "full_math" and length > args.math_max_length:
                continue
            seconds, peak = measure(mechanism, length, args, device, parent_argv)
            results[mechanism, length] = (seconds, peak)
            print(f"# {mechanism:12s} {length:6d}  {seconds * 1000:9.1f} ms  {peak / 2**20:9.1f} MiB", flush=True)

    print(f"\ndevice {device}, torch {torch.__version__}, threads {torch.get_num_threads()}, "
          f"{args.layers} layers x {args.dim} wide, {args.heads} heads, block/window {args.block_size}\n")
    print("| encoder | tokens | time ms | peak MiB | time / full | mem / full | time / LED "
          "| time / own shortest | mem / own shortest |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    shortest = min(args.lengths)
    for length in args.lengths:
        for mechanism in args.mechanisms:
            if (mechanism, length) not in results:
                continue
            seconds, peak = results[mechanism, length]
            full = results.get(("full", length))
            led = results.get(("led", length))
            base = results[mechanism, shortest]

            def ratio(a, b):
                return f"{a / b:.2f}" if b else "-"

            print(f"| {mechanism} | {length} | {seconds * 1000:.1f} | {peak / 2**20:.1f} | "
                  f"{ratio(seconds, full[0]) if full else '-'} | {ratio(peak, full[1]) if full else '-'} | "
                  f"{ratio(seconds, led[0]) if led else '-'} | {ratio(seconds, base[0])} | {ratio(peak, base[1])} |")


if __name__ == "__main__":
    main()
