"""Convert Hugging Face GPT (``OpenAIGPTLMHeadModel``) and GPT-2 (``GPT2LMHeadModel``) weights
to a Transformer-SM checkpoint, so that training starts from them as in the paper.

    python -m fairseq_ext.transformer_sm.convert --hf-model DIR --out OUT [--dict DICT]

``DIR`` is a local Hugging Face model folder (``config.json`` and ``model.safetensors`` or
``pytorch_model.bin``); nothing is downloaded. ``OUT/model.pt`` is a fairseq checkpoint for
``fairseq-train --finetune-from-model OUT/model.pt`` and ``OUT/args.txt`` the matching model
flags. Tokens are mapped by symbol: a dictionary entry whose symbol is a Hugging Face token id
(``"464"``, as fairseq's GPT-2 BPE writes them) takes that row; the rest (``<s>``, ``</s>``,
``<unk>``, ``<delim>``, anything else) are new rows drawn from N(0, ``--new-row-std``) (the paper:
"initialized by sampling from the standard normal distribution"), ``<pad>`` is zero. Without
``--dict`` the converter writes ``OUT/dict.txt`` with every Hugging Face id, to binarize data
with ``fairseq-preprocess --srcdict OUT/dict.txt --tgtdict OUT/dict.txt``. The source
embeddings are new and drawn against the converted word embeddings (half their mean norm).

Layout facts used (checked by the parity tests against ``transformers``): GPT-2 blocks are
pre-LayerNorm with a final ``ln_f``; GPT-1 blocks are post-LayerNorm with no final norm; both
use the tanh approximation of GELU as released (GPT-2's ``activation_function`` ``gelu_new``;
GPT-1's ``afn`` ``gelu``, which in GPT-1's own activation table *is* the tanh approximation,
fairseq's ``gelu_accurate``); the activation is read from the config and an unknown one is
refused. ``Conv1D`` weights are ``(in, out)``, i.e. transposed ``nn.Linear`` weights;
``c_attn`` packs the query, key and value projections in that order.
"""

import argparse
import json
import logging
import os
from collections import OrderedDict

import torch
from fairseq.data import Dictionary

from ..checkpoint import safe_load
from ..hf_compat import HF_ACTIVATIONS, OPENAI_GPT_ACTIVATIONS, fairseq_activation
from .embedding import init_source_embeddings
from .layout import DELIMITER

logger = logging.getLogger(__name__)

#: The only LayerNorm epsilon fairseq's LayerNorm uses.
LAYER_NORM_EPS = 1e-5
MODEL_TYPES = ("gpt2", "openai-gpt")


def model_args_from_hf(config):
    """``TransformerSMConfig`` fields (a dict) matching a Hugging Face GPT/GPT-2 config dict."""
    kind = config.get("model_type")
    if kind not in MODEL_TYPES:
        raise ValueError(f"only {MODEL_TYPES} checkpoints can be converted, got model_type={kind!r}")
    if kind == "gpt2":
        activation = fairseq_activation(config, "activation_function", HF_ACTIVATIONS, default="gelu_new")
    else:  # GPT-1's own table: its "gelu" is the tanh approximation
        activation = fairseq_activation(config, "afn", OPENAI_GPT_ACTIVATIONS, default="gelu")
    if abs(config.get("layer_norm_epsilon", LAYER_NORM_EPS) - LAYER_NORM_EPS) > 1e-12:
        raise ValueError(
            f"fairseq's LayerNorm uses eps={LAYER_NORM_EPS}, the checkpoint {config['layer_norm_epsilon']}"
        )
    if kind == "gpt2" and (
        not config.get("scale_attn_weights", True) or config.get("scale_attn_by_inverse_layer_idx", False)
    ):
        raise ValueError("GPT-2 variants with non-standard attention scaling are not supported")
    embed_dim = config["n_embd"]
    return {
        "embed_dim": embed_dim,
        "ffn_embed_dim": config.get("n_inner") or 4 * embed_dim,
        "layers": config["n_layer"],
        "attention_heads": config["n_head"],
        "max_positions": config["n_positions"],
        "normalize_before": kind == "gpt2",
        "activation_fn": activation,
        "dropout": config.get("resid_pdrop", 0.1),
        "attention_dropout": config.get("attn_pdrop", 0.1),
        "embed_dropout": config.get("embd_pdrop", 0.1),
    }


def _strip(hf_state):
    """Keys without the ``transformer.`` prefix (base-model checkpoints have none)."""
    return {k[len("transformer."):] if k.startswith("transformer.") else k: v for k, v in hf_state.items()}


def _linear(conv1d_weight):
    return conv1d_weight.t().contiguous()  # Conv1D (in, out) -> nn.Linear (out, in)


def token_rows(word_embeddings, dictionary, new_row_std=1.0, generator=None):
    """``(len(dictionary), C)`` rows: Hugging Face row ``i`` for the symbol ``str(i)``, a new
    N(0, new_row_std) row for any other symbol, zeros for padding. Returns (rows, n_new)."""
    vocab, dim = word_embeddings.shape
    rows = torch.empty(len(dictionary), dim, dtype=word_embeddings.dtype)
    rows.normal_(0.0, new_row_std, generator=generator)
    n_new = 0
    for index, symbol in enumerate(dictionary.symbols):
        if symbol.isdigit() and int(symbol) < vocab:
            rows[index] = word_embeddings[int(symbol)]
        else:
            n_new += 1
    rows[dictionary.pad()] = 0.0
    return rows, n_new


def convert_state_dict(config, hf_state, dictionary, source_embeddings=True, source_norm_ratio=0.5,
                       new_row_std=1.0, seed=0):
    """The ``transformer_sm`` state dict for Hugging Face GPT/GPT-2 weights ``hf_state``.

    ``dictionary`` is the one the task uses (with ``<delim>``)."""
    args = model_args_from_hf(config)
    hf = _strip(hf_state)
    generator = torch.Generator().manual_seed(seed)
    gpt2 = config["model_type"] == "gpt2"
    words = hf["wte.weight" if gpt2 else "tokens_embed.weight"]
    positions = hf["wpe.weight" if gpt2 else "positions_embed.weight"]
    rows, n_new = token_rows(words, dictionary, new_row_std, generator)
    logger.info(f"{len(dictionary) - n_new} of {len(dictionary)} dictionary entries take a pretrained row")

    out = OrderedDict()
    out["decoder.embed.tokens.weight"] = rows
    out["decoder.embed.positions.weight"] = positions.clone()
    if source_embeddings:
        sources = torch.empty(2, words.size(1), dtype=words.dtype)
        out["decoder.embed.sources.weight"] = init_source_embeddings(
            sources, rows, source_norm_ratio, dictionary.pad(), generator=generator
        )
    for i in range(args["layers"]):
        src, dst = f"h.{i}.", f"decoder.layers.{i}."
        q, k, v = _linear(hf[src + "attn.c_attn.weight"]).chunk(3, dim=0)
        qb, kb, vb = hf[src + "attn.c_attn.bias"].chunk(3, dim=0)
        for name, weight, bias in (("q_proj", q, qb), ("k_proj", k, kb), ("v_proj", v, vb)):
            out[dst + f"self_attn.{name}.weight"] = weight.contiguous()
            out[dst + f"self_attn.{name}.bias"] = bias.clone()
        out[dst + "self_attn.out_proj.weight"] = _linear(hf[src + "attn.c_proj.weight"])
        out[dst + "self_attn.out_proj.bias"] = hf[src + "attn.c_proj.bias"].clone()
        out[dst + "fc1.weight"] = _linear(hf[src + "mlp.c_fc.weight"])
        out[dst + "fc1.bias"] = hf[src + "mlp.c_fc.bias"].clone()
        out[dst + "fc2.weight"] = _linear(hf[src + "mlp.c_proj.weight"])
        out[dst + "fc2.bias"] = hf[src + "mlp.c_proj.bias"].clone()
        for ours, theirs in (("self_attn_layer_norm", "ln_1"), ("final_layer_norm", "ln_2")):
            out[dst + f"{ours}.weight"] = hf[src + f"{theirs}.weight"].clone()
            out[dst + f"{ours}.bias"] = hf[src + f"{theirs}.bias"].clone()
    if gpt2:
        out["decoder.layer_norm.weight"] = hf["ln_f.weight"].clone()
        out["decoder.layer_norm.bias"] = hf["ln_f.bias"].clone()
    return out


def hf_vocabulary_dictionary(vocab_size):
    """A fairseq dictionary whose symbols are the Hugging Face ids ``"0" .. str(V-1)``."""
    dictionary = Dictionary()
    for i in range(vocab_size):
        dictionary.add_symbol(str(i), n=1)
    return dictionary


def task_dictionary(path):
    """The dictionary the ``transformer_sm`` task will use for ``path``: the file plus ``<delim>``."""
    dictionary = Dictionary.load(path)
    dictionary.add_symbol(DELIMITER)
    return dictionary


def fairseq_checkpoint(state_dict, model_args):
    """A checkpoint that ``fairseq-train --finetune-from-model`` loads (weights only)."""
    return {
        "args": None,
        "cfg": None,
        "model": state_dict,
        "optimizer_history": [
            {"criterion_name": "TransformerSMCriterion", "optimizer_name": "none",
             "lr_scheduler_state": {"best": None}, "num_updates": 0}
        ],  # fmt: skip
        "extra_state": {"train_iterator": {"epoch": 1, "iterations_in_epoch": 0}},
        "last_optimizer_state": None,
        "transformer_sm_model_args": model_args,
    }


def model_flags(model_args):
    """Command-line flags for ``--arch transformer_sm`` with these sizes."""
    flags = []
    for key, value in model_args.items():
        flag = "--" + key.replace("_", "-")
        if isinstance(value, bool):
            if value:
                flags.append(flag)
        else:
            flags += [flag, str(value)]
    return flags


def load_hf_checkpoint(path):
    """``(config dict, state dict)`` of a local Hugging Face model folder."""
    with open(os.path.join(path, "config.json"), encoding="utf-8") as f:
        config = json.load(f)
    safetensors_path = os.path.join(path, "model.safetensors")
    if os.path.exists(safetensors_path):
        return config, safe_load(safetensors_path)
    bin_path = os.path.join(path, "pytorch_model.bin")
    if os.path.exists(bin_path):
        return config, safe_load(bin_path)
    raise FileNotFoundError(f"no model.safetensors or pytorch_model.bin in {path}")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hf-model", required=True, help="local Hugging Face GPT or GPT-2 folder")
    parser.add_argument("--out", required=True, help="output folder (model.pt, args.txt, dict.txt)")
    parser.add_argument("--dict", help="fairseq dictionary of the binarized data (default: write one of HF ids)")
    parser.add_argument("--no-source-embeddings", action="store_true", help="the Transformer-LM ablation")
    parser.add_argument("--source-norm-ratio", type=float, default=0.5, help="source-embedding norm / mean word norm")
    parser.add_argument("--new-row-std", type=float, default=1.0, help="std of rows for symbols GPT lacks")
    parser.add_argument("--seed", type=int, default=0, help="seed of the new rows and source embeddings")
    args = parser.parse_args(argv)

    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(message)s")
    config, hf_state = load_hf_checkpoint(args.hf_model)
    os.makedirs(args.out, exist_ok=True)
    dict_path = args.dict
    if dict_path is None:
        dict_path = os.path.join(args.out, "dict.txt")
        hf_vocabulary_dictionary(config["vocab_size"]).save(dict_path)
    model_args = model_args_from_hf(config)
    model_args["no_source_embeddings"] = args.no_source_embeddings
    model_args["source_norm_ratio"] = args.source_norm_ratio
    state = convert_state_dict(
        config, hf_state, task_dictionary(dict_path), source_embeddings=not args.no_source_embeddings,
        source_norm_ratio=args.source_norm_ratio, new_row_std=args.new_row_std, seed=args.seed,
    )  # fmt: skip
    torch.save(fairseq_checkpoint(state, model_args), os.path.join(args.out, "model.pt"))
    flags = " ".join(["--arch", "transformer_sm", *model_flags(model_args)])
    with open(os.path.join(args.out, "args.txt"), "w", encoding="utf-8") as f:
        f.write(flags + "\n")
    print(f"wrote {args.out}/model.pt; train with: fairseq-train DATA --user-dir user_dir --task transformer_sm "
          f"{flags} --finetune-from-model {args.out}/model.pt  (dictionary: {dict_path})")


if __name__ == "__main__":
    main()
