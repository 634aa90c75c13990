"""s2s-ft (``s2s_ft_minilm_l6_h384``, pseudo-masked, the main job's model) against HF
``EncoderDecoderModel`` (BERT2BERT) at the same sizes: decoding and a training step.

Both random init, the same vocabulary size, the same token ids (no converter exists: s2s-ft is
one shared BERT under a seq2seq mask, BERT2BERT a BERT encoder and a second BERT with
cross-attention, twice the layers and weights). Our source is ``--source`` tokens ending in
``</s>``, ``<s>`` prepended by the model; HF reads the same ids with the ``<s>`` in front (the
same rows). Ours decodes through fairseq's SequenceGenerator (the plugin's generator, as fairseq-generate) with its
key/value cache, exactly ``new`` tokens (min length = max length; fairseq then adds ``</s>``,
one step more than HF), ``<pad>`` suppressed on both sides; HF's ``generate`` with
``min_new_tokens = max_new_tokens``. The training step is forward + backward of the loss (ours:
the ``s2s_ft`` criterion, pseudo-masked rows, no label smoothing; HF: its ``labels`` loss)
on the same pairs.
"""

from types import SimpleNamespace

import torch
from fairseq.sequence_generator import SequenceGenerator
from transformers import BertConfig, BertLMHeadModel, BertModel, EncoderDecoderModel

from benchmarks.s2s_ft_decode_speed import SIZES as MODEL_SIZES
from benchmarks.s2s_ft_decode_speed import build
from benchmarks.s2s_ft_step_time import make_sample
from fairseq_ext.decoding import DecodingConfig, plugin_generator
from user_dir.criterions.s2s_ft import S2SFTCriterion

from . import Comparison

#: (model size of s2s_ft_decode_speed, vocabulary, batch, source tokens, new / target tokens)
SIZES = {"paper": ("minilm", 30522, 8, 256, 48), "small": ("tiny", 30522, 2, 64, 8)}
METHOD, BEAMS = "pseudo", (1, 4)


def bert2bert(dims, vocab, positions, d):
    """A random ``EncoderDecoderModel`` of two BERTs of ``dims``' sizes on ``d``'s ids."""
    shared = dict(vocab_size=vocab, hidden_size=dims["embed_dim"], num_hidden_layers=dims["layers"],
                  num_attention_heads=dims["attention_heads"], intermediate_size=dims["ffn_embed_dim"],
                  max_position_embeddings=positions, pad_token_id=d.pad(), bos_token_id=d.bos(),
                  eos_token_id=d.eos())
    encoder = BertModel(BertConfig(**shared), add_pooling_layer=False)
    decoder = BertLMHeadModel(BertConfig(**shared, is_decoder=True, add_cross_attention=True))
    model = EncoderDecoderModel(encoder=encoder, decoder=decoder)
    model.config.decoder_start_token_id, model.config.pad_token_id = d.eos(), d.pad()
    model.config.eos_token_id = d.eos()
    model.generation_config.decoder_start_token_id = d.eos()
    return model


def decoders(ours, hf, d, sample, beam, new):
    generator = plugin_generator(SequenceGenerator([ours], d, beam_size=beam, min_len=new, max_len_b=new,
                                                   max_len_a=0), DecodingConfig(), d)  # as fairseq-generate
    src = sample["net_input"]["src_tokens"]
    hf_src = torch.cat([torch.full((src.size(0), 1), d.bos()), src], dim=1)

    def run_ours():
        ours.eval()
        with torch.no_grad():
            return [h[0]["tokens"][:new].tolist() for h in generator.forward(sample)]

    def run_hf():
        hf.eval()
        with torch.no_grad():
            out = hf.generate(input_ids=hf_src, attention_mask=torch.ones_like(hf_src), num_beams=beam,
                              do_sample=False, min_new_tokens=new, max_new_tokens=new, suppress_tokens=[d.pad()],
                              length_penalty=1.0, early_stopping=False, no_repeat_ngram_size=0)
        return out[:, 1:].tolist()

    return run_ours, run_hf


def training_steps(ours, hf, d, sample):
    criterion = S2SFTCriterion(SimpleNamespace(target_dictionary=d), sentence_avg=False, label_smoothing=0.0)
    src, target = sample["net_input"]["src_tokens"], sample["target"]
    hf_src = torch.cat([torch.full((src.size(0), 1), d.bos()), src], dim=1)

    def run_ours():
        ours.train()
        ours.zero_grad(set_to_none=True)
        criterion(ours, sample)[0].backward()

    def run_hf():
        hf.train()
        hf.zero_grad(set_to_none=True)
        hf(input_ids=hf_src, attention_mask=torch.ones_like(hf_src), labels=target).loss.backward()

    return run_ours, run_hf


def comparisons(args):
    size, vocab, bsz, source, new = SIZES[args.size]
    torch.manual_seed(0)
    dims = MODEL_SIZES[size]
    ours, d = build(size, METHOD, vocab - 5, source, new)  # + 4 specials and <mask>: len(d) == vocab
    hf = bert2bert(dims, len(d), 512, d)
    sample = make_sample(d, bsz, source, new, torch.Generator().manual_seed(1))
    rows = []
    for beam in BEAMS:
        run_ours, run_hf = decoders(ours, hf, d, sample, beam, new)
        rows.append(Comparison(f"{'greedy' if beam == 1 else f'beam {beam}'} decoding, {new} new tokens", run_ours,
                               run_hf, "HF EncoderDecoderModel (BERT2BERT) generate", units=bsz * new,
                               note="different architectures, random weights each: no converter, tokens not "
                                    "compared" if beam == 1 else ""))
    run_ours, run_hf = training_steps(ours, hf, d, sample)
    rows.append(Comparison(f"training step, forward + backward (target {new})", run_ours, run_hf,
                           "HF EncoderDecoderModel (BERT2BERT)", units=bsz * new))
    params = sum(p.numel() for p in ours.parameters()) / 1e6
    hf_params = sum(p.numel() for p in hf.parameters()) / 1e6
    setting = (f"{dims['layers']} layers, {dims['embed_dim']} wide, {dims['attention_heads']} heads, FFN "
               f"{dims['ffn_embed_dim']}, vocabulary {len(d)} ({params:.1f}M parameters; BERT2BERT "
               f"{dims['layers']}+{dims['layers']} layers, {hf_params:.1f}M), random init; {METHOD}-masked; batch "
               f"{bsz}, {source}-token sources.")
    return setting, rows
