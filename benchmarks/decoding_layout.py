"""Transformer-SM greedy decoding with the weights in each decoding layout, paired in one process.

``prepare_for_inference_`` stores the widening weights transposed and runs the output layer as
``E @ x^T`` where torch's CPU kernels run AVX2, and leaves the weights as ``nn.Linear`` keeps
them elsewhere (``fairseq_ext.modules.decoding_layout``). This times both layouts of the same
model (the paper size of ``benchmarks.peers``: 12 layers, 768 wide, vocabulary 8000, 400-token
articles, batch 2, 64 new tokens) through fairseq's SequenceGenerator, interleaved, and says
which layout this machine gets and whether the two decode the same tokens.

    OMP_NUM_THREADS=1 python -m benchmarks.decoding_layout --repeats 7
"""

import argparse
import copy
import statistics
from unittest import mock

import torch

from benchmarks.peers import transformer_sm as peers
from benchmarks.timing import interleaved
from fairseq_ext.modules import decoding_layout

LAYOUTS = {"transposed (the AVX2 choice)": True, "as nn.Linear keeps them": False}


def laid_out(model, transposed):
    """A copy of ``model`` prepared for decoding with the layout chosen by ``transposed``."""
    model = copy.deepcopy(model)
    with _layout(transposed):
        peers.prepare_for_decoding(model)
    return model


def _layout(transposed):
    """``transposed_layout_pays`` answering ``transposed`` while the block runs."""
    return mock.patch.object(decoding_layout, "transposed_layout_pays", lambda: transposed)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", choices=sorted(peers.SIZES), default="paper")
    parser.add_argument("--warmup", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    layers, width, heads, vocab, article, summary, batch = peers.SIZES[args.size]
    with _layout(False):  # build() prepares its model: nn.Linear's layout is the unchanged one
        task, model, hf = peers.build(layers, width, heads, vocab, article, summary)
    runs, outputs = [], []
    for transposed in LAYOUTS.values():
        run, _, out = peers.decoders(task, laid_out(model, transposed), hf, batch, article, summary, beam=1)

        def timed(run=run, transposed=transposed):
            with _layout(transposed):
                run()

        runs.append(timed)
        outputs.append(out)
    rounds = interleaved(runs, args.warmup, args.repeats, reduce=list)  # each layout's seconds, round by round
    machine = "transposed" if decoding_layout.transposed_layout_pays() else "as nn.Linear keeps them"
    print(f"torch {torch.__version__}, {args.threads} thread(s), CPU capability "
          f"{torch.backends.cpu.get_cpu_capability()} (this machine: {machine}); greedy, {batch} x "
          f"{article}-token articles, {summary} new tokens; CPU s, {args.repeats} interleaved rounds\n")
    print("| layout | median | rounds |\n|---|---:|---|")
    for name, times in zip(LAYOUTS, rounds):
        print(f"| {name} | {statistics.median(times):.3f} | {' '.join(f'{t:.2f}' for t in times)} |")
    ratio = statistics.median(rounds[0]) / statistics.median(rounds[1])
    same = outputs[0]["ours"] == outputs[1]["ours"]
    print(f"\nthe transposed layout's time / nn.Linear's: {ratio:.2f}x; {'same tokens' if same else 'tokens differ'}")


if __name__ == "__main__":
    main()
