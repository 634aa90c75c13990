"""Small sizes of fairseq's own BART for the demo and the tests.

fairseq ships only ``bart_base`` (6+6 layers, 768) and ``bart_large``; on two CPU cores the
main job needs something that trains in minutes. These architectures only change sizes; the
model is fairseq's ``bart``.
"""

from fairseq.models import register_model_architecture
from fairseq.models.bart.model import bart_base_architecture


@register_model_architecture("bart", "bart_summ_small")
def bart_summ_small(args):
    args.encoder_embed_dim = getattr(args, "encoder_embed_dim", 256)
    args.encoder_ffn_embed_dim = getattr(args, "encoder_ffn_embed_dim", 1024)
    args.encoder_layers = getattr(args, "encoder_layers", 3)
    args.encoder_attention_heads = getattr(args, "encoder_attention_heads", 4)
    args.decoder_embed_dim = getattr(args, "decoder_embed_dim", args.encoder_embed_dim)
    args.decoder_ffn_embed_dim = getattr(args, "decoder_ffn_embed_dim", args.encoder_ffn_embed_dim)
    args.decoder_layers = getattr(args, "decoder_layers", 3)
    args.decoder_attention_heads = getattr(args, "decoder_attention_heads", 4)
    bart_base_architecture(args)


@register_model_architecture("bart", "bart_summ_tiny")
def bart_summ_tiny(args):
    args.encoder_embed_dim = getattr(args, "encoder_embed_dim", 32)
    args.encoder_ffn_embed_dim = getattr(args, "encoder_ffn_embed_dim", 64)
    args.encoder_layers = getattr(args, "encoder_layers", 1)
    args.encoder_attention_heads = getattr(args, "encoder_attention_heads", 2)
    args.decoder_layers = getattr(args, "decoder_layers", 1)
    args.decoder_attention_heads = getattr(args, "decoder_attention_heads", 2)
    bart_summ_small(args)
