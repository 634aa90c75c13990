"""Question-generation scores of a hypothesis file against a reference file
(``python -m fairseq_ext.cli.qg``): BLEU-4 (sacrebleu, equal to ``sacrebleu REF -i HYP -w 2``),
ROUGE-L (the plugin's ROUGE-1.5.5 figures) and METEOR when nltk's WordNet data are installed.
The published figures (Du et al. 2017's scripts) use tokenized, lower-cased BLEU-4 and METEOR
1.5: not the same numbers.
"""



from fairseq_ext.scoring.rouge.files import read_lines
from fairseq_ext.scoring.rouge.scores import score_corpus

from .bleu import BleuStats, bleu_metric, bleu_signature
from .meteor import METEOR_NAME, corpus_meteor, meteor_unavailable_reason


def score_files(hyp_path, ref_path, tokenize=None, lowercase=False) -> dict:
    """Every score of ``hyp_path`` against ``ref_path`` as a dict (scores x 100, unrounded)."""
    hyps, refs = read_lines(hyp_path), read_lines(ref_path)
    if len(hyps) != len(refs):
        raise ValueError(f"{hyp_path} has {len(hyps)} lines but {ref_path} has {len(refs)}: "
                         "one hypothesis per reference line")
    if not hyps:
        raise ValueError(f"{hyp_path}: no line to score")
    metric = bleu_metric(tokenize, lowercase)
    bleu = BleuStats.of(metric, hyps, refs).score(metric)
    rouge = score_corpus(hyps, refs, max_n=0, rouge_l=True)["rougeL"]
    result = {
        "pairs": len(hyps),
        "bleu": bleu.score,
        "bleu_signature": bleu_signature(metric),
        "bleu_precisions": bleu.precisions,
        "bleu_bp": bleu.bp,
        "rougeL": 100 * rouge["f"],
        "rougeL_conf_int": [100 * v for v in rouge["f_conf_int"]],
        "meteor": None,
        "meteor_note": meteor_unavailable_reason(),
    }
    if result["meteor_note"] is None:
        result["meteor"], result["meteor_note"] = corpus_meteor(hyps, refs), METEOR_NAME
    return result


def format_scores(result: dict, width: int = 2) -> str:
    """The three lines the command prints."""
    precisions = "/".join(f"{p:.1f}" for p in result["bleu_precisions"])
    low, high = result["rougeL_conf_int"]
    meteor = (f"METEOR   {result['meteor']:.{width}f}  {result['meteor_note']}" if result["meteor"] is not None
              else f"METEOR   not computed: {result['meteor_note']}")
    return "\n".join([
        f"BLEU-4   {result['bleu']:.{width}f}  sacrebleu {result['bleu_signature']}  "
        f"({precisions}, BP {result['bleu_bp']:.3f}, {result['pairs']} pairs)",
        f"ROUGE-L  {result['rougeL']:.{width}f}  F1 x 100, ROUGE-1.5.5 (fairseq_ext.scoring.rouge), "
        f"95% interval {low:.{width}f}-{high:.{width}f}",
        meteor,
    ])  # fmt: skip
