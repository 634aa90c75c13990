"""Properties of the ProphetNet model and loss where no oracle exists: incremental decoding
(predicting streams off) == full forward inside beam search, the n-gram loss with n = 1 ==
fairseq's label_smoothed_cross_entropy, padding invariance, and the pure pieces (buckets
against HF's function, the mask picture, stream weights, n-gram targets)."""

from argparse import Namespace

import pytest
import torch
from fairseq.criterions.label_smoothed_cross_entropy import LabelSmoothedCrossEntropyCriterion
from fairseq.sequence_generator import SequenceGenerator
from transformers.models.prophetnet.modeling_prophetnet import compute_relative_buckets

import user_dir  # noqa: F401
from fairseq_ext.modules.relative_position import t5_relative_bucket
from fairseq_ext.prophetnet.loss import ngram_targets, stream_weights
from fairseq_ext.prophetnet.masks import full_layout
from parity import BEAMS, REORDER_STEPS, SENTENCES, encoder_decoder_with_reorders, perturb_parameters
from toys import toy_dictionary
from user_dir.criterions.ngram_language_loss import NgramLanguageLossCriterion
from user_dir.models.prophetnet import ProphetNetSummModel, prophetnet_summ_tiny

VOCAB_SIZE = 40


def _dictionary():
    return toy_dictionary(VOCAB_SIZE)


def _model(ngram=2, seed=0, decoder_layers=None):
    torch.manual_seed(seed)
    d = _dictionary()
    args = Namespace(max_source_positions=64, max_target_positions=64, ngram=ngram, decoder_layers=decoder_layers)
    prophetnet_summ_tiny(args)
    task = Namespace(source_dictionary=d, target_dictionary=d)
    return ProphetNetSummModel.build_model(args, task), task


def _sample(d, src_lengths, tgt_lengths, seed=1, extra_src_pad=0, extra_tgt_pad=0):
    """A fairseq translation-style sample: left-padded source, right-padded target."""
    g = torch.Generator().manual_seed(seed)
    bsz = len(src_lengths)
    src_len, tgt_len = max(src_lengths) + extra_src_pad, max(tgt_lengths) + extra_tgt_pad
    src = torch.full((bsz, src_len), d.pad())
    target = torch.full((bsz, tgt_len), d.pad())
    prev = torch.full((bsz, tgt_len), d.pad())
    for b, (s, t) in enumerate(zip(src_lengths, tgt_lengths)):
        src[b, src_len - s:] = torch.randint(d.nspecial, len(d), (s,), generator=g)
        src[b, -1] = d.eos()
        tokens = torch.randint(d.nspecial, len(d), (t,), generator=g)
        tokens[-1] = d.eos()
        target[b, :t] = tokens
        prev[b, 0] = d.eos()
        prev[b, 1:t] = tokens[:-1]
    return {
        "net_input": {"src_tokens": src, "src_lengths": src.ne(d.pad()).sum(1), "prev_output_tokens": prev},
        "target": target,
        "ntokens": int(target.ne(d.pad()).sum()),
        "nsentences": bsz,
    }


def test_incremental_decoding_matches_full_forward_in_beam_search():
    model, task = _model(ngram=3, decoder_layers=2)
    model.eval()
    d = task.target_dictionary
    sample = _sample(d, [9, 6, 11], [4, 4, 4])
    generator = SequenceGenerator([model], d, beam_size=3, max_len_b=10, min_len=3)
    with torch.no_grad():
        hypos = generator.forward(sample)
    checked = 0
    for b, beams in enumerate(hypos):
        assert len(beams) == 3
        for hypo in beams:
            tokens = hypo["tokens"]  # ends with eos
            prev = torch.cat([torch.tensor([d.eos()]), tokens[:-1]]).unsqueeze(0)
            src = sample["net_input"]["src_tokens"][b: b + 1]
            with torch.no_grad():
                logits, _ = model(src, src.ne(d.pad()).sum(1), prev)
            full = torch.log_softmax(logits.float(), -1)[0].gather(-1, tokens.unsqueeze(-1)).squeeze(-1)
            torch.testing.assert_close(hypo["positional_scores"], full, atol=1e-4, rtol=0)
            checked += len(tokens)
    assert checked > 30


def test_cached_decoding_follows_beam_reorders():
    """Beam search's reorders (within each sentence's beams, after the first step and in the
    middle of decoding, then a finished sentence leaving the batch): every step's next-token
    logits equal the full forward over each beam's rows."""
    model, task = _model(ngram=3, decoder_layers=2)
    perturb_parameters(model.eval(), seed=6)
    d = task.target_dictionary
    net = _sample(d, [9, 6, 1], [1, 1, 1])["net_input"]
    src = net["src_tokens"].repeat_interleave(BEAMS, 0)
    lengths = net["src_lengths"].repeat_interleave(BEAMS, 0)
    prev = _sample(d, [1] * SENTENCES * BEAMS, [REORDER_STEPS] * SENTENCES * BEAMS, seed=7)["net_input"][
        "prev_output_tokens"]  # a hypothesis per beam
    steps, full = encoder_decoder_with_reorders(model, src, lengths, prev)
    torch.testing.assert_close(steps, full, atol=1e-4, rtol=1e-4)


def test_decoding_computes_only_main_and_next_token_rows():
    model, task = _model(ngram=3, decoder_layers=2)
    model.eval()
    d = task.target_dictionary
    sample = _sample(d, [5, 7], [3, 3])
    seen, seen_last = [], []
    hook = model.decoder.layers[0].register_forward_hook(lambda m, args, out: seen.append(out.shape[1]))
    hook_last = model.decoder.layers[1].register_forward_hook(lambda m, args, out: seen_last.append(out.shape[1]))
    net = sample["net_input"]
    with torch.no_grad():
        enc = model.encoder(net["src_tokens"], net["src_lengths"])
        state = {}
        for t in range(3):
            logits, extra = model.decoder(net["prev_output_tokens"][:, : t + 1], enc, incremental_state=state)
            assert extra["ngram_logits"].shape[1] == 1
        model.decoder(net["prev_output_tokens"], enc)
    hook.remove()
    hook_last.remove()
    assert seen == [2, 2, 2, 4 * 3]  # main + stream 1 a step; (1 + n) T rows in training
    assert seen_last == [1, 1, 1, 3 * 3]  # the last layer keeps the predicting rows only


def _criteria(task, eps=0.1, **kwargs):
    ngram = NgramLanguageLossCriterion(task, sentence_avg=False, label_smoothing=eps, **kwargs)
    plain = LabelSmoothedCrossEntropyCriterion(task, sentence_avg=False, label_smoothing=eps)
    return ngram, plain


@pytest.mark.parametrize("ngram,disable", [(1, False), (3, True)])
def test_ngram_loss_reduces_to_label_smoothed_cross_entropy(ngram, disable):
    model, task = _model(ngram=ngram)
    model.eval()
    sample = _sample(task.target_dictionary, [9, 6, 11], [5, 8, 3])
    ours, fairseq_ls = _criteria(task, disable_ngram_loss=disable)
    with torch.no_grad():
        loss, size, log = ours(model, sample)
        ref_loss, ref_size, ref_log = fairseq_ls(model, sample)
    assert size == ref_size
    assert torch.equal(loss, ref_loss)
    assert torch.equal(log["nll_loss"], ref_log["nll_loss"])


def test_future_ngram_loss_weights_streams():
    model, task = _model(ngram=2)
    model.eval()
    sample = _sample(task.target_dictionary, [9, 6], [5, 8])
    ours, fairseq_ls = _criteria(task, eps=0.0, ngram_gamma=0.5)
    with torch.no_grad():
        loss, _, log = ours(model, sample)
        next_loss, _, _ = fairseq_ls(model, sample)
    second = log["_stream2_nll"]  # stream 2's summed nll (eps = 0: nll is the loss)
    torch.testing.assert_close(loss, 2 / 3 * next_loss + 1 / 3 * second)
    assert log["_stream2_tokens"] == sample["ntokens"] - 2  # first position of each sentence excluded


def test_padding_never_changes_the_loss():
    model, task = _model(ngram=2)
    model.eval()
    d = task.target_dictionary
    ours, _ = _criteria(task)
    with torch.no_grad():
        tight = ours(model, _sample(d, [9, 6, 11], [5, 8, 3]))
        padded = ours(model, _sample(d, [9, 6, 11], [5, 8, 3], extra_src_pad=4, extra_tgt_pad=5))
    assert tight[1] == padded[1]
    torch.testing.assert_close(padded[0], tight[0], rtol=1e-6, atol=1e-5)
    torch.testing.assert_close(padded[2]["_stream2_nll"], tight[2]["_stream2_nll"], rtol=1e-6, atol=1e-5)


def test_every_length_from_one_token_is_padding_invariant():
    """Sources of every length from 1 token ([SEP] alone) and targets from 1 token, beside a
    long row: every stream's logits are those of the row alone."""
    model, task = _model(ngram=3, decoder_layers=2)
    perturb_parameters(model.eval(), seed=12)
    d = task.target_dictionary
    longest = 12
    with torch.no_grad():
        for length in range(1, longest + 1):
            target = min(length, 6)
            net = _sample(d, [longest, length], [6, target], seed=length)["net_input"]
            _, batched = model(net["src_tokens"], net["src_lengths"], net["prev_output_tokens"])
            src = net["src_tokens"][1:, -length:]
            _, alone = model(src, net["src_lengths"][1:], net["prev_output_tokens"][1:, :target])
            assert torch.isfinite(alone["ngram_logits"]).all()
            torch.testing.assert_close(batched["ngram_logits"][1:, :, :target], alone["ngram_logits"],
                                       atol=1e-4, rtol=1e-4)


def test_left_padded_decoder_input_is_refused():
    model, task = _model()
    d = task.target_dictionary
    prev = torch.tensor([[d.pad(), d.eos(), 5]])
    with pytest.raises(ValueError, match="right-padded"):
        model(torch.tensor([[5, d.eos()]]), torch.tensor([2]), prev)


def test_relative_buckets_match_hf():
    distance = torch.arange(-5, 400)
    ours = t5_relative_bucket(distance, 32, 128)
    theirs = compute_relative_buckets(32, 128, -distance, is_bidirectional=False)
    assert torch.equal(ours, theirs.long())
    assert ours[distance == 15].item() == 15 and ours[distance >= 128].eq(31).all()


def test_layout_matches_the_picture():
    layout = full_layout(4, 2, 32, 128)
    visible = torch.cat([layout.allowed, layout.own_allowed.unsqueeze(1)], 1).int()
    expected = torch.tensor([
        [1, 0, 0, 0, 0], [1, 1, 0, 0, 0], [1, 1, 1, 0, 0], [1, 1, 1, 1, 0],  # main
        [1, 0, 0, 0, 1], [1, 1, 0, 0, 1], [1, 1, 1, 0, 1], [1, 1, 1, 1, 1],  # stream 1
        [1, 0, 0, 0, 1], [1, 0, 0, 0, 1], [1, 1, 0, 0, 1], [1, 1, 1, 0, 1],  # stream 2
    ])
    assert torch.equal(visible, expected)
    assert layout.buckets[4 + 3].tolist() == [4, 3, 2, 1]  # stream rows measure i - j + 1


def test_stream_weights_and_targets():
    assert stream_weights(3, 0.5) == pytest.approx([4 / 7, 2 / 7, 1 / 7])
    assert stream_weights(2, next_token_only=True) == [1.0, 0.0]
    with pytest.raises(ValueError):
        stream_weights(2, gamma=0.0)
    target = torch.tensor([[10, 11, 12, 13, 2]])
    assert ngram_targets(target, 3, 1).tolist() == [[[10, 11, 12, 13, 2], [1, 11, 12, 13, 2], [1, 1, 12, 13, 2]]]
    spans = ngram_targets(torch.tensor([[10, 11, 12, 13]]), 2, 1, torch.tensor([[0, 0, 2, 2]]))
    assert spans.tolist() == [[[10, 11, 12, 13], [1, 11, 1, 13]]]


def test_ignore_prefix_size_keeps_every_stream_s_valid_targets():
    """--ignore-prefix-size 2, n = 3, targets ``a b c d </s>`` and ``a b </s>``: the n-gram
    targets are built on the whole target (stream j predicts position i from main positions up
    to i - j, which may be in the prefix), then the prefix positions are dropped. By hand::

        stream 1:  _ _ | c d </s>        _ _ | </s>
        stream 2:  _ _ | c d </s>        _ _ | </s>
        stream 3:  _ _ | c d </s>        _ _ | </s>
    """
    d = _dictionary()
    task = Namespace(source_dictionary=d, target_dictionary=d)
    a, b, c, e = (d.index(f"w{i}") for i in range(4))
    pad, eos = d.pad(), d.eos()
    target = torch.tensor([[a, b, c, e, eos], [a, b, eos, pad, pad]])
    logits = torch.randn(2, 3, 5, len(d), generator=torch.Generator().manual_seed(0))  # (B, n, T, V)
    sample = {"target": target}
    criterion = NgramLanguageLossCriterion(task, sentence_avg=False, label_smoothing=0.0, ignore_prefix_size=2)
    loss, next_nll, stats = criterion.compute_ngram_loss((None, {"ngram_logits": logits}), sample)
    assert [count for _, count in stats] == [4, 4, 4]
    lprobs = torch.log_softmax(logits, -1)
    kept = [(0, 2, c), (0, 3, e), (0, 4, eos), (1, 2, eos)]  # (row, position, target): every stream
    by_hand = [-sum(lprobs[row, stream, i, tok] for row, i, tok in kept) for stream in range(3)]
    for (nll, _), expected in zip(stats, by_hand):
        torch.testing.assert_close(nll, expected)
    torch.testing.assert_close(loss, sum(by_hand) / 3)  # gamma 1: every stream weighs 1/3


@pytest.mark.parametrize("ruled", [False, True])
def test_encoder_attention_once_per_source_gives_fairseq_s_hypotheses(monkeypatch, ruled):
    """Beam search over per-source encoder outputs (ProphetNetEncoder.reorder_encoder_out, the
    decoder's cached per-source keys) gives the hypotheses and scores of fairseq's per-row
    outputs and encoder attention, on perturbed weights, sentences finishing at different steps;
    the encoder outputs stay one per source and shrink when a sentence leaves."""
    from fairseq.models.transformer import TransformerEncoderBase

    from fairseq_ext.decoding.ensemble import with_rules

    model, task = _model(ngram=2, decoder_layers=2)
    perturb_parameters(model.eval(), seed=11)
    d = task.target_dictionary
    sample = _sample(d, [9, 3, 12, 1], [1, 1, 1, 1])

    def generate():
        generator = SequenceGenerator([model], d, beam_size=3, max_len_b=9, min_len=1)
        if ruled:
            generator = with_rules(generator, [])
        with torch.no_grad():
            return generator.forward(sample)

    widths = []
    reorder = model.encoder.reorder_encoder_out

    def spy(encoder_out, new_order):
        out = reorder(encoder_out, new_order)
        widths.append((new_order.numel(), out["encoder_out"][0].size(1)))
        return out

    monkeypatch.setattr(model.encoder, "reorder_encoder_out", spy)
    ours = generate()
    assert widths[0] == (4 * 3, 4)  # expanded to beams, kept one per source
    assert min(w for _, w in widths) < 4, "no sentence finished early: the drop path is untested"
    monkeypatch.setattr(model.encoder, "reorder_encoder_out",
                        lambda eo, order: TransformerEncoderBase.reorder_encoder_out(model.encoder, eo, order))
    theirs = generate()
    for mine, base in zip(ours, theirs):
        assert [h["tokens"].tolist() for h in mine] == [h["tokens"].tolist() for h in base]
        for a, b in zip(mine, base):
            torch.testing.assert_close(a["positional_scores"], b["positional_scores"], atol=1e-5, rtol=1e-5)
