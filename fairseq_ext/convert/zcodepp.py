"""Hugging Face DeBERTa-v2/v3 -> the Z-Code++ encoder (:class:`fairseq_ext.zcodepp.encoder.ZCodeEncoder`).

The config beside the weights decides, since equal parameters can compute different functions
(``c2p`` alone has the parameters of ``p2c|c2p``). What released DeBERTa-v3 uses converts
(``p2c|c2p``, ``share_att_key``, a LayerNormed relative table, log buckets, any
``max_relative_positions`` and ``layer_norm_eps``); anything else is refused by field.
``model.pt`` holds the encoder of a ``zcodepp`` model (``encoder.*``) for
``load_pretrained_component_from_model``.
"""

import logging

import torch

from . import validate
from .read import read_hf_dir
from .write import Converted, write_converted

logger = logging.getLogger(__name__)

ARCH = "zcodepp_base"  # the decoder's sizes follow the encoder's (zcodepp_base's rule)
TASK, CRITERION = "abstractive_summarization", "label_smoothed_cross_entropy"
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
ONLY_V3 = "; the Z-Code++ encoder implements DeBERTa-v3's attention only"


def convert_config(config):
    """The ``zcodepp`` model options (a dict of config fields) whose encoder computes what the
    DeBERTa-v2/v3 ``config`` (a dict or ``DebertaV2Config``) computes; an unsupported field
    raises :class:`~fairseq_ext.convert.validate.ConversionError` naming it."""
    config = validate.config_dict(config)
    validate.require_model_type(config, ("deberta-v2",), default="deberta-v2")
    validate.require(config, {"relative_attention": (True, False), "share_att_key": (True, False),
                              "position_biased_input": (False, True)},
                     "relative attention sharing the content projections, no absolute positions" + ONLY_V3)
    if validate.split_names(config.get("pos_att_type")) != POS_ATT_TYPES:
        validate.refuse(config, "pos_att_type", config.get("pos_att_type"),
                        "both c2p and p2c are required" + ONLY_V3)
    if "layer_norm" not in validate.split_names(config.get("norm_rel_ebd", "none")):
        validate.refuse(config, "norm_rel_ebd", config.get("norm_rel_ebd"),
                        "the relative table must be LayerNormed")
    buckets = config.get("position_buckets", -1)
    if buckets is None or buckets <= 0:
        validate.refuse(config, "position_buckets", buckets, "log-bucketed relative positions (> 0) are required")
    if (config.get("type_vocab_size") or 0) > 0:
        validate.refuse(config, "type_vocab_size", config["type_vocab_size"], "no token-type embeddings")
    hidden = validate.value(config, "hidden_size")
    if config.get("embedding_size", hidden) not in (None, hidden):
        validate.refuse(config, "embedding_size", config["embedding_size"], f"must equal hidden_size ({hidden})")
    if (config.get("conv_kernel_size") or 0) > 0:
        validate.refuse(config, "conv_kernel_size", config["conv_kernel_size"], "no convolution layer")
    heads = validate.value(config, "num_attention_heads")
    if config.get("attention_head_size", hidden // heads) not in (None, hidden // heads):
        validate.refuse(config, "attention_head_size", config["attention_head_size"],
                        f"must be hidden_size / heads ({hidden // heads})")
    max_relative = config.get("max_relative_positions", -1)
    if max_relative is None or max_relative < 1:
        max_relative = validate.value(config, "max_position_embeddings")  # DeBERTa's meaning of -1
    return {
        "encoder_embed_dim": hidden,
        "encoder_ffn_embed_dim": validate.value(config, "intermediate_size"),
        "encoder_layers": validate.value(config, "num_hidden_layers"),
        "encoder_attention_heads": heads,
        "relative_buckets": buckets,
        "relative_max_distance": max_relative,
        "encoder_layer_norm_eps": config.get("layer_norm_eps", 1e-7),
        "activation_fn": validate.fairseq_activation(config, "hidden_act", default="gelu"),
    }


def convert_state_dict(hf_state, config, prefix=""):
    """Rename ``hf_state`` (a ``DebertaV2Model`` state dict, optionally under ``deberta.``) to
    :class:`~fairseq_ext.zcodepp.encoder.ZCodeEncoder` keys, each under ``prefix``, after
    checking ``config`` (:func:`convert_config`). Load the result with :func:`load_deberta_v2`, which also checks
    that the encoder was built with the options the config needs."""
    convert_config(config)
    out = {prefix + "version": torch.tensor([ENCODER_VERSION])}
    for name, tensor in hf_state.items():
        name = name.removeprefix("deberta.")
        if name in HF_TOP_MAP:
            out[prefix + HF_TOP_MAP[name]] = tensor
            continue
        if not name.startswith("encoder.layer."):
            if name.startswith(("embeddings.", "encoder.")) and not name.endswith("position_ids"):
                raise validate.ConversionError(f"unexpected DeBERTa parameter {name}")
            continue  # position_ids buffers, heads of task models
        layer, rest = name[len("encoder.layer."):].split(".", 1)
        module, param = rest.rsplit(".", 1)
        if module not in HF_LAYER_MAP:
            raise validate.ConversionError(f"unexpected DeBERTa parameter {name}")
        out[f"{prefix}layers.{layer}.{HF_LAYER_MAP[module]}.{param}"] = tensor
    return out


#: convert_config() field -> (ZCodeEncoder attribute path, fairseq flag)
ENCODER_CHECKS = {
    "relative_buckets": ("relative_buckets", "--relative-buckets"),
    "relative_max_distance": ("relative_max_distance", "--relative-max-distance"),
    "encoder_layer_norm_eps": ("layer_norm_eps", "--encoder-layer-norm-eps"),
    "activation_fn": ("activation_fn_name", "--activation-fn"),
    "encoder_layers": ("num_layers", "--encoder-layers"),
    "encoder_attention_heads": ("attention_heads", "--encoder-attention-heads"),  # same shapes, other function
}


def load_deberta_v2(encoder, hf_state, config):
    """Load a DeBERTa-v2/v3 checkpoint into ``encoder`` (a
    :class:`~fairseq_ext.zcodepp.encoder.ZCodeEncoder`), strictly, after checking that the
    encoder was built with the options the config needs (an option it differs in raises,
    naming the fairseq flag)."""
    options = convert_config(config)
    for field, (attribute, flag) in ENCODER_CHECKS.items():
        ours = getattr(encoder, attribute)
        if ours != options[field]:
            raise validate.ConversionError(f"the DeBERTa config needs {flag} {options[field]} (from its "
                                           f"{field}), the encoder was built with {ours}")
    state = convert_state_dict(hf_state, config)
    validate.check_state(state, encoder.state_dict())
    encoder.load_state_dict(state, strict=True)
    return encoder


def add_args(parser):
    parser.add_argument("--hf-dir", required=True, help="local Hugging Face DeBERTa-v2/v3 folder")


def convert(args):
    checkpoint = read_hf_dir(args.hf_dir)
    options = convert_config(checkpoint.config)
    state = convert_state_dict(checkpoint.state, checkpoint.config, prefix="encoder.")
    return write_converted(args.out, Converted(state, ARCH, options, TASK, CRITERION))
