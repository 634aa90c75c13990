"""Z-Code++'s disentangled attention (DeBERTa-v3's, section 2.2) against vanilla attention of the
same size and against HF DeBERTa-v2's ``DisentangledSelfAttention``: forward + backward.

The modules of :func:`benchmarks.zcodepp_attention.contenders`: the same width, heads and input
(a quarter of one row padding), q/k/v and output projections on every side (HF's module followed
by its output dense layer), one relative table of 256 buckets up to distance 512; HF holds our
weights and the outputs are checked equal on the real tokens. Vanilla is fairseq's
``MultiheadAttention`` (torch's fused attention kernel).
"""

from benchmarks.zcodepp_attention import contenders

from . import Comparison

#: (batch, tokens, width, heads, buckets, max distance)
SIZES = {"paper": (4, 512, 768, 12, 256, 512), "small": (2, 256, 256, 4, 256, 512)}


def comparisons(args):
    batch, length, dim, heads, buckets, max_distance = SIZES[args.size]
    runs = contenders(batch, length, dim, heads, buckets, max_distance)
    same = runs.same_output()
    measure = "attention forward + backward"
    rows = [
        Comparison(measure, runs.ours, runs.vanilla, "vanilla attention (fairseq MultiheadAttention)",
                   units=batch * length, note="goal: at most 1.5x vanilla's time (ratio at least 0.67)"),
        Comparison(measure, runs.ours, runs.hf, "HF DebertaV2 DisentangledSelfAttention, same weights",
                   units=batch * length, check="same output" if same else "outputs differ"),
    ]
    setting = (f"batch {batch} x {length} tokens, {dim} wide, {heads} heads, {buckets} buckets up to distance "
               f"{max_distance}, random init.")
    return setting, rows
