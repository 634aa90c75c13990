"""Split a py-spy profile of the main job into its parts: a table of where the samples went.

py-spy samples every Python process of a command (``--subprocesses``) with its stacks; this
script sorts each sample into the first part (below) whose marker occurs in its stack, and
prints the seconds each part's samples stand for (samples / rate) in each program
(fairseq-train, whose validation decodes too, fairseq-generate, the rest), and its share.

    py-spy record --subprocesses --rate 20 --format raw --output main.raw -- bash scripts/run_demo.sh
    python benchmarks/profile_split.py main.raw --rate 20

Parts are checked in order, so a finer part comes before the coarser one that holds it (the
n-gram blocker and the word constraint are inside beam search; beam search, the copy heads
and the model's forward are inside validation when fairseq-train decodes; every stack starts
at a module's top level, so imports are told by importlib's frames). A sample that matches no
marker is counted as "other". Samples are CPU time: py-spy leaves out idle threads.
"""

import argparse
import collections
from typing import Dict, List, Tuple

#: (part, markers): a sample belongs to the first part one of whose markers is in its stack
PARTS: List[Tuple[str, Tuple[str, ...]]] = [
    # whole processes (py-spy's root frame names the process and its command line)
    ("data preparation (python -m preprocess.*)", ("preprocess.prepare", "fairseq_cli/preprocess")),
    ("ROUGE, LEAD-3, tables and plots", ("files2rouge", "fairseq_ext.scoring.rouge", "rouge_table", "plot_training",
                                         "join_lines")),
    # inside fairseq-train and fairseq-generate
    ("checkpoint saving", ("save_checkpoint",)),
    ("decoding: --no-repeat-ngram-size", ("NGramRepeatBlock",)),
    ("decoding: --decode-words (constraint + bigram bonus)", ("WordConstraint.",)),
    ("decoding: copy heads (pointer-generator mixture)", ("copy_mixture", "S2SFTDecoder._extra")),
    ("decoding: cache and beam reorders", ("reorder_incremental_state", "reorder_encoder_out")),
    ("decoding: model forward (encoder)", ("forward_encoder",)),
    ("decoding: model forward (decoder)", ("forward_decoder",)),
    ("decoding: beam search bookkeeping", ("SequenceGenerator",)),
    ("validation: loss and ROUGE scoring", ("valid_step", "validate_and_save")),
    ("training: optimizer step", ("optimizer.step", "adam.py", "clip_grad_norm", "clip_grad_norm_")),
    ("training: backward", ("backward",)),
    ("training: forward + loss", ("train_step",)),
    ("data loading and batching", ("iterators.py", "collater", "collate", "data_utils")),
    ("set-up: imports, model and data loading", ("_find_and_load", "load_checkpoint", "from_hf", "setup_task",
                                                 "build_model", "load_dataset", "build_generator")),
]

#: (column, marker in the process's command line): which program a sample was taken in
PROGRAMS = [("fairseq-train", "fairseq-train"), ("fairseq-generate", "fairseq-generate")]


def program_of(stack: str) -> str:
    """The program of a sample: py-spy names each process of the tree and its command line at
    the top of the stack (parent first), so the last such frame is the sampled process."""
    process = [frame for frame in stack.split(";") if frame.startswith("process ")][-1:] or [""]
    return next((name for name, marker in PROGRAMS if marker in process[0]), "other processes")


def split(lines, parts=PARTS) -> Dict[Tuple[str, str], int]:
    """Samples per (part, program) from py-spy's raw lines (``frame;frame;... count``)."""
    counts = collections.Counter()
    for line in lines:
        stack, _, n = line.rstrip("\n").rpartition(" ")
        if not stack or not n.isdigit():
            continue
        part = next((name for name, markers in parts if any(m in stack for m in markers)), "other")
        counts[part, program_of(stack)] += int(n)
    return counts


def table(counts: Dict[Tuple[str, str], int], rate: float) -> str:
    """Seconds of samples per part (rows) and program (columns), with each part's share."""
    total = sum(counts.values())
    programs = [name for name, _ in PROGRAMS] + ["other processes"]
    rows = ["| part | " + " | ".join(f"{p} (s)" for p in programs) + " | all (s) | share |",
            "|---|" + "---|" * (len(programs) + 2)]
    for part in [name for name, _ in PARTS] + ["other"]:
        cells = [counts.get((part, p), 0) for p in programs]
        if sum(cells):
            rows.append(f"| {part} | " + " | ".join(f"{c / rate:.0f}" for c in cells)
                        + f" | {sum(cells) / rate:.0f} | {sum(cells) / total:.1%} |")
    sums = [sum(v for (_, p), v in counts.items() if p == program) for program in programs]
    rows.append("| all | " + " | ".join(f"{c / rate:.0f}" for c in sums) + f" | {total / rate:.0f} | 100% |")
    return "\n".join(rows)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("profile", help="py-spy --format raw output")
    parser.add_argument("--rate", type=float, default=20.0, help="py-spy's --rate (samples per second)")
    args = parser.parse_args()
    with open(args.profile, encoding="utf-8", errors="replace") as f:
        print(table(split(f), args.rate))


if __name__ == "__main__":
    main()
