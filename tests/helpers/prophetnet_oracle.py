"""Randomly initialized HF ProphetNet models (the independent oracle of the ProphetNet parity and
converter tests), saved as a released checkpoint folder is laid out (``save_pretrained`` plus the
``prophetnet.tokenizer`` vocabulary file)."""

import shutil

import torch
from transformers import ProphetNetConfig, ProphetNetForConditionalGeneration

from fairseq_ext.data.wordpiece import minilm_dir, read_vocab
from parity import perturb_parameters

# BERT-like order: the specials are not where fairseq puts them, so rows must be permuted
VOCAB = ["[PAD]", "[unused0]", "[unused1]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [f"w{i}" for i in range(33)]


def hf_prophetnet(tmp_path, ngram, tie=True, vocab=VOCAB, **overrides):
    """A perturbed (:func:`parity.perturb_parameters`) 2+2-layer ProphetNet over ``vocab``, saved
    in ``tmp_path / "hf"``; returns ``(model, folder)``."""
    fields = dict(
        vocab_size=len(vocab), hidden_size=32, encoder_ffn_dim=48, decoder_ffn_dim=40,
        num_encoder_layers=2, num_decoder_layers=2, num_encoder_attention_heads=4, num_decoder_attention_heads=2,
        ngram=ngram, num_buckets=32, relative_max_distance=128, max_position_embeddings=64,
        dropout=0.0, attention_dropout=0.0, activation_dropout=0.0, pad_token_id=vocab.index("[PAD]"),
        bos_token_id=vocab.index("[CLS]"), eos_token_id=vocab.index("[SEP]"),
        decoder_start_token_id=vocab.index("[SEP]"), tie_word_embeddings=tie,
    )
    fields.update(overrides)
    model = perturb_parameters(ProphetNetForConditionalGeneration(ProphetNetConfig(**fields)).eval(), seed=0)
    hf_dir = tmp_path / "hf"
    model.save_pretrained(hf_dir)
    (hf_dir / "prophetnet.tokenizer").write_text("\n".join(vocab) + "\n")
    return model, hf_dir


def tiny_hf_prophetnet(target, max_positions=512):
    """A ProphetNet of ``prophetnet_summ_tiny``'s size with BERT-uncased's WordPiece vocabulary
    (MiniLM's, shipped offline), randomly initialized (seed 0) and saved in ``target``; returns
    the vocabulary file."""
    vocab = minilm_dir() / "vocab.txt"
    tokens = read_vocab(str(vocab))
    config = ProphetNetConfig(
        vocab_size=len(tokens), hidden_size=32, encoder_ffn_dim=64, decoder_ffn_dim=64, num_encoder_layers=1,
        num_decoder_layers=1, num_encoder_attention_heads=2, num_decoder_attention_heads=2, ngram=2,
        num_buckets=16, relative_max_distance=32, max_position_embeddings=max_positions,
        pad_token_id=tokens.index("[PAD]"), bos_token_id=tokens.index("[CLS]"), eos_token_id=tokens.index("[SEP]"),
        decoder_start_token_id=tokens.index("[SEP]"),
    )
    torch.manual_seed(0)
    ProphetNetForConditionalGeneration(config).save_pretrained(target)
    shutil.copyfile(vocab, target / "prophetnet.tokenizer")
    return vocab
