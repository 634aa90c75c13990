"""Z-Code++ phase one: the pre-training dataset, GDES gradients and export, the joint
criterion, and grounded-pre-training instructions (the corruptions: tests/noising/test_noising.py)."""

from argparse import Namespace

import numpy as np
import pytest
import torch
from fairseq.data import ListDataset

import user_dir  # noqa: F401  (registers zcodepp)
from fairseq_ext.zcodepp.gdes import fold_gdes_state_dict
from fairseq_ext.zcodepp.instructions import PAPER_TEMPLATES, InstructionDataset, load_templates
from fairseq_ext.zcodepp.pretraining_data import ZCodeppPretrainingDataset
from toys import sentinel_symbols, toy_dictionary
from user_dir.criterions.zcodepp_joint import ZCodeppJointCriterion
from user_dir.interfaces import ReplacedTokenDetectionTask
from user_dir.models.zcodepp import ZCodeppModel

WORDS = 40
SENTINELS = 12


class FakeTask(ReplacedTokenDetectionTask):
    """The two things the model and criterion read from a task."""

    def __init__(self, dictionary, special_ids):
        self.source_dictionary = self.target_dictionary = dictionary
        self.special_ids = special_ids


@pytest.fixture(scope="module")
def vocab():
    d = toy_dictionary(WORDS, "<mask>", *sentinel_symbols(SENTINELS))
    mask, sentinels = d.index("<mask>"), [d.index(symbol) for symbol in sentinel_symbols(SENTINELS)]
    return d, mask, sentinels


def build_model(dictionary, generator_layers, max_target_positions=128):
    args = Namespace(arch="zcodepp_tiny", generator_layers=generator_layers, dropout=0.0, attention_dropout=0.0,
                     max_source_positions=256, max_target_positions=max_target_positions)
    from fairseq.models import ARCH_CONFIG_REGISTRY

    ARCH_CONFIG_REGISTRY["zcodepp_tiny"](args)
    return ZCodeppModel.build_model(args, FakeTask(dictionary, []))


def blocks(dictionary, lengths, seed=0):
    rng = torch.Generator().manual_seed(seed)
    items = [torch.cat([torch.randint(dictionary.nspecial, dictionary.nspecial + WORDS, (n - 1,), generator=rng),
                        torch.LongTensor([dictionary.eos()])]) for n in lengths]
    return ListDataset(items, np.array(lengths))


def pretraining_batch(vocab, lengths=(30, 22, 17), epoch=1):
    d, mask, sentinels = vocab
    data = blocks(d, list(lengths))
    dataset = ZCodeppPretrainingDataset(data, data.sizes, d, mask, sentinels, max_tokens=64, seed=3)
    dataset.set_epoch(epoch)
    return dataset, dataset.collater([dataset[i] for i in range(len(dataset))])


# ---------------------------------------------------------------- dataset
def test_pretraining_views_are_consistent_and_seeded(vocab):
    d, mask, sentinels = vocab
    dataset, batch = pretraining_batch(vocab)
    pre = batch["pretraining"]
    real = pre["original"].ne(d.pad())
    assert torch.equal(pre["mlm_source"][~pre["masked"]], pre["original"][~pre["masked"]])
    assert pre["mlm_source"][pre["masked"]].eq(mask).all()
    assert not (pre["masked"] & ~real).any()
    # CSP: sentinels in source and target, the target ends with </s>, prev_output is shifted
    src, tgt = batch["net_input"]["src_tokens"], batch["target"]
    assert torch.isin(src, torch.tensor(sentinels)).any(1).all()
    assert tgt[0, tgt[0].ne(d.pad())][-1] == d.eos()
    prev = batch["net_input"]["prev_output_tokens"]
    body = tgt[:, :-1].ne(d.pad()) & tgt[:, :-1].ne(d.eos())
    assert prev[:, 0].eq(d.eos()).all() and torch.equal(prev[:, 1:][body], tgt[:, :-1][body])
    # same (seed, epoch, index) -> same corruption; another epoch -> another one
    again = pretraining_batch(vocab)[1]
    assert torch.equal(again["net_input"]["src_tokens"], src)
    other = pretraining_batch(vocab, epoch=2)[1]
    assert not torch.equal(other["pretraining"]["masked"], pre["masked"])
    # validation (no shuffling) keeps the corruptions of epoch 1
    d, mask, sentinels = vocab
    data = blocks(d, [30, 22, 17])
    valid = ZCodeppPretrainingDataset(data, data.sizes, d, mask, sentinels, max_tokens=64, seed=3, shuffle=False)
    valid.set_epoch(2)
    assert torch.equal(valid.collater([valid[i] for i in range(3)])["pretraining"]["masked"], pre["masked"])


# ---------------------------------------------------------------- GDES
def grads(model):
    return {name: p.grad for name, p in model.named_parameters()}


def nonzero(grad):
    return grad is not None and grad.abs().sum() > 0


def test_gdes_gradients_flow_exactly_as_the_paper_says(vocab):
    d = vocab[0]
    torch.manual_seed(0)
    model = build_model(d, generator_layers=1)
    _, batch = pretraining_batch(vocab)
    pre = batch["pretraining"]
    generator_embedding = model.generator.encoder.embed_tokens.weight
    delta = model.encoder.embed_tokens.delta
    assert model.decoder.embed_tokens is model.encoder.embed_tokens and delta.abs().sum() == 0

    # MLM: only the generator learns, its embedding included
    model.zero_grad()
    model.generator_logits(pre["mlm_source"], pre["masked"]).logsumexp(-1).sum().backward()
    assert nonzero(generator_embedding.grad) and delta.grad is None
    assert all(p.grad is None for n, p in model.named_parameters() if not n.startswith("generator."))

    # RTD: the discriminator learns through the delta only, never the generator's table
    model.zero_grad()
    model.discriminator_logits(pre["original"]).sum().backward()
    assert nonzero(delta.grad) and nonzero(model.rtd_head.out.weight.grad)
    assert all(p.grad is None for n, p in model.named_parameters() if n.startswith("generator."))

    # CSP: encoder-decoder gradients reach the delta (shared with the decoder), not E_G
    model.zero_grad()
    out, _ = model(**batch["net_input"])
    out.logsumexp(-1).sum().backward()
    assert nonzero(delta.grad) and nonzero(model.decoder.layers[0].fc1.weight.grad)
    assert generator_embedding.grad is None or generator_embedding.grad.abs().sum() == 0


def test_gdes_delta_is_folded_on_export(vocab):
    d = vocab[0]
    torch.manual_seed(0)
    pretrain = build_model(d, generator_layers=1).eval()
    with torch.no_grad():
        pretrain.encoder.embed_tokens.delta.normal_(0, 0.1)  # as if RTD had trained it
    _, batch = pretraining_batch(vocab)
    state = pretrain.state_dict()
    expected = state["generator.encoder.embed_tokens.weight"] + state["encoder.embed_tokens.delta"]

    finetune = build_model(d, generator_layers=0).eval()
    finetune.load_state_dict(dict(state))  # fairseq's load path folds (upgrade_state_dict_named)
    assert torch.equal(finetune.encoder.embed_tokens.weight, expected)
    assert finetune.decoder.output_projection.weight is finetune.encoder.embed_tokens.weight
    with torch.no_grad():
        before = pretrain(**batch["net_input"])[0]
        after = finetune(**batch["net_input"])[0]
    torch.testing.assert_close(after, before, atol=1e-6, rtol=0)

    # a later phase with shorter targets and without the pre-training symbols still loads
    smaller = toy_dictionary(WORDS)
    shorter = build_model(smaller, generator_layers=0, max_target_positions=64)
    shorter.load_state_dict(dict(state))
    torch.testing.assert_close(shorter.encoder.embed_tokens.weight, expected[: len(smaller)], atol=0, rtol=0)

    exported = dict(state)
    assert fold_gdes_state_dict(exported)
    assert not any(k.startswith(("generator.", "rtd_head.")) or k.endswith("delta") for k in exported)
    assert not fold_gdes_state_dict(exported)  # nothing left to fold


# ---------------------------------------------------------------- criterion
def test_joint_loss_is_the_weighted_sum_of_its_logged_parts(vocab):
    d, mask, sentinels = vocab
    torch.manual_seed(0)
    model = build_model(d, generator_layers=1)
    task = FakeTask(d, [d.bos(), d.pad(), d.eos(), d.unk(), mask, *sentinels])
    _, batch = pretraining_batch(vocab)
    weights = dict(mlm_weight=1.0, rtd_weight=30.0, csp_weight=1.0)
    criterion = ZCodeppJointCriterion(task, label_smoothing=0.0, sampling_temperature=1.0, **weights)
    torch.manual_seed(5)
    loss, sample_size, log = criterion(model, batch)
    expected = (log["mlm_loss"] / log["mlm_tokens"] + 30.0 * log["rtd_loss"] / log["rtd_tokens"]
                + log["csp_loss"] / log["ntokens"])
    assert sample_size == 1
    torch.testing.assert_close(loss.detach(), expected)
    assert log["mlm_tokens"] == int(batch["pretraining"]["masked"].sum())
    assert log["rtd_tokens"] == int(batch["pretraining"]["original"].ne(d.pad()).sum())
    assert 0 < log["rtd_replaced"] <= log["mlm_tokens"]
    with pytest.raises(ValueError, match="zcodepp_pretraining"):
        ZCodeppJointCriterion(object.__new__(Namespace), label_smoothing=0.0, sampling_temperature=1.0, **weights)


# ---------------------------------------------------------------- instructions
def test_instruction_templates_drawn_per_example_and_truncated():
    eos = 2
    docs = ListDataset([torch.LongTensor(list(range(10, 10 + n)) + [eos]) for n in (30, 5, 12, 8)] * 10,
                       np.array([31, 6, 13, 9] * 10))
    templates = [torch.LongTensor([100, 101, 102]), torch.LongTensor([200, 201])]
    data = InstructionDataset(docs, templates, max_len=12, eos=eos, seed=1)
    drawn = [data.template_index(i) for i in range(len(data))]
    assert set(drawn) == {0, 1}
    for i in range(len(data)):
        item, prefix = data[i], templates[drawn[i]]
        assert torch.equal(item[: len(prefix)], prefix) and item[-1] == eos and len(item) <= 12
        assert len(item) <= data.size(i)
    assert drawn == [InstructionDataset(docs, templates, 12, eos, seed=1).template_index(i) for i in range(len(data))]
    data.set_epoch(2)
    assert [data.template_index(i) for i in range(len(data))] != drawn
    with pytest.raises(ValueError, match="no room"):
        InstructionDataset(docs, templates, max_len=4, eos=eos)


def test_templates_file(tmp_path):
    assert PAPER_TEMPLATES["mediasum"][0] == "Summarize the following interview script into a two sentences summary."
    path = tmp_path / "templates.tsv"
    path.write_text("# my corpus\nmycorpus\tSummarize this.\nmycorpus\tShorten this.\n", encoding="utf-8")
    assert load_templates(path) == {"mycorpus": ["Summarize this.", "Shorten this."]}
    path.write_text("no tab here\n", encoding="utf-8")
    with pytest.raises(ValueError, match="corpus<TAB>instruction"):
        load_templates(path)


def test_items_leave_the_global_random_state_alone(vocab):
    """Corruptions draw from their own seeded generator: the training randomness fairseq seeds
    (dropout, the generator's samples) must not depend on when items are read."""
    dataset, _ = pretraining_batch(vocab)
    state = torch.get_rng_state()
    dataset[0]
    assert torch.equal(torch.get_rng_state(), state)


def test_task_refuses_fewer_sentinels_than_spans():
    """Span corruption reuses sentinels cyclically; Z-Code++ refuses that at set-up instead."""
    from user_dir.tasks.zcodepp_pretraining import ZCodeppPretrainingConfig, ZCodeppPretrainingTask

    def task(num_sentinels):
        d = toy_dictionary(WORDS)
        cfg = ZCodeppPretrainingConfig(tokens_per_sample=200, noise_density=0.15, mean_span_length=3.0,
                                       num_sentinels=num_sentinels, max_source_positions=256,
                                       max_target_positions=256)
        return ZCodeppPretrainingTask(cfg, d)

    assert len(task(10).sentinels) == 10  # 200 tokens: 30 noise tokens in 10 spans
    with pytest.raises(ValueError, match="up to 10 spans: --num-sentinels must be at least that"):
        task(9)


@pytest.mark.parametrize("family", ["zcodepp", "prophetnet"])
def test_plain_text_tasks_refuse_blocks_or_targets_beyond_the_positions(family):
    """Both pre-training tasks check their lengths at set-up (``PlainTextTask.check_lengths``):
    a block longer than --max-source-positions, or targets longer than --max-target-positions."""
    from user_dir.tasks.prophetnet_span_mask import ProphetNetSpanMaskConfig, ProphetNetSpanMaskTask
    from user_dir.tasks.zcodepp_pretraining import ZCodeppPretrainingConfig, ZCodeppPretrainingTask

    def task(**positions):
        if family == "zcodepp":
            cfg = ZCodeppPretrainingConfig(tokens_per_sample=200, num_sentinels=10, **positions)
            return ZCodeppPretrainingTask(cfg, toy_dictionary(WORDS))
        cfg = ProphetNetSpanMaskConfig(tokens_per_sample=200, **positions)
        return ProphetNetSpanMaskTask(cfg, toy_dictionary(WORDS))

    task(max_source_positions=200, max_target_positions=200)
    with pytest.raises(ValueError, match=r"--tokens-per-sample \(200\) exceeds --max-source-positions \(199\)"):
        task(max_source_positions=199, max_target_positions=200)
    with pytest.raises(ValueError, match=r"reach \d+ tokens, more than --max-target-positions \(8\)"):
        task(max_source_positions=200, max_target_positions=8)

