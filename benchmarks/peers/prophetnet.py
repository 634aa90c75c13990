"""ProphetNet against HF ``ProphetNetForConditionalGeneration.generate`` on the very same weights,
and its training step against fairseq's ``transformer`` of the same size.

A random HF ProphetNet is converted to ours by ``python -m fairseq_ext.cli.convert prophetnet``
and loaded as fairseq-generate loads it (:func:`benchmarks.prophetnet_speed.hf_and_ours`). Both
decode the same sources, beam 4, exactly ``new`` tokens (min length = max length; fairseq then
adds ``</s>``, one step more than HF's ``max_new_tokens``), ``[PAD]`` suppressed on both sides.
Ours runs with the predicting streams off (one row a step); HF runs all n streams every step.
The training step (forward, loss, backward, Adam) is ProphetNet n = 2 with
``ngram_language_loss`` against the transformer with ``label_smoothed_cross_entropy``, both
label smoothing 0.1, on one batch. The check: greedy (beam 1) tokens equal to HF's.
"""

import tempfile

from fairseq.criterions.label_smoothed_cross_entropy import LabelSmoothedCrossEntropyCriterion

from benchmarks import prophetnet_speed as speed
from user_dir.criterions.ngram_language_loss import NgramLanguageLossCriterion

from . import Comparison

#: (model size of prophetnet_speed, vocabulary, batch, source tokens, training target tokens, new tokens)
SIZES = {"paper": ("base", 8000, 8, 256, 64, 48), "small": ("small", 8000, 4, 128, 32, 16)}
NGRAM, BEAM = 2, 4


def greedy_check(ours, hf, d, sample, to_hf, new):
    """Whether greedy (beam 1) decoding gives HF's tokens, on the sample's sentences."""
    mine = [[int(to_hf[t]) for t in row] for row in speed.fairseq_generate(ours, d, sample, 1, new)()]
    theirs = speed.hf_generate(hf, sample, to_hf, 1, new)()
    same = sum(a == b for a, b in zip(mine, theirs))
    return "greedy: same tokens" if same == len(mine) else f"greedy: {same}/{len(mine)} sentences same tokens"


def comparisons(args):
    size, vocab, bsz, source, target, new = SIZES[args.size]
    with tempfile.TemporaryDirectory() as workdir:
        hf, ours, task = speed.hf_and_ours(size, vocab, NGRAM, workdir)
    d = task.target_dictionary
    to_hf = speed.hf_ids(d, vocab)
    sample = speed.batch(d, bsz, source, 1, seed=1)
    check = greedy_check(ours, hf, d, sample, to_hf, new)

    baseline = speed.transformer_like(size, task)
    train_sample = speed.batch(d, bsz, source, target)
    ngram_loss = NgramLanguageLossCriterion(task, sentence_avg=False, label_smoothing=0.1)
    ls_loss = LabelSmoothedCrossEntropyCriterion(task, sentence_avg=False, label_smoothing=0.1)
    rows = [
        Comparison(f"generation, beam {BEAM}, {new} new tokens", speed.fairseq_generate(ours, d, sample, BEAM, new),
                   speed.hf_generate(hf, sample, to_hf, BEAM, new), "HF ProphetNet generate, same weights",
                   units=bsz * new, check=check),
        Comparison(f"training step (target {target}, n = {NGRAM})", speed.train_step(ours, ngram_loss, train_sample),
                   speed.train_step(baseline, ls_loss, train_sample), "fairseq transformer, same size",
                   units=bsz * target, note="goal: at most 1.25x the transformer's time (ratio at least 0.80)"),
    ]
    dims = speed.SIZES[size]
    setting = (f"{dims['layers']}+{dims['layers']} layers, {dims['embed_dim']} wide, {dims['attention_heads']} "
               f"heads, FFN {dims['ffn_embed_dim']}, n = {NGRAM}, vocabulary {vocab}, random init; batch {bsz}, "
               f"{source}-token sources; same weights (HF -> ours by the converter).")
    return setting, rows
