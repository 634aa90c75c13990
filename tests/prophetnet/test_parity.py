"""Parity of converted HF ProphetNet weights: a randomly initialized
``ProphetNetForConditionalGeneration`` (the independent oracle), converted with
``python -m fairseq_ext.cli.convert prophetnet`` and loaded the way fairseq-generate loads a checkpoint,
gives the same next-token and n-gram log-probabilities on a padded batch."""

import pytest
import torch
from fairseq import checkpoint_utils
from transformers import ProphetNetConfig
from transformers.cache_utils import DynamicCache, EncoderDecoderCache
from transformers.models.prophetnet.modeling_prophetnet import ProphetNetNgramSelfAttention

import user_dir  # noqa: F401  (registers the model and makes checkpoints load safely)
from fairseq_ext.cli.convert import main as convert
from fairseq_ext.convert import prophetnet as convert_prophetnet
from fairseq_ext.data.wordpiece import bert_dictionary, read_vocab
from prophetnet_oracle import VOCAB, hf_prophetnet

TOLERANCE = 1e-4
# [PAD] at id 2: HF numbers positions from pad_token_id (position p is row 2 + p)
VOCAB_PAD2 = ["[unused0]", "[unused1]", "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [f"w{i}" for i in range(33)]

#: (ngram, tied embeddings, vocabulary, config fields): HF's defaults for the buckets and
#: distances in the first two, nothing at its default in the third (pad id 2, 16 buckets up
#: to distance 20, relu).
CONFIGS = {
    "n2-tied": (2, True, VOCAB, {}),
    "n3-untied": (3, False, VOCAB, {}),
    "n2-pad2-buckets16": (2, True, VOCAB_PAD2, dict(num_buckets=16, relative_max_distance=20,
                                                    activation_function="relu")),
}


def _batch(lengths, seed, low=7, vocab=VOCAB):
    g = torch.Generator().manual_seed(seed)
    return [torch.randint(low, len(vocab), (n,), generator=g) for n in lengths]


def _per_row_predict_bias(self, hidden_states, attn_weights, position_ids, buckets):
    """The predicting streams' relative bias as the original ProphetNet defines it: the
    table of query (stream, position, head) gathered by that query's buckets.
    transformers 5.24's batch-first port pairs each query with the table of another
    (stream, position, head) whenever T > 1 (see test_hf_full_forward_pairs_bias_rows_wrongly);
    its one-token-per-step decoding path pairs them correctly."""
    bsz, length = hidden_states.shape[:2]
    table = self.relative_pos_embeddings(hidden_states)  # (B, T, n, buckets * H)
    table = table.view(bsz, length, self.ngram, self.num_buckets, self.num_attn_heads)
    table = table.permute(0, 2, 4, 1, 3)  # (B, n, H, T, buckets)
    index = buckets.long()[:, None, None].expand(bsz, self.ngram, self.num_attn_heads, length, buckets.size(-1))
    return torch.gather(table, -1, index)  # (B, n, H, T, 2T)


def _padded_batch(dictionary, to_ours, vocab=VOCAB):
    """Sources of 30, 3 and 1 tokens (the last only [SEP]), targets of 1, 12 and 4 tokens."""
    sep, pad = vocab.index("[SEP]"), vocab.index("[PAD]")
    low = vocab.index("[MASK]") + 1
    sources = [torch.cat([s, torch.tensor([sep])]) for s in _batch([29, 2, 0], seed=1, low=low, vocab=vocab)]
    targets = _batch([1, 12, 4], seed=2, low=low, vocab=vocab)
    src_len, tgt_len = max(len(s) for s in sources), max(len(t) for t in targets) + 1
    # HF: right-padded source with an attention mask; decoder input = [SEP] + target, right-padded
    hf_src, hf_dec = torch.full((3, src_len), pad), torch.full((3, tgt_len), pad)
    hf_mask = torch.zeros(3, src_len, dtype=torch.long)
    # ours: fairseq's layout, left-padded source, right-padded decoder input
    fs_src, fs_dec = torch.full((3, src_len), dictionary.pad()), torch.full((3, tgt_len), dictionary.pad())
    for b, (s, t) in enumerate(zip(sources, targets)):
        hf_src[b, : len(s)] = s
        hf_mask[b, : len(s)] = 1
        fs_src[b, src_len - len(s):] = to_ours[s]
        dec = torch.cat([torch.tensor([sep]), t])
        hf_dec[b, : len(dec)] = dec
        fs_dec[b, : len(dec)] = to_ours[dec]
    return hf_src, hf_mask, hf_dec, fs_src, fs_dec


def _convert_and_load(tmp_path, ngram, tie, vocab=VOCAB, **overrides):
    hf, hf_dir = hf_prophetnet(tmp_path, ngram, tie, vocab, **overrides)
    out = tmp_path / "fairseq"
    path = convert(["prophetnet", "--hf-dir", str(hf_dir), "--out", str(out)])
    models, _, task = checkpoint_utils.load_model_ensemble_and_task([path], arg_overrides={"data": str(out)})
    dictionary = task.target_dictionary
    assert len(dictionary) == len(vocab)
    roles = {"[CLS]": dictionary.bos(), "[PAD]": dictionary.pad(), "[SEP]": dictionary.eos(), "[UNK]": dictionary.unk()}
    to_ours = torch.tensor([roles.get(tok, dictionary.index(tok)) for tok in vocab])
    return hf, models[0].eval(), dictionary, to_ours


def _ours_lprobs(model, dictionary, to_ours, fs_src, fs_dec):
    with torch.no_grad():
        _, extra = model(fs_src, fs_src.ne(dictionary.pad()).sum(1), fs_dec)
    return torch.log_softmax(extra["ngram_logits"].float(), -1)[..., to_ours]  # (B, n, T, V), BERT order


def _hf_incremental_next_token(hf, hf_src, hf_mask, hf_dec):
    """HF's own decoding path: one token per call with its cache."""
    with torch.no_grad():
        encoder_outputs = hf.prophetnet.encoder(input_ids=hf_src, attention_mask=hf_mask)
        cache = EncoderDecoderCache(DynamicCache(), DynamicCache())
        steps = []
        for t in range(hf_dec.size(1)):
            out = hf(encoder_outputs=encoder_outputs, attention_mask=hf_mask,
                     decoder_input_ids=hf_dec[:, t: t + 1], cache=cache, use_cache=True)
            cache = out.cache
            steps.append(torch.log_softmax(out.logits[:, -1].float(), -1))
    return torch.stack(steps, 1)  # (B, T, V)


@pytest.fixture(scope="module", params=sorted(CONFIGS))
def any_config(request, tmp_path_factory):
    ngram, tie, vocab, overrides = CONFIGS[request.param]
    return (ngram, vocab) + _convert_and_load(tmp_path_factory.mktemp("convert"), ngram, tie, vocab, **overrides)


@pytest.fixture(scope="module", params=["n2-tied", "n3-untied"])
def converted(request, tmp_path_factory):
    """The configurations HF's cached decoding runs on: it computes the decoder's position
    from ``pad_token_id + steps`` and asserts it equals the step count, so a pad id other than
    0 fails inside HF (its full forward, used for every configuration, does not)."""
    ngram, tie, vocab, overrides = CONFIGS[request.param]
    return (ngram,) + _convert_and_load(tmp_path_factory.mktemp("convert"), ngram, tie, vocab, **overrides)


def test_next_token_matches_hf_decoding(converted):
    """Unmodified HF, its cached decoding path, vs our full forward pass."""
    ngram, hf, ours, dictionary, to_ours = converted
    hf_src, hf_mask, hf_dec, fs_src, fs_dec = _padded_batch(dictionary, to_ours)
    ours_lp = _ours_lprobs(ours, dictionary, to_ours, fs_src, fs_dec)
    hf_lp = _hf_incremental_next_token(hf, hf_src, hf_mask, hf_dec)
    real = fs_dec.ne(dictionary.pad())
    diff = (ours_lp[:, 0] - hf_lp).abs().amax(-1)[real]
    assert diff.max().item() < TOLERANCE, f"max |diff| {diff.max().item():.2e}"
    assert (ours_lp[0, 0, 0] - ours_lp[0, 0, 1]).abs().max() > 1e-3  # positions differ: not a trivial match


def test_all_streams_match_hf_full_forward(any_config, monkeypatch):
    """HF's full (training) forward, every stream, with the predicting streams' relative
    bias paired per row as the original ProphetNet pairs it."""
    monkeypatch.setattr(ProphetNetNgramSelfAttention, "get_predict_relative_pos_embeddings", _per_row_predict_bias)
    ngram, vocab, hf, ours, dictionary, to_ours = any_config
    hf_src, hf_mask, hf_dec, fs_src, fs_dec = _padded_batch(dictionary, to_ours, vocab)
    ours_lp = _ours_lprobs(ours, dictionary, to_ours, fs_src, fs_dec)
    with torch.no_grad():
        out = hf(input_ids=hf_src, attention_mask=hf_mask, decoder_input_ids=hf_dec, use_cache=False)
    hf_logits = [out.logits] + [out.logits_ngram[:, k] for k in range(ngram - 1)]
    real = fs_dec.ne(dictionary.pad())
    for stream in range(ngram):
        hf_lp = torch.log_softmax(hf_logits[stream].float(), -1)
        diff = (ours_lp[:, stream] - hf_lp).abs().amax(-1)[real]
        assert diff.max().item() < TOLERANCE, f"stream {stream + 1}: max |diff| {diff.max().item():.2e}"
    assert out.logits[real].std() > 0.3  # O(1) logits: nothing hides in small numbers


def test_hf_full_forward_pairs_bias_rows_wrongly(converted):
    """Why the test above re-pairs HF's predicting-stream bias: unmodified, HF's full forward
    disagrees with HF's own cached decoding (which our model matches) once T > 1."""
    _, hf, _, dictionary, to_ours = converted
    hf_src, hf_mask, hf_dec, _, fs_dec = _padded_batch(dictionary, to_ours)
    with torch.no_grad():
        full = torch.log_softmax(hf(input_ids=hf_src, attention_mask=hf_mask, decoder_input_ids=hf_dec,
                                    use_cache=False).logits.float(), -1)
    steps = _hf_incremental_next_token(hf, hf_src, hf_mask, hf_dec)
    real = fs_dec.ne(dictionary.pad())
    assert (full - steps).abs().amax(-1)[real].max().item() > 10 * TOLERANCE


def test_dictionary_roles():
    d = bert_dictionary(VOCAB)
    assert (d[d.bos()], d[d.pad()], d[d.eos()], d[d.unk()]) == ("[CLS]", "[PAD]", "[SEP]", "[UNK]")
    assert len(d) == len(VOCAB)


def test_converter_rejects_non_bert_vocab(tmp_path):
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("a\nb\n")
    with pytest.raises(ValueError, match="not a BERT WordPiece vocabulary"):
        read_vocab(str(vocab))


def test_converter_refuses_configs_it_cannot_compute():
    config = ProphetNetConfig(vocab_size=len(VOCAB), hidden_size=32, activation_function="silu").to_dict()
    with pytest.raises(ValueError, match="activation_function='silu'"):
        convert_prophetnet.convert_config(config)
    with pytest.raises(ValueError, match="pad_token_id=None"):
        convert_prophetnet.convert_config({**config, "activation_function": "gelu", "pad_token_id": None})
    args = convert_prophetnet.convert_config({**config, "activation_function": "gelu", "pad_token_id": 2,
                                  "max_position_embeddings": 64})
    assert (args["max_source_positions"], args["max_target_positions"]) == (61, 60)  # rows 3 .. 63
