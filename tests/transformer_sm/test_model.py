"""Transformer-SM: unit and property tests of the model, the joint layout and the criterion.

No oracle exists for the source-embedded model, so its properties are tested: source-embedding
norms, incremental decoding == one forward pass over the joint sequence, padding invariance,
DAT == a plain language-model loss over the joint row, ETT == label-smoothed cross-entropy.
"""

import copy
from argparse import Namespace

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from fairseq.criterions.label_smoothed_cross_entropy import LabelSmoothedCrossEntropyCriterion
from fairseq.data import Dictionary

import user_dir  # noqa: F401  (registers the plugin)
from fairseq_ext.compat.generation import PrefixNGramRepeatBlock
from fairseq_ext.summarization_data import PrefixTruncateDataset
from fairseq_ext.transformer_sm import article_targets, causal_mask, mean_row_norm, summary_positions
from parity import BEAM_REORDERS, BEAMS, REORDER_STEPS, SENTENCES, incremental_with_reorders, perturb_parameters
from toys import toy_dictionary
from user_dir.criterions.transformer_sm import TransformerSMCriterion
from user_dir.models.transformer_sm import TransformerSMConfig, TransformerSMModel
from user_dir.tasks.transformer_sm import DELIMITER, TransformerSMTask, TransformerSMTaskConfig

VOCAB = 40


def make_task():
    dictionary = toy_dictionary(VOCAB, DELIMITER)
    return TransformerSMTask(TransformerSMTaskConfig(), dictionary, dictionary)


def make_model(task, **overrides):
    sizes = dict(
        embed_dim=32, ffn_embed_dim=64, layers=2, attention_heads=4, max_positions=48,
        max_source_positions=24, max_target_positions=16,
        dropout=0.0, attention_dropout=0.0, embed_dropout=0.0,
    )  # fmt: skip
    sizes.update(overrides)
    torch.manual_seed(0)
    return TransformerSMModel.build_model(TransformerSMConfig(**sizes), task).eval()


def make_batch(task, article_lengths=(10, 7, 3), summary_lengths=(6, 4, 6), seed=1):
    """Right-padded articles ``<s> a..`` and decoder inputs ``<delim> s..`` with targets."""
    d = task.target_dictionary
    gen = torch.Generator().manual_seed(seed)
    bsz, m, n = len(article_lengths), max(article_lengths), max(summary_lengths)
    article = torch.full((bsz, m), d.pad())
    prev = torch.full((bsz, n), d.pad())
    target = torch.full((bsz, n), d.pad())
    for i, (la, ls) in enumerate(zip(article_lengths, summary_lengths)):
        article[i, 0] = d.bos()
        article[i, 1:la] = torch.randint(d.nspecial, d.nspecial + VOCAB, (la - 1,), generator=gen)
        summary = torch.randint(d.nspecial, d.nspecial + VOCAB, (ls - 1,), generator=gen)
        prev[i, :ls] = torch.cat([torch.tensor([task.delimiter_index]), summary])
        target[i, :ls] = torch.cat([summary, torch.tensor([d.eos()])])
    return article, prev, target


@pytest.fixture(scope="module")
def task():
    return make_task()


# --------------------------------------------------------------------------- layout
def test_causal_mask_picture():
    mask = causal_mask(3)
    assert torch.equal(mask == 0, torch.tensor([[1, 0, 0], [1, 1, 0], [1, 1, 1]], dtype=torch.bool))
    for dtype in (torch.float32, torch.float16, torch.bfloat16):  # the dtype's own minimum, never -inf
        blocked = causal_mask(3, dtype=dtype)[0, 1]
        assert blocked.dtype == dtype and blocked.item() == torch.finfo(dtype).min


def test_article_targets_never_include_the_delimiter():
    """The paper and the authors' code (loss mask 0 at the delimiter): the last article token
    predicts nothing."""
    pad = 1
    article = torch.tensor([[0, 5, 6, 7], [0, 8, pad, pad], [0, pad, pad, pad]])
    expected = torch.tensor([[5, 6, 7, pad], [8, pad, pad, pad], [pad, pad, pad, pad]])
    assert torch.equal(article_targets(article, pad), expected)


def test_summary_positions_restart_and_continue():
    lengths = torch.tensor([4, 2])
    assert summary_positions(lengths, 1, 3, "restart").tolist() == [[1, 2, 3], [1, 2, 3]]
    assert summary_positions(lengths, 1, 3, "continue").tolist() == [[5, 6, 7], [3, 4, 5]]
    with pytest.raises(ValueError, match="restart"):
        summary_positions(lengths, 0, 3, "absolute")


def test_article_dataset_drops_eos_prepends_start_and_truncates():
    items = [torch.tensor([5, 6, 7, 8, 2]), torch.tensor([9, 2])]

    class Items(torch.utils.data.Dataset):
        sizes = [5, 2]

        def __getitem__(self, i):
            return items[i]

        def __len__(self):
            return 2

    ds = PrefixTruncateDataset(Items(), torch.tensor([0]), max_len=3, eos=2, end_with_eos=False)
    assert ds[0].tolist() == [0, 5, 6] and ds[1].tolist() == [0, 9]
    assert list(ds.sizes) == [3, 2]
    with pytest.raises(ValueError, match="no room"):
        PrefixTruncateDataset(Items(), torch.tensor([0, 4, 4]), max_len=3, eos=2, end_with_eos=False)


def test_max_tokens_counts_the_joint_row():
    from fairseq.data import LanguagePairDataset

    from fairseq_ext.transformer_sm.data import DelimiterDataset

    d = make_task().target_dictionary
    src = [torch.full((n,), 5) for n in (30, 30, 30, 30)]
    tgt = [torch.cat([torch.full((n - 1,), 6), torch.tensor([d.eos()])]) for n in (10, 10, 10, 10)]
    pairs = LanguagePairDataset(src, [30] * 4, d, tgt, [10] * 4, d, left_pad_source=False)
    joint = DelimiterDataset(pairs, delim=7)
    assert joint.num_tokens(0) == 40
    assert [len(b) for b in pairs.batch_by_size(np.arange(4), max_tokens=100)] == [3, 1]  # max(30, 10)
    assert [len(b) for b in joint.batch_by_size(np.arange(4), max_tokens=100)] == [2, 2]  # 30 + 10
    batch = joint.collater([joint[0], joint[1]])
    assert batch["net_input"]["prev_output_tokens"][:, 0].tolist() == [7, 7]
    assert batch["target"][:, -1].tolist() == [d.eos(), d.eos()]


# --------------------------------------------------------------------------- embeddings
def test_source_embeddings_have_half_the_mean_word_norm(task):
    model = make_model(task)
    embed = model.decoder.embed
    target = 0.5 * mean_row_norm(embed.tokens.weight, embed.padding_idx)
    norms = embed.sources.weight.norm(dim=1)
    assert norms.shape == (2,)
    assert torch.allclose(norms, target.expand(2), rtol=1e-5)
    assert not torch.allclose(embed.sources.weight[0], embed.sources.weight[1])
    # after new word embeddings (e.g. GPT weights) the rescale follows them
    with torch.no_grad():
        embed.tokens.weight.mul_(7.0)
    embed.reset_source_embeddings()
    assert torch.allclose(embed.sources.weight.norm(dim=1), (7.0 * target).expand(2), rtol=1e-5)


def test_no_source_embeddings_is_the_lm_ablation(task):
    model = make_model(task, no_source_embeddings=True)
    assert model.decoder.embed.sources is None
    assert not any("sources" in name for name, _ in model.named_parameters())


def test_source_embeddings_change_the_output(task):
    model = make_model(task)
    article, prev, _ = make_batch(task)
    with_sources, _ = model(article, None, prev)
    with torch.no_grad():
        model.decoder.embed.sources.weight.zero_()
    without, _ = model(article, None, prev)
    assert not torch.allclose(with_sources, without)


# --------------------------------------------------------------------------- properties
@pytest.mark.parametrize("mode", ["restart", "continue"])
@pytest.mark.parametrize("normalize_before", [False, True])
def test_incremental_decoding_equals_full_forward(task, mode, normalize_before):
    model = make_model(task, summary_positions=mode, normalize_before=normalize_before)
    article, prev, target = make_batch(task, summary_lengths=(6, 6, 6))
    with torch.no_grad():
        full, _ = model(article, None, prev)  # (B, N, V)
        encoder_out = model.encoder(article)
        state, steps = {}, []
        for t in range(prev.size(1)):
            out, _ = model.decoder(prev[:, : t + 1], encoder_out, incremental_state=state)
            steps.append(out)
    incremental = torch.cat(steps, dim=1)
    torch.testing.assert_close(
        F.log_softmax(incremental, -1), F.log_softmax(full, -1), atol=1e-5, rtol=1e-5
    )


def test_inner_states_outside_decoding_only(task):
    """The full forward returns every layer's output, as fairseq's decoders do; a decoding run's
    steps return none (at the first step they would be the whole prompt's, once per layer)."""
    model = make_model(task)
    article, prev, _ = make_batch(task)
    with torch.no_grad():
        _, extra = model(article, None, prev)
        assert len(extra["inner_states"]) == len(model.decoder.layers) + 1
        encoder_out, state = model.encoder(article), {}
        for t in range(2):
            _, step = model.decoder(prev[:, : t + 1], encoder_out, incremental_state=state)
            assert step["inner_states"] is None


@pytest.mark.parametrize("mode", ["restart", "continue"])
def test_incremental_state_follows_beam_reordering(task, mode):
    """Beam search's reorders (within each sentence's beams, after the first step and in the
    middle of decoding, then a finished sentence leaving the batch): the scores stay those of a
    full pass over each beam's rows."""
    model = perturb_parameters(make_model(task, summary_positions=mode), seed=4)
    article, _, _ = make_batch(task, article_lengths=(10, 7, 1))
    article = article.repeat_interleave(BEAMS, 0)
    _, prev, _ = make_batch(task, article_lengths=(2,) * SENTENCES * BEAMS,
                            summary_lengths=(REORDER_STEPS,) * SENTENCES * BEAMS, seed=5)  # a hypothesis per beam
    with torch.no_grad():
        live = {"encoder_out": model.encoder(article), "state": {}}

        def step(t, rows):
            return model.decoder(prev[rows, : t + 1], live["encoder_out"], incremental_state=live["state"])[0][:, -1]

        def reorder(order):
            model.decoder.reorder_incremental_state_scripting(live["state"], order)
            live["encoder_out"] = model.encoder.reorder_encoder_out(live["encoder_out"], order)

        steps, rows = incremental_with_reorders(step, reorder, len(article), prev.size(1), BEAM_REORDERS)
        full, _ = model(article[rows], None, prev[rows])
    torch.testing.assert_close(steps, full, atol=1e-4, rtol=1e-4)


def test_padding_does_not_change_the_scores(task):
    model = make_model(task)
    article, prev, _ = make_batch(task, article_lengths=(12, 5), summary_lengths=(3, 6))
    with torch.no_grad():
        batched, _ = model(article, None, prev)
        alone, _ = model(article[1:, :5], None, prev[1:, :6])
    torch.testing.assert_close(batched[1:, :6], alone, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("mode", ["restart", "continue"])
def test_every_length_from_one_token_is_padding_invariant(task, mode):
    """Articles and summaries of every length from 1 token (the article <s> alone, the summary
    <delim> alone) beside a long row: the scores are those of the row alone."""
    model = perturb_parameters(make_model(task, summary_positions=mode), seed=11)
    longest = 12
    with torch.no_grad():
        for length in range(1, longest + 1):
            summary = min(length, 8)
            article, prev, _ = make_batch(task, article_lengths=(longest, length), summary_lengths=(8, summary),
                                          seed=length)
            batched, _ = model(article, None, prev)
            alone, _ = model(article[1:, :length], None, prev[1:, :summary])
            assert torch.isfinite(alone).all()
            torch.testing.assert_close(batched[1:, :summary], alone, atol=1e-4, rtol=1e-4)


def test_joint_row_is_one_causal_language_model(task):
    """With no padding, the article and summary logits are those of one causal pass."""
    model = make_model(task, summary_positions="continue", no_source_embeddings=True)
    article, prev, _ = make_batch(task, article_lengths=(9, 9), summary_lengths=(5, 5))
    with torch.no_grad():
        summary_logits, extra = model(article, None, prev, article_logits=True)
        joint = torch.cat([article, prev], 1)
        # the same row as a pure prefix-free LM: empty summary, everything in the "article"
        lm_logits = model(joint, None, prev[:, :0], article_logits=True)[1]["article_logits"]
    torch.testing.assert_close(torch.cat([extra["article_logits"], summary_logits], 1), lm_logits,
                               atol=1e-5, rtol=1e-5)


def test_overlong_rows_are_a_clear_error(task):
    model = make_model(task, summary_positions="continue", max_positions=40,
                       max_source_positions=24, max_target_positions=16)
    article, prev, _ = make_batch(task, article_lengths=(30,), summary_lengths=(12,))
    with pytest.raises(ValueError, match="positions"):
        model(article, None, prev)
    with pytest.raises(ValueError, match="do not fit"):
        make_model(task, summary_positions="continue", max_positions=32)


def test_left_padded_articles_are_refused(task):
    model = make_model(task)
    article, prev, _ = make_batch(task)
    with pytest.raises(ValueError, match="right-padded"):
        model(article.flip(1), None, prev)


# --------------------------------------------------------------------------- criterion
def _sample(task, article, prev, target):
    ntokens = int(target.ne(task.target_dictionary.pad()).sum())
    return {
        "net_input": {"src_tokens": article, "src_lengths": article.ne(1).sum(1), "prev_output_tokens": prev},
        "target": target, "ntokens": ntokens, "nsentences": target.size(0), "id": torch.arange(target.size(0)),
    }  # fmt: skip


def test_ett_is_label_smoothed_cross_entropy_on_the_summary(task):
    model = make_model(task)
    sample = _sample(task, *make_batch(task))
    ett = TransformerSMCriterion(task, sentence_avg=False, label_smoothing=0.1, mode="ett")
    reference = LabelSmoothedCrossEntropyCriterion(task, sentence_avg=False, label_smoothing=0.1)
    loss, size, log = ett(model, sample)
    ref_loss, ref_size, _ = reference(model, sample)
    torch.testing.assert_close(loss, ref_loss)
    assert size == ref_size == sample["ntokens"]
    assert log["summary_ntokens"] == sample["ntokens"]


def test_dat_is_the_language_model_loss_of_article_and_summary_tokens(task):
    model = make_model(task)
    article, prev, target = make_batch(task, article_lengths=(8, 8), summary_lengths=(5, 5))
    sample = _sample(task, article, prev, target)
    dat = TransformerSMCriterion(task, sentence_avg=False, label_smoothing=0.0, mode="dat")
    loss, size, log = dat(model, sample)
    # independent computation: next-token NLL over <s> a.. <delim> s.. </s>; <s> is never
    # predicted, nor is <delim> (the authors' loss mask is 0 there): article and summary only
    with torch.no_grad():
        summary_logits, extra = model(article, None, prev, article_logits=True)
    logits = torch.cat([extra["article_logits"], summary_logits], 1)
    row = torch.cat([article, prev[:, :1], target], 1)  # (B, M + 1 + N)
    targets = row[:, 1:].clone()
    m = article.size(1)
    assert (targets[:, m - 1] == task.delimiter_index).all()
    targets[:, m - 1] = -100  # the last article position would predict <delim>
    expected = F.cross_entropy(logits.transpose(1, 2), targets, reduction="sum", ignore_index=-100)
    torch.testing.assert_close(loss, expected, atol=1e-4, rtol=1e-5)
    assert size == row[:, 1:].numel() - row.size(0) == log["ntokens"]
    assert log["summary_ntokens"] == target.numel()


def test_dat_epochs_schedule_switches_to_ett(task):
    model = make_model(task)
    article, prev, target = make_batch(task)
    sample = _sample(task, article, prev, target)
    schedule = TransformerSMCriterion(task, sentence_avg=False, label_smoothing=0.0, mode="ett", dat_epochs=2)
    dat = TransformerSMCriterion(task, sentence_avg=False, label_smoothing=0.0, mode="dat")
    ett = TransformerSMCriterion(task, sentence_avg=False, label_smoothing=0.0, mode="ett")
    try:
        for epoch, reference in ((1, dat), (2, dat), (3, ett)):
            task.begin_epoch(epoch, model)
            torch.testing.assert_close(schedule(model, sample)[0], reference(model, sample)[0])
    finally:
        task.begin_epoch(1, model)
    with pytest.raises(ValueError, match="--mode ett"):
        TransformerSMCriterion(task, False, 0.0, mode="dat", dat_epochs=1)


def test_criterion_needs_the_transformer_sm_task():
    with pytest.raises(ValueError, match="transformer_sm task"):
        TransformerSMCriterion(Namespace(target_dictionary=Dictionary()), False, 0.0)


# --------------------------------------------------------------------------- decoding
def test_trigram_blocking_bans_repeats_on_cpu():
    """fairseq 0.12 passes the whole padded buffer; the blocker must look at the hypothesis."""
    tokens = torch.full((1, 12), 1)  # (B*beam, max_len + 2), padding beyond the step
    tokens[0, :6] = torch.tensor([2, 7, 8, 9, 7, 8])  # bos, "7 8 9 7 8": "7 8" was followed by 9
    lprobs = PrefixNGramRepeatBlock(3, use_extension=False)(tokens, torch.zeros(1, 12), 1, 1, step=5)
    assert torch.isinf(lprobs[0, 9])
    assert torch.isfinite(lprobs[0, :9]).all() and torch.isfinite(lprobs[0, 10:]).all()


def test_generation_starts_from_the_delimiter_and_blocks_trigrams(task):
    model = make_model(task)
    article, _, _ = make_batch(task)
    generator = task.build_generator([model], Namespace(beam=3, max_len_b=12, min_len=12, no_repeat_ngram_size=3))
    sample = {"net_input": {"src_tokens": article, "src_lengths": article.ne(1).sum(1)}, "id": torch.arange(3)}
    hypos = task.inference_step(generator, [model], sample)
    for hypo in hypos:
        tokens = hypo[0]["tokens"].tolist()
        assert len(tokens) == 13 and tokens[-1] == task.target_dictionary.eos()
        trigrams = [tuple(tokens[i : i + 3]) for i in range(len(tokens) - 3)]
        assert len(trigrams) == len(set(trigrams))
    # the hypothesis scores are the model's own: rescore with one forward pass
    best = hypos[0][0]
    prev = torch.tensor([[task.delimiter_index] + best["tokens"][:-1].tolist()])
    with torch.no_grad():
        logits, _ = model(article[:1], None, prev)
    lprobs = F.log_softmax(logits, -1)[0].gather(-1, best["tokens"][:, None])[:, 0]
    torch.testing.assert_close(best["positional_scores"], lprobs, atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("article_length", [1, 2, 5])
def test_the_cache_grows_past_its_first_room(task, article_length, monkeypatch):
    """The cache starts with room for ``spare`` positions after the prefill and grows by as many
    when full; with 3 of room, a 20-token summary makes it grow six times, with the scores of one
    full pass."""
    from fairseq_ext.transformer_sm.attention import CachedSelfAttention

    monkeypatch.setattr(CachedSelfAttention, "spare", 3)
    model = perturb_parameters(make_model(task, summary_positions="continue"), seed=7)
    article, prev, _ = make_batch(task, article_lengths=(article_length, 1), summary_lengths=(20, 13), seed=3)
    with torch.no_grad():
        full, _ = model(article, None, prev)
        encoder_out, state, steps = model.encoder(article), {}, []
        for t in range(prev.size(1)):
            steps.append(model.decoder(prev[:, : t + 1], encoder_out, incremental_state=state)[0])
    for row, length in enumerate((20, 13)):
        torch.testing.assert_close(torch.cat(steps, 1)[row, :length], full[row, :length], atol=1e-4, rtol=1e-4)


def test_a_beam_s_rows_share_one_prefill(task, monkeypatch):
    """Beam search runs each article once (its rows' caches are copies): the same hypotheses and
    scores as running every beam's row, and the first step's projections see one row an article."""
    from fairseq_ext.transformer_sm import model as sm_model

    model = perturb_parameters(make_model(task), seed=8)
    article, _, _ = make_batch(task, article_lengths=(10, 7, 1))
    sample = {"net_input": {"src_tokens": article, "src_lengths": article.ne(1).sum(1)}, "id": torch.arange(3)}
    generator = task.build_generator([model], Namespace(beam=3, max_len_b=9, min_len=2))
    rows = []
    hook = model.decoder.layers[0].self_attn.k_proj.register_forward_hook(lambda m, i, o: rows.append(i[0].size(0)))
    shared = task.inference_step(generator, [model], sample)
    hook.remove()
    assert rows[0] == 3  # three articles, not nine beam rows
    monkeypatch.setattr(sm_model, "_shared_prefill", lambda *args: None)
    every_row = task.inference_step(generator, [model], sample)
    for ours, theirs in zip(shared, every_row):
        assert [h["tokens"].tolist() for h in ours] == [h["tokens"].tolist() for h in theirs]
        torch.testing.assert_close(torch.stack([h["score"] for h in ours]), torch.stack([h["score"] for h in theirs]))


@pytest.mark.parametrize("article_length", [1, 2, 9, 23])
@pytest.mark.parametrize("laid_out", [False, True])
def test_greedy_decoding_writes_what_gpt2_writes_on_the_same_weights(task, article_length, laid_out):
    """fairseq-generate's greedy search over our model equals HF ``GPT2LMHeadModel.generate`` on the
    same (perturbed) weights: GPT-2's configuration (pre-LN, tanh GELU, continuing positions, no
    source embeddings), articles from one token up; also once prepared for inference as
    fairseq-generate prepares it (the decoding layout)."""
    from benchmarks.peers.transformer_sm import hf_from_ours

    model = perturb_parameters(make_model(task, normalize_before=True, activation_fn="gelu_accurate",
                                          no_source_embeddings=True, summary_positions="continue"), seed=9)
    hf = hf_from_ours(model, len(task.target_dictionary))
    if laid_out:
        prepared(model)
    article, _, _ = make_batch(task, article_lengths=(article_length, article_length), seed=article_length)
    length = 12
    generator = task.build_generator([model], Namespace(beam=1, min_len=length, max_len_a=0, max_len_b=length))
    sample = {"net_input": {"src_tokens": article, "src_lengths": article.ne(1).sum(1)}, "id": torch.arange(2)}
    ours = [h[0]["tokens"][:length].tolist() for h in task.inference_step(generator, [model], sample)]
    prompt = torch.cat([article, torch.full((2, 1), task.delimiter_index)], dim=1)
    with torch.no_grad():
        theirs = hf.generate(input_ids=prompt, attention_mask=torch.ones_like(prompt), do_sample=False, num_beams=1,
                             min_new_tokens=length, max_new_tokens=length,
                             suppress_tokens=[task.target_dictionary.pad()])
    assert ours == theirs[:, prompt.size(1):].tolist()


@pytest.fixture(params=[True, False], ids=["transposed", "native"])
def transposed_pays(request, monkeypatch):
    """Both decoding layouts whatever this machine is: ``transposed_layout_pays`` answering
    ``True`` (the AVX2 machines' layout) and ``False`` (nn.Linear's)."""
    from fairseq_ext.modules import decoding_layout

    monkeypatch.setattr(decoding_layout, "transposed_layout_pays", lambda: request.param)
    return request.param


@pytest.mark.parametrize("rows", [1, 2, 3, 4, 5, 7])
def test_the_output_layer_of_few_rows_is_the_whole_product(task, rows, transposed_pays):
    """The output layer's few-row form (``E @ x^T`` where transposed layouts pay) gives each row
    its own logits: those of the plain product over the tied embeddings, one row to seven."""
    decoder = perturb_parameters(make_model(task), seed=24).decoder
    features = torch.randn(rows, 1, decoder.embed.tokens.weight.size(1))  # (B, T, C): a step's rows
    with torch.no_grad():
        torch.testing.assert_close(decoder.output_layer(features),
                                   features @ decoder.embed.tokens.weight.t(), atol=1e-5, rtol=1e-5)


def prepared(model):
    """``model`` as fairseq-generate, -interactive and the hub hand it to decoding."""
    model.prepare_for_inference_(Namespace(generation=Namespace(beam=1)))
    return model


@pytest.mark.parametrize("normalize_before", [False, True])
def test_the_decoding_layout_changes_no_score(task, normalize_before, transposed_pays):
    """``prepare_for_inference_`` lays the weights out for decoding's few rows (q, k, v fused; the
    widening weights transposed in memory and the output layer as ``E @ x^T`` on a machine where
    that pays, left as they are elsewhere: both layouts here, whatever this machine is) and the
    model computes what it computed: the same parameters, the same full-forward logits, greedy
    and beam-3 hypotheses and scores through fairseq's generator, steps of one and several rows
    (articles from one token up)."""
    model = perturb_parameters(make_model(task, normalize_before=normalize_before, ffn_embed_dim=48), seed=21)
    fast = prepared(copy.deepcopy(model))
    attention = fast.decoder.layers[0].self_attn
    assert attention.q_proj.weight.stride() == (1, 3 * attention.embed_dim)  # laid out, not a no-op
    assert fast.decoder.layers[0].fc1.weight.stride() == ((1, 48) if transposed_pays else (32, 1))
    assert fast.decoder.layers[0].fc2.weight.is_contiguous()  # narrowing: left as it is
    for name, value in model.state_dict().items():
        assert torch.equal(fast.state_dict()[name], value), name
    article, prev, _ = make_batch(task, article_lengths=(10, 1, 4), summary_lengths=(6, 3, 5))
    with torch.no_grad():
        torch.testing.assert_close(fast(article, None, prev)[0], model(article, None, prev)[0], atol=1e-5, rtol=1e-5)
    sample = {"net_input": {"src_tokens": article, "src_lengths": article.ne(1).sum(1)}, "id": torch.arange(3)}
    for beam in (1, 3):
        args = Namespace(beam=beam, min_len=2, max_len_a=0, max_len_b=10)
        slow_hyps = task.inference_step(task.build_generator([model], args), [model], sample)
        fast_hyps = task.inference_step(task.build_generator([fast], args), [fast], sample)
        for slow, quick in zip(slow_hyps, fast_hyps):
            assert [h["tokens"].tolist() for h in slow] == [h["tokens"].tolist() for h in quick]
            torch.testing.assert_close(torch.stack([h["score"] for h in quick]),
                                       torch.stack([h["score"] for h in slow]), atol=1e-5, rtol=1e-5)


def test_a_laid_out_model_converted_to_another_dtype_still_decodes_its_scores(task):
    """After ``.double()`` (as a hub user may call), each parameter is its own tensor again and the
    attention projects q, k and v one by one: the same scores as the model converted unlaid."""
    model = perturb_parameters(make_model(task), seed=22)
    fast = prepared(copy.deepcopy(model)).double()
    article, prev, _ = make_batch(task)
    with torch.no_grad():
        torch.testing.assert_close(fast(article, None, prev)[0], model.double()(article, None, prev)[0])


@pytest.mark.parametrize("normalize_before", [False, True])
def test_a_gpt_block_computes_fairseq_s_decoder_block(task, normalize_before):
    """The block's own forward (no branches for options it lacks) against fairseq's
    ``TransformerDecoderLayerBase.forward`` on the same block: a padded causal row, then two
    cached steps."""
    from fairseq.modules.transformer_layer import TransformerDecoderLayerBase

    from fairseq_ext.transformer_sm import causal_mask

    model = perturb_parameters(make_model(task, normalize_before=normalize_before), seed=23)
    block = model.decoder.layers[1]
    x = torch.randn(7, 3, 32)  # (T, B, C)
    padding = torch.zeros(3, 7, dtype=torch.bool)
    padding[2, 3:] = True  # a short row: padded keys in the first chunk
    ours_state, theirs_state = {}, {}
    with torch.no_grad():
        for t, rows in ((0, slice(0, 5)), (5, slice(5, 6)), (6, slice(6, 7))):
            length = rows.stop - rows.start
            mask = causal_mask(length) if t == 0 else None
            kwargs = dict(self_attn_mask=mask, self_attn_padding_mask=padding[:, rows] if t == 0 else None)
            ours = block(x[rows], incremental_state=ours_state, **kwargs)[0]
            theirs = TransformerDecoderLayerBase.forward(block, x[rows], incremental_state=theirs_state, **kwargs)[0]
            torch.testing.assert_close(ours, theirs, atol=0, rtol=0)


def test_every_layer_s_cache_is_reserved_before_the_prompt_runs(task):
    """The decoder sets every layer's cache aside before its first layer runs the prompt (so the
    prompt's passing buffers are not allocated between caches), each layer's cache is the buffer
    reserved for it, with ``spare`` positions of room after the prompt."""
    from fairseq_ext.transformer_sm.attention import CACHE, RESERVED

    model = make_model(task, layers=3)
    article, prev, _ = make_batch(task)
    reserved_when_the_first_layer_ran, reserved_buffers = [], []

    def first_layer_runs(module, args, kwargs):
        state = kwargs["incremental_state"]
        for layer in model.decoder.layers:
            buffers = layer.self_attn.get_incremental_state(state, RESERVED)
            reserved_when_the_first_layer_ran.append(bool(buffers))
            reserved_buffers.append(buffers["key"].data_ptr() if buffers else None)

    hook = model.decoder.layers[0].register_forward_pre_hook(first_layer_runs, with_kwargs=True)
    state = {}
    with torch.no_grad():
        model.decoder(prev[:, :1], model.encoder(article), incremental_state=state)
    hook.remove()
    assert reserved_when_the_first_layer_ran == [True] * 3
    for layer, pointer in zip(model.decoder.layers, reserved_buffers):
        cache = layer.self_attn.get_incremental_state(state, CACHE)
        assert cache["key"].data_ptr() == pointer
        assert cache["key"].size(2) == article.size(1) + 1 + layer.self_attn.spare
        assert not layer.self_attn.get_incremental_state(state, RESERVED)  # handed over, not kept twice
