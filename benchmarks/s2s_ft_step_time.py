"""s2s-ft fine-tuning step time of the three methods side by side.

One training step = forward, the ``s2s_ft`` criterion (label smoothing 0.1) and backward, on
the same random batch for causal, masked and pseudo-masked fine-tuning. Prints a Markdown
table of the best milliseconds per step (the machine is shared: the minimum is the least
disturbed), tokens in the packed sequence and the ratio to causal::

    OMP_NUM_THREADS=1 python -m benchmarks.s2s_ft_step_time [--arch minilm] [--batch 8]
"""

import argparse
import time
from types import SimpleNamespace

import torch

from benchmarks.s2s_ft_decode_speed import SIZES, build
from user_dir.criterions.s2s_ft import S2SFTCriterion

METHODS = ("causal", "masked", "pseudo")


def make_sample(d, batch, source, target, generator):
    src = torch.randint(d.nspecial, len(d) - 1, (batch, source), generator=generator)
    src[:, -1] = d.eos()
    tgt = torch.randint(d.nspecial, len(d) - 1, (batch, target), generator=generator)
    tgt[:, -1] = d.eos()
    prev = torch.cat([torch.full((batch, 1), d.eos()), tgt[:, :-1]], dim=1)
    return {
        "net_input": {"src_tokens": src, "src_lengths": torch.full((batch,), source), "prev_output_tokens": prev},
        "target": tgt,
        "ntokens": tgt.numel(),
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--arch", choices=sorted(SIZES), default="minilm")
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--source", type=int, default=256)
    parser.add_argument("--target", type=int, default=96)
    parser.add_argument("--vocab", type=int, default=30522)
    parser.add_argument("--steps", type=int, default=3, help="timed steps (after one warm-up step)")
    parser.add_argument("--target-mask-prob", type=float, default=0.5)
    args = parser.parse_args(argv)
    print(f"arch {args.arch}, batch {args.batch}, source {args.source}, target {args.target}, "
          f"{torch.get_num_threads()} thread(s), best of {args.steps} steps\n")  # fmt: skip
    print("| method | ms / step | rows per example | predicted tokens per example | vs causal |")
    print("|---|---|---|---|---|")
    results = {}
    for method in METHODS:
        torch.manual_seed(0)
        model, d = build(args.arch, method, args.vocab, args.source, args.target)
        model.cfg.target_mask_prob = args.target_mask_prob
        model.train()
        task = SimpleNamespace(target_dictionary=d)
        criterion = S2SFTCriterion(task, sentence_avg=False, label_smoothing=0.1)
        sample = make_sample(d, args.batch, args.source, args.target, torch.Generator().manual_seed(1))
        times, predicted = [], 0
        for step in range(args.steps + 1):
            start = time.perf_counter()
            loss, _, log = criterion(model, sample)
            loss.backward()
            model.zero_grad(set_to_none=True)
            if step:  # the first step warms up
                times.append(time.perf_counter() - start)
                predicted += log["npredicted"]
        ms = 1000 * min(times)
        rows = 1 + args.source + (2 if method == "pseudo" else 1) * args.target
        results[method] = ms
        print(f"| {method} | {ms:.0f} | {rows} | {predicted / args.steps / args.batch:.1f} | "
              f"{ms / results['causal']:.2f}x |")


if __name__ == "__main__":
    main()
