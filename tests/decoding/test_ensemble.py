"""Encoder outputs left as they are while beam search only reorders each sentence's beams
(fairseq_ext/decoding/ensemble.py, RuledEnsemble): the same hypotheses and scores as
fairseq's own ensemble, with the encoder outputs copied only when sentences leave the batch."""

import argparse
from types import SimpleNamespace

import pytest
import torch
from fairseq.models.transformer import TransformerModel, base_architecture
from fairseq.sequence_generator import SequenceGenerator

from fairseq_ext.decoding.ensemble import with_rules
from parity import perturb_parameters
from toys import toy_dictionary

WORDS = 40


def transformer(d):
    args = argparse.Namespace(
        encoder_embed_dim=32, encoder_ffn_embed_dim=64, encoder_layers=2, encoder_attention_heads=4,
        decoder_embed_dim=32, decoder_ffn_embed_dim=64, decoder_layers=2, decoder_attention_heads=4,
        max_source_positions=64, max_target_positions=64, dropout=0.0, share_all_embeddings=True,
    )  # fmt: skip
    base_architecture(args)
    torch.manual_seed(0)
    model = TransformerModel.build_model(args, SimpleNamespace(source_dictionary=d, target_dictionary=d)).eval()
    perturb_parameters(model, seed=3)
    return model


def batch(d, lengths, seed=0):
    g = torch.Generator().manual_seed(seed)
    src = torch.full((len(lengths), max(lengths)), d.pad())
    for row, n in enumerate(lengths):  # left-padded, ending with </s>
        src[row, src.size(1) - n:] = torch.randint(d.nspecial, len(d), (n,), generator=g)
        src[row, -1] = d.eos()
    return {"net_input": {"src_tokens": src, "src_lengths": torch.tensor(lengths)}}


@pytest.mark.parametrize("beam", [1, 4])
def test_same_hypotheses_and_fewer_encoder_copies(beam):
    d = toy_dictionary(WORDS)
    model = transformer(d)
    sample = batch(d, [9, 5, 1, 7])
    copies = []
    reorder = model.encoder.reorder_encoder_out
    model.encoder.reorder_encoder_out = lambda out, order: (copies.append(len(order)), reorder(out, order))[1]

    def generate(shared):
        copies.clear()
        generator = SequenceGenerator([model], d, beam_size=beam, min_len=2, max_len_b=12)
        if shared:
            generator = with_rules(generator, [])
        with torch.no_grad():
            return generator.generate([model], sample), list(copies)

    fairseq_out, fairseq_copies = generate(shared=False)
    ours, our_copies = generate(shared=True)
    for theirs, mine in zip(fairseq_out, ours):
        assert [h["tokens"].tolist() for h in theirs] == [h["tokens"].tolist() for h in mine]
        torch.testing.assert_close(torch.stack([h["score"] for h in theirs]), torch.stack([h["score"] for h in mine]),
                                   rtol=0, atol=0)  # fmt: skip
    if beam == 1:
        assert our_copies == fairseq_copies  # nothing to share
    else:
        # the expansion to beams and each batch that lost a sentence; fairseq: every step
        assert len(our_copies) < len(fairseq_copies) / 2
        assert our_copies[0] == len(sample["net_input"]["src_tokens"]) * beam
        assert all(a > b for a, b in zip(our_copies, our_copies[1:]))


def test_which_reorders_keep_the_encoder_outputs():
    """Only a reorder that keeps the rows and moves each among its own sentence's beams."""
    d = toy_dictionary(WORDS)
    ensemble = with_rules(SequenceGenerator([transformer(d)], d, beam_size=4), []).model
    expand = torch.arange(4).repeat_interleave(4)  # 4 sentences to 16 rows
    assert not ensemble.within_sentences(expand)  # nothing expanded yet
    ensemble.rows = 16
    assert ensemble.within_sentences(torch.tensor([1, 1, 0, 3, 4, 7, 7, 7, 8, 9, 10, 11, 15, 12, 12, 13]))
    assert not ensemble.within_sentences(torch.arange(12))  # the last sentence left: 12 rows
    assert not ensemble.within_sentences(torch.cat([torch.arange(4), torch.arange(8, 16)]))  # the second left
    assert not ensemble.within_sentences(torch.tensor([4, 1, 2, 3, *range(4, 16)]))  # a beam of another sentence
    ensemble.beam_size = 1
    assert not ensemble.within_sentences(torch.arange(16))
