"""Whole papers: the longest ACLSum paper body, untruncated, through one ``fairseq-train`` update
and ``fairseq-generate``, for BART-LS (each ``--encoder-attention``) and Z-Code++ with FiE, at
tiny sizes; the peak memory of every run.

The paper is the longest body of all ACLSum splits (``aclsum_long``'s source, read offline from
the installed ``aclsum`` package). It is written as the single document of the train, valid and
test splits of a corpus directory and prepared with ``python -m preprocess.prepare`` (its own
sentencepiece model, ``--vocab-size``). Training and generation run with
``--no-truncate-source`` and ``--max-source-positions`` above the paper's length, so fairseq's
size filter would refuse the example rather than cut it (and generation checks that a
hypothesis came out). Each run is a fresh ``fairseq-train`` / ``fairseq-generate`` process; its
peak is the process's whole ``ru_maxrss`` (from ``wait4``), the parent kills it above
``--cap-mib`` (or the machine's available memory minus ``--margin-mib``).

    OMP_NUM_THREADS=1 python -m benchmarks.long_paper --out /tmp/long_paper
"""

import argparse
import json
import re
import shutil
import sys
import time
from pathlib import Path

from benchmarks.memory import available_mib, run_capped, single_threaded_env

REPO = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
# (name, arch, model flags); FiE chunk 256 as in the paper, the memory-efficient global layer
RUNS = {
    "bart_ls_block": ("bart_ls_tiny", ["--encoder-attention", "block", "--block-size", "1024"]),
    "bart_ls_overlapping": ("bart_ls_tiny", ["--encoder-attention", "overlapping", "--block-size", "1024"]),
    "bart_ls_global": ("bart_ls_tiny", ["--encoder-attention", "global", "--block-size", "1024",
                                        "--global-tokens", "64"]),
    "bart_ls_full": ("bart_ls_tiny", ["--encoder-attention", "full", "--pooling-layers", "0"]),
    "zcodepp_fie": ("zcodepp_tiny", ["--fie-chunk-size", "256", "--share-all-embeddings"]),
}


def longest_paper():
    """(split, index, body, abstract) of the longest ACLSum paper body (whitespace tokens)."""
    from fairseq_ext.data.corpora import load_aclsum_long

    best = None
    for split in ("train", "valid", "test"):
        pairs = load_aclsum_long(split)
        for index, (body, abstract) in enumerate(zip(pairs.sources, pairs.targets)):
            if best is None or len(body.split()) > len(best[2].split()):
                best = (split, index, body, abstract)
    return best


def prepare(paper, out, vocab_size):
    """A corpus of the one paper in every split, binarized; returns the data-bin directory."""
    raw = out / "corpus"
    raw.mkdir(parents=True, exist_ok=True)
    _, _, body, abstract = paper
    for split in ("train", "valid", "test"):
        (raw / f"{split}.source").write_text(body.replace("\n", " ") + "\n", encoding="utf-8")
        (raw / f"{split}.target").write_text(abstract.replace("\n", " ") + "\n", encoding="utf-8")
    from preprocess import prepare as prepare_cli

    prepare_cli.main(["--corpus", str(raw), "--out", str(out / "data"), "--vocab-size", str(vocab_size)])
    return out / "data" / "bin"


def dictionary_size(data):
    """Symbols of the prepared dictionary (sentencepiece caps the vocabulary at what the corpus supports)."""
    return sum(1 for _ in open(data / "dict.source.txt", encoding="utf-8")) + 4  # + fairseq's specials


def source_tokens(data):
    """Subword tokens of the binarized test source (+ </s>)."""
    from fairseq.data import data_utils

    dataset = data_utils.load_indexed_dataset(str(data / "test.source-target.source"), None)
    if dataset is None:
        raise FileNotFoundError(f"no binarized test source in {data}")
    return int(dataset.sizes[0])


def updates(checkpoint):
    """Updates recorded in a fairseq checkpoint (0 if there is none)."""
    import torch

    if not checkpoint.is_file():
        return 0
    return torch.load(checkpoint, map_location="cpu", weights_only=False)["optimizer_history"][-1]["num_updates"]


def run(cmd, args, log):
    cap = min(args.cap_mib, available_mib() - args.margin_mib)
    start = time.time()
    result = run_capped(cmd, cap, env=single_threaded_env())
    log.write_text(result["stdout"] + "\n--- stderr ---\n" + result["stderr"], encoding="utf-8")
    return result, time.time() - start, cap


def outcome(succeeded, result, cap):
    """A table cell: yes, killed above the memory cap, or failed."""
    if succeeded:
        return "yes"
    return f"killed above {int(cap)} MiB" if result["killed"] else "failed"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, required=True, help="working directory (overwritten)")
    parser.add_argument("--runs", nargs="+", choices=sorted(RUNS), default=list(RUNS))
    parser.add_argument("--vocab-size", type=int, default=2000, help="sentencepiece vocabulary of the paper corpus")
    parser.add_argument("--cap-mib", type=float, default=12000, help="kill a run above this resident set")
    parser.add_argument("--margin-mib", type=float, default=3000, help="memory left to others at least")
    args = parser.parse_args(argv)
    shutil.rmtree(args.out, ignore_errors=True)
    paper = longest_paper()
    data = prepare(paper, args.out, args.vocab_size)
    tokens = source_tokens(data)
    positions = str(tokens + 8)
    print(f"paper: ACLSum {paper[0]} #{paper[1]}, {len(paper[2].split())} whitespace tokens, {tokens} subword "
          f"tokens (dictionary of {dictionary_size(data)} symbols, --vocab-size {args.vocab_size}); "
          f"load {open('/proc/loadavg').read().split()[:3]}\n")
    print("| run | train update | train peak MiB | train s | generate | generate peak MiB | generate s |")
    print("| --- | --- | ---: | ---: | --- | ---: | ---: |")
    summary = {}
    for name in args.runs:
        arch, flags = RUNS[name]
        save = args.out / "ckpt" / name
        common = ["--user-dir", str(REPO / "user_dir"), "--task", "abstractive_summarization", "--no-truncate-source",
                  "--max-source-positions", positions, "--max-target-positions", "512", "--num-workers", "0"]
        train = [str(BIN / "fairseq-train"), str(data), *common, "--arch", arch, *flags,
                 "--criterion", "label_smoothed_cross_entropy", "--optimizer", "adam", "--lr", "1e-4",
                 "--batch-size", "1", "--max-tokens", positions, "--max-update", "1", "--save-dir", str(save),
                 "--no-epoch-checkpoints", "--no-progress-bar", "--log-format", "simple", "--log-interval", "1",
                 "--required-batch-size-multiple", "1", "--disable-validation", "--seed", "1"]
        trained, train_s, cap = run(train, args, args.out / f"{name}.train.log")
        updated = trained["returncode"] == 0 and updates(save / "checkpoint_last.pt") == 1
        cells = [outcome(updated, trained, cap), f"{trained['maxrss_mib']:.0f}", f"{train_s:.0f}"]
        if updated:
            generate = [str(BIN / "fairseq-generate"), str(data), *common, "--path", str(save / "checkpoint_last.pt"),
                        "--gen-subset", "test", "--beam", "2", "--max-len-b", "10", "--batch-size", "1",
                        "--no-progress-bar"]
            generated, generate_s, cap = run(generate, args, args.out / f"{name}.generate.log")
            hypothesis = re.search(r"^H-0\t", generated["stdout"], flags=re.M) is not None
            cells += [outcome(hypothesis, generated, cap), f"{generated['maxrss_mib']:.0f}", f"{generate_s:.0f}"]
        else:
            cells += ["-", "-", "-"]
        summary[name] = cells
        print(f"| {name} | " + " | ".join(cells) + " |", flush=True)
    print(f"\nload at the end {open('/proc/loadavg').read().split()[:3]}; logs in {args.out}")
    (args.out / "summary.json").write_text(json.dumps({"tokens": tokens, "runs": summary}), encoding="utf-8")


if __name__ == "__main__":
    main()
