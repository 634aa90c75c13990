"""``python -m fairseq_ext.cli.mbr``: choose one summary per source from fairseq-generate's n-best
lists, by minimum Bayes risk and, for documents summarized a line at a time, against phrases
repeated across the document's lines (:mod:`fairseq_ext.decoding.mbr`).

    fairseq-generate DATA --path CKPT --beam 8 --nbest 8 ... > generate-valid.txt
    python -m fairseq_ext.cli.mbr generate-valid.txt --lines-per-document 3 --repeat-penalty 0.05 \\
        --out valid.hyp --out-words valid.tokens.hyp

``--out`` gets the chosen D- lines (the detokenized text, restored to the source's surface when
fairseq-generate restored it), ``--out-words`` the chosen H- lines with WordPieces joined into
words (``--wordpiece``, the default; the text ROUGE scores in the main job) or the D- lines
(``--no-wordpiece``), one source per line in id order. Every id needs the same number of
hypotheses as the first; a missing id or a count that differs is an error naming it.
"""

import argparse
import logging
import math
import re
import sys
from pathlib import Path

from ..data.wordpiece import join_pieces
from ..decoding.mbr import Candidate, choose_document

logger = logging.getLogger("fairseq_ext.cli.mbr")

LINE = re.compile(r"^([HD])-(\d+)\t([^\t]*)\t(.*)$")


def read_nbest(path: Path):
    """``{id: [(score, H text, D text), ...]}`` in the order fairseq printed the hypotheses."""
    hyps, texts = {}, {}
    with path.open(encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            match = LINE.match(line.rstrip("\n"))
            if not match:
                continue
            kind, sid, score, text = match.groups()
            try:
                value = float(score)
            except ValueError:
                raise ValueError(f"{path}:{number}: the score {score!r} of {kind}-{sid} is not a number") from None
            (hyps if kind == "H" else texts).setdefault(int(sid), []).append((value, text))
    if not hyps:
        raise ValueError(f"{path}: no H- lines (is it fairseq-generate's output?)")
    ids = sorted(hyps)
    if ids != list(range(len(ids))):
        missing = sorted(set(range(ids[-1] + 1)) - set(ids))
        raise ValueError(f"{path}: no hypotheses for id(s) {missing[:10]} (a shard's output missing?)")
    nbest = len(hyps[0])
    result = {}
    for sid in ids:
        h, d = hyps[sid], texts.get(sid, [])
        if len(h) != nbest or len(d) != len(h):
            raise ValueError(f"{path}: id {sid} has {len(h)} H- and {len(d)} D- lines, expected {nbest} of each")
        result[sid] = [(score, htext, dtext) for (score, htext), (_, dtext) in zip(h, d)]
    return result


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("generated", type=Path, help="fairseq-generate's output, with --nbest K")
    parser.add_argument("--out", type=Path, required=True, help="the chosen D- lines, one source a line")
    parser.add_argument("--out-words", type=Path, help="the chosen summaries as words (see --wordpiece)")
    parser.add_argument("--lines-per-document", type=int, default=1,
                        help="consecutive ids that form one document, chosen jointly (ACLSum aspects: 3)")
    parser.add_argument("--orders", type=int, nargs="+", default=[2], help="ROUGE n of the utility (mean F)")
    parser.add_argument("--temperature", type=float, default=math.inf,
                        help="weights softmax(score / T) of the other candidates (default: uniform)")
    parser.add_argument("--repeat-penalty", type=float, default=0.0,
                        help="subtracted per word bigram that repeats an earlier one in the joined document")
    parser.add_argument("--no-mbr", dest="mbr", action="store_false",
                        help="rank by the beam's score, not the expected ROUGE (--repeat-penalty still applies)")
    parser.add_argument("--no-wordpiece", dest="wordpiece", action="store_false",
                        help="choose on and write the D- lines as words (sentencepiece data)")
    args = parser.parse_args(argv)
    logging.basicConfig(format="%(levelname)s | %(name)s | %(message)s", level=logging.INFO, stream=sys.stderr)
    if args.lines_per_document < 1:
        parser.error("--lines-per-document must be at least 1")
    try:
        nbest = read_nbest(args.generated)
    except (OSError, ValueError) as err:
        parser.error(str(err))
    count = len(nbest)
    if count % args.lines_per_document:
        parser.error(f"{args.generated}: {count} sources are not documents of {args.lines_per_document} lines")

    def as_words(h):
        return join_pieces(h[1]) if args.wordpiece else h[2]

    chosen_text, chosen_words, moved = [], [], 0
    for start in range(0, count, args.lines_per_document):
        lines = [nbest[sid] for sid in range(start, start + args.lines_per_document)]
        candidates = [[Candidate(h[0], as_words(h)) for h in line] for line in lines]
        try:
            picks = choose_document(candidates, args.orders, args.temperature, args.repeat_penalty, args.mbr)
        except ValueError as err:
            parser.error(f"document of ids {start}-{start + args.lines_per_document - 1}: {err}")
        for line, pick in zip(lines, picks):
            moved += pick != 0
            chosen_text.append(line[pick][2])
            chosen_words.append(as_words(line[pick]))
    args.out.write_text("".join(t + "\n" for t in chosen_text), encoding="utf-8")
    if args.out_words:
        args.out_words.write_text("".join(t + "\n" for t in chosen_words), encoding="utf-8")
    logger.info("%d sources, %d candidates each: %d chose another candidate than the beam's best (%.1f%%)",
                count, len(nbest[0]), moved, 100.0 * moved / count)


if __name__ == "__main__":
    main()
