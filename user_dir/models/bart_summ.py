"""Small sizes of fairseq's own BART for the demo and the tests.

fairseq ships only ``bart_base`` (6+6 layers, 768) and ``bart_large``; on two CPU cores the
main job needs something that trains in minutes. These architectures only change sizes; the
model is fairseq's ``bart``.
"""

from fairseq.models import register_model_architecture
from fairseq.models.bart.model import bart_base_architecture

from ._sizes import set_defaults


@register_model_architecture("bart", "bart_summ_small")
def bart_summ_small(args):
    set_defaults(args, encoder_embed_dim=256, encoder_ffn_embed_dim=1024, encoder_layers=3, encoder_attention_heads=4)
    set_defaults(args, decoder_embed_dim=args.encoder_embed_dim, decoder_ffn_embed_dim=args.encoder_ffn_embed_dim,
                 decoder_layers=3, decoder_attention_heads=4)
    bart_base_architecture(args)


@register_model_architecture("bart", "bart_summ_tiny")
def bart_summ_tiny(args):
    set_defaults(args, encoder_embed_dim=32, encoder_ffn_embed_dim=64, encoder_layers=1, encoder_attention_heads=2,
                 decoder_layers=1, decoder_attention_heads=2)
    bart_summ_small(args)
