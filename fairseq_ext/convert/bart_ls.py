"""A fairseq BART checkpoint -> BART-LS (``bart_ls``), as the public BART-LS code does (section 2.1):

* encoder positions tiled up to the long length; decoder positions copied;
* ``--num-sentinels`` new rows appended to the token embeddings (a BART pre-training
  checkpoint's trailing ``<mask>`` row dropped);
* new pooled-attention weights in the top ``--pooling-layers`` encoder layers.

``--dict`` must be the dictionary BART was trained with; it is written beside the checkpoint.
"""

import logging
import math

import torch
from fairseq.data import Dictionary

from ..bart_ls.attention import ENCODER_ATTENTIONS, check_encoder_options
from ..bart_ls.pooling import PooledAttention
from . import validate
from .embeddings import embedding_rows, identity_map
from .read import fairseq_model_config, read_fairseq_checkpoint
from .write import Converted, write_converted

logger = logging.getLogger(__name__)

TASK, CRITERION = "abstractive_summarization", "label_smoothed_cross_entropy"
POSITION_KEYS = ("encoder.embed_positions.weight",)
TOKEN_KEYS = ("encoder.embed_tokens.weight", "decoder.embed_tokens.weight", "decoder.output_projection.weight")
#: BART options that define the function of its weights, carried into the BART-LS model flags
BART_OPTIONS = ("encoder_embed_dim", "encoder_ffn_embed_dim", "encoder_layers", "encoder_attention_heads",
                "decoder_embed_dim", "decoder_ffn_embed_dim", "decoder_layers", "decoder_attention_heads",
                "max_target_positions", "activation_fn")
#: BART-LS options of this converter (flag defaults)
LONG_OPTIONS = dict(max_source_positions=16384, encoder_attention="block", block_size=1024, global_tokens=64,
                    pooling_layers=4, pooling_kernel=18, pooling_stride=12, pooling_padding=9)


def tile_positions(weight, padding_idx, max_positions):
    """Learned positions ``(padding_idx + 1 + n, C)`` -> ``(padding_idx + 1 + max_positions, C)``.

    fairseq's learned positions reserve the first ``padding_idx + 1`` rows; the table after
    them is repeated (and cut) to ``max_positions`` rows.
    """
    offset = padding_idx + 1
    head, table = weight[:offset], weight[offset:]  # (offset, C), (n, C)
    repeats = math.ceil(max_positions / table.size(0))
    return torch.cat([head, table.repeat(repeats, 1)[:max_positions]])  # (offset + max, C)


def convert_state_dict(state, *, padding_idx, dict_size, max_source_positions, num_sentinels,
                           encoder_layers, embed_dim, heads, pooling_layers=0, pooling_kernel=18,
                           pooling_stride=12, pooling_padding=9, seed=0):
    """A BART model state dict -> a BART-LS one (a new dict; the input is not modified)."""
    if not 0 <= pooling_layers <= encoder_layers:
        raise validate.ConversionError(
            f"--pooling-layers {pooling_layers} must be between 0 and the BART encoder's {encoder_layers} layers"
        )
    if num_sentinels < 0:
        raise validate.ConversionError(f"--num-sentinels must be >= 0, got {num_sentinels}")
    out = dict(state)
    generator = torch.Generator().manual_seed(seed)
    for key in POSITION_KEYS:
        out[key] = tile_positions(state[key], padding_idx, max_source_positions)
    rows = state["encoder.embed_tokens.weight"].size(0)
    if rows not in (dict_size, dict_size + 1):  # + 1: the <mask> row of a BART pre-training checkpoint
        raise validate.ConversionError(
            f"the BART embeddings have {rows} rows but the dictionary has {dict_size} symbols; "
            "give the dictionary the BART checkpoint was trained with"
        )
    tokens, _ = embedding_rows(state["encoder.embed_tokens.weight"], identity_map(dict_size + num_sentinels, dict_size),
                               generator=generator, name="token embeddings (sentinels appended)")
    for key in TOKEN_KEYS:
        if key in state:
            out[key] = tokens
    torch.manual_seed(seed)
    for layer in range(encoder_layers - pooling_layers, encoder_layers):
        pooling = PooledAttention(embed_dim, heads, pooling_kernel, pooling_stride, pooling_padding)
        for name, tensor in pooling.state_dict().items():
            out[f"encoder.layers.{layer}.self_attn.pooling.{name}"] = tensor
    return out


def check_options_against_weights(bart, weights):
    """The sizes BART's options declare (copied into the BART-LS checkpoint) are the weights':
    layer counts, widths and feed-forward sizes, each refused naming the option."""
    for side in ("encoder", "decoder"):
        found = {name.split(".")[2] for name in weights if name.startswith(f"{side}.layers.")}
        declared = {
            f"{side}_layers": len(found),
            f"{side}_embed_dim": _dim(weights, f"{side}.embed_tokens.weight", 1),
            f"{side}_ffn_embed_dim": _dim(weights, f"{side}.layers.0.fc1.weight", 0),
        }
        for option, size in declared.items():
            if size is not None and bart.get(option) is not None and bart[option] != size:
                validate.refuse(bart, option, bart[option], f"the weights have {size}")


def _dim(weights, name, axis):
    tensor = weights.get(name)
    return tuple(tensor.shape)[axis] if tensor is not None and tensor.dim() > axis else None


def convert_checkpoint(bart_path, dict_path, out_dir, arch, num_sentinels, seed=0, **long_options):
    """Read the fairseq BART checkpoint ``bart_path``, write the BART-LS model into ``out_dir``
    (:mod:`fairseq_ext.convert.write`); ``long_options`` override :data:`LONG_OPTIONS`.
    Returns the path of ``model.pt``."""
    unknown = set(long_options) - set(LONG_OPTIONS)
    if unknown:
        raise TypeError(f"unknown BART-LS options {sorted(unknown)}")
    options = {**LONG_OPTIONS, **long_options}
    state = read_fairseq_checkpoint(bart_path)
    bart = fairseq_model_config(state, bart_path)
    check_options_against_weights(bart, state["model"])
    layers, dim, heads = (validate.value(bart, name)
                          for name in ("encoder_layers", "encoder_embed_dim", "encoder_attention_heads"))
    try:
        check_encoder_options(options["encoder_attention"], options["block_size"], options["global_tokens"],
                              options["pooling_layers"], layers, options["pooling_kernel"],
                              options["pooling_stride"], options["pooling_padding"])
    except ValueError as err:
        raise validate.ConversionError(str(err)) from err
    dictionary = Dictionary.load(str(dict_path))
    model = convert_state_dict(
        state["model"], padding_idx=dictionary.pad(), dict_size=len(dictionary), num_sentinels=num_sentinels,
        encoder_layers=layers, embed_dim=dim, heads=heads, seed=seed,
        **{k: v for k, v in options.items() if k not in ("encoder_attention", "block_size", "global_tokens")},
    )  # fmt: skip
    model_args = {**{name: bart[name] for name in BART_OPTIONS if bart.get(name) is not None}, **options}
    # the rest of BART's options (as fairseq saved them) go into the checkpoint, so that
    # loading it builds the model BART was, extended
    kept = {k: v for k, v in bart.items() if k not in model_args and k not in ("_name", "arch", "task", "criterion")}
    converted = Converted(model, arch, model_args, TASK, CRITERION, extra_args=kept, dictionary=dict_path)
    path = write_converted(out_dir, converted)
    logger.info(f"{arch}: {options['max_source_positions']} source positions, {num_sentinels} sentinels")
    return path


def add_args(parser):
    parser.add_argument("--bart", required=True, help="fairseq BART checkpoint (.pt)")
    parser.add_argument("--dict", required=True, help="the dictionary the BART checkpoint was trained with")
    parser.add_argument("--arch", default="bart_ls_large", help="bart_ls architecture name")
    parser.add_argument("--num-sentinels", type=int, default=256,
                        help="sentinel rows to append (must equal the pre-training task's --num-sentinels)")
    parser.add_argument("--max-source-positions", type=int, default=LONG_OPTIONS["max_source_positions"],
                        help="long encoder length")
    parser.add_argument("--encoder-attention", default=LONG_OPTIONS["encoder_attention"], choices=ENCODER_ATTENTIONS,
                        help="encoder self-attention of the BART-LS model")
    parser.add_argument("--block-size", type=int, default=LONG_OPTIONS["block_size"], help="attention block size")
    parser.add_argument("--global-tokens", type=int, default=LONG_OPTIONS["global_tokens"],
                        help="global tokens per block")
    parser.add_argument("--pooling-layers", type=int, default=LONG_OPTIONS["pooling_layers"],
                        help="top encoder layers with pooled attention")
    parser.add_argument("--pooling-kernel", type=int, default=LONG_OPTIONS["pooling_kernel"], help="pooling kernel")
    parser.add_argument("--pooling-stride", type=int, default=LONG_OPTIONS["pooling_stride"], help="pooling stride")
    parser.add_argument("--pooling-padding", type=int, default=LONG_OPTIONS["pooling_padding"],
                        help="pooling padding")
    parser.add_argument("--seed", type=int, default=0, help="seed of the new rows and pooling weights")


def convert(args):
    return convert_checkpoint(args.bart, args.dict, args.out, args.arch, args.num_sentinels, seed=args.seed,
                              **{name: getattr(args, name) for name in LONG_OPTIONS})
