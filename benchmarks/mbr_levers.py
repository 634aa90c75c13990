"""Choosing among the beam's candidates, one setting a row, on one fairseq-generate output with
``--nbest K`` (issue 32's levers: minimum Bayes risk, phrases repeated across a paper's aspects).

    python -m benchmarks.mbr_levers runs/levers/main-nbest8/generate-valid.txt \\
        --references data/aclsum_aspects_wp/raw/valid.target --lead runs/levers/lead3-valid.hyp \\
        --lines-per-document 3

Every row chooses with :func:`fairseq_ext.decoding.mbr.choose_document` and scores the joined
documents with the project's files2rouge-compatible ROUGE (F, no stemming), the fluency figures
(:mod:`fairseq_ext.scoring.fluency`) and, with ``--lead``, the paired test of the row against
LEAD-3 on the same documents (:mod:`fairseq_ext.scoring.rouge.paired`, 10,000 resamples, seed 1).
The first row is the beam's best, what the main job writes.
"""

import argparse
from pathlib import Path

from fairseq_ext.cli.mbr import read_nbest
from fairseq_ext.data.join_lines import join_lines
from fairseq_ext.data.wordpiece import join_pieces
from fairseq_ext.decoding.mbr import Candidate, choose_document
from fairseq_ext.scoring.fluency import fluency
from fairseq_ext.scoring.rouge.paired import compare_systems
from fairseq_ext.scoring.rouge.scores import score_corpus, split_sentences

#: (name, keyword arguments of choose_document)
SETTINGS = [
    ("beam's best (the main job)", dict(mbr=False)),
    ("MBR ROUGE-2, uniform", dict(orders=(2,))),
    ("MBR ROUGE-1+2, uniform", dict(orders=(1, 2))),
    ("MBR ROUGE-2, softmax T=1", dict(orders=(2,), temperature=1.0)),
    ("MBR ROUGE-2, softmax T=0.3", dict(orders=(2,), temperature=0.3)),
    ("beam score, repeat penalty 0.05", dict(mbr=False, repeat_penalty=0.05)),
    ("beam score, repeat penalty 0.2", dict(mbr=False, repeat_penalty=0.2)),
    ("MBR ROUGE-2, repeat penalty 0.01", dict(orders=(2,), repeat_penalty=0.01)),
    ("MBR ROUGE-2, repeat penalty 0.03", dict(orders=(2,), repeat_penalty=0.03)),
    ("MBR ROUGE-2, repeat penalty 0.1", dict(orders=(2,), repeat_penalty=0.1)),
    ("MBR ROUGE-1+2, repeat penalty 0.03", dict(orders=(1, 2), repeat_penalty=0.03)),
    ("MBR ROUGE-2, repeat penalty 0.3", dict(orders=(2,), repeat_penalty=0.3)),
    ("beam score, repeat penalty 1.0", dict(mbr=False, repeat_penalty=1.0)),
]


def choose(nbest, every, **kwargs):
    """The chosen summaries (words), one per source."""
    chosen = []
    for start in range(0, len(nbest), every):
        lines = [[Candidate(h[0], join_pieces(h[1])) for h in nbest[sid]] for sid in range(start, start + every)]
        picks = choose_document(lines, **kwargs)
        chosen += [line[pick].text for line, pick in zip(lines, picks)]
    return chosen


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("generated", type=Path, help="fairseq-generate's output with --nbest K (WordPiece data)")
    parser.add_argument("--references", type=Path, required=True, help="raw targets, one a source")
    parser.add_argument("--lead", type=Path, help="LEAD-3 summaries, one a document, for the paired test")
    parser.add_argument("--lines-per-document", type=int, default=1)
    parser.add_argument("--settings", nargs="+", help="names of SETTINGS rows to run (default: all)")
    args = parser.parse_args(argv)
    nbest = read_nbest(args.generated)
    every = args.lines_per_document
    refs = join_lines(args.references.read_text(encoding="utf-8").splitlines(), every)
    lead = args.lead.read_text(encoding="utf-8").splitlines() if args.lead else None
    print(f"{args.generated}: {len(nbest)} sources, {len(nbest[0])} candidates each, {len(refs)} documents")
    print("| setting | R1/R2/RL F | R2 - LEAD-3 (p) | back-to-back repeats | repeated bigrams | moved |")
    print("|---|---|---|---|---|---|")
    best = choose(nbest, every, mbr=False)
    for name, kwargs in SETTINGS:
        if args.settings and name not in args.settings:
            continue
        chosen = choose(nbest, every, **kwargs)
        docs = join_lines(chosen, every)
        scores = score_corpus(docs, refs, resamples=0)
        rouge = "/".join(f"{100 * scores[k]['f']:.2f}" for k in ("rouge1", "rouge2", "rougeL"))
        versus = "-"
        if lead:
            result = compare_systems([split_sentences(d) for d in docs], [split_sentences(x) for x in lead],
                                     [split_sentences(r) for r in refs])
            r2 = next(r for r in result if r.key == "rouge2")
            versus = f"{100 * r2.difference:+.2f} (p {r2.p_value:.3f})"
        f = fluency(docs)
        moved = sum(a != b for a, b in zip(chosen, best))
        print(f"| {name} | {rouge} | {versus} | {f.repeat_share:.0f}% | {f.bigram_share:.1f}% | "
              f"{100 * moved / len(chosen):.0f}% |", flush=True)


if __name__ == "__main__":
    main()
