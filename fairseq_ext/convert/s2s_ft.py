"""Hugging Face BERT / RoBERTa -> :class:`~fairseq_ext.s2s_ft.transformer.S2SFTTransformer`.

The layers map one-to-one. The word-embedding and MLM-bias rows are gathered through a token
map (our index -> HF id, :func:`hf_token_map`); RoBERTa's first ``padding_idx + 1`` position
rows are dropped; a single token-type row is repeated for targets (type 1). A missing MLM head
keeps its initialization; the output layer is tied to the word embeddings. A config under which
the same weights compute another function is refused by field (``hidden_act``, ``is_decoder``,
``add_cross_attention``, ``position_embedding_type``, ``tie_word_embeddings``).
"""

import json
import logging
from typing import Dict, List, Tuple

import torch
from fairseq.data import Dictionary

from ..data.wordpiece import BERT_NAMES, read_vocab, token_map
from ..noising.symbols import MASK, add_mask
from ..s2s_ft.transformer import S2SFTTransformer, S2SFTTransformerConfig
from . import validate
from .embeddings import embedding_rows
from .read import find_file, read_hf_dir
from .write import Converted, write_converted

logger = logging.getLogger(__name__)

ARCH = "s2s_ft"
TASK, CRITERION = "s2s_ft_summarization", "s2s_ft"
MODEL_TYPES = ("bert", "roberta")
#: fairseq symbols -> RoBERTa tokens (fairseq's specials are RoBERTa's own)
ROBERTA_NAMES = {"[MASK]": MASK}
VOCAB_FILES = ("vocab.txt", "vocab.json")
PREFIXES = ("bert.", "roberta.")
LAYER_NAMES = {
    "attention.self.query": "query",
    "attention.self.key": "key",
    "attention.self.value": "value",
    "attention.output.dense": "attn_out",
    "attention.output.LayerNorm": "attn_layer_norm",
    "intermediate.dense": "ffn_in",
    "output.dense": "ffn_out",
    "output.LayerNorm": "ffn_layer_norm",
}
HEAD_NAMES = {  # BERT's cls.predictions / RoBERTa's lm_head
    "cls.predictions.transform.dense": "lm_head.dense",
    "cls.predictions.transform.LayerNorm": "lm_head.layer_norm",
    "lm_head.dense": "lm_head.dense",
    "lm_head.layer_norm": "lm_head.layer_norm",
}
HEAD_BIASES = ("cls.predictions.bias", "lm_head.bias")
#: config fields (value, default) under which the same parameters compute what s2s-ft
#: computes; another value means a causal mask, cross-attention, relative positions, an
#: untied output layer or another activation
IMPLEMENTED = {"hidden_act": ("gelu", "gelu"), "is_decoder": (False, False), "add_cross_attention": (False, False),
               "position_embedding_type": ("absolute", "absolute"), "tie_word_embeddings": (True, True)}
DECODER_WEIGHTS = ("cls.predictions.decoder.weight", "lm_head.decoder.weight")
IGNORED = ("pooler.", "embeddings.position_ids", "embeddings.token_type_ids", "cls.seq_relationship",
           "cls.predictions.decoder.", "lm_head.decoder.")  # fmt: skip


def convert_config(hf_config, vocab_size: int, padding_idx: int, type_vocab_size: int = 2):
    """A HF ``config.json`` (bert/roberta) -> :class:`S2SFTTransformerConfig` sizes."""
    config = validate.config_dict(hf_config)
    validate.require_model_type(config, MODEL_TYPES)
    validate.require(config, IMPLEMENTED, "s2s-ft converts BERT/RoBERTa encoders with exact GELU, absolute "
                     "positions, no causal mask or cross-attention and a tied output layer")
    offset = position_offset(config)
    return S2SFTTransformerConfig(
        vocab_size=vocab_size,
        padding_idx=padding_idx,
        embed_dim=validate.value(config, "hidden_size"),
        layers=validate.value(config, "num_hidden_layers"),
        attention_heads=validate.value(config, "num_attention_heads"),
        ffn_embed_dim=validate.value(config, "intermediate_size"),
        max_positions=validate.value(config, "max_position_embeddings") - offset,
        type_vocab_size=max(type_vocab_size, config.get("type_vocab_size", 1)),
        dropout=config.get("hidden_dropout_prob", 0.1),
        attention_dropout=config.get("attention_probs_dropout_prob", 0.1),
        layer_norm_eps=config.get("layer_norm_eps", 1e-12),
    )


def position_offset(hf_config: dict) -> int:
    """Rows of HF's position table before our position 0 (RoBERTa: ``pad_token_id + 1``)."""
    return hf_config.get("pad_token_id", 1) + 1 if hf_config.get("model_type") == "roberta" else 0


def hf_token_map(symbols: List[str], hf_vocab: Dict[str, int], model_type: str = "bert") -> torch.Tensor:
    """Our dictionary's symbols -> HF ids (``-1`` where the checkpoint has no such token).

    fairseq's ``<s> <pad> </s> <unk>`` map to ``[CLS] [PAD] [SEP] [UNK]`` (BERT) or to
    themselves (RoBERTa); ``<mask>`` / ``[MASK]`` map to the checkpoint's mask token.
    """
    return token_map(symbols, hf_vocab, BERT_NAMES if model_type == "bert" else ROBERTA_NAMES)


def convert_state_dict(
    hf_state: Dict[str, torch.Tensor],
    hf_config: dict,
    token_map: torch.Tensor,
    init_state: Dict[str, torch.Tensor],
    pad=None,
) -> Tuple[Dict[str, torch.Tensor], List[str]]:
    """HF BERT / RoBERTa weights (with or without the ``bert.``/``roberta.`` prefix) -> a state dict
    of :class:`S2SFTTransformer`, rows gathered through ``token_map`` ``(V,)``; ``init_state`` (the
    model's ``state_dict()``) gives the shapes and the values kept where the checkpoint has none.
    Returns ``(state_dict, names_left_at_init)``."""
    state = {name.split(".", 1)[1] if name.startswith(PREFIXES) else name: value for name, value in hf_state.items()}
    words = state.get("embeddings.word_embeddings.weight")
    for name in DECODER_WEIGHTS:
        if name in state and words is not None and not torch.equal(state[name], words):
            raise validate.ConversionError(f"{name} differs from the word embeddings: s2s-ft ties its output layer to "
                                     "them, an untied checkpoint does not convert")
    offset = position_offset(hf_config)
    out = {}
    unused = []
    for name, value in state.items():
        value = value.float()
        if name == "embeddings.word_embeddings.weight":
            out["embeddings.word.weight"], _ = embedding_rows(
                value, token_map, init=init_state["embeddings.word.weight"], pad=pad, name="word embeddings")
        elif name == "embeddings.position_embeddings.weight":
            rows = init_state["embeddings.position.weight"].size(0)
            out["embeddings.position.weight"] = value[offset : offset + rows]
        elif name == "embeddings.token_type_embeddings.weight":
            rows = init_state["embeddings.token_type.weight"].size(0)
            out["embeddings.token_type.weight"] = value[torch.arange(rows).clamp(max=value.size(0) - 1)]
        elif name.startswith("embeddings.LayerNorm."):
            out["embeddings.layer_norm." + _ln_param(name.rsplit(".", 1)[1])] = value
        elif name.startswith("encoder.layer."):
            index, rest = name[len("encoder.layer.") :].split(".", 1)
            module, param = rest.rsplit(".", 1)
            if module not in LAYER_NAMES:
                unused.append(name)
                continue
            out[f"layers.{index}.{LAYER_NAMES[module]}.{_ln_param(param)}"] = value
        elif name.rsplit(".", 1)[0] in HEAD_NAMES:
            module, param = name.rsplit(".", 1)
            out[f"{HEAD_NAMES[module]}.{_ln_param(param)}"] = value
        elif name in HEAD_BIASES:  # one bias per vocabulary row: the same rule, one column wide
            bias, _ = embedding_rows(value[:, None], token_map, init=init_state["lm_head.bias"][:, None], pad=pad,
                                     name="MLM output bias")
            out["lm_head.bias"] = bias[:, 0]
        elif not name.startswith(IGNORED):
            unused.append(name)
    if unused:
        raise validate.ConversionError(f"unexpected weights in the checkpoint: {unused[:8]}")
    out["lm_head.weight"] = out["embeddings.word.weight"]  # tied
    validate.check_state(out, init_state)
    left = sorted(set(init_state) - set(out))
    return {**init_state, **out}, left


def _ln_param(param: str) -> str:
    """Old TF-converted checkpoints name LayerNorm parameters gamma/beta."""
    return {"gamma": "weight", "beta": "bias"}.get(param, param)


def hf_vocab(directory) -> Dict[str, int]:
    """``{token: id}`` of a HF BERT (``vocab.txt``) or RoBERTa (``vocab.json``) folder."""
    path = find_file(directory, VOCAB_FILES, "the checkpoint's vocabulary")
    if path.suffix == ".json":
        return json.loads(path.read_text(encoding="utf-8"))
    return {token: i for i, token in enumerate(read_vocab(path))}


def load_pretrained(body, directory, symbols: List[str], checkpoint=None) -> List[str]:
    """Load the HF checkpoint in ``directory`` (or ``checkpoint``, the folder already read)
    into ``body`` (an :class:`S2SFTTransformer` over the dictionary ``symbols``); returns the
    weights left at initialization."""
    checkpoint = read_hf_dir(directory) if checkpoint is None else checkpoint
    config = checkpoint.config
    expected = convert_config(config, body.cfg.vocab_size, body.cfg.padding_idx, body.cfg.type_vocab_size)
    for field in ("embed_dim", "layers", "attention_heads", "ffn_embed_dim"):
        if getattr(expected, field) != getattr(body.cfg, field):
            raise validate.ConversionError(
                f"{directory} has {field}={getattr(expected, field)} but the model has "
                f"{getattr(body.cfg, field)}: pick the matching --arch"
            )
    if expected.layer_norm_eps != body.cfg.layer_norm_eps:
        raise validate.ConversionError(
            f"{directory} has layer_norm_eps={expected.layer_norm_eps} but the model was built with "
            f"{body.cfg.layer_norm_eps}: pass --layer-norm-eps {expected.layer_norm_eps}"
        )
    if body.cfg.max_positions > expected.max_positions:
        raise validate.ConversionError(f"{directory} has {expected.max_positions} positions, the model wants "
                                 f"{body.cfg.max_positions}")
    ids = hf_token_map(symbols, hf_vocab(directory), config["model_type"])
    unknown = int((ids < 0).sum())
    if unknown:
        logger.warning(f"{unknown} of {len(symbols)} dictionary symbols are not in {directory}'s vocabulary")
    converted, left = convert_state_dict(checkpoint.state, config, ids, body.state_dict(), pad=body.cfg.padding_idx)
    body.load_state_dict(converted)
    logger.info(f"loaded {directory} ({config['model_type']}); left at initialization: {left or 'nothing'}")
    return left


def task_dictionary(path):
    """The dictionary the ``s2s_ft_summarization`` task builds from ``path``: ``<mask>`` is
    appended when it has no mask token."""
    dictionary = Dictionary.load(str(path))
    add_mask(dictionary)
    return dictionary


def model_args(cfg: S2SFTTransformerConfig):
    """The ``s2s_ft`` model options that build a body of ``cfg``'s sizes."""
    return {name: getattr(cfg, name) for name in ("embed_dim", "layers", "attention_heads", "ffn_embed_dim",
                                                   "max_positions", "type_vocab_size", "dropout",
                                                   "attention_dropout", "layer_norm_eps")}


def add_args(parser):
    parser.add_argument("--hf-dir", required=True, help="local Hugging Face BERT/RoBERTa folder (config.json, "
                        "weights, vocab.txt or vocab.json)")
    parser.add_argument("--dict", required=True, help="fairseq dictionary of the data (dict.source.txt); <mask> is "
                        "appended when it has no mask token, as the task does")


def convert(args):
    dictionary = task_dictionary(args.dict)
    checkpoint = read_hf_dir(args.hf_dir)
    body = S2SFTTransformer(convert_config(checkpoint.config, len(dictionary), dictionary.pad()))
    load_pretrained(body, args.hf_dir, dictionary.symbols, checkpoint)
    # the registered model holds its one body in the encoder (the decoder shares it unregistered)
    state = {f"encoder.body.{name}": value for name, value in body.state_dict().items()}
    return write_converted(args.out, Converted(state, ARCH, model_args(body.cfg), TASK, CRITERION,
                                               dictionary=args.dict))
