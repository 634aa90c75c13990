"""HF BERT / RoBERTa weights -> :class:`~.transformer.S2SFTTransformer`.

The layers map one-to-one (``attention.self.query`` -> ``layers.i.query``, ...). Three things
need care:

* vocabulary: our fairseq dictionary orders tokens differently (``<s> <pad> </s> <unk>`` first),
  so the word-embedding and MLM-bias rows are gathered through a ``token_map`` (our index ->
  HF id); :func:`hf_token_map` builds it from the checkpoint's vocabulary;
* positions: RoBERTa numbers positions from ``padding_idx + 1``; those first rows are dropped
  so that our position 0 is RoBERTa's first real position;
* token types: RoBERTa has one; its row is repeated so that targets (type 1) start from it.

A checkpoint without an MLM head (e.g. a sentence encoder such as all-MiniLM-L6-v2) leaves the
head's dense/LayerNorm/bias at their initialization; the output projection is always tied to
the word embeddings (an untied decoder in the checkpoint is refused).

The config is read beside the weights: the model computes BERT's encoder (exact GELU, absolute
positions, bidirectional attention, no cross-attention) with the checkpoint's LayerNorm epsilon,
token types and position offset; a config under which the same parameters compute another
function (``hidden_act`` other than ``gelu``, ``is_decoder``, ``add_cross_attention``,
``position_embedding_type`` other than ``absolute``, ``tie_word_embeddings`` false) is refused,
naming the field, and ``--init-from-hf`` refuses a model built with another ``--layer-norm-eps``.

    python -m fairseq_ext.s2s_ft.convert --hf-dir MODEL_DIR --dict data/x/bin/dict.source.txt \\
        --out minilm_s2s_ft.pt
"""

import argparse
import json
import logging
from pathlib import Path
from typing import Dict, List, Tuple

import torch

from ..checkpoint import safe_load
from ..noising.symbols import BERT_MASK, MASK, MASK_SYMBOLS, add_mask
from .transformer import S2SFTTransformerConfig
from .wordpiece import BERT_SPECIALS, read_vocab

logger = logging.getLogger(__name__)

ROBERTA_SPECIALS = {"<s>": "<s>", "<pad>": "<pad>", "</s>": "</s>", "<unk>": "<unk>"}
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
#: config fields whose other values change what the same parameters compute (a causal mask,
#: cross-attention, relative positions, an untied output layer); the value s2s-ft implements
UNSUPPORTED_FIELDS = {"is_decoder": False, "add_cross_attention": False, "position_embedding_type": "absolute",
                      "tie_word_embeddings": True}
DECODER_WEIGHTS = ("cls.predictions.decoder.weight", "lm_head.decoder.weight")
IGNORED = ("pooler.", "embeddings.position_ids", "embeddings.token_type_ids", "cls.seq_relationship",
           "cls.predictions.decoder.", "lm_head.decoder.")  # fmt: skip


def hf_config_to_ours(hf_config: dict, vocab_size: int, padding_idx: int, type_vocab_size: int = 2):
    """A HF ``config.json`` (bert/roberta) -> :class:`S2SFTTransformerConfig` sizes."""
    model_type = hf_config.get("model_type")
    if model_type not in ("bert", "roberta"):
        raise ValueError(f"only BERT and RoBERTa checkpoints convert, got model_type={model_type!r}")
    if hf_config.get("hidden_act", "gelu") != "gelu":
        raise ValueError(f"hidden_act {hf_config['hidden_act']!r} is not supported (gelu only)")
    for field, expected in UNSUPPORTED_FIELDS.items():
        if hf_config.get(field, expected) != expected:
            raise ValueError(f"{field}={hf_config[field]!r} is not supported: s2s-ft converts BERT/RoBERTa "
                             f"encoders with {field}={expected!r}")
    offset = position_offset(hf_config)
    return S2SFTTransformerConfig(
        vocab_size=vocab_size,
        padding_idx=padding_idx,
        embed_dim=hf_config["hidden_size"],
        layers=hf_config["num_hidden_layers"],
        attention_heads=hf_config["num_attention_heads"],
        ffn_embed_dim=hf_config["intermediate_size"],
        max_positions=hf_config["max_position_embeddings"] - offset,
        type_vocab_size=max(type_vocab_size, hf_config.get("type_vocab_size", 1)),
        dropout=hf_config.get("hidden_dropout_prob", 0.1),
        attention_dropout=hf_config.get("attention_probs_dropout_prob", 0.1),
        layer_norm_eps=hf_config.get("layer_norm_eps", 1e-12),
    )


def position_offset(hf_config: dict) -> int:
    """Rows of HF's position table before our position 0 (RoBERTa: ``pad_token_id + 1``)."""
    return hf_config.get("pad_token_id", 1) + 1 if hf_config.get("model_type") == "roberta" else 0


def hf_token_map(symbols: List[str], hf_vocab: Dict[str, int], model_type: str = "bert") -> torch.Tensor:
    """Our dictionary's symbols -> HF ids (``-1`` where the checkpoint has no such token).

    fairseq's ``<s> <pad> </s> <unk>`` map to ``[CLS] [PAD] [SEP] [UNK]`` (BERT) or to
    themselves (RoBERTa); ``<mask>`` maps to the checkpoint's mask token.
    """
    specials = BERT_SPECIALS if model_type == "bert" else ROBERTA_SPECIALS
    hf_mask = BERT_MASK if model_type == "bert" else MASK
    ids = []
    for symbol in symbols:
        name = specials.get(symbol, hf_mask if symbol in MASK_SYMBOLS else symbol)
        ids.append(hf_vocab.get(name, -1))
    return torch.tensor(ids, dtype=torch.long)


def _gather_rows(table: torch.Tensor, token_map: torch.Tensor, init: torch.Tensor) -> torch.Tensor:
    """Rows ``table[token_map]``; rows with ``token_map == -1`` keep ``init``."""
    known = token_map >= 0
    out = init.clone()
    out[known] = table[token_map[known]].to(init.dtype)
    return out


def convert_hf_state_dict(
    hf_state: Dict[str, torch.Tensor],
    hf_config: dict,
    token_map: torch.Tensor,
    init_state: Dict[str, torch.Tensor],
) -> Tuple[Dict[str, torch.Tensor], List[str]]:
    """HF ``BertModel``/``BertForMaskedLM``/``RobertaModel``/... weights -> a state dict of
    :class:`S2SFTTransformer`.

    Args:
        hf_state: the HF state dict (with or without the ``bert.``/``roberta.`` prefix).
        hf_config: its ``config.json`` as a dict.
        token_map: LongTensor ``(V,)``, our index -> HF id (:func:`hf_token_map`).
        init_state: ``S2SFTTransformer(...).state_dict()``: shapes, and the values kept where
            the checkpoint has nothing (unmapped tokens, a missing MLM head).
    Returns ``(state_dict, names_left_at_init)``.
    """
    state = {name.split(".", 1)[1] if name.startswith(PREFIXES) else name: value for name, value in hf_state.items()}
    words = state.get("embeddings.word_embeddings.weight")
    for name in DECODER_WEIGHTS:
        if name in state and words is not None and not torch.equal(state[name], words):
            raise ValueError(f"{name} differs from the word embeddings: s2s-ft ties its output layer to them, "
                             "an untied checkpoint does not convert")
    offset = position_offset(hf_config)
    out = {}
    unused = []
    for name, value in state.items():
        value = value.float()
        if name == "embeddings.word_embeddings.weight":
            out["embeddings.word.weight"] = _gather_rows(value, token_map, init_state["embeddings.word.weight"])
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
        elif name in HEAD_BIASES:
            out["lm_head.bias"] = _gather_rows(value, token_map, init_state["lm_head.bias"])
        elif not name.startswith(IGNORED):
            unused.append(name)
    if unused:
        raise ValueError(f"unexpected weights in the checkpoint: {unused[:8]}")
    out["lm_head.weight"] = out["embeddings.word.weight"]  # tied
    for name, value in out.items():
        if name not in init_state:
            raise ValueError(f"converted weight {name} has no place in the model")
        if value.shape != init_state[name].shape:
            raise ValueError(f"{name}: checkpoint shape {tuple(value.shape)} != model {tuple(init_state[name].shape)}")
    left = sorted(set(init_state) - set(out))
    return {**init_state, **out}, left


def _ln_param(param: str) -> str:
    """Old TF-converted checkpoints name LayerNorm parameters gamma/beta."""
    return {"gamma": "weight", "beta": "bias"}.get(param, param)


def load_hf_checkpoint(directory) -> Tuple[Dict[str, torch.Tensor], dict, Dict[str, int]]:
    """``(state_dict, config, vocab)`` of a HF directory (``model.safetensors`` or
    ``pytorch_model.bin``, ``config.json``, ``vocab.txt`` or ``vocab.json``); read offline."""
    directory = Path(directory)
    config_path = directory / "config.json"
    if not config_path.is_file():
        raise FileNotFoundError(f"{config_path} not found: give a HF BERT/RoBERTa model directory")
    config = json.loads(config_path.read_text())
    if (directory / "model.safetensors").is_file():
        state = safe_load(directory / "model.safetensors")
    elif (directory / "pytorch_model.bin").is_file():
        state = safe_load(directory / "pytorch_model.bin")
    else:
        raise FileNotFoundError(f"no model.safetensors or pytorch_model.bin in {directory}")
    if (directory / "vocab.txt").is_file():
        vocab = read_vocab(directory / "vocab.txt")
    elif (directory / "vocab.json").is_file():
        vocab = json.loads((directory / "vocab.json").read_text())
    else:
        raise FileNotFoundError(f"no vocab.txt or vocab.json in {directory}")
    return state, config, vocab


def load_pretrained(body, directory, symbols: List[str]) -> List[str]:
    """Load the HF checkpoint in ``directory`` into ``body`` (an :class:`S2SFTTransformer`
    over the dictionary ``symbols``); returns the weights left at initialization."""
    state, config, vocab = load_hf_checkpoint(directory)
    expected = hf_config_to_ours(config, body.cfg.vocab_size, body.cfg.padding_idx, body.cfg.type_vocab_size)
    for field in ("embed_dim", "layers", "attention_heads", "ffn_embed_dim"):
        if getattr(expected, field) != getattr(body.cfg, field):
            raise ValueError(
                f"{directory} has {field}={getattr(expected, field)} but the model has "
                f"{getattr(body.cfg, field)}: pick the matching --arch"
            )
    if expected.layer_norm_eps != body.cfg.layer_norm_eps:
        raise ValueError(
            f"{directory} has layer_norm_eps={expected.layer_norm_eps} but the model was built with "
            f"{body.cfg.layer_norm_eps}: pass --layer-norm-eps {expected.layer_norm_eps}"
        )
    if body.cfg.max_positions > expected.max_positions:
        raise ValueError(f"{directory} has {expected.max_positions} positions, the model wants {body.cfg.max_positions}")
    token_map = hf_token_map(symbols, vocab, config["model_type"])
    unknown = int((token_map < 0).sum())
    if unknown:
        logger.warning(f"{unknown} of {len(symbols)} dictionary symbols are not in {directory}'s vocabulary")
    converted, left = convert_hf_state_dict(state, config, token_map, body.state_dict())
    body.load_state_dict(converted)
    logger.info(f"loaded {directory} ({config['model_type']}); left at initialization: {left or 'nothing'}")
    return left


def main(argv=None):
    from fairseq.data import Dictionary

    from .transformer import S2SFTTransformer

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hf-dir", required=True, help="HF BERT/RoBERTa directory")
    parser.add_argument("--dict", required=True, help="fairseq dictionary of the data (dict.source.txt)")
    parser.add_argument("--add-mask", action="store_true", help="append <mask> as the task does when absent")
    parser.add_argument("--out", required=True, help="output: torch state dict of S2SFTTransformer")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO)
    dictionary = Dictionary.load(args.dict)
    if args.add_mask:
        add_mask(dictionary)
    _, config, _ = load_hf_checkpoint(args.hf_dir)
    body = S2SFTTransformer(hf_config_to_ours(config, len(dictionary), dictionary.pad()))
    load_pretrained(body, args.hf_dir, dictionary.symbols)
    torch.save({"config": vars(body.cfg), "model": body.state_dict()}, args.out)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
