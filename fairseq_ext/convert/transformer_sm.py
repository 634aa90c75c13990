"""Hugging Face GPT / GPT-2 -> Transformer-SM, so that training starts from them as in the paper.

A dictionary symbol that is a Hugging Face token id (``"464"``) takes that row; the others are
new rows from N(0, ``--new-row-std``), ``<pad>`` zero. Without ``--dict`` the dictionary holds
every id (data from ``python -m fairseq_ext.cli.hf_text encode``). GPT-2 blocks are pre-LN with
a final ``ln_f``, GPT-1's post-LN; both use tanh GELU (``gelu_accurate``); ``Conv1D`` weights
are transposed ``nn.Linear`` ones, ``c_attn`` packs q, k, v.
"""

import copy
import logging
from collections import OrderedDict

import torch
from fairseq.data import Dictionary

from ..transformer_sm.embedding import init_source_embeddings
from ..transformer_sm.layout import DELIMITER
from . import validate
from .embeddings import embedding_rows
from .read import read_hf_dir
from .write import Converted, write_converted

logger = logging.getLogger(__name__)

MODEL_TYPES = ("gpt2", "openai-gpt")
ARCH = TASK = CRITERION = "transformer_sm"
#: HF block module -> ours, for the weights that only change name (and Conv1D -> Linear).
BLOCK_LINEARS = {"attn.c_proj": "self_attn.out_proj", "mlp.c_fc": "fc1", "mlp.c_proj": "fc2"}
BLOCK_NORMS = {"ln_1": "self_attn_layer_norm", "ln_2": "final_layer_norm"}


def convert_config(config):
    """``TransformerSMConfig`` fields (a dict) matching a Hugging Face GPT/GPT-2 config."""
    config = validate.config_dict(config)
    kind = validate.require_model_type(config, MODEL_TYPES)
    if kind == "gpt2":
        activation = validate.fairseq_activation(config, "activation_function", default="gelu_new")
        validate.require(config, {"scale_attn_weights": (True, True),
                                  "scale_attn_by_inverse_layer_idx": (False, False)},
                         "GPT-2 variants with non-standard attention scaling do not convert")
    else:  # GPT-1's own table: its "gelu" is the tanh approximation
        activation = validate.fairseq_activation(config, "afn", validate.OPENAI_GPT_ACTIVATIONS, default="gelu")
    validate.require_layer_norm_eps(config, "layer_norm_epsilon", default=validate.FAIRSEQ_LAYER_NORM_EPS)
    embed_dim = validate.value(config, "n_embd")
    return {
        "embed_dim": embed_dim,
        "ffn_embed_dim": config.get("n_inner") or 4 * embed_dim,
        "layers": validate.value(config, "n_layer"),
        "attention_heads": validate.value(config, "n_head"),
        "max_positions": validate.value(config, "n_positions"),
        "normalize_before": kind == "gpt2",
        "activation_fn": activation,
        "dropout": config.get("resid_pdrop", 0.1),
        "attention_dropout": config.get("attn_pdrop", 0.1),
        "embed_dropout": config.get("embd_pdrop", 0.1),
    }


def _strip(hf_state):
    """Keys without the ``transformer.`` prefix (base-model checkpoints have none)."""
    return {k.removeprefix("transformer."): v for k, v in hf_state.items()}


def _linear(conv1d_weight):
    return conv1d_weight.t().contiguous()  # Conv1D (in, out) -> nn.Linear (out, in)


def id_symbol_map(dictionary, vocab_size):
    """The token map of a dictionary whose symbols are Hugging Face ids (``"464"``)."""
    return torch.tensor([int(s) if s.isdigit() and int(s) < vocab_size else -1 for s in dictionary.symbols])


def convert_state_dict(hf_state, config, dictionary, source_embeddings=True, source_norm_ratio=0.5,
                       new_row_std=1.0, seed=0):
    """The ``transformer_sm`` state dict for Hugging Face GPT/GPT-2 weights ``hf_state``.

    ``dictionary`` is the one the task uses (with ``<delim>``)."""
    config = validate.config_dict(config)
    args = convert_config(config)
    state = _strip(hf_state)
    generator = torch.Generator().manual_seed(seed)
    gpt2 = config["model_type"] == "gpt2"
    words = state["wte.weight" if gpt2 else "tokens_embed.weight"]
    positions = state["wpe.weight" if gpt2 else "positions_embed.weight"]
    rows, _ = embedding_rows(words, id_symbol_map(dictionary, words.size(0)), std=new_row_std,
                             pad=dictionary.pad(), generator=generator, name="token embeddings")

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
        q, k, v = _linear(state[src + "attn.c_attn.weight"]).chunk(3, dim=0)
        qb, kb, vb = state[src + "attn.c_attn.bias"].chunk(3, dim=0)
        for name, weight, bias in (("q_proj", q, qb), ("k_proj", k, kb), ("v_proj", v, vb)):
            out[dst + f"self_attn.{name}.weight"] = weight.contiguous()
            out[dst + f"self_attn.{name}.bias"] = bias.clone()
        for theirs, ours in BLOCK_LINEARS.items():
            out[dst + f"{ours}.weight"] = _linear(state[src + f"{theirs}.weight"])
            out[dst + f"{ours}.bias"] = state[src + f"{theirs}.bias"].clone()
        for theirs, ours in BLOCK_NORMS.items():
            out[dst + f"{ours}.weight"] = state[src + f"{theirs}.weight"].clone()
            out[dst + f"{ours}.bias"] = state[src + f"{theirs}.bias"].clone()
    if gpt2:
        out["decoder.layer_norm.weight"] = state["ln_f.weight"].clone()
        out["decoder.layer_norm.bias"] = state["ln_f.bias"].clone()
    return out


def hf_vocabulary_dictionary(vocab_size):
    """A fairseq dictionary whose symbols are the Hugging Face ids ``"0" .. str(V-1)``."""
    dictionary = Dictionary()
    for i in range(vocab_size):
        dictionary.add_symbol(str(i), n=1)
    return dictionary


def task_dictionary(dictionary):
    """The dictionary the ``transformer_sm`` task builds from ``dictionary``: a copy plus ``<delim>``."""
    dictionary = copy.deepcopy(dictionary)
    dictionary.add_symbol(DELIMITER)
    return dictionary


def add_args(parser):
    parser.add_argument("--hf-dir", required=True, help="local Hugging Face GPT or GPT-2 folder")
    parser.add_argument("--dict", help="fairseq dictionary of the binarized data (default: one of the HF ids)")
    parser.add_argument("--no-source-embeddings", action="store_true", help="the Transformer-LM ablation")
    parser.add_argument("--source-norm-ratio", type=float, default=0.5, help="source-embedding norm / mean word norm")
    parser.add_argument("--new-row-std", type=float, default=1.0, help="std of rows for symbols GPT lacks")
    parser.add_argument("--seed", type=int, default=0, help="seed of the new rows and source embeddings")


def convert(args):
    checkpoint = read_hf_dir(args.hf_dir)
    model_args = convert_config(checkpoint.config)
    vocab_size = validate.value(checkpoint.config, "vocab_size")
    base = Dictionary.load(args.dict) if args.dict else hf_vocabulary_dictionary(vocab_size)
    state = convert_state_dict(
        checkpoint.state, checkpoint.config, task_dictionary(base),
        source_embeddings=not args.no_source_embeddings, source_norm_ratio=args.source_norm_ratio,
        new_row_std=args.new_row_std, seed=args.seed,
    )  # fmt: skip
    model_args.update(no_source_embeddings=args.no_source_embeddings, source_norm_ratio=args.source_norm_ratio)
    converted = Converted(state, ARCH, model_args, TASK, CRITERION, dictionary=args.dict or base)
    return write_converted(args.out, converted)
