"""Converter: a DeBERTa-v2/v3 encoder state dict (HF ``DebertaV2Model`` names) -> ZCodeEncoder.

Z-Code++ builds its encoder from DeBERTa; with this map a DeBERTa-v3 checkpoint initializes the
encoder of a ``zcodepp`` model (same width, heads, buckets; vocabulary already matched), and the
parity tests copy random HF weights into ours. Only the relative-attention, shared-key,
LayerNormed-table configuration (DeBERTa-v3's) is supported: anything else raises.
"""

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

UNSUPPORTED = ("pos_key_proj", "pos_query_proj", "position_embeddings", "token_type_embeddings",
               "embed_proj", "encoder.conv.")


def deberta_v2_to_encoder_state(hf_state, prefix=""):
    """Rename ``hf_state`` (a ``DebertaV2Model`` state dict, optionally under ``deberta.``) to
    :class:`~.encoder.ZCodeEncoder` keys, each under ``prefix``."""
    out = {}
    for name, tensor in hf_state.items():
        name = name.removeprefix("deberta.")
        if any(part in name for part in UNSUPPORTED):
            raise ValueError(
                f"{name}: only DeBERTa-v3's configuration (share_att_key, no absolute positions, "
                "no token types, no conv layer) converts to a Z-Code++ encoder"
            )
        if name in HF_TOP_MAP:
            out[prefix + HF_TOP_MAP[name]] = tensor
            continue
        if not name.startswith("encoder.layer."):
            continue  # e.g. position_ids buffers, heads of task models
        layer, rest = name[len("encoder.layer."):].split(".", 1)
        module, param = rest.rsplit(".", 1)
        if module not in HF_LAYER_MAP:
            raise ValueError(f"unexpected DeBERTa parameter {name}")
        out[f"{prefix}layers.{layer}.{HF_LAYER_MAP[module]}.{param}"] = tensor
    return out
