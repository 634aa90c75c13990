"""Start BART-LS from BART: extend a fairseq BART checkpoint to a ``bart_ls`` checkpoint.

As in the public BART-LS code (and the paper, section 2.1: local attention keeps every BART
parameter usable):

* encoder learned positions are tiled up to the long length (positions ``0..n-1`` of BART
  repeat every ``n`` rows); decoder positions are copied;
* ``num_sentinels`` rows are appended to the shared token embeddings for the span-corruption
  sentinels (drawn with the standard deviation of the existing rows); a trailing ``<mask>``
  row of a BART pre-training checkpoint (one row more than the dictionary) is dropped;
* pooled-attention weights of the top ``pooling_layers`` encoder layers are new.

    python -m fairseq_ext.bart_ls.convert --bart checkpoints/bart/checkpoint_best.pt \\
        --dict data/wiki/bin/dict.txt --out checkpoints/bart_ls_init.pt \\
        --arch bart_ls_large --max-source-positions 16384 --num-sentinels 256 --pooling-layers 4

The output loads with ``--finetune-from-model`` (or ``--restore-file ... --reset-optimizer``)
into ``--arch bart_ls_*`` and through the hub once fine-tuned.
"""

import argparse
import logging
import math

import torch
from fairseq.data import Dictionary

from ..checkpoint import safe_load
from .attention import ENCODER_ATTENTIONS, check_encoder_options
from .pooling import PooledAttention

logger = logging.getLogger(__name__)

POSITION_KEYS = ("encoder.embed_positions.weight",)
TOKEN_KEYS = ("encoder.embed_tokens.weight", "decoder.embed_tokens.weight", "decoder.output_projection.weight")


def tile_positions(weight, padding_idx, max_positions):
    """Learned positions ``(padding_idx + 1 + n, C)`` -> ``(padding_idx + 1 + max_positions, C)``.

    fairseq's learned positions reserve the first ``padding_idx + 1`` rows; the table after
    them is repeated (and cut) to ``max_positions`` rows.
    """
    offset = padding_idx + 1
    head, table = weight[:offset], weight[offset:]  # (offset, C), (n, C)
    repeats = math.ceil(max_positions / table.size(0))
    return torch.cat([head, table.repeat(repeats, 1)[:max_positions]])  # (offset + max, C)


def add_rows(weight, count, generator):
    """Append ``count`` rows drawn from ``N(0, std(weight))``."""
    if count == 0:
        return weight
    new = torch.randn(count, weight.size(1), generator=generator) * weight.float().std()
    return torch.cat([weight, new.to(weight.dtype)])


def extend_bart_state_dict(state, *, padding_idx, dict_size, max_source_positions, num_sentinels,
                           encoder_layers, embed_dim, heads, pooling_layers=0, pooling_kernel=18,
                           pooling_stride=12, pooling_padding=9, seed=0):
    """A BART model state dict -> a BART-LS one (a new dict; the input is not modified)."""
    if not 0 <= pooling_layers <= encoder_layers:
        raise ValueError(
            f"--pooling-layers {pooling_layers} must be between 0 and the BART encoder's {encoder_layers} layers"
        )
    if num_sentinels < 0:
        raise ValueError(f"--num-sentinels must be >= 0, got {num_sentinels}")
    out = dict(state)
    generator = torch.Generator().manual_seed(seed)
    for key in POSITION_KEYS:
        out[key] = tile_positions(state[key], padding_idx, max_source_positions)
    rows = state["encoder.embed_tokens.weight"].size(0)
    if rows == dict_size + 1:
        logger.info("dropping the trailing <mask> row of the BART embeddings")
    elif rows != dict_size:
        raise ValueError(
            f"the BART embeddings have {rows} rows but the dictionary has {dict_size} symbols; "
            "give the dictionary the BART checkpoint was trained with"
        )
    sentinels = add_rows(state["encoder.embed_tokens.weight"][:dict_size], num_sentinels, generator)
    for key in TOKEN_KEYS:
        if key in state:
            out[key] = sentinels
    torch.manual_seed(seed)
    for layer in range(encoder_layers - pooling_layers, encoder_layers):
        pooling = PooledAttention(embed_dim, heads, pooling_kernel, pooling_stride, pooling_padding)
        for name, tensor in pooling.state_dict().items():
            out[f"encoder.layers.{layer}.self_attn.pooling.{name}"] = tensor
    return out


def convert_checkpoint(bart_path, dict_path, out_path, arch, max_source_positions, num_sentinels,
                       encoder_attention="block", block_size=1024, global_tokens=64, pooling_layers=4,
                       pooling_kernel=18, pooling_stride=12, pooling_padding=9, seed=0):
    """Read a fairseq BART checkpoint, write the BART-LS checkpoint; returns the new state."""
    state = safe_load(bart_path)  # raw, as fairseq-train saved it
    model_cfg = state["cfg"]["model"]
    check_encoder_options(encoder_attention, block_size, global_tokens, pooling_layers, model_cfg.encoder_layers,
                          pooling_kernel, pooling_stride, pooling_padding)
    dictionary = Dictionary.load(str(dict_path))
    state["model"] = extend_bart_state_dict(
        state["model"], padding_idx=dictionary.pad(), dict_size=len(dictionary),
        max_source_positions=max_source_positions, num_sentinels=num_sentinels,
        encoder_layers=model_cfg.encoder_layers, embed_dim=model_cfg.encoder_embed_dim,
        heads=model_cfg.encoder_attention_heads, pooling_layers=pooling_layers,
        pooling_kernel=pooling_kernel, pooling_stride=pooling_stride, pooling_padding=pooling_padding, seed=seed,
    )
    updates = dict(
        _name=arch, arch=arch, max_source_positions=max_source_positions, encoder_attention=encoder_attention,
        block_size=block_size, global_tokens=global_tokens, pooling_layers=pooling_layers,
        pooling_kernel=pooling_kernel, pooling_stride=pooling_stride, pooling_padding=pooling_padding,
    )
    for key, value in updates.items():
        setattr(model_cfg, key, value)
    if state["cfg"].get("task") is not None and "max_source_positions" in state["cfg"]["task"]:
        state["cfg"]["task"]["max_source_positions"] = max_source_positions
    state.pop("last_optimizer_state", None)  # parameter shapes changed: start a new optimizer
    torch.save(state, out_path)
    logger.info(f"wrote {out_path}: {arch}, {max_source_positions} source positions, {num_sentinels} sentinels")
    return state


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bart", required=True, help="fairseq BART checkpoint (.pt)")
    parser.add_argument("--dict", required=True, help="the dictionary the BART checkpoint was trained with")
    parser.add_argument("--out", required=True, help="where to write the BART-LS checkpoint")
    parser.add_argument("--arch", default="bart_ls_large", help="bart_ls architecture name")
    parser.add_argument("--max-source-positions", type=int, default=16384, help="long encoder length")
    parser.add_argument("--num-sentinels", type=int, default=256,
                        help="sentinel rows to append (must equal the pre-training task's --num-sentinels)")
    parser.add_argument("--encoder-attention", default="block", choices=ENCODER_ATTENTIONS,
                        help="encoder self-attention of the BART-LS model")
    parser.add_argument("--block-size", type=int, default=1024, help="attention block size")
    parser.add_argument("--global-tokens", type=int, default=64, help="global tokens per block")
    parser.add_argument("--pooling-layers", type=int, default=4, help="top encoder layers with pooled attention")
    parser.add_argument("--pooling-kernel", type=int, default=18, help="pooling kernel")
    parser.add_argument("--pooling-stride", type=int, default=12, help="pooling stride")
    parser.add_argument("--pooling-padding", type=int, default=9, help="pooling padding")
    parser.add_argument("--seed", type=int, default=0, help="seed of the new rows and pooling weights")
    args = parser.parse_args(argv)

    convert_checkpoint(
        args.bart, args.dict, args.out, args.arch, args.max_source_positions, args.num_sentinels,
        encoder_attention=args.encoder_attention, block_size=args.block_size, global_tokens=args.global_tokens,
        pooling_layers=args.pooling_layers, pooling_kernel=args.pooling_kernel,
        pooling_stride=args.pooling_stride, pooling_padding=args.pooling_padding, seed=args.seed,
    )


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO)
    main()
