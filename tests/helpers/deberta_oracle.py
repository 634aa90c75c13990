"""The Z-Code++ encoder and its oracle, HF DeBERTa-v2 (random init), at the sizes the Z-Code++
attention and converter tests share: configurations, builders, random token batches."""

from argparse import Namespace

import torch
from fairseq.models.transformer import TransformerConfig
from transformers import DebertaV2Config

import user_dir  # noqa: F401  (registers zcodepp)
from fairseq_ext.convert.zcodepp import convert_config, load_deberta_v2
from fairseq_ext.zcodepp.encoder import ZCodeEncoder
from toys import toy_dictionary
from user_dir.models.zcodepp import zcodepp_tiny_architecture

VOCAB, DIM, HEADS, LAYERS, FFN = 60, 32, 4, 3, 64
BUCKETS, MAX_DISTANCE = 16, 32
TOL = 1e-5
PAD = 1

#: HF config fields of the parity configurations. "v3": what released DeBERTa-v3 checkpoints
#: use (256 buckets, max_relative_positions -1 = max_position_embeddings 512, epsilon 1e-7,
#: the "p2c|c2p" string); "unusual": nothing at its default (8 buckets up to distance 40,
#: epsilon 1e-3, the tanh GELU).
PARITY_CONFIGS = {
    "v3": dict(position_buckets=256, max_relative_positions=-1, max_position_embeddings=512,
               layer_norm_eps=1e-7, pos_att_type="p2c|c2p", hidden_act="gelu"),
    "unusual": dict(position_buckets=8, max_relative_positions=40, layer_norm_eps=1e-3,
                    pos_att_type=["c2p", "p2c"], hidden_act="gelu_new"),
}


def dictionary(size=VOCAB):
    """A toy dictionary of ``size`` symbols in all (fairseq's 4 specials included)."""
    return toy_dictionary(size - 4)


def hf_config(**overrides):
    fields = dict(
        vocab_size=VOCAB, hidden_size=DIM, num_hidden_layers=LAYERS, num_attention_heads=HEADS,
        intermediate_size=FFN, hidden_act="gelu", hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
        relative_attention=True, position_buckets=BUCKETS, max_relative_positions=MAX_DISTANCE,
        pos_att_type=["p2c", "c2p"], share_att_key=True, norm_rel_ebd="layer_norm",
        position_biased_input=False, type_vocab_size=0, layer_norm_eps=1e-5, pad_token_id=PAD,
    )
    fields.update(overrides)
    return DebertaV2Config(**fields)


def build_encoder(fie_chunk_size=0, fie_global_layers=1, layers=LAYERS, **options):
    args = Namespace(
        encoder_embed_dim=DIM, encoder_ffn_embed_dim=FFN, encoder_layers=layers, encoder_attention_heads=HEADS,
        relative_buckets=BUCKETS, relative_max_distance=MAX_DISTANCE, dropout=0.0, attention_dropout=0.0,
        fie_chunk_size=fie_chunk_size, fie_global_layers=fie_global_layers, encoder_layer_norm_eps=1e-5,
    )
    for name, value in options.items():
        setattr(args, name, value)
    zcodepp_tiny_architecture(args)
    cfg = TransformerConfig.from_namespace(args)
    d = dictionary()
    embed = torch.nn.Embedding(len(d), DIM, padding_idx=d.pad())
    return ZCodeEncoder(cfg, d, embed).eval()


def converted(hf):
    """Our encoder with the options the HF config needs, loaded with the HF weights."""
    options = convert_config(hf.config)
    encoder = build_encoder(**{k: v for k, v in options.items() if k != "encoder_layers"})
    return load_deberta_v2(encoder, hf.state_dict(), hf.config)


def random_tokens(lengths, pad=1, left_pad=False, generator=None):
    batch, width = len(lengths), max(lengths)
    tokens = torch.full((batch, width), pad, dtype=torch.long)
    for row, n in enumerate(lengths):
        words = torch.randint(4, VOCAB, (n,), generator=generator)
        if left_pad:
            tokens[row, width - n:] = words
        else:
            tokens[row, :n] = words
    return tokens


def encode(encoder, tokens):
    return encoder(tokens)["encoder_out"][0].transpose(0, 1)  # (B, T, C)
