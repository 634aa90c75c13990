"""Every family's training step and decoding step with the model in fp16 and bf16, on CPU.

Each case is built by fairseq-train's own arguments (task, criterion and flags as
``scripts/gpu_check.sh`` and ``test_distributed_e2e.py`` give them: every family's
summarization fine-tuning, and the pre-training of ProphetNet, BART-LS and Z-Code++ on ACLSum's
source documents as plain text); the weights are perturbed (:func:`half_precision.perturb`);
model and criterion are cast with ``.to(dtype)``, as fairseq's ``--fp16``/``--bf16`` cast them
(its fp16 trainer itself needs CUDA). Against fp32:

* training, one ``task.train_step`` (the task's batch seed: the same dropout and noise draws in
  every dtype) on a batch with a 1-token source row: finite loss and gradients, a non-zero
  gradient for every parameter that has one in fp32, loss and gradient close to fp32's;
* decoding through ``task.build_generator``: beam search ends every hypothesis with finite
  scores, which the fp32 model confirms by rescoring the same tokens; greedy decoding writes
  fp32's tokens up to the first near tie.

Tolerances, in units of the unit roundoff u (2^-11 in fp16, 2^-8 in bf16): the largest error
measured over all cases (torch 2.13 CPU; the case in brackets), then a bound that keeps a
margin of 3.5 or more while staying far below what a dropped mask or an overflow gives (inf,
NaN, errors of whole nats):

=================================  ===================================  =====================
quantity                           measured, fp16 / bf16                bound
=================================  ===================================  =====================
|loss - loss32| / |loss32|         0.10u (BART-LS pre-training) /       u / 2
                                   0.14u (s2s-ft)
|g - g32| / |g32|, all gradients   3.3u (s2s-ft copy) /                 32u
flattened                          8.5u (Z-Code++ pre-training)
1 - cos(g, g32)                    1.5e-6 / 5.3e-4                      (32u)^2 / 2: 1.2e-4 /
                                                                        7.8e-3
|log p - log p32| of a decoded     0.0033 / 0.029 (BART-LS)             LOGPROB_TOLERANCE:
token, rescored in fp32                                                 0.02 / 0.16
=================================  ===================================  =====================

Greedy decoding is checked twice. At every step, on its own prefix, the token written is within
twice the log-probability tolerance of fp32's best (an argmax of values each off by at most the
tolerance). And it writes fp32's own tokens up to fp32's first near tie, a step whose best and
second-best log-probabilities (after the generator's masking: no pad, no ``</s>`` at the first
step) are within twice the tolerance: only there may the argmax change, and the prefixes differ
after it. In bf16 (0.32 nats) these 500-token models have near ties at the first step of most
sentences, so the exact comparison counts the tokens of both dtypes together.

A float32 constant where a dtype limit belongs fails these tests: a mask filled with fp32's
minimum (or -1e9 in fp16) does not fit the dtype (torch refuses the fill), a floor at fp32's
``tiny`` is 0 in fp16. The batch reaches the masks with a 1-token source and padded rows; the
coverage case gives its copy attention a weight that drives the coverage's renormalizing sum
below fp16's smallest number (see :data:`COVERAGE_WEIGHT`).
"""

import contextlib
import copy
import math
from argparse import Namespace

import pytest
import torch
import torch.nn.functional as F
from fairseq import utils

from half_precision import FAMILIES, HALF, LOGPROB_TOLERANCE, build, plain_text_corpus, summarization_rows

ROUNDOFF = {torch.float16: 2.0**-11, torch.bfloat16: 2.0**-8}
LOSS_TOLERANCE = 0.5  # |loss - loss32| / |loss32|, in units of the roundoff
GRADIENT_TOLERANCE = 32  # |g - g32| / |g32| of all gradients flattened, in units of the roundoff
LENGTHS = [(1, 1), (2, 3), (17, 5), (48, 12)]  # (source, target) tokens per row
PLAIN_TEXT_ROWS = 4  # blocks per pre-training batch
BEAM, MAX_LEN = 2, 6  # beam search: beams, tokens before the forced </s>
MIN_GREEDY_TOKENS = 8  # greedy tokens compared with fp32's before a near tie, both dtypes together
BLOCKS = ["--tokens-per-sample", "64", "--max-source-positions", "128", "--max-target-positions", "64"]
COVERAGE_WEIGHT = -4.0
"""The coverage weight of the copy case. Training runs all 12 target steps of every row; the
copy attention of the 1-token row stays on its two source positions, whose coverage grows by
about 1 every two steps: the coverage's renormalizing sum falls to 1.5e-8 at step 10, below
fp16's smallest subnormal (6e-8), and to 2.4e-10 at step 12, far above fp32's ``tiny``."""

#: family -> criterion and flags of its summarization fine-tuning
FINE_TUNING = {
    "bart": ("label_smoothed_cross_entropy", ["--label-smoothing", "0.1"]),
    "prophetnet": ("ngram_language_loss", ["--label-smoothing", "0.1"]),
    "bart_ls": ("label_smoothed_cross_entropy", ["--label-smoothing", "0.1"]),
    "zcodepp": ("label_smoothed_cross_entropy", ["--label-smoothing", "0.1"]),
    "s2s_ft": ("s2s_ft", ["--label-smoothing", "0.1"]),
    "transformer_sm": ("transformer_sm", ["--mode", "dat"]),
}

#: case -> (corpus, arch, task, criterion, flags)
CASES = {
    **{family: ("aclsum", FAMILIES[family][0], FAMILIES[family][1], criterion, [*FAMILIES[family][2], *flags])
       for family, (criterion, flags) in FINE_TUNING.items()},
    "s2s_ft_copy_coverage": ("aclsum", *FAMILIES["s2s_ft"][:2], "s2s_ft",
                             [*FAMILIES["s2s_ft"][2], "--label-smoothing", "0.1", "--copy-heads", "1", "--coverage",
                              "--coverage-loss-weight", "1"]),
    "prophetnet_span_mask": ("plain_text", "prophetnet_summ_tiny", "prophetnet_span_mask", "ngram_language_loss",
                             BLOCKS),
    "bart_ls_model_based_denoising": (
        "plain_text", "bart_ls_tiny", "bart_ls_model_based_denoising", "bart_ls_model_based_denoising",
        ["--block-size", "16", "--pooling-layers", "1", "--tokens-per-sample", "64", "--max-source-positions", "128",
         "--max-target-positions", "64", "--num-sentinels", "16", "--scorer-layers", "1", "--scorer-embed-dim", "32",
         "--scorer-heads", "2", "--scorer-ffn-dim", "64", "--scorer-block-size", "16", "--freeze-scorer"]),
    "zcodepp_pretraining": ("plain_text", "zcodepp_tiny", "zcodepp_pretraining", "zcodepp_joint",
                            ["--generator-layers", "1", *BLOCKS]),
}  # fmt: skip
DECODING = [*FINE_TUNING, "s2s_ft_copy_coverage"]


class Built:
    """A case's task, fp32 model and criterion, the examples of its batch (example ``i`` at
    position ``i``) and the batch."""

    def __init__(self, corpora, case):
        corpus, arch, task_name, criterion, flags = CASES[case]
        self.task, self.model, self.criterion = build(corpora[corpus], arch, task_name, flags, criterion)
        if case == "s2s_ft_copy_coverage":
            with torch.no_grad():
                self.model.decoder.coverage.weight.fill_(COVERAGE_WEIGHT)
        if corpus == "plain_text":
            self.task.load_dataset("valid")
            self.rows = [self.task.dataset("valid")[i] for i in range(PLAIN_TEXT_ROWS)]
        else:
            self.rows = summarization_rows(self.task, LENGTHS)
        self.sample = self.task.dataset("valid").collater(self.rows)

    @contextlib.contextmanager
    def cast(self, dtype):
        """The model and the criterion (BART-LS's holds its scorer) in ``dtype`` inside the
        block; their fp32 weights, exactly, and no gradients after it (a deep copy of a model
        copies its configuration too, slower than the model)."""
        modules = (self.model, self.criterion)
        saved = [copy.deepcopy(module.state_dict()) for module in modules]
        try:
            yield tuple(module.to(dtype) for module in modules)
        finally:
            for module, state in zip(modules, saved):
                module.float().load_state_dict(state)
                module.zero_grad(set_to_none=True)
                module.eval()


@pytest.fixture(scope="module")
def built(aclsum_bin, tmp_path_factory):
    """case -> :class:`Built`, each built once (training and decoding share the fine-tuning ones)."""
    corpora = {"aclsum": aclsum_bin, "plain_text": plain_text_corpus(aclsum_bin, tmp_path_factory.mktemp("plain"))}
    cache = {}

    def get(case):
        if case not in cache:
            cache[case] = Built(corpora, case)
        return cache[case]

    return get


class _Backward:
    """The optimizer face ``train_step`` calls: a plain backward (no loss scale)."""

    def backward(self, loss):
        loss.backward()


def _in_dtype(sample, dtype):
    """The sample as fairseq's trainer hands it to a ``dtype`` model: floating tensors cast."""
    return utils.apply_to_sample(lambda t: t.to(dtype) if t.is_floating_point() else t, sample)


def train_step(built, dtype):
    """``(loss / sample_size, {name: gradient in fp32 or None})`` of one training step."""
    with built.cast(dtype) as (model, criterion):
        loss, sample_size, _ = built.task.train_step(_in_dtype(built.sample, dtype), model, criterion, _Backward(), 0)
        named = [*model.named_parameters(), *(("criterion." + n, p) for n, p in criterion.named_parameters())]
        grads = {name: None if p.grad is None else p.grad.float() for name, p in named if p.requires_grad}
    return loss.float().item() / sample_size, grads


@pytest.mark.parametrize("case", sorted(CASES))
def test_training_step_in_half_precision(built, case):
    b = built(case)
    reference, reference_grads = train_step(b, torch.float32)
    flat_reference = torch.cat([g.flatten() for g in reference_grads.values() if g is not None])
    for dtype in HALF:
        loss, grads = train_step(b, dtype)
        assert math.isfinite(loss), f"{case} {dtype}: loss {loss}"
        assert all(g is None or torch.isfinite(g).all() for g in grads.values()), f"{case} {dtype}: non-finite gradient"
        assert {n for n, g in grads.items() if g is None} == {n for n, g in reference_grads.items() if g is None}
        lost = [n for n, g in grads.items() if g is not None and not g.any() and reference_grads[n].any()]
        assert not lost, f"{case} {dtype}: zero gradients where fp32 has some: {lost}"
        loss_error = abs(loss - reference) / abs(reference)
        assert loss_error <= LOSS_TOLERANCE * ROUNDOFF[dtype], f"{case} {dtype}: relative loss error {loss_error:.2e}"
        flat = torch.cat([g.flatten() for g in grads.values() if g is not None])
        bound = GRADIENT_TOLERANCE * ROUNDOFF[dtype]
        grad_error = ((flat - flat_reference).norm() / flat_reference.norm()).item()
        assert grad_error <= bound, f"{case} {dtype}: gradient error {grad_error:.2e}"
        cosine = F.cosine_similarity(flat, flat_reference, dim=0).item()
        assert cosine >= 1 - bound**2 / 2, f"{case} {dtype}: gradient cosine {cosine:.6f}"


def decode(built, dtype, beam):
    """Example id -> hypotheses (best first) of the model in ``dtype`` on the batch."""
    with built.cast(dtype) as (model, _):
        generator = built.task.build_generator([model], Namespace(beam=beam, max_len_a=0, max_len_b=MAX_LEN))
        hypotheses = built.task.inference_step(generator, [model], _in_dtype(built.sample, dtype))
    return {int(i): h for i, h in zip(built.sample["id"], hypotheses)}


def rescore(built, tokens):
    """Example id -> fp32 log-probabilities ``(T, V)`` of the fp32 model, teacher-forced on
    ``tokens[id]`` (a hypothesis ending in ``</s>``) as the target."""
    rows = [dict(row, target=tokens[row["id"]]) for row in built.rows]
    batch = built.task.dataset("valid").collater(rows)
    with torch.no_grad():
        lprobs = built.model.get_normalized_probs(built.model(**batch["net_input"]), log_probs=True)  # (B, T, V)
    return {int(i): lp[: len(tokens[int(i)])].float() for i, lp in zip(batch["id"], lprobs)}


def greedy_choices(built, lprobs):
    """``(best, margin)`` ``(T',)`` of ``lprobs`` ``(T, V)`` at each step that the generator
    chooses (not the ``</s>`` it forces after :data:`MAX_LEN` tokens): the best token among those
    it may write there (never pad, no ``</s>`` at the first step) and how far the second-best
    is below it."""
    allowed = lprobs[:MAX_LEN].clone()
    allowed[:, built.task.target_dictionary.pad()] = float("-inf")
    allowed[0, built.task.target_dictionary.eos()] = float("-inf")
    top = allowed.topk(2, dim=-1)  # (T', 2)
    return top.indices[:, 0], top.values[:, 0] - top.values[:, 1]


def checked_hypotheses(built, dtype, beam):
    """Decode in ``dtype``; check that every hypothesis ends in ``</s>`` within :data:`MAX_LEN`
    tokens with finite scores that the fp32 model, rescoring its tokens, confirms within the
    log-probability tolerance. Returns the hypotheses and the fp32 rescoring of the best ones."""
    tolerance = LOGPROB_TOLERANCE[dtype]
    eos = built.task.target_dictionary.eos()
    hypotheses = decode(built, dtype, beam)
    for rank in reversed(range(beam)):
        tokens = {i: h[rank]["tokens"] for i, h in hypotheses.items()}
        lprobs = rescore(built, tokens)
        for i, h in hypotheses.items():
            assert tokens[i][-1] == eos and len(tokens[i]) <= MAX_LEN + 1
            scores = h[rank]["positional_scores"].float()
            assert torch.isfinite(scores).all(), f"{dtype} beam {beam}: non-finite scores"
            error = (scores - lprobs[i].gather(-1, tokens[i][:, None])[:, 0]).abs().max().item()
            assert error <= tolerance, f"{dtype} beam {beam}: score error {error:.4f}"
    return hypotheses, lprobs


@pytest.mark.parametrize("case", DECODING)
def test_decoding_in_half_precision(built, case):
    b = built(case)
    reference = {i: h[0]["tokens"] for i, h in decode(b, torch.float32, beam=1).items()}
    reference_choices = {i: greedy_choices(b, lprobs) for i, lprobs in rescore(b, reference).items()}
    compared = 0
    for dtype in HALF:
        tolerance = LOGPROB_TOLERANCE[dtype]
        checked_hypotheses(b, dtype, BEAM)
        greedy, lprobs = checked_hypotheses(b, dtype, 1)
        for i, h in greedy.items():
            tokens = h[0]["tokens"]
            # every step, on its own prefix: a token fp32 ranks within 2 tolerances of its best
            best, _ = greedy_choices(b, lprobs[i])
            steps = torch.arange(len(best))
            assert (lprobs[i][steps, tokens[: len(best)]] >= lprobs[i][steps, best] - 2 * tolerance).all()
            # fp32's own tokens up to its first near tie
            best, margins = reference_choices[i]
            for step, margin in enumerate(margins.tolist()):
                if margin <= 2 * tolerance:
                    break  # the argmax may change here, and the prefixes after it
                assert reference[i][step] == best[step]  # fp32 decoding writes its own argmax
                assert tokens[step] == reference[i][step], f"{case} {dtype}: greedy token {step} of sentence {i}"
                compared += 1
    assert compared >= MIN_GREEDY_TOKENS, f"{case}: {compared} greedy tokens compared"
