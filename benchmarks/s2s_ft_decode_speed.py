"""s2s-ft decoding speed: the per-layer key/value cache against re-running the sequence.

Greedy decoding of ``--tokens`` new tokens for a batch of sources, three ways:

* cached: the source is encoded once, every step computes only the new rows (one for causal;
  the chosen token and its [P] for pseudo-masked) against cached keys/values (what
  fairseq-generate does through ``incremental_state``);
* re-run targets: the source keys/values are kept, but every step recomputes all target rows;
* re-run all: every step recomputes the whole ``[source; target]`` sequence (no cache at all).

All three produce the same tokens (checked). Prints a Markdown table of seconds and ratios::

    OMP_NUM_THREADS=1 python -m benchmarks.s2s_ft_decode_speed [--arch minilm] [--tokens 64]
"""

import argparse
import time
from types import SimpleNamespace

import torch
from fairseq.data import Dictionary

import user_dir  # noqa: F401
from user_dir.models.s2s_ft import S2SFTConfig, S2SFTModel

SIZES = {
    "minilm": dict(embed_dim=384, layers=6, attention_heads=12, ffn_embed_dim=1536),
    "tiny": dict(embed_dim=64, layers=2, attention_heads=4, ffn_embed_dim=128),
}


def build(arch, method, vocab, source, tokens):
    d = Dictionary()
    for i in range(vocab):
        d.add_symbol(f"w{i}")
    d.add_symbol("<mask>")
    cfg = S2SFTConfig(s2s_method=method, max_positions=512, max_source_positions=source,
                      max_target_positions=tokens + 1, **SIZES[arch])  # fmt: skip
    task = SimpleNamespace(source_dictionary=d, target_dictionary=d, cfg=SimpleNamespace(left_pad_target=False))
    return S2SFTModel.build_model(cfg, task).eval(), d


def greedy(model, d, src, lengths, steps, mode):
    """Greedy tokens ``(B, steps)``; ``mode`` in cached / rerun_targets / rerun_all."""
    prev = torch.full((src.size(0), 1), d.eos())
    encoder_out = model.encoder(src, lengths)
    state = {}
    for _ in range(steps):
        if mode == "cached":
            logits, _ = model.decoder(prev, encoder_out, incremental_state=state)
        elif mode == "rerun_targets":
            logits, _ = model.decoder(prev, encoder_out)
        else:
            logits, _ = model.decoder(prev, model.encoder(src, lengths))
        prev = torch.cat([prev, logits[:, -1].argmax(-1, keepdim=True)], dim=1)
    return prev[:, 1:]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--arch", choices=sorted(SIZES), default="minilm")
    parser.add_argument("--methods", nargs="+", default=["pseudo", "causal"])
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--source", type=int, default=256, help="source tokens")
    parser.add_argument("--tokens", type=int, default=64, help="tokens to generate")
    parser.add_argument("--vocab", type=int, default=30522)
    parser.add_argument("--repeats", type=int, default=2, help="best of N")
    args = parser.parse_args(argv)
    torch.manual_seed(0)
    print(f"arch {args.arch}, batch {args.batch}, source {args.source}, {args.tokens} new tokens, "
          f"{torch.get_num_threads()} thread(s), best of {args.repeats}\n")  # fmt: skip
    print("| method | cached (s) | re-run targets (s) | re-run all (s) | speed-up vs re-run all | vs re-run targets |")
    print("|---|---|---|---|---|---|")
    for method in args.methods:
        model, d = build(args.arch, method, args.vocab, args.source, args.tokens)
        src = torch.randint(d.nspecial, len(d) - 1, (args.batch, args.source))
        src[:, -1] = d.eos()
        lengths = torch.full((args.batch,), args.source)
        seconds, outputs = {}, {}
        with torch.no_grad():
            for mode in ("cached", "rerun_targets", "rerun_all"):
                best = float("inf")
                for _ in range(args.repeats):
                    start = time.perf_counter()
                    outputs[mode] = greedy(model, d, src, lengths, args.tokens, mode)
                    best = min(best, time.perf_counter() - start)
                seconds[mode] = best
        assert torch.equal(outputs["cached"], outputs["rerun_targets"]), "cache changed the output"
        assert torch.equal(outputs["cached"], outputs["rerun_all"]), "cache changed the output"
        c, t, a = seconds["cached"], seconds["rerun_targets"], seconds["rerun_all"]
        print(f"| {method} | {c:.2f} | {t:.2f} | {a:.2f} | {a / c:.1f}x | {t / c:.1f}x |")


if __name__ == "__main__":
    main()
