"""``bart_ls_model_based_denoising`` criterion: with every candidate span kept it is
label-smoothed cross-entropy on the T5 corruption of the candidates (plus the scorer's
masked-LM loss when the scorer trains)."""

from argparse import Namespace
from types import SimpleNamespace

import pytest
import torch
from fairseq.criterions.label_smoothed_cross_entropy import label_smoothed_nll_loss
from fairseq.data.language_pair_dataset import collate

import user_dir  # noqa: F401
from fairseq_ext.noising.spans import corrupt_spans
from toys import sentinel_symbols, toy_dictionary
from user_dir.criterions.bart_ls_model_based_denoising import ModelBasedDenoisingCriterion
from user_dir.models.bart_ls import BartLSModel, bart_ls_tiny_architecture

EPS = 0.1


@pytest.fixture(scope="module")
def setup():
    dictionary = toy_dictionary(30, *sentinel_symbols(4))
    sentinels = [dictionary.index(symbol) for symbol in sentinel_symbols(4)]
    task = SimpleNamespace(
        source_dictionary=dictionary, target_dictionary=dictionary, sentinel_ids=sentinels,
        cfg=SimpleNamespace(tokens_per_sample=32),
    )
    args = Namespace(dropout=0.0, attention_dropout=0.0, block_size=8)
    bart_ls_tiny_architecture(args)
    torch.manual_seed(0)
    model = BartLSModel.build_model(args, task).eval()
    gen = torch.Generator().manual_seed(0)
    tokens = torch.randint(4, 34, (2, 20), generator=gen)
    tokens[1, 15:] = dictionary.pad()
    candidates = torch.zeros(2, 20, dtype=torch.bool)
    candidates[0, [2, 3, 9, 14, 15, 16]] = True
    candidates[1, [1, 6, 7, 8]] = True
    sample = {"tokens": tokens, "candidates": candidates, "nsentences": 2, "ntokens": 35}
    return task, model, sample, sentinels


def criterion(task, freeze):
    torch.manual_seed(1)
    return ModelBasedDenoisingCriterion(
        task, sentence_avg=False, label_smoothing=EPS, hard_span_fraction=1.0, freeze_scorer=freeze,
        scorer_path=None, scorer_weight=0.5, scorer_layers=1, scorer_embed_dim=16, scorer_heads=2,
        scorer_ffn_dim=32, scorer_block_size=8,
    ).eval()


def expected_loss(task, model, sample, sentinels):
    dictionary = task.source_dictionary
    rows = []
    for row in range(2):
        real = sample["tokens"][row].ne(dictionary.pad())
        source, target = corrupt_spans(sample["tokens"][row][real], sample["candidates"][row][real],
                                       torch.tensor(sentinels), dictionary.eos(), bos=dictionary.bos())
        rows.append({"id": row, "source": source, "target": target})
    batch = collate(rows, dictionary.pad(), dictionary.eos(), left_pad_source=True, left_pad_target=False)
    lprobs = model.get_normalized_probs(model(**batch["net_input"]), log_probs=True)
    loss, _ = label_smoothed_nll_loss(lprobs.view(-1, lprobs.size(-1)), batch["target"].view(-1), EPS,
                                      ignore_index=dictionary.pad())
    return loss, batch["ntokens"]


def test_frozen_scorer_all_spans_is_label_smoothed_ce(setup):
    task, model, sample, sentinels = setup
    crit = criterion(task, freeze=True)
    loss, sample_size, log = crit(model, sample)
    expected, ntokens = expected_loss(task, model, sample, sentinels)
    torch.testing.assert_close(loss, expected)
    assert sample_size == ntokens and log["selected_tokens"] == int(sample["candidates"].sum())
    assert not any(p.requires_grad for p in crit.scorer.parameters())


def test_joint_scorer_adds_its_mean_candidate_loss(setup):
    task, model, sample, sentinels = setup
    crit = criterion(task, freeze=False)
    loss, sample_size, log = crit(model, sample)
    expected, _ = expected_loss(task, model, sample, sentinels)
    n_candidates = int(sample["candidates"].sum())
    torch.testing.assert_close(loss - expected, 0.5 * log["scorer_loss"] * sample_size / n_candidates)
    loss.backward()
    assert crit.scorer.embed_tokens.weight.grad is not None


def test_checkpoint_without_scorer_keeps_the_scorer(setup):
    task = setup[0]
    crit = criterion(task, freeze=False)
    before = crit.scorer.embed_tokens.weight.clone()
    crit.load_state_dict(None)  # what fairseq passes for a checkpoint with no criterion state
    assert torch.equal(crit.scorer.embed_tokens.weight, before)
    other = criterion(task, freeze=False)
    torch.nn.init.zeros_(other.scorer.embed_tokens.weight)
    crit.load_state_dict(other.state_dict())
    assert crit.scorer.embed_tokens.weight.abs().sum() == 0
