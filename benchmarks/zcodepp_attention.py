"""Disentangled attention: forward + backward time against vanilla attention of the same size
and against HF DeBERTa-v2's DisentangledSelfAttention (Z-Code++ issue, "Measure").

    OMP_NUM_THREADS=2 python benchmarks/zcodepp_attention.py [--length 512 --batch 4 --repeats 10]

All three modules get the same width, heads and input and do the same work (q/k/v and output
projections: HF's module is followed by its output dense layer); the DA modules the same
relative table (256 buckets, max distance 512, DeBERTa-v3). Prints a markdown table of the best
times (of --repeats) and the ratios against vanilla attention and against HF, all measured in
this run. Its modules serve ``python -m benchmarks.peers --families zcodepp`` (every family
against its peer in one table).
"""

import argparse
from types import SimpleNamespace

import torch
from fairseq.modules import MultiheadAttention
from transformers import DebertaV2Config
from transformers.models.deberta_v2.modeling_deberta_v2 import DisentangledSelfAttention as HFAttention

from benchmarks.timing import CLOCKS, interleaved
from fairseq_ext.modules.relative_position import deberta_distance_index
from fairseq_ext.zcodepp.disentangled_attention import DisentangledSelfAttention


def contenders(batch, length, dim, heads, buckets, max_distance):
    """The three forward + backward calls on one input (a quarter of the first row padding), as
    ``.vanilla``, ``.hf``, ``.ours`` (each returns its output); HF's module and its output layer
    hold our random weights (``.same_output()``: whether the outputs agree on the real tokens)."""
    torch.manual_seed(0)
    x = torch.randn(batch, length, dim, requires_grad=True)
    padding = torch.zeros(batch, length, dtype=torch.bool)
    padding[0, length - length // 4:] = True  # some padding, as in a real batch
    rel = torch.randn(2 * buckets, dim, requires_grad=True)

    ours = DisentangledSelfAttention(dim, heads)
    index = deberta_distance_index(length, buckets, max_distance)
    hf = HFAttention(DebertaV2Config(
        hidden_size=dim, num_attention_heads=heads, relative_attention=True, position_buckets=buckets,
        max_relative_positions=max_distance, pos_att_type=["p2c", "c2p"], share_att_key=True,
        hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
    ))
    hf_out_proj = torch.nn.Linear(dim, dim)  # DebertaV2SelfOutput.dense: ours and fairseq's include it
    with torch.no_grad():
        for theirs, mine in ((hf.query_proj, ours.q_proj), (hf.key_proj, ours.k_proj), (hf.value_proj, ours.v_proj),
                             (hf_out_proj, ours.out_proj)):
            theirs.weight.copy_(mine.weight)
            theirs.bias.copy_(mine.bias)
    keep = (~padding).long()
    hf_mask = keep[:, None, :, None] * keep[:, None, None, :]
    vanilla = MultiheadAttention(dim, heads, self_attention=True)

    def run_ours():
        out = ours(x, padding, rel, index)
        out.sum().backward()
        return out

    def run_hf():
        out = hf_out_proj(hf(x, hf_mask, rel_embeddings=rel)[0])
        out.sum().backward()
        return out

    def run_vanilla():
        t_first = x.transpose(0, 1)  # (T, B, C)
        out = vanilla(t_first, t_first, t_first, key_padding_mask=padding, need_weights=False)[0]
        out.sum().backward()
        return out

    def same_output(tolerance=1e-4):
        real = ~padding  # HF zeroes the rows of padded queries, ours leaves them to the caller
        return torch.allclose(run_ours()[real], run_hf()[real], atol=tolerance, rtol=tolerance)

    return SimpleNamespace(vanilla=run_vanilla, hf=run_hf, ours=run_ours, same_output=same_output)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--length", type=int, default=512, help="tokens per example")
    parser.add_argument("--batch", type=int, default=4, help="examples per batch")
    parser.add_argument("--dim", type=int, default=768, help="model width (base: 768)")
    parser.add_argument("--heads", type=int, default=12, help="attention heads (base: 12)")
    parser.add_argument("--buckets", type=int, default=256, help="relative position buckets")
    parser.add_argument("--max-distance", type=int, default=512, help="max relative distance")
    parser.add_argument("--repeats", type=int, default=10, help="timed runs (the best is reported)")
    parser.add_argument("--warmup", type=int, default=2, help="untimed runs first")
    parser.add_argument("--clock", choices=sorted(CLOCKS), default="cpu",
                        help="cpu: process CPU seconds (default; robust on a shared machine), wall: elapsed")
    args = parser.parse_args(argv)
    runs = contenders(args.batch, args.length, args.dim, args.heads, args.buckets, args.max_distance)
    batch, length, dim = args.batch, args.length, args.dim
    names = ("vanilla (fairseq MultiheadAttention)", "HF DebertaV2 DisentangledSelfAttention",
             "ours (DisentangledSelfAttention)")
    # best of N: the least disturbed by other jobs on a shared machine
    best = interleaved([runs.vanilla, runs.hf, runs.ours], args.warmup, args.repeats, CLOCKS[args.clock], reduce=min)
    results = dict(zip(names, best))
    base, hf_time = results["vanilla (fairseq MultiheadAttention)"], results["HF DebertaV2 DisentangledSelfAttention"]
    print(f"forward + backward, batch {batch} x {length} tokens, width {dim}, {args.heads} heads, "
          f"{torch.get_num_threads()} threads, {args.clock} time, best of {args.repeats}\n")
    print(f"| attention | {args.clock} ms | vs vanilla | vs HF |")
    print("| --- | ---: | ---: | ---: |")
    for name, seconds in results.items():
        print(f"| {name} | {1000 * seconds:.1f} | {seconds / base:.2f}x | {seconds / hf_time:.2f}x |")


if __name__ == "__main__":
    main()
