"""Converter: a DeBERTa-v2/v3 encoder (HF ``DebertaV2Model``) -> :class:`~.encoder.ZCodeEncoder`.

Z-Code++ builds its encoder from DeBERTa. The conversion reads the Hugging Face config beside
the state dict, because two DeBERTa models with the same parameters can compute different
functions (``pos_att_type`` ``c2p`` alone has exactly the parameters of ``p2c|c2p``). What
released DeBERTa-v3 checkpoints use converts: relative attention with ``p2c|c2p``,
``share_att_key``, a LayerNormed relative table (``norm_rel_ebd`` ``layer_norm``), log buckets
(``position_buckets`` > 0; 256 in v3), any ``max_relative_positions`` (-1 = the config's
``max_position_embeddings``, 512 in v3), any ``layer_norm_eps`` (1e-7 in v3) and the
activations of :data:`fairseq_ext.hf_compat.HF_ACTIVATIONS`. Anything else (absolute
positions, token types, an embedding projection, the conv layer, c2p or p2c alone, no
buckets, ...) raises an error naming the config field.

    python -m fairseq_ext.zcodepp.convert --hf-model DIR --out OUT

``DIR`` is a local Hugging Face folder (``config.json`` and ``model.safetensors`` or
``pytorch_model.bin``); nothing is downloaded. ``OUT/encoder.pt`` is the state dict of our
encoder (embedding rows in the checkpoint's own id order) and ``OUT/args.txt`` the
``zcodepp`` model flags that build an encoder computing the same function.
"""

import argparse
import logging
import os

import torch

from ..hf_compat import config_dict, fairseq_activation
from ..transformer_sm.convert import load_hf_checkpoint

logger = logging.getLogger(__name__)

HF_LAYER_MAP = {
    "attention.self.query_proj": "self_attn.q_proj",
    "attention.self.key_proj": "self_attn.k_proj",
    "attention.self.value_proj": "self_attn.v_proj",
    "attention.output.dense": "self_attn.out_proj",
    "attention.output.LayerNorm": "self_attn_layer_norm",
    "intermediate.dense": "fc1",
    "output.dense": "fc2",
    "output.LayerNorm": "final_layer_norm",
}

HF_TOP_MAP = {
    "embeddings.word_embeddings.weight": "embed_tokens.weight",
    "embeddings.LayerNorm.weight": "layernorm_embedding.weight",
    "embeddings.LayerNorm.bias": "layernorm_embedding.bias",
    "encoder.rel_embeddings.weight": "rel_embeddings.weight",
    "encoder.LayerNorm.weight": "rel_layer_norm.weight",
    "encoder.LayerNorm.bias": "rel_layer_norm.bias",
}

#: The position-attention terms our disentangled attention computes (both, as DeBERTa-v3).
POS_ATT_TYPES = {"c2p", "p2c"}
#: The state-dict format version fairseq's encoders carry (``encoder.version``).
ENCODER_VERSION = 3.0


def _split(value):
    """``"p2c|c2p"`` or ``["p2c", "c2p"]`` -> ``{"p2c", "c2p"}`` (HF accepts both forms)."""
    if value is None:
        return set()
    if isinstance(value, str):
        value = value.split("|")
    return {part.strip().lower() for part in value if part.strip()}


def _refuse(field, value, why):
    raise ValueError(f"DeBERTa config {field}={value!r}: {why}; the Z-Code++ encoder implements "
                     "DeBERTa-v3's attention only")


def encoder_options(config):
    """The ``zcodepp`` model options (a dict of config fields) whose encoder computes what the
    DeBERTa-v2/v3 ``config`` (a dict or ``DebertaV2Config``) computes; an unsupported field
    raises ``ValueError`` naming it."""
    config = config_dict(config)
    if config.get("model_type", "deberta-v2") != "deberta-v2":
        _refuse("model_type", config.get("model_type"), "not a DeBERTa-v2/v3 config")
    if not config.get("relative_attention", False):
        _refuse("relative_attention", config.get("relative_attention"), "relative attention is required")
    if _split(config.get("pos_att_type")) != POS_ATT_TYPES:
        _refuse("pos_att_type", config.get("pos_att_type"), "both c2p and p2c are required")
    if not config.get("share_att_key", False):
        _refuse("share_att_key", config.get("share_att_key"), "position keys/queries must share the content "
                "projections")
    if "layer_norm" not in _split(config.get("norm_rel_ebd", "none")):
        _refuse("norm_rel_ebd", config.get("norm_rel_ebd"), "the relative table must be LayerNormed")
    buckets = config.get("position_buckets", -1)
    if buckets is None or buckets <= 0:
        _refuse("position_buckets", buckets, "log-bucketed relative positions (> 0) are required")
    if config.get("position_biased_input", True):
        _refuse("position_biased_input", config.get("position_biased_input", True), "no absolute positions")
    if config.get("type_vocab_size", 0) > 0:
        _refuse("type_vocab_size", config["type_vocab_size"], "no token-type embeddings")
    hidden = config["hidden_size"]
    if config.get("embedding_size", hidden) not in (None, hidden):
        _refuse("embedding_size", config["embedding_size"], f"must equal hidden_size ({hidden})")
    if config.get("conv_kernel_size", 0) > 0:
        _refuse("conv_kernel_size", config["conv_kernel_size"], "no convolution layer")
    heads = config["num_attention_heads"]
    if config.get("attention_head_size", hidden // heads) not in (None, hidden // heads):
        _refuse("attention_head_size", config["attention_head_size"], f"must be hidden_size / heads ({hidden // heads})")
    max_relative = config.get("max_relative_positions", -1)
    if max_relative is None or max_relative < 1:
        max_relative = config["max_position_embeddings"]  # DeBERTa's meaning of -1
    return {
        "encoder_embed_dim": hidden,
        "encoder_ffn_embed_dim": config["intermediate_size"],
        "encoder_layers": config["num_hidden_layers"],
        "encoder_attention_heads": heads,
        "relative_buckets": buckets,
        "relative_max_distance": max_relative,
        "encoder_layer_norm_eps": config.get("layer_norm_eps", 1e-7),
        "activation_fn": fairseq_activation(config, "hidden_act", default="gelu"),
    }


def deberta_v2_to_encoder_state(hf_state, config, prefix=""):
    """Rename ``hf_state`` (a ``DebertaV2Model`` state dict, optionally under ``deberta.``) to
    :class:`~.encoder.ZCodeEncoder` keys, each under ``prefix``, after checking ``config``
    (:func:`encoder_options`). Load the result with :func:`load_deberta_v2`, which also checks
    that the encoder was built with the options the config needs."""
    encoder_options(config)
    out = {prefix + "version": torch.tensor([ENCODER_VERSION])}
    for name, tensor in hf_state.items():
        name = name.removeprefix("deberta.")
        if name in HF_TOP_MAP:
            out[prefix + HF_TOP_MAP[name]] = tensor
            continue
        if not name.startswith("encoder.layer."):
            if name.startswith(("embeddings.", "encoder.")) and not name.endswith("position_ids"):
                raise ValueError(f"unexpected DeBERTa parameter {name}")
            continue  # position_ids buffers, heads of task models
        layer, rest = name[len("encoder.layer."):].split(".", 1)
        module, param = rest.rsplit(".", 1)
        if module not in HF_LAYER_MAP:
            raise ValueError(f"unexpected DeBERTa parameter {name}")
        out[f"{prefix}layers.{layer}.{HF_LAYER_MAP[module]}.{param}"] = tensor
    return out


#: encoder_options() field -> (ZCodeEncoder attribute path, fairseq flag)
ENCODER_CHECKS = {
    "relative_buckets": ("relative_buckets", "--relative-buckets"),
    "relative_max_distance": ("relative_max_distance", "--relative-max-distance"),
    "encoder_layer_norm_eps": ("layer_norm_eps", "--encoder-layer-norm-eps"),
    "activation_fn": ("activation_fn_name", "--activation-fn"),
    "encoder_layers": ("num_layers", "--encoder-layers"),
    "encoder_attention_heads": ("attention_heads", "--encoder-attention-heads"),  # same shapes, other function
}


def load_deberta_v2(encoder, hf_state, config):
    """Load a DeBERTa-v2/v3 checkpoint into ``encoder`` (a :class:`~.encoder.ZCodeEncoder`),
    strictly, after checking that the encoder was built with the options the config needs
    (an option it differs in raises, naming the fairseq flag)."""
    options = encoder_options(config)
    for field, (attribute, flag) in ENCODER_CHECKS.items():
        ours = getattr(encoder, attribute)
        if ours != options[field]:
            raise ValueError(f"the DeBERTa config needs {flag} {options[field]} (from its {field}), "
                             f"the encoder was built with {ours}")
    encoder.load_state_dict(deberta_v2_to_encoder_state(hf_state, config), strict=True)
    return encoder


def model_flags(options):
    """``zcodepp`` command-line flags for :func:`encoder_options`' fields."""
    flags = []
    for key, value in options.items():
        flags += ["--" + key.replace("_", "-"), str(value)]
    return flags


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hf-model", required=True, help="local Hugging Face DeBERTa-v2/v3 folder")
    parser.add_argument("--out", required=True, help="output folder (encoder.pt, args.txt)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(message)s")
    config, hf_state = load_hf_checkpoint(args.hf_model)
    options = encoder_options(config)
    state = deberta_v2_to_encoder_state(hf_state, config)
    os.makedirs(args.out, exist_ok=True)
    torch.save(state, os.path.join(args.out, "encoder.pt"))
    flags = " ".join(model_flags(options))
    with open(os.path.join(args.out, "args.txt"), "w", encoding="utf-8") as f:
        f.write(flags + "\n")
    logger.info(f"{len(state)} tensors; encoder flags: {flags}")
    print(f"wrote {args.out}/encoder.pt and {args.out}/args.txt")


if __name__ == "__main__":
    main()
