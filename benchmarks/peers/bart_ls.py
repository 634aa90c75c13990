"""BART-LS against HF ``LEDForConditionalGeneration`` (Longformer-Encoder-Decoder, window 1024)
at every input length: beam-4 generation of a fixed number of tokens, and the encoder alone.

Both random init at the same sizes (the builders of :mod:`benchmarks.bart_ls_encoder_scaling`,
positions up to the longest length), the same token ids, one source of each length (batch 1:
the long lengths are slow on a CPU). Ours: block attention (blocks of the LED window's size)
with pooled attention in the top layers, decoded by fairseq's SequenceGenerator (the plugin's
generator, as fairseq-generate), exactly ``new`` tokens (min length = max length; fairseq then adds ``</s>``, one step
more than HF). LED: its sliding window, no global tokens, ``generate`` with ``min_new_tokens =
max_new_tokens``. No converter exists between them (block against sliding-window attention):
tokens are not compared.
"""

from argparse import Namespace

import torch
from fairseq.sequence_generator import SequenceGenerator

from benchmarks.bart_ls_encoder_scaling import build_fairseq_model, build_led_model
from fairseq_ext.decoding import DecodingConfig, plugin_generator

from . import Comparison

#: (layers per side, width, heads, vocabulary, block = LED window, pooled top layers, new tokens, lengths)
SIZES = {
    "paper": (6, 512, 8, 50265, 1024, 2, 64, [1024, 2048, 4096, 8192, 16384]),
    "small": (2, 128, 4, 8000, 512, 1, 16, [1024, 2048]),
}
BEAM = 4


def generators(ours, led, d, tokens, new):
    lengths = torch.full((1,), tokens.size(1))
    sample = {"id": torch.arange(1), "net_input": {"src_tokens": tokens, "src_lengths": lengths}}
    generator = plugin_generator(SequenceGenerator([ours], d, beam_size=BEAM, min_len=new, max_len_b=new,
                                                   max_len_a=0), DecodingConfig(), d)  # as fairseq-generate

    def run_ours():
        with torch.no_grad():
            return generator.forward(sample)[0][0]["tokens"][:new].tolist()

    def run_led():
        with torch.no_grad():
            return led.generate(input_ids=tokens, attention_mask=torch.ones_like(tokens), num_beams=BEAM,
                                do_sample=False, min_new_tokens=new, max_new_tokens=new, suppress_tokens=[d.pad()],
                                length_penalty=1.0, early_stopping=False, no_repeat_ngram_size=0)[0, 1:].tolist()

    return run_ours, run_led


def encoders(ours, led, tokens):
    lengths = torch.full((1,), tokens.size(1))
    led_encoder = led.get_encoder()

    def run_ours():
        with torch.no_grad():
            return ours.encoder(tokens, lengths)["encoder_out"][0]

    def run_led():
        with torch.no_grad():
            return led_encoder(input_ids=tokens, attention_mask=torch.ones_like(tokens)).last_hidden_state

    return run_ours, run_led


def comparisons(args):
    layers, dim, heads, vocab, block, pooled, new, default_lengths = SIZES[args.size]
    lengths = args.lengths or default_lengths
    sizes = Namespace(layers=layers, dim=dim, heads=heads, vocab=vocab, block_size=block, pooling_layers=pooled)
    torch.manual_seed(0)
    ours, d = build_fairseq_model("pooled", sizes, max(lengths), decoder_layers=layers)
    led = build_led_model(sizes, max(lengths), decoder_layers=layers)
    ours.eval()
    led.eval()
    generator = torch.Generator().manual_seed(1)
    rows = []
    for length in lengths:
        tokens = torch.randint(d.nspecial, len(d), (1, length), generator=generator)
        tokens[:, -1] = d.eos()
        run_ours, run_led = generators(ours, led, d, tokens, new)
        rows.append(Comparison(f"{length} tokens: generation, beam {BEAM}, {new} new tokens", run_ours, run_led,
                               f"HF LED generate, window {block}", units=new))
        run_ours, run_led = encoders(ours, led, tokens)
        rows.append(Comparison(f"{length} tokens: encoder forward", run_ours, run_led,
                               f"HF LED encoder, window {block}", units=length))
    rows[0].note = (f"batch 1, one random source per length; block attention, pooled attention in the top {pooled} "
                    f"encoder layers; no converter to LED: random weights each, tokens not compared")
    setting = (f"{layers}+{layers} layers, {dim} wide, {heads} heads, FFN {4 * dim}, vocabulary {vocab}, blocks of "
               f"{block} (LED window {block}), random init; lengths {' '.join(map(str, lengths))}.")
    return setting, rows
