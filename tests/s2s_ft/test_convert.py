"""HF BERT/RoBERTa -> s2s-ft converter: hidden states match HF models on the same weights
(random tiny models and the real MiniLM-L6-H384 checkpoint), within 1e-5."""

import json

import pytest
import torch
from fairseq.data import Dictionary

from fairseq_ext.convert.s2s_ft import convert_config, convert_state_dict, hf_token_map, load_pretrained
from fairseq_ext.data.wordpiece import WordPieceCodec, join_pieces, minilm_dir, read_vocab, write_dictionary
from fairseq_ext.s2s_ft.model import source_positions
from fairseq_ext.s2s_ft.transformer import S2SFTTransformer
from parity import perturb_parameters

transformers = pytest.importorskip("transformers")  # the independent oracle (pinned in requirements)

TOL = 1e-5
TINY = dict(
    vocab_size=50, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64,
    max_position_embeddings=40, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
)  # fmt: skip


def ours_from_hf(hf_model, token_map=None):
    perturb_parameters(hf_model, seed=0)
    config = hf_model.config.to_dict()
    vocab = hf_model.config.vocab_size
    token_map = torch.arange(vocab) if token_map is None else token_map
    body = S2SFTTransformer(convert_config(config, len(token_map), config["pad_token_id"]))
    state, left = convert_state_dict(hf_model.state_dict(), config, token_map, body.state_dict())
    body.load_state_dict(state)
    return body.eval(), left


def padded_batch(vocab, pad, low=5):
    """Rows of 30, 4 and 1 tokens, right-padded."""
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(low, vocab, (3, 30), generator=g)
    ids[ids == pad] = low
    ids[1, 4:] = pad
    ids[2, 1:] = pad
    return ids


def compare(body, hf_model, ours_ids, hf_ids, pad, hf_position_offset=0, types=None):
    positions, _ = source_positions(ours_ids, pad)
    types = torch.zeros_like(ours_ids) if types is None else types
    keep = ours_ids.ne(pad)
    with torch.no_grad():
        ours = body.forward_packed(ours_ids, positions, types, keep[:, None, None, :])
        theirs = hf_model(
            input_ids=hf_ids, attention_mask=keep.long(), token_type_ids=types,
            position_ids=positions + hf_position_offset,
        ).last_hidden_state  # fmt: skip
    assert theirs[keep].abs().mean() > 0.3  # O(1) outputs: nothing hides in small numbers
    torch.testing.assert_close(ours[keep], theirs[keep], atol=TOL, rtol=0)


def test_bert_parity_random_tiny():
    torch.manual_seed(0)
    hf = transformers.BertModel(transformers.BertConfig(**TINY), add_pooling_layer=False).eval()
    body, left = ours_from_hf(hf)
    assert left == ["lm_head.bias", "lm_head.dense.bias", "lm_head.dense.weight",
                    "lm_head.layer_norm.bias", "lm_head.layer_norm.weight"]  # fmt: skip
    ids = padded_batch(TINY["vocab_size"], hf.config.pad_token_id)
    types = (torch.arange(30) >= 3).long().expand(3, 30)
    compare(body, hf, ids, ids, hf.config.pad_token_id, types=types)


def test_bert_mlm_head_parity_random_tiny():
    torch.manual_seed(1)
    hf = transformers.BertForMaskedLM(transformers.BertConfig(**TINY)).eval()
    body, left = ours_from_hf(hf)
    assert left == []
    ids = padded_batch(TINY["vocab_size"], 0)
    positions, _ = source_positions(ids, 0)
    with torch.no_grad():
        ours = body.logits(body.forward_packed(ids, positions, torch.zeros_like(ids), ids.ne(0)[:, None, None, :]))
        theirs = hf(input_ids=ids, attention_mask=ids.ne(0).long(), position_ids=positions).logits
    keep = ids.ne(0)
    assert theirs[keep].std() > 0.3
    torch.testing.assert_close(ours[keep], theirs[keep], atol=TOL, rtol=0)


def test_roberta_parity_random_tiny():
    """RoBERTa: positions offset by padding_idx + 1, one token type repeated, permuted vocab."""
    torch.manual_seed(2)
    config = transformers.RobertaConfig(**{**TINY, "max_position_embeddings": 42}, type_vocab_size=1)
    hf = transformers.RobertaModel(config, add_pooling_layer=False).eval()
    token_map = torch.randperm(TINY["vocab_size"], generator=torch.Generator().manual_seed(0))
    token_map[config.pad_token_id] = config.pad_token_id  # our pad index plays RoBERTa's pad
    body, _ = ours_from_hf(hf, token_map)
    assert body.cfg.max_positions == 40 and body.cfg.type_vocab_size == 2
    ours_ids = padded_batch(TINY["vocab_size"], config.pad_token_id)
    compare(body, hf, ours_ids, token_map[ours_ids], config.pad_token_id, hf_position_offset=config.pad_token_id + 1)


def test_bert_parity_unusual_config():
    """Nothing at its default: epsilon 1e-5, three token types, [PAD] at id 3, another
    vocabulary order, 40 positions."""
    config = transformers.BertConfig(**TINY, layer_norm_eps=1e-5, type_vocab_size=3, pad_token_id=3)
    hf = transformers.BertForMaskedLM(config).eval()
    token_map = torch.randperm(TINY["vocab_size"], generator=torch.Generator().manual_seed(1))
    token_map[token_map == 3], token_map[1] = token_map[1].clone(), 3  # our pad (1) plays HF's [PAD] (3)
    body, left = ours_from_hf(hf, token_map)
    assert left == [] and body.cfg.layer_norm_eps == 1e-5 and body.cfg.type_vocab_size == 3
    ours_ids = padded_batch(TINY["vocab_size"], 1)
    hf_ids = token_map[ours_ids]
    types = (torch.arange(30) % 3).expand(3, 30)
    keep = ours_ids.ne(1)
    positions, _ = source_positions(ours_ids, 1)
    with torch.no_grad():
        hidden = body.forward_packed(ours_ids, positions, types, keep[:, None, None, :])
        ours = body.logits(hidden)[..., token_map.argsort()]  # columns in HF id order
        theirs = hf(input_ids=hf_ids, attention_mask=keep.long(), token_type_ids=types, position_ids=positions).logits
    assert theirs[keep].std() > 0.3
    torch.testing.assert_close(ours[keep], theirs[keep], atol=1e-4, rtol=0)


#: config fields (with a value) under which the same parameters compute another function, or
#: parameters the model has no place for
UNSUPPORTED = {
    "hidden_act": "gelu_new",
    "is_decoder": True,
    "add_cross_attention": True,
    "position_embedding_type": "relative_key",
    "tie_word_embeddings": False,
}


@pytest.mark.parametrize("field", sorted(UNSUPPORTED))
def test_unsupported_configs_are_refused_by_name(field):
    config = {**transformers.BertConfig(**TINY).to_dict(), "model_type": "bert", field: UNSUPPORTED[field]}
    with pytest.raises(ValueError, match=field):
        convert_config(config, TINY["vocab_size"], 0)


def test_an_untied_mlm_decoder_is_refused():
    """The output projection is tied to the word embeddings: a checkpoint whose decoder
    differs would silently lose it."""
    torch.manual_seed(3)
    hf = transformers.BertForMaskedLM(transformers.BertConfig(**TINY)).eval()
    config = hf.config.to_dict()
    state = dict(hf.state_dict())
    state["cls.predictions.decoder.weight"] = torch.randn_like(state["cls.predictions.decoder.weight"])
    body = S2SFTTransformer(convert_config(config, TINY["vocab_size"], 0))
    with pytest.raises(ValueError, match="decoder.weight"):
        convert_state_dict(state, config, torch.arange(TINY["vocab_size"]), body.state_dict())


def test_loading_into_a_model_built_with_another_epsilon_is_refused(tmp_path):
    """RoBERTa's epsilon is 1e-5, the model's default BERT's 1e-12: same parameters, other
    function; --init-from-hf names the flag instead of loading."""
    config = transformers.RobertaConfig(**{**TINY, "max_position_embeddings": 42}, type_vocab_size=1,
                                        layer_norm_eps=1e-5)  # as roberta-base's config.json
    hf = transformers.RobertaModel(config, add_pooling_layer=False)
    hf.save_pretrained(tmp_path)
    vocab = {f"w{i}": i for i in range(TINY["vocab_size"])}
    (tmp_path / "vocab.json").write_text(json.dumps(vocab))
    symbols = list(vocab)
    body = S2SFTTransformer(convert_config(config.to_dict(), len(symbols), 1))
    body.cfg.layer_norm_eps = 1e-12
    with pytest.raises(ValueError, match="--layer-norm-eps"):
        load_pretrained(body, tmp_path, symbols)


def test_minilm_parity_real_weights(tmp_path):
    """The shipped MiniLM-L6-H384 through our WordPiece dictionary == HF BertModel on its ids."""
    model_dir = minilm_dir()
    write_dictionary(read_vocab(model_dir / "vocab.txt"), tmp_path / "dict.txt")
    dictionary = Dictionary.load(str(tmp_path / "dict.txt"))
    assert len(dictionary) == 30522
    config = json.loads((model_dir / "config.json").read_text())
    body = S2SFTTransformer(convert_config(config, len(dictionary), dictionary.pad()))
    left = load_pretrained(body, model_dir, dictionary.symbols)
    assert all(name.startswith("lm_head.") for name in left)  # a sentence encoder: no MLM head
    body.eval()
    hf = transformers.BertModel.from_pretrained(str(model_dir), add_pooling_layer=False).eval()
    codec = WordPieceCodec(model_dir / "vocab.txt")
    texts = ["Pseudo-masked fine-tuning predicts every target token.", "A short one."]
    pieces = [codec.encode(t) for t in texts]
    ours = [torch.cat([torch.tensor([dictionary.bos()]), dictionary.encode_line(p, add_if_not_exist=False).long()])
            for p in pieces]  # fmt: skip
    ours_ids = torch.full((2, max(len(x) for x in ours)), dictionary.pad())
    for i, x in enumerate(ours):
        ours_ids[i, : len(x)] = x
    vocab_map = hf_token_map(dictionary.symbols, {p: i for i, p in enumerate(
        (model_dir / "vocab.txt").read_text(encoding="utf-8").splitlines())})  # fmt: skip
    hf_ids = vocab_map[ours_ids]
    expected = [[101] + hf_tok for hf_tok in (hf_tokenizer_ids(model_dir, t) for t in texts)]
    assert hf_ids[0, : len(expected[0])].tolist() == expected[0]  # [CLS] ... [SEP]
    assert not (hf_ids < 0).any()
    compare(body, hf, ours_ids, hf_ids, dictionary.pad())
    assert join_pieces(pieces[0]) == "pseudo - masked fine - tuning predicts every target token ."


def hf_tokenizer_ids(model_dir, text):
    tokenizer = transformers.BertTokenizer(str(model_dir / "vocab.txt"), do_lower_case=True)
    return tokenizer(text, add_special_tokens=False)["input_ids"] + [tokenizer.sep_token_id]
