"""s2s-ft model properties: split == packed pass, cached decoding == full forward, padding
invariance, and fairseq's SequenceGenerator scores == full forward scores."""

from types import SimpleNamespace

import pytest
import torch
from fairseq.sequence_generator import SequenceGenerator

import user_dir  # noqa: F401  (registers s2s_ft)
from fairseq_ext.s2s_ft.masks import pseudo_masked_attention_mask, seq2seq_attention_mask
from parity import BEAMS, REORDER_STEPS, SENTENCES, encoder_decoder_with_reorders, perturb_parameters
from s2s_ft_models import VOCAB, batch, make_model

TOL = 1e-5


def packed_logits(model, d, src, prev, method):
    """Reference: one pass over [<s> source; target rows (; [P])] with the paper's mask."""
    body = model.encoder.body
    rows = []
    for i in range(src.size(0)):
        s = torch.cat([torch.tensor([d.bos()]), src[i][src[i].ne(d.pad())]])
        n_tgt = int(prev[i].ne(d.pad()).sum())
        p = prev[i, :n_tgt]
        S = len(s)
        if method == "causal":
            tokens = torch.cat([s, p])
            mask = seq2seq_attention_mask(S, n_tgt)
            pos = torch.arange(S + n_tgt)
        else:
            ctx = torch.cat([p[1:], torch.tensor([d.pad()])])
            tokens = torch.cat([s, ctx, torch.full((n_tgt,), d.index("<mask>"))])
            mask = pseudo_masked_attention_mask(S, n_tgt)
            pos = torch.cat([torch.arange(S + n_tgt), S + torch.arange(n_tgt)])
        types = (torch.arange(len(tokens)) >= S).long()
        hidden = body.forward_packed(tokens[None], pos[None], types[None], mask[None, None])
        rows.append(body.logits(hidden[0, -n_tgt:]))
    return rows


@pytest.mark.parametrize("method", ["causal", "pseudo"])
@pytest.mark.parametrize("left_pad", [True, False])
def test_split_encoder_decoder_equals_packed_pass(method, left_pad):
    model, d = make_model(method)
    src, lengths, prev, _ = batch(d, left_pad)
    with torch.no_grad():
        logits, _ = model.decoder(prev, model.encoder(src, lengths))
        reference = packed_logits(model, d, src, prev, method)
    for i, ref in enumerate(reference):
        torch.testing.assert_close(logits[i, : len(ref)], ref, atol=TOL, rtol=0)


@pytest.mark.parametrize("method", ["causal", "masked", "pseudo"])
def test_cached_decoding_equals_full_forward(method):
    model, d = make_model(method)
    src, lengths, prev, _ = batch(d)
    with torch.no_grad():
        encoder_out = model.encoder(src, lengths)
        full, _ = model.decoder(prev, encoder_out)
        state = {}
        for step in range(prev.size(1)):
            logits, _ = model.decoder(prev[:, : step + 1], encoder_out, incremental_state=state)
            assert logits.shape == (2, 1, len(d))
            keep = prev[:, step].ne(d.pad())  # only real steps are comparable
            torch.testing.assert_close(logits[keep, 0], full[keep, step], atol=TOL, rtol=0)


@pytest.mark.parametrize("method", ["causal", "masked", "pseudo"])
def test_cached_decoding_follows_beam_reorders(method):
    """Beam search's reorders (within each sentence's beams, after the first step and in the
    middle of decoding, then a finished sentence leaving the batch): every step equals the full
    forward over each beam's rows."""
    model, d = make_model(method)
    perturb_parameters(model, seed=5)
    g = torch.Generator().manual_seed(5)
    src = torch.full((SENTENCES, 9), d.pad())
    for row, n in enumerate((9, 4, 1)):  # left-padded sources ending with </s>
        src[row, 9 - n:] = torch.randint(d.nspecial, VOCAB, (n,), generator=g)
        src[row, -1] = d.eos()
    src = src.repeat_interleave(BEAMS, 0)
    prev = torch.randint(d.nspecial, VOCAB, (len(src), REORDER_STEPS), generator=g)  # a hypothesis per beam
    prev[:, 0] = d.eos()
    lengths = src.ne(d.pad()).sum(1)
    def full_forward(rows):
        return model.decoder(prev[rows], model.encoder(src[rows], lengths[rows]))[0]

    steps, full = encoder_decoder_with_reorders(model, src, lengths, prev, full_forward)
    torch.testing.assert_close(steps, full, atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("method", ["causal", "pseudo"])
def test_every_length_from_one_token_is_padding_invariant(method):
    """Sources of every length from 1 token (</s> alone) and targets from 1 token, beside a
    long row: the logits are those of the row alone."""
    model, d = make_model(method)
    perturb_parameters(model, seed=13)
    g = torch.Generator().manual_seed(13)
    longest = 12
    with torch.no_grad():
        for length in range(1, longest + 1):
            target = min(length, 6)
            src = torch.full((2, longest), d.pad())
            for row, n in enumerate((longest, length)):
                src[row, longest - n:] = torch.randint(d.nspecial, VOCAB, (n,), generator=g)
                src[row, -1] = d.eos()
            prev = torch.full((2, 6), d.pad())
            prev[0] = torch.randint(d.nspecial, VOCAB, (6,), generator=g)
            prev[1, :target] = torch.randint(d.nspecial, VOCAB, (target,), generator=g)
            prev[:, 0] = d.eos()
            lengths = src.ne(d.pad()).sum(1)
            batched, _ = model.decoder(prev, model.encoder(src, lengths))
            alone, _ = model.decoder(prev[1:, :target], model.encoder(src[1:, -length:], lengths[1:]))
            assert torch.isfinite(alone).all()
            torch.testing.assert_close(batched[1:, :target], alone, atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("method", ["causal", "pseudo"])
def test_padding_invariance(method):
    model, d = make_model(method)
    src, lengths, prev, _ = batch(d)
    with torch.no_grad():
        both, _ = model.decoder(prev, model.encoder(src, lengths))
        n_src, n_tgt = int(lengths[1]), int(prev[1].ne(d.pad()).sum())
        alone, _ = model.decoder(prev[1:, :n_tgt], model.encoder(src[1:, -n_src:], lengths[1:]))
    torch.testing.assert_close(both[1, :n_tgt], alone[0], atol=TOL, rtol=0)


@pytest.mark.parametrize("method", ["causal", "pseudo"])
def test_sequence_generator_scores_equal_full_forward(method):
    """fairseq's beam search with the cache scores each hypothesis as the full forward does."""
    model, d = make_model(method, seed=3)
    src, lengths, _, _ = batch(d)
    generator = SequenceGenerator([model], d, beam_size=3, max_len_b=8, min_len=2, no_repeat_ngram_size=2)
    sample = {"net_input": {"src_tokens": src, "src_lengths": lengths}}
    with torch.no_grad():
        hypos = generator.forward(sample)
        for i, beams in enumerate(hypos):
            for hypo in beams[:2]:
                tokens = hypo["tokens"]  # ends with </s>
                prev = torch.cat([torch.tensor([d.eos()]), tokens[:-1]])[None]
                logits, _ = model.decoder(prev, model.encoder(src[i : i + 1], lengths[i : i + 1]))
                lprobs = model.get_normalized_probs((logits, None), log_probs=True)[0]
                expected = lprobs.gather(1, tokens[:, None])[:, 0]
                torch.testing.assert_close(hypo["positional_scores"], expected, atol=1e-4, rtol=0)


def test_training_forward_masks_and_noise():
    for method in ("causal", "masked", "pseudo"):
        model, d = make_model(method, target_mask_prob=0.5, source_mask_prob=0.2)
        model.train()
        src, src_lengths, prev, tgt = batch(d)
        logits, extra = model(src, src_lengths, prev, target=tgt)
        assert logits.shape == (2, prev.size(1), len(d))
        if method == "masked":
            mask = extra["loss_mask"]
            assert mask.any(dim=1).all() and not mask[tgt.eq(d.pad())].any()
        else:
            assert extra["loss_mask"] is None
        logits.sum().backward()  # gradients flow through the shared body
        assert model.encoder.body.embeddings.word.weight.grad is not None


def test_clear_errors():
    model, d = make_model("masked")
    src, lengths, prev, _ = batch(d)
    with pytest.raises(ValueError, match="--criterion s2s_ft"):
        model(src, lengths, prev)
    with pytest.raises(ValueError, match="exceeds the model's"):
        make_model("pseudo", max_positions=30)
    long_src = torch.randint(d.nspecial, VOCAB, (1, 70))
    with pytest.raises(ValueError, match="positions"):
        model.encoder(long_src, torch.tensor([70]))


def test_init_from_hf_is_the_tasks_step():
    """--init-from-hf is read by the summarization tasks when they build a model to train, not
    by build_model: building reads nothing, and a task that would not apply it is refused."""
    with pytest.raises(ValueError, match="--init-from-hf is applied by the summarization tasks"):
        make_model("pseudo", init_from_hf="/nonexistent/hf-dir")


def test_criterion_equals_label_smoothed_cross_entropy_on_predicted_positions():
    from fairseq.criterions.label_smoothed_cross_entropy import LabelSmoothedCrossEntropyCriterion

    from user_dir.criterions.s2s_ft import S2SFTCriterion

    model, d = make_model("pseudo")  # eval mode: no noise, every target predicted
    src, lengths, prev, tgt = batch(d)
    task = SimpleNamespace(target_dictionary=d)
    sample = {"net_input": {"src_tokens": src, "src_lengths": lengths, "prev_output_tokens": prev},
              "target": tgt, "ntokens": int(tgt.ne(d.pad()).sum())}  # fmt: skip
    ours = S2SFTCriterion(task, sentence_avg=False, label_smoothing=0.1)
    stock = LabelSmoothedCrossEntropyCriterion(task, sentence_avg=False, label_smoothing=0.1)
    with torch.no_grad():
        loss, size, log = ours(model, sample)
        ref_loss, ref_size, _ = stock(model, sample)
    torch.testing.assert_close(loss, ref_loss)
    assert size == ref_size == log["npredicted"]

    model, d = make_model("masked", target_mask_prob=0.4)
    torch.manual_seed(5)
    with torch.no_grad():
        loss, size, log = ours(model, sample)
    torch.manual_seed(5)  # the same noise again, by hand
    with torch.no_grad():
        logits, extra = model(src, lengths, prev, target=tgt)
        lprobs = torch.log_softmax(logits, dim=-1)[extra["loss_mask"]]
        picked = tgt[extra["loss_mask"]]
        nll = -lprobs.gather(1, picked[:, None]).sum()
        smooth = -lprobs.sum()
        eps = 0.1
        expected = (1 - eps - eps / (len(d) - 1)) * nll + eps / (len(d) - 1) * smooth
    assert size == int(extra["loss_mask"].sum()) < sample["ntokens"]
    torch.testing.assert_close(loss, expected)


@pytest.mark.parametrize("method", ["causal", "pseudo"])
def test_ngram_blocking_works_on_cpu(method):
    """A model that always prefers one token: with the fixed blocker, no trigram repeats."""
    from fairseq_ext.compat.generation import fix_ngram_blocking

    model, d = make_model(method, seed=3)
    model.encoder.body.lm_head.bias.data[d.nspecial + 6] = 20.0  # the favourite token
    src, lengths, _, _ = batch(d)
    generator = fix_ngram_blocking(SequenceGenerator([model], d, beam_size=2, max_len_b=10, min_len=8,
                                                     no_repeat_ngram_size=3))  # fmt: skip
    with torch.no_grad():
        hypos = generator.forward({"net_input": {"src_tokens": src, "src_lengths": lengths}})
    for beams in hypos:
        tokens = beams[0]["tokens"].tolist()
        trigrams = [tuple(tokens[i : i + 3]) for i in range(len(tokens) - 2)]
        assert len(trigrams) == len(set(trigrams)), tokens
        assert tokens.count(d.nspecial + 6) >= 2  # the favourite still appears where allowed
