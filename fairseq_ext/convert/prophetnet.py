"""Hugging Face ``ProphetNetForConditionalGeneration`` -> ``prophetnet_summ``, with the BERT
vocabulary as its dictionary (:mod:`fairseq_ext.data.wordpiece`).

Embedding rows are permuted from BERT ids to fairseq indices; position rows move from HF's
padding offset to fairseq's; the stream embeddings roll by one row (HF feeds stream k row
``k - 1`` mod n); the other weights are renamed only. The activation is read from the config.
"""

import logging

import torch

from ..data.wordpiece import bert_dictionary, fairseq_order, read_vocab
from . import validate
from .embeddings import embedding_rows
from .read import find_file, read_hf_dir
from .write import Converted, write_converted

logger = logging.getLogger(__name__)

ARCH, TASK, CRITERION = "prophetnet_summ_large", "abstractive_summarization", "ngram_language_loss"
#: boolean model options that default to on (written ``--no-x`` when the weights are untied)
DEFAULT_ON = ("share_all_embeddings", "share_decoder_input_output_embed")
ATTENTION = {"query_proj": "q_proj", "key_proj": "k_proj", "value_proj": "v_proj", "out_proj": "out_proj"}
FEED_FORWARD = {"feed_forward.intermediate": "fc1", "feed_forward.output": "fc2",
                "feed_forward_layer_norm": "final_layer_norm", "self_attn_layer_norm": "self_attn_layer_norm"}
VOCAB_FILES = ("prophetnet.tokenizer", "vocab.txt")
#: our size options -> the HF config's
SIZES = {"encoder_ffn_embed_dim": "encoder_ffn_dim", "decoder_ffn_embed_dim": "decoder_ffn_dim",
         "encoder_layers": "num_encoder_layers", "decoder_layers": "num_decoder_layers",
         "encoder_attention_heads": "num_encoder_attention_heads",
         "decoder_attention_heads": "num_decoder_attention_heads", "ngram": "ngram", "relative_buckets": "num_buckets",
         "relative_max_distance": "relative_max_distance"}


def read_prophetnet_dir(hf_dir, vocab=None):
    """``(HFCheckpoint, vocabulary tokens)`` of a local HF ProphetNet folder."""
    checkpoint = read_hf_dir(hf_dir)
    vocab = vocab if vocab is not None else find_file(hf_dir, VOCAB_FILES, "the WordPiece vocabulary; or give --vocab")
    return checkpoint, read_vocab(vocab)


def hf_padding_idx(config):
    """The row of HF's position tables before position 1 (``pad_token_id``; HF's default 0)."""
    pad = config.get("pad_token_id", 0)
    if not isinstance(pad, int) or pad < 0:
        validate.refuse(config, "pad_token_id", pad, "HF ProphetNet numbers positions from it, it must be an id >= 0")
    return pad


def convert_config(config):
    """Command-line sizes of ``prophetnet_summ`` equal to an HF ProphetNet config."""
    config = validate.config_dict(config)
    validate.require_model_type(config, ("prophetnet",), default="prophetnet")
    hidden = validate.value(config, "hidden_size")
    # HF position rows pad_token_id + 1 .. max_position_embeddings - 1 are positions 1, 2, ...
    positions = validate.value(config, "max_position_embeddings") - hf_padding_idx(config)
    if positions < 3:
        validate.refuse(config, "max_position_embeddings", config["max_position_embeddings"],
                        f"it leaves no position after pad_token_id={config.get('pad_token_id', 0)}")
    sizes = {ours: validate.value(config, theirs) for ours, theirs in SIZES.items()}
    return {
        "encoder_embed_dim": hidden, "decoder_embed_dim": hidden, **sizes,
        "activation_fn": validate.fairseq_activation(config, "activation_function", default="gelu"),
        "dropout": config.get("dropout", 0.1), "attention_dropout": config.get("attention_dropout", 0.1),
        "activation_dropout": config.get("activation_dropout", 0.1),
        # the decoder's predicting streams use one position more
        "max_source_positions": positions - 1, "max_target_positions": positions - 2,
    }


def _embeddings(state):
    """``(encoder words, decoder words, output projection)`` in BERT order. Released
    checkpoints tie all three; a config with ``tie_word_embeddings=False`` unties them."""
    shared = state.get("prophetnet.word_embeddings.weight")
    encoder = state.get("prophetnet.encoder.word_embeddings.weight", shared)
    decoder = state.get("prophetnet.decoder.word_embeddings.weight", shared)
    if encoder is None or decoder is None:
        raise validate.ConversionError("no word embeddings in the HF state dict (prophetnet.word_embeddings.weight)")
    return encoder, decoder, state.get("lm_head.weight", decoder)


def sharing(state):
    """The sharing flags of ``prophetnet_summ`` that reproduce the HF weights."""
    encoder, decoder, output = _embeddings(state)
    return {"share_all_embeddings": torch.equal(encoder, decoder),
            "share_decoder_input_output_embed": torch.equal(output, decoder)}


def _positions(hf_rows, num_rows, padding_idx, hf_padding_idx):
    """HF rows (row ``hf_padding_idx + p`` = 1-based position p) -> fairseq rows (row
    ``padding_idx + p``); ``num_rows`` rows, the padding row and the rows before it zero."""
    out = hf_rows.new_zeros(num_rows, hf_rows.size(1))
    usable = min(hf_rows.size(0) - hf_padding_idx, num_rows - padding_idx)  # padding row + positions
    out[padding_idx + 1: padding_idx + usable] = hf_rows[hf_padding_idx + 1: hf_padding_idx + usable]
    return out


def convert_state_dict(state, config, tokens, padding_idx):
    """HF state dict -> state dict of ``ProphetNetSummModel`` (same sizes); the embedding
    rows follow :func:`fairseq_ext.data.wordpiece.bert_dictionary` of ``tokens``."""
    config = validate.config_dict(config)
    args = convert_config(config)
    hf_pad = hf_padding_idx(config)
    rows = _embeddings(state)[0].size(0)
    if len(tokens) > rows:
        validate.refuse(config, "vocab_size", rows,
                        f"the vocabulary has {len(tokens)} tokens, more than the embedding rows")
    order = fairseq_order(tokens)
    encoder_words, decoder_words, output = (
        embedding_rows(table, order, name=f"{name} rows")[0]
        for name, table in zip(("encoder embedding", "decoder embedding", "output projection"), _embeddings(state))
    )
    out = {
        "encoder.version": torch.tensor([3.0]),
        "encoder.embed_tokens.weight": encoder_words,
        "decoder.embed_tokens.weight": decoder_words,
        "decoder.output_projection.weight": output,
        "encoder.embed_positions.weight": _positions(
            state["prophetnet.encoder.position_embeddings.weight"],
            args["max_source_positions"] + padding_idx + 1, padding_idx, hf_pad),
        "decoder.embed_positions.weight": _positions(
            state["prophetnet.decoder.position_embeddings.weight"],
            args["max_target_positions"] + 2 + padding_idx, padding_idx, hf_pad),
        "decoder.ngram_embeddings.weight": torch.roll(state["prophetnet.decoder.ngram_embeddings.weight"], 1, 0),
    }
    for side, ours in (("encoder", "encoder.layernorm_embedding"), ("decoder", "decoder.layernorm_embedding")):
        for p in ("weight", "bias"):
            out[f"{ours}.{p}"] = state[f"prophetnet.{side}.embeddings_layer_norm.{p}"]
    for side, num_layers in (("encoder", args["encoder_layers"]), ("decoder", args["decoder_layers"])):
        for i in range(num_layers):
            src, dst = f"prophetnet.{side}.layers.{i}", f"{side}.layers.{i}"
            names = dict(FEED_FORWARD)
            names.update({f"self_attn.{h}": f"self_attn.{f}" for h, f in ATTENTION.items()})
            if side == "decoder":
                names["self_attn.relative_pos_embeddings"] = "self_attn.relative_proj"
                names.update({f"cross_attn.{h}": f"encoder_attn.{f}" for h, f in ATTENTION.items()})
                names["cross_attn_layer_norm"] = "encoder_attn_layer_norm"
            for h, f in names.items():
                for p in ("weight", "bias"):
                    out[f"{dst}.{f}.{p}"] = state[f"{src}.{h}.{p}"]
    return out


def convert_dir(hf_dir, vocab=None):
    """The :class:`~fairseq_ext.convert.write.Converted` model of the HF folder ``hf_dir``."""
    checkpoint, tokens = read_prophetnet_dir(hf_dir, vocab)
    config = checkpoint.config
    dictionary = bert_dictionary(tokens)
    pad = config.get("pad_token_id", 0)
    if pad != tokens.index("[PAD]"):
        validate.refuse(config, "pad_token_id", pad, f"[PAD] is id {tokens.index('[PAD]')} in the vocabulary")
    start = config.get("decoder_start_token_id")
    if start is not None and start != tokens.index("[SEP]"):
        logger.warning(f"decoder_start_token_id={start} is not [SEP] ({tokens.index('[SEP]')}); "
                       "fairseq starts decoding with [SEP] (eos), as the public ProphetNet does")
    state = convert_state_dict(checkpoint.state, config, tokens, dictionary.pad())
    options = {**convert_config(config), **sharing(checkpoint.state)}
    return Converted(state, ARCH, options, TASK, CRITERION, dictionary=dictionary, default_on=DEFAULT_ON)


def add_args(parser):
    parser.add_argument("--hf-dir", required=True, help="local Hugging Face ProphetNet folder")
    parser.add_argument("--vocab", help="WordPiece vocabulary (default: prophetnet.tokenizer or vocab.txt in --hf-dir)")


def convert(args):
    return write_converted(args.out, convert_dir(args.hf_dir, args.vocab))
