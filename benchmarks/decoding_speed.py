"""fairseq-generate's speed on the main job's test set: a baseline commit against this tree.

Both sides run the same command (beam 8 and the main job's decoding flags, one torch thread,
one process each, one after the other) on the same checkpoint and data; the baseline runs from
a temporary ``git worktree`` of ``--baseline``. Per run: pairs a second, wall, user and kernel
(sys) CPU seconds, the kernel's share of CPU time, and peak resident memory (the generate
process alone, from ``wait4``); then whether both wrote the same hypotheses. With and without
``--decode-words source`` (the constraint) unless ``--variants`` says otherwise.

    python -m benchmarks.decoding_speed --checkpoint runs/demo-s2s_ft_copy/checkpoints/checkpoint_best.pt \\
        --data data/aclsum_aspects_wp/bin --limit-pairs 60

``--limit-pairs N`` decodes the first N test pairs (a binarized copy of them is written under
``--workdir``); 0 decodes the whole split. Another family's checkpoint is measured with its own
flags in ``--generate-args`` (beam 8 there too), without the constraint variant:

    python -m benchmarks.decoding_speed --checkpoint runs/demo-bart/checkpoints/checkpoint_best.pt \
        --data data/aclsum/bin --variants "no constraint" --generate-args "--task abstractive_summarization \
        --beam 8 --min-len 40 --max-len-b 140 --no-repeat-ngram-size 3 --batch-size 8 --num-workers 0 \
        --max-source-positions 320 --max-target-positions 160 --required-batch-size-multiple 1"
"""

import argparse
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

#: the main job's decoding (scripts/demo/s2s_ft_copy.sh, per aspect), less the constraint
BASE_FLAGS = [
    "--task", "s2s_ft_summarization", "--required-batch-size-multiple", "1", "--batch-size", "16",
    "--beam", "8", "--lenpen", "1.0", "--min-len", "15", "--max-len-a", "0", "--max-len-b", "47",
    "--no-repeat-ngram-size", "2", "--max-source-positions", "256", "--max-target-positions", "48",
    "--num-workers", "0",
]  # fmt: skip
VARIANTS = {
    "constraint": ["--decode-words", "source", "--decode-words-bigram-bonus", "0.5"],
    "no constraint": [],
}


def limited_copy(data, subset, pairs, workdir):
    """A binarized folder holding the first ``pairs`` examples of ``subset`` (and the dictionaries)."""
    from fairseq.data import data_utils, indexed_dataset

    out = os.path.join(workdir, "data")
    os.makedirs(out, exist_ok=True)
    for name in os.listdir(data):
        if name.startswith("dict.") or name.endswith(".model") or name == "vocab.txt":
            shutil.copy(os.path.join(data, name), out)
    for side in ("source", "target"):
        prefix = os.path.join(data, f"{subset}.source-target.{side}")
        dataset = data_utils.load_indexed_dataset(prefix, None, "mmap")
        builder = indexed_dataset.make_builder(os.path.join(out, f"{subset}.source-target.{side}.bin"), "mmap")
        for i in range(min(pairs, len(dataset))):
            builder.add_item(dataset[i])
        builder.finalize(os.path.join(out, f"{subset}.source-target.{side}.idx"))
    return out


def run(tree, data, checkpoint, subset, base_flags, flags, extra_words):
    """One fairseq-generate from ``tree``: (output text, measurements)."""
    env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", PYTHONPATH=tree)
    for name in ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_"):
        env.pop(name, None)  # measure the code, not an allocator setting from the environment
    words = ["--decode-words-file", extra_words] if extra_words and "--decode-words" in flags else []
    program = shutil.which("fairseq-generate") or os.path.join(os.path.dirname(sys.executable), "fairseq-generate")
    command = [
        program, data, "--user-dir", os.path.join(tree, "user_dir"),
        "--path", checkpoint, "--gen-subset", subset, *base_flags, *flags, *words,
    ]  # fmt: skip
    start = time.perf_counter()
    with tempfile.TemporaryFile("w+") as out:
        process = subprocess.Popen(command, cwd=tree, env=env, stdout=out, stderr=subprocess.PIPE, text=True)
        _, status, usage = os.wait4(process.pid, 0)
        wall = time.perf_counter() - start
        stderr = process.stderr.read()
        if os.waitstatus_to_exitcode(status) != 0:
            raise SystemExit(f"fairseq-generate failed in {tree}:\n{stderr[-3000:]}")
        out.seek(0)
        text = out.read()
    pairs = len(re.findall(r"^H-\d+", text, flags=re.M))
    cpu = usage.ru_utime + usage.ru_stime
    return text, {
        "pairs": pairs, "wall": wall, "user": usage.ru_utime, "sys": usage.ru_stime,
        "sys_share": usage.ru_stime / cpu if cpu else 0.0, "peak_gb": usage.ru_maxrss / 2**20,
    }  # fmt: skip


def hypotheses(text):
    """Hypothesis text by id (the scores may differ in the last float digits)."""
    return {m.group(1): m.group(2) for m in re.finditer(r"^H-(\d+)\t[^\t]*\t(.*)$", text, flags=re.M)}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--checkpoint", required=True)
    parser.add_argument("--data", required=True, help="the binarized folder (OUT/bin)")
    parser.add_argument("--subset", default="test")
    parser.add_argument("--limit-pairs", type=int, default=60, help="first N pairs of the subset (0: all)")
    parser.add_argument("--baseline", default="97581c6", help="git commit of the code to compare with")
    parser.add_argument("--words-file", default=None, help="--decode-words-file for the constraint variant")
    parser.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=list(VARIANTS))
    parser.add_argument("--generate-args", default=None,
                        help="fairseq-generate's flags (one string) instead of the main job's, for another family")
    parser.add_argument("--workdir", default=None, help="where the baseline tree and data copy go (a temp dir)")
    args = parser.parse_args()

    workdir = args.workdir or tempfile.mkdtemp(prefix="decoding_speed.")
    baseline = os.path.join(workdir, "baseline")
    if not os.path.isdir(baseline):
        subprocess.run(["git", "-C", REPO, "worktree", "add", "--detach", baseline, args.baseline],
                       check=True, capture_output=True)  # fmt: skip
    data = limited_copy(args.data, args.subset, args.limit_pairs, workdir) if args.limit_pairs else args.data
    checkpoint = os.path.abspath(args.checkpoint)
    base_flags = shlex.split(args.generate_args) if args.generate_args else BASE_FLAGS
    words = os.path.abspath(args.words_file) if args.words_file else None
    print(f"checkpoint {args.checkpoint}, {args.subset} of {args.data}"
          f"{f' (first {args.limit_pairs} pairs)' if args.limit_pairs else ''}, beam 8, one thread;"
          f" baseline {args.baseline}\n")  # fmt: skip
    print("| decoding | code | pairs/s | wall (s) | user (s) | sys (s) | sys share | peak (GB) | speed-up "
          "| same hypotheses |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    try:
        for variant in args.variants:
            flags = VARIANTS[variant]
            old_text, old = run(baseline, data, checkpoint, args.subset, base_flags, flags, words)
            new_text, new = run(REPO, data, checkpoint, args.subset, base_flags, flags, words)
            same = hypotheses(old_text) == hypotheses(new_text)
            for code, m in ((f"baseline {args.baseline}", old), ("this tree", new)):
                rate = m["pairs"] / m["wall"]
                speed = rate / (old["pairs"] / old["wall"])
                print(f"| {variant} | {code} | {rate:.2f} | {m['wall']:.1f} | {m['user']:.1f} | {m['sys']:.1f} "
                      f"| {m['sys_share']:.0%} | {m['peak_gb']:.2f} | {speed:.2f}x | {'yes' if same else 'NO'} |")
            sys.stdout.flush()
    finally:
        if not args.workdir:
            subprocess.run(["git", "-C", REPO, "worktree", "remove", "--force", baseline], capture_output=True)
            shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
