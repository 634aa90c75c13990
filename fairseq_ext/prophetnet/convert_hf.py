"""Convert HuggingFace ``ProphetNetForConditionalGeneration`` weights to a fairseq checkpoint.

    python -m fairseq_ext.prophetnet.convert_hf --hf-dir DIR --out OUT

``DIR`` is a directory you already have (nothing is downloaded): ``config.json``, the
weights (``model.safetensors`` or ``pytorch_model.bin``) and the WordPiece vocabulary
(``prophetnet.tokenizer`` or ``vocab.txt``, or ``--vocab FILE``). ``OUT`` receives
``checkpoint.pt`` (``--arch prophetnet_summ_large`` with the sizes of the config, task
``abstractive_summarization``) and ``dict.txt`` / ``dict.source.txt`` / ``dict.target.txt``,
so that ``fairseq-generate OUT --user-dir user_dir --path OUT/checkpoint.pt`` and
``--restore-file OUT/checkpoint.pt`` fine-tuning work on data binarized with that dictionary.

What changes on the way (facts of the public code, see REFERENCE_NOTES): embedding rows are
permuted from BERT ids to fairseq indices; position rows move from HF's padding offset to
fairseq's (HF numbers 1-based position p as row ``pad_token_id + p``, fairseq as row
``padding_idx + p``, whatever the config's ``pad_token_id``); the stream embeddings are rolled
by one row (HF feeds stream k the row ``k - 1`` mod n, here stream k gets row k); attention,
feed-forward and LayerNorm weights are renamed only. The activation is read from the config
(:data:`fairseq_ext.hf_compat.HF_ACTIVATIONS`; another one is refused by name).
"""

import argparse
import json
import logging
import os

import torch

from .. import fairseq_fixes
from ..checkpoint import safe_load
from ..hf_compat import fairseq_activation
from .dictionary import build_dictionary, fairseq_order, read_vocab, write_dictionary

logger = logging.getLogger(__name__)

ATTENTION = {"query_proj": "q_proj", "key_proj": "k_proj", "value_proj": "v_proj", "out_proj": "out_proj"}
FEED_FORWARD = {"feed_forward.intermediate": "fc1", "feed_forward.output": "fc2",
                "feed_forward_layer_norm": "final_layer_norm", "self_attn_layer_norm": "self_attn_layer_norm"}
VOCAB_FILES = ("prophetnet.tokenizer", "vocab.txt")
WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin")


def load_hf_dir(hf_dir, vocab=None):
    """``(config dict, state dict, vocabulary tokens)`` read from a local HF directory."""
    with open(os.path.join(hf_dir, "config.json"), encoding="utf-8") as f:
        config = json.load(f)
    weights = next((os.path.join(hf_dir, n) for n in WEIGHT_FILES if os.path.exists(os.path.join(hf_dir, n))), None)
    if weights is None:
        raise FileNotFoundError(f"no {' or '.join(WEIGHT_FILES)} in {hf_dir}")
    state = safe_load(weights)  # model.safetensors when present, else pytorch_model.bin
    if vocab is None:
        vocab = next((os.path.join(hf_dir, n) for n in VOCAB_FILES if os.path.exists(os.path.join(hf_dir, n))), None)
        if vocab is None:
            raise FileNotFoundError(f"no {' or '.join(VOCAB_FILES)} in {hf_dir}; give --vocab")
    return config, state, read_vocab(vocab)


def hf_padding_idx(config):
    """The row of HF's position tables before position 1 (``pad_token_id``; HF's default 0)."""
    pad = config.get("pad_token_id", 0)
    if not isinstance(pad, int) or pad < 0:
        raise ValueError(f"pad_token_id={pad!r}: HF ProphetNet numbers positions from it, it must be an id >= 0")
    return pad


def model_args(config):
    """Command-line sizes of ``prophetnet_summ`` equal to an HF ProphetNet config."""
    if config.get("model_type", "prophetnet") != "prophetnet":
        raise ValueError(f"not a ProphetNet config (model_type={config.get('model_type')})")
    hidden = config["hidden_size"]
    # HF position rows pad_token_id + 1 .. max_position_embeddings - 1 are positions 1, 2, ...
    positions = config["max_position_embeddings"] - hf_padding_idx(config)
    if positions < 3:
        raise ValueError(f"max_position_embeddings={config['max_position_embeddings']} leaves no position "
                         f"after pad_token_id={config.get('pad_token_id', 0)}")
    return {
        "encoder_embed_dim": hidden, "decoder_embed_dim": hidden,
        "encoder_ffn_embed_dim": config["encoder_ffn_dim"], "decoder_ffn_embed_dim": config["decoder_ffn_dim"],
        "encoder_layers": config["num_encoder_layers"], "decoder_layers": config["num_decoder_layers"],
        "encoder_attention_heads": config["num_encoder_attention_heads"],
        "decoder_attention_heads": config["num_decoder_attention_heads"],
        "ngram": config["ngram"], "relative_buckets": config["num_buckets"],
        "relative_max_distance": config["relative_max_distance"],
        "activation_fn": fairseq_activation(config, "activation_function", default="gelu"),
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
        raise KeyError("no word embeddings in the HF state dict")
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
    """HF state dict -> state dict of :class:`ProphetNetSummModel` (same sizes)."""
    args = model_args(config)
    hf_pad = hf_padding_idx(config)
    order = torch.tensor(fairseq_order(tokens))
    if len(tokens) != config["vocab_size"]:
        raise ValueError(f"vocabulary has {len(tokens)} tokens, the config says vocab_size={config['vocab_size']}")
    encoder_words, decoder_words, output = (w[order] for w in _embeddings(state))
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


def write_checkpoint(out_dir, state_dict, args, arch="prophetnet_summ_large"):
    """A fairseq checkpoint (``cfg`` + ``model``) loadable by fairseq-generate --user-dir."""
    from fairseq import options
    from fairseq.dataclass.utils import convert_namespace_to_omegaconf
    from omegaconf import OmegaConf

    user_dir = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "user_dir")
    argv = [out_dir, "--user-dir", user_dir, "--task", "abstractive_summarization", "--arch", arch,
            "--criterion", "ngram_language_loss"]
    for name, value in args.items():
        if not isinstance(value, bool):  # booleans are set on the config below
            argv += ["--" + name.replace("_", "-"), str(value)]
    # parsing imports the plugin for its registrations, which installs the fairseq fixes: the
    # converter needs neither those nor leaves them behind
    with fairseq_fixes.unchanged():
        parser = options.get_training_parser()
        cfg = convert_namespace_to_omegaconf(options.parse_args_and_arch(parser, argv))
    for name, value in args.items():
        cfg.model[name] = value
    checkpoint = {
        "cfg": OmegaConf.to_container(cfg, resolve=True, enum_to_str=True),
        "model": state_dict,
        "optimizer_history": [{"criterion_name": "NgramLanguageLossCriterion", "optimizer_name": "none",
                               "lr_scheduler_state": {"best": None}, "num_updates": 0}],
        "extra_state": {"train_iterator": {"epoch": 1}},
        "last_optimizer_state": None,
    }
    path = os.path.join(out_dir, "checkpoint.pt")
    torch.save(checkpoint, path)
    return path


def convert(hf_dir, out_dir, vocab=None):
    """Convert ``hf_dir`` into ``out_dir``; returns the checkpoint path."""
    config, state, tokens = load_hf_dir(hf_dir, vocab)
    dictionary = build_dictionary(tokens)
    bert_id = {tok: i for i, tok in enumerate(tokens)}
    if config.get("pad_token_id", 0) != bert_id["[PAD]"]:
        raise ValueError(f"config pad_token_id={config.get('pad_token_id')} but [PAD] is id {bert_id['[PAD]']}")
    start = config.get("decoder_start_token_id")
    if start is not None and start != bert_id["[SEP]"]:
        logger.warning(f"decoder_start_token_id={start} is not [SEP] ({bert_id['[SEP]']}); "
                       "fairseq starts decoding with [SEP] (eos), as the public ProphetNet does")
    os.makedirs(out_dir, exist_ok=True)
    for name in ("dict.txt", "dict.source.txt", "dict.target.txt"):
        write_dictionary(tokens, os.path.join(out_dir, name))
    converted = convert_state_dict(state, config, tokens, dictionary.pad())
    return write_checkpoint(out_dir, converted, {**model_args(config), **sharing(state)})


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hf-dir", required=True, help="local directory of a HF ProphetNet checkpoint")
    parser.add_argument("--out", required=True, help="output directory (checkpoint.pt and dictionaries)")
    parser.add_argument("--vocab", default=None, help="WordPiece vocabulary (default: found in --hf-dir)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO)
    path = convert(args.hf_dir, args.out, args.vocab)
    print(path)


if __name__ == "__main__":
    main()
