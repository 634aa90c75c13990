"""Long inputs within memory: three tables, each with ratios measured in this one run.

(a) ``fie``: Z-Code++ FiE encoder forward (inference) at 4K/8K/16K tokens, the full-score
    global layer (``--attention-chunk-size 0``) against the memory-efficient one (chunks of
    ``--attention-chunk`` queries): peak memory and time. Goal at 8K: at most 1/4 of the full
    path's peak, at most 1.15x its time.
(b) ``train``: peak memory of one training step (forward + backward + nothing else) of a
    base-size model (768 wide, 12 heads, 6 + 6 layers, FFN 3072) on one 16K-token input and a
    256-token target: BART-LS (block attention, 1024 blocks, pooling in the top 4 layers: its
    defaults) and Z-Code++ FiE (chunk 256, last layer global, memory-efficient global layer),
    each with and without ``--checkpoint-activations``. Goal: fits in 24 GB.
(c) ``growth``: encoder forward time over 1K..16K tokens for every BART-LS attention type, the
    Z-Code++ FiE encoder and full attention (small widths), ``--repeats`` repeats per point
    interleaved over all points (repeat r of every point runs before repeat r + 1 of any), and
    the fitted exponent ``b`` of ``time ~ T^b`` with its spread (``b`` fitted on each repeat).

Peak memory: every (a) and (b) configuration runs in a fresh process, which reports the growth
of its own ``ru_maxrss`` over a baseline taken after building the model and the input, just
before the measured step; the parent kills a child whose resident set passes ``--cap-mib``
(or what the machine has available minus ``--margin-mib``) and reports that it did not fit.
Times are process CPU seconds (``time.process_time``; one thread by default), robust to other
jobs on a shared machine.

    OMP_NUM_THREADS=1 python -m benchmarks.long_inputs --parts fie train growth
"""

import argparse
import json
import math
import statistics
import sys
import time
from argparse import Namespace

import torch

from benchmarks.memory import available_mib, peak_mib, run_capped, single_threaded_env

VOCAB = 1000  # a small vocabulary: the tables below are about the encoder, not the embeddings
TARGET_TOKENS = 256


def dictionary():
    from fairseq.data import Dictionary

    d = Dictionary()
    for i in range(VOCAB - 4):
        d.add_symbol(f"w{i}")
    return d


def zcodepp_encoder(layers, dim, heads, fie_chunk, attention_chunk):
    from fairseq.models.transformer import TransformerConfig

    from fairseq_ext.zcodepp.encoder import ZCodeEncoder
    from user_dir.models.zcodepp import zcodepp_base_architecture

    args = Namespace(encoder_embed_dim=dim, encoder_ffn_embed_dim=4 * dim, encoder_layers=layers,
                     encoder_attention_heads=heads, fie_chunk_size=fie_chunk, fie_global_layers=1,
                     attention_chunk_size=attention_chunk)
    zcodepp_base_architecture(args)
    d = dictionary()
    embed = torch.nn.Embedding(len(d), dim, padding_idx=d.pad())
    return ZCodeEncoder(TransformerConfig.from_namespace(args), d, embed).eval()


def bart_ls_encoder(layers, dim, heads, attention, max_len):
    """BART-LS encoder of one attention type; ``pooled`` = block + pooling in the top layer."""
    return bart_ls_model(dict(
        encoder_layers=layers, decoder_layers=1, encoder_embed_dim=dim, decoder_embed_dim=dim,
        encoder_ffn_embed_dim=4 * dim, decoder_ffn_embed_dim=4 * dim, encoder_attention_heads=heads,
        decoder_attention_heads=heads, max_source_positions=max_len,
        encoder_attention="block" if attention == "pooled" else attention,
        pooling_layers=1 if attention == "pooled" else 0,
    )).encoder.eval()


def bart_ls_model(options):
    import user_dir  # noqa: F401  (registers the models)
    from user_dir.models.bart_ls import BartLSModel, bart_ls_base_architecture

    args = Namespace(**options)
    bart_ls_base_architecture(args)
    d = dictionary()
    return BartLSModel.build_model(args, Namespace(source_dictionary=d, target_dictionary=d))


def zcodepp_model(options):
    import user_dir  # noqa: F401
    from user_dir.models.zcodepp import ZCodeppModel, zcodepp_base_architecture

    args = Namespace(**options)
    zcodepp_base_architecture(args)
    d = dictionary()
    return ZCodeppModel.build_model(args, Namespace(source_dictionary=d, target_dictionary=d))


# --------------------------------------------------------------------------- (a) FiE inference
def measure_fie(length, attention_chunk, layers, dim, heads, fie_chunk, repeats):
    torch.manual_seed(0)
    encoder = zcodepp_encoder(layers, dim, heads, fie_chunk, attention_chunk)
    tokens = torch.randint(4, VOCAB, (1, length))
    times = []
    with torch.no_grad():
        encoder(tokens[:, :64])  # warm-up on a short input (allocator, kernels), outside the peak
        before = peak_mib()
        for _ in range(repeats):
            start = time.process_time()
            encoder(tokens)
            times.append(time.process_time() - start)
    return {"seconds": statistics.median(times), "peak_mib": peak_mib() - before}


# --------------------------------------------------------------------------- (b) training step
BASE = dict(encoder_embed_dim=768, decoder_embed_dim=768, encoder_ffn_embed_dim=3072, decoder_ffn_embed_dim=3072,
            encoder_layers=6, decoder_layers=6, encoder_attention_heads=12, decoder_attention_heads=12,
            max_source_positions=16384, max_target_positions=TARGET_TOKENS)


def measure_train(family, length, checkpoint):
    torch.manual_seed(0)
    options = dict(BASE, checkpoint_activations=checkpoint)
    if family == "bart_ls":
        model = bart_ls_model(options)
    else:
        model = zcodepp_model(dict(options, fie_chunk_size=256, share_all_embeddings=True))
    model.train()
    src = torch.randint(4, VOCAB, (1, length))
    prev = torch.randint(4, VOCAB, (1, TARGET_TOKENS))
    target = torch.randint(4, VOCAB, (1, TARGET_TOKENS))
    before = peak_mib()
    start = time.process_time()
    logits, _ = model(src, torch.tensor([length]), prev)  # (1, T', V)
    loss = torch.nn.functional.cross_entropy(logits.view(-1, logits.size(-1)), target.view(-1))
    loss.backward()
    return {"seconds": time.process_time() - start, "peak_mib": peak_mib() - before}


# --------------------------------------------------------------------------- (c) time growth
GROWTH_ENCODERS = ("block", "overlapping", "global", "pooled", "full", "zcodepp_fie")


def growth_encoder(name, args, max_len):
    if name == "zcodepp_fie":  # memory-efficient global layer (the default --attention-chunk-size)
        return zcodepp_encoder(args.growth_layers, args.growth_dim, args.growth_heads, args.fie_chunk, 1024)
    return bart_ls_encoder(args.growth_layers, args.growth_dim, args.growth_heads, name, max_len)


def fit_exponent(lengths, seconds):
    """Least-squares slope of log(seconds) against log(length)."""
    xs, ys = [math.log(x) for x in lengths], [math.log(y) for y in seconds]
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)


def run_growth(args):
    lengths = args.growth_lengths
    torch.manual_seed(0)
    encoders = {name: growth_encoder(name, args, max(lengths)) for name in args.growth_encoders}
    inputs = {n: torch.randint(4, VOCAB, (1, n)) for n in lengths}
    times = {(name, n): [] for name in encoders for n in lengths}
    with torch.no_grad():
        for encoder in encoders.values():
            encoder(inputs[lengths[0]])  # warm-up
        for repeat in range(args.repeats):
            for n in lengths:
                for name, encoder in encoders.items():
                    start = time.process_time()
                    encoder(inputs[n], src_lengths=torch.tensor([n]))
                    times[(name, n)].append(time.process_time() - start)
            print(f"growth: repeat {repeat + 1}/{args.repeats} done", file=sys.stderr, flush=True)
    print(f"\n(c) encoder forward time, 1 x T tokens, {args.growth_layers} layers, width {args.growth_dim}, "
          f"{args.growth_heads} heads, BART-LS blocks of 1024 (64 global tokens; pooled = block + pooling in "
          f"the top layer), FiE chunk {args.fie_chunk}; CPU seconds, median of {args.repeats} interleaved "
          f"repeats (spread = (max - min) / median)\n")
    header = " | ".join(f"{n} tokens s (spread)" for n in lengths)
    print(f"| encoder | {header} | b (median fit) | b per repeat, min..max |")
    print("| --- | " + " | ".join("---:" for _ in lengths) + " | ---: | ---: |")
    for name in encoders:
        medians = [statistics.median(times[(name, n)]) for n in lengths]
        spreads = [(max(times[(name, n)]) - min(times[(name, n)])) / m for n, m in zip(lengths, medians)]
        per_repeat = [fit_exponent(lengths, [times[(name, n)][r] for n in lengths]) for r in range(args.repeats)]
        cells = " | ".join(f"{m:.3f} ({s:.0%})" for m, s in zip(medians, spreads))
        print(f"| {name} | {cells} | {fit_exponent(lengths, medians):.2f} | "
              f"{min(per_repeat):.2f}..{max(per_repeat):.2f} |", flush=True)


# --------------------------------------------------------------------------- driver
def child(args, kind, *values):
    """One (a) or (b) point in a fresh process under the memory cap; None if it did not fit."""
    cap = min(args.cap_mib, available_mib() - args.margin_mib)
    cmd = [sys.executable, "-m", "benchmarks.long_inputs", "--one", kind, *map(str, values),
           "--repeats", str(args.repeats_fie), "--attention-chunk", str(args.attention_chunk),
           "--fie-chunk", str(args.fie_chunk)]
    print(f"{kind} {values}: memory cap {cap:.0f} MiB", file=sys.stderr, flush=True)
    result = run_capped(cmd, cap, env=single_threaded_env())
    if result["killed"]:
        return {"killed_at_mib": cap}
    if result["returncode"] != 0:
        raise RuntimeError(f"{cmd} failed:\n{result['stderr'][-3000:]}")
    return json.loads(result["stdout"].strip().splitlines()[-1])


def memory_cell(point):
    if "killed_at_mib" in point:
        return f"> {point['killed_at_mib']:.0f} (did not fit under the cap)"
    return f"{point['peak_mib']:.0f}"


def run_fie(args):
    shape = (args.fie_layers, args.fie_dim, args.fie_heads, args.fie_chunk)
    print(f"\n(a) Z-Code++ FiE encoder forward (inference), 1 x T tokens, {args.fie_layers} layers, width "
          f"{args.fie_dim}, {args.fie_heads} heads, FiE chunk {args.fie_chunk} (last layer global); global layer "
          f"with full T x T scores vs queries in chunks of {args.attention_chunk}; CPU seconds, median of "
          f"{args.repeats_fie}; peak = ru_maxrss growth in a fresh process\n")
    print("| tokens | full-score s | chunked s | time ratio | full-score peak MiB | chunked peak MiB | memory ratio |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for length in args.fie_lengths:
        chunked = child(args, "fie", length, args.attention_chunk, *shape)
        full = child(args, "fie", length, 0, *shape)
        fits = "killed_at_mib" not in full
        time_ratio = f"{chunked['seconds'] / full['seconds']:.2f}" if fits else "-"
        if fits:
            memory_ratio = f"{chunked['peak_mib'] / full['peak_mib']:.3f}"
        else:
            memory_ratio = f"< {chunked['peak_mib'] / full['killed_at_mib']:.3f}"
        full_seconds = f"{full['seconds']:.2f}" if fits else "-"
        print(f"| {length} | {full_seconds} | {chunked['seconds']:.2f} | {time_ratio} | {memory_cell(full)} | "
              f"{chunked['peak_mib']:.0f} | {memory_ratio} |", flush=True)


def run_train(args):
    print(f"\n(b) one training step (forward + backward), base size (768 wide, 12 heads, 6 + 6 layers, FFN "
          f"3072), 1 x {args.train_length} source tokens, {TARGET_TOKENS} target tokens, vocabulary {VOCAB}; "
          f"BART-LS: block attention (1024), pooling in the top 4 layers; Z-Code++: FiE chunk 256, last layer "
          f"global (memory-efficient, chunks of 1024 queries); peak = ru_maxrss growth in a fresh process\n")
    print("| model | --checkpoint-activations | step CPU s | peak MiB | peak / without |")
    print("| --- | --- | ---: | ---: | ---: |")
    for family in args.train_families:
        plain = child(args, "train", family, args.train_length, 0)
        checkpointed = child(args, "train", family, args.train_length, 1)
        for flag, point in (("no", plain), ("yes", checkpointed)):
            killed = "killed_at_mib" in point or "killed_at_mib" in plain
            ratio = "-" if killed else f"{point['peak_mib'] / plain['peak_mib']:.2f}"
            seconds = f"{point['seconds']:.0f}" if "seconds" in point else "-"
            print(f"| {family} | {flag} | {seconds} | {memory_cell(point)} | {ratio} |", flush=True)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--parts", nargs="+", choices=("fie", "train", "growth"), default=["fie", "train", "growth"])
    parser.add_argument("--cap-mib", type=float, default=16000, help="kill a configuration above this resident set")
    parser.add_argument("--margin-mib", type=float, default=3000,
                        help="and leave at least this much of the machine's available memory to others")
    parser.add_argument("--attention-chunk", type=int, default=1024, help="queries per chunk (memory-efficient path)")
    parser.add_argument("--fie-chunk", type=int, default=256, help="FiE chunk size l")
    parser.add_argument("--fie-lengths", type=int, nargs="+", default=[4096, 8192, 16384])
    parser.add_argument("--fie-layers", type=int, default=4)
    parser.add_argument("--fie-dim", type=int, default=256)
    parser.add_argument("--fie-heads", type=int, default=4)
    parser.add_argument("--repeats-fie", type=int, default=3, help="timed forwards per (a) point (median)")
    parser.add_argument("--train-length", type=int, default=16384)
    parser.add_argument("--train-families", nargs="+", choices=("bart_ls", "zcodepp"), default=["bart_ls", "zcodepp"])
    parser.add_argument("--growth-lengths", type=int, nargs="+", default=[1024, 2048, 4096, 8192, 16384])
    parser.add_argument("--growth-encoders", nargs="+", choices=GROWTH_ENCODERS, default=list(GROWTH_ENCODERS))
    parser.add_argument("--growth-layers", type=int, default=2)
    parser.add_argument("--growth-dim", type=int, default=128)
    parser.add_argument("--growth-heads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=5, help="interleaved repeats per (c) point")
    parser.add_argument("--one", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.one:
        kind, *values = args.one
        if kind == "fie":
            print(json.dumps(measure_fie(*map(int, values), args.repeats_fie)))
        else:
            print(json.dumps(measure_train(values[0], int(values[1]), bool(int(values[2])))))
        return
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads (children: OMP_NUM_THREADS="
          f"{single_threaded_env()['OMP_NUM_THREADS']}), available memory at start {available_mib():.0f} MiB, "
          f"load {open('/proc/loadavg').read().split()[:3]}")
    for part in args.parts:
        {"fie": run_fie, "train": run_train, "growth": run_growth}[part](args)
    print(f"\nload at the end {open('/proc/loadavg').read().split()[:3]}")


if __name__ == "__main__":
    main()
