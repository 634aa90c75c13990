"""ProphetNet speed against fairseq's own ``transformer`` of the same sizes, and against HF.

* training words/s (target tokens a second): forward + backward + Adam step in train mode,
  ProphetNet (``--ngram``, default 2) with the ``ngram_language_loss`` criterion against
  fairseq's ``transformer`` (same layers, widths, heads, learned positions, post-LN, GELU,
  shared embeddings) with ``label_smoothed_cross_entropy``, on the same random batch;
* generation tokens/s: fairseq's SequenceGenerator, beam 4, batch 8, exactly ``--gen-len``
  tokens per sentence (min length = max length), ours with the predicting streams switched
  off against the same transformer, and against HF's ``ProphetNetForConditionalGeneration``
  ``generate`` (beam 4, same length) running the very weights converted to ours.

Both sides of every ratio are measured in the same run, interleaved, by default in process
CPU seconds (the cores are shared; with one thread CPU time is the work done).

    OMP_NUM_THREADS=1 python -m benchmarks.prophetnet_speed --size small --threads 1

Its builders serve ``python -m benchmarks.peers --families prophetnet`` (every family against
its peer in one table).
"""

import argparse
import os
import tempfile
from argparse import Namespace

import torch
from fairseq import checkpoint_utils
from fairseq.criterions.label_smoothed_cross_entropy import LabelSmoothedCrossEntropyCriterion
from fairseq.models.transformer import TransformerModel, base_architecture
from fairseq.sequence_generator import SequenceGenerator
from transformers import ProphetNetConfig, ProphetNetForConditionalGeneration

import user_dir  # noqa: F401  (registers the plugin)
from benchmarks.timing import CLOCKS, interleaved
from fairseq_ext.cli.convert import main as convert
from fairseq_ext.decoding import DecodingConfig, plugin_generator
from user_dir.criterions.ngram_language_loss import NgramLanguageLossCriterion

SIZES = {
    "tiny": dict(embed_dim=64, ffn_embed_dim=256, layers=2, attention_heads=4),
    "small": dict(embed_dim=256, ffn_embed_dim=1024, layers=3, attention_heads=4),
    "base": dict(embed_dim=768, ffn_embed_dim=3072, layers=6, attention_heads=12),
    "large": dict(embed_dim=1024, ffn_embed_dim=4096, layers=12, attention_heads=16),
}
VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def hf_and_ours(size, vocab_size, ngram, workdir):
    """A random HF ProphetNet and the same weights converted to ours (loaded as fairseq does)."""
    dims = SIZES[size]
    tokens = VOCAB + [f"w{i}" for i in range(vocab_size - len(VOCAB))]
    config = ProphetNetConfig(
        vocab_size=len(tokens), hidden_size=dims["embed_dim"], encoder_ffn_dim=dims["ffn_embed_dim"],
        decoder_ffn_dim=dims["ffn_embed_dim"], num_encoder_layers=dims["layers"], num_decoder_layers=dims["layers"],
        num_encoder_attention_heads=dims["attention_heads"], num_decoder_attention_heads=dims["attention_heads"],
        ngram=ngram, max_position_embeddings=512, pad_token_id=0, bos_token_id=2, eos_token_id=3,
        decoder_start_token_id=3,
    )
    torch.manual_seed(0)
    hf = ProphetNetForConditionalGeneration(config).eval()
    hf_dir = os.path.join(workdir, "hf")
    hf.save_pretrained(hf_dir)
    with open(os.path.join(hf_dir, "vocab.txt"), "w") as f:
        f.write("\n".join(tokens) + "\n")
    out = os.path.join(workdir, "ours")
    path = convert(["prophetnet", "--hf-dir", hf_dir, "--out", out])
    models, _, task = checkpoint_utils.load_model_ensemble_and_task([path], arg_overrides={"data": out})
    return hf, models[0], task


def hf_ids(d, vocab_size):
    """``(len(d),)`` HF (BERT) id of every index of our dictionary ``d``, the converter's vocabulary."""
    to_hf = torch.empty(len(d), dtype=torch.long)
    tokens = VOCAB + [f"w{i}" for i in range(vocab_size - len(VOCAB))]
    roles = {"[CLS]": d.bos(), "[PAD]": d.pad(), "[SEP]": d.eos(), "[UNK]": d.unk()}
    for bert_id, tok in enumerate(tokens):
        to_hf[roles.get(tok, d.index(tok))] = bert_id
    return to_hf


def transformer_like(size, task):
    dims = SIZES[size]
    args = Namespace(
        encoder_embed_dim=dims["embed_dim"], encoder_ffn_embed_dim=dims["ffn_embed_dim"],
        encoder_layers=dims["layers"], encoder_attention_heads=dims["attention_heads"],
        decoder_embed_dim=dims["embed_dim"], decoder_ffn_embed_dim=dims["ffn_embed_dim"],
        decoder_layers=dims["layers"], decoder_attention_heads=dims["attention_heads"],
        encoder_learned_pos=True, decoder_learned_pos=True, share_all_embeddings=True,
        activation_fn="gelu", dropout=0.1, attention_dropout=0.1, activation_dropout=0.1,
        max_source_positions=511, max_target_positions=510,
    )
    base_architecture(args)
    return TransformerModel.build_model(args, task)


def batch(d, bsz, src_len, tgt_len, seed=0):
    g = torch.Generator().manual_seed(seed)
    src = torch.randint(d.nspecial, len(d), (bsz, src_len), generator=g)
    src[:, -1] = d.eos()
    target = torch.randint(d.nspecial, len(d), (bsz, tgt_len), generator=g)
    target[:, -1] = d.eos()
    prev = torch.cat([torch.full((bsz, 1), d.eos()), target[:, :-1]], 1)
    return {"id": torch.arange(bsz), "nsentences": bsz, "ntokens": bsz * tgt_len, "target": target,
            "net_input": {"src_tokens": src, "src_lengths": torch.full((bsz,), src_len), "prev_output_tokens": prev}}


def train_step(model, criterion, sample):
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-4)

    def step():
        model.train()
        optimizer.zero_grad()
        loss, _, _ = criterion(model, sample)
        loss.backward()
        optimizer.step()
    return step


def fairseq_generate(model, d, sample, beam, length):
    """A call decoding ``sample`` with fairseq's SequenceGenerator as the plugin's tasks build it
    for fairseq-generate (:func:`fairseq_ext.decoding.generator.plugin_generator`, no rules); it
    returns the best hypothesis of each sentence, ``length`` tokens (``</s>`` cut)."""
    generator = SequenceGenerator([model], d, beam_size=beam, min_len=length, max_len_b=length, max_len_a=0)
    generator = plugin_generator(generator, DecodingConfig(), d)

    def run():
        model.eval()  # a training step in between leaves the model in train mode
        with torch.no_grad():
            hypos = generator.forward(sample)
        return [h[0]["tokens"][:length].tolist() for h in hypos]
    return run


def hf_generate(hf, sample, to_hf, beam, length):
    """A call decoding ``sample`` with HF ``generate``, ``length`` new tokens, ``[PAD]`` suppressed
    as fairseq does; it returns the new tokens (HF ids) of each sentence."""
    src = to_hf[sample["net_input"]["src_tokens"]]

    def run():
        with torch.no_grad():
            out = hf.generate(input_ids=src, attention_mask=torch.ones_like(src), num_beams=beam,
                              min_new_tokens=length, max_new_tokens=length, do_sample=False,
                              no_repeat_ngram_size=0, length_penalty=1.0, early_stopping=False,
                              suppress_tokens=[hf.config.pad_token_id])
        return out[:, 1:].tolist()  # after the decoder start token
    return run


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", choices=sorted(SIZES), default="base")
    parser.add_argument("--ngram", type=int, default=2)
    parser.add_argument("--vocab", type=int, default=8000)
    parser.add_argument("--batch", type=int, default=8, help="sentences per batch (training and generation)")
    parser.add_argument("--src-len", type=int, default=256)
    parser.add_argument("--tgt-len", type=int, default=64, help="training target length")
    parser.add_argument("--gen-len", type=int, default=32, help="generated tokens per sentence")
    parser.add_argument("--beam", type=int, default=4)
    parser.add_argument("--warmup", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--threads", type=int, default=int(os.environ.get("OMP_NUM_THREADS", 1)))
    parser.add_argument("--clock", choices=sorted(CLOCKS), default="cpu",
                        help="cpu: process CPU seconds (robust on shared cores); wall: elapsed seconds")
    args = parser.parse_args(argv)
    clock = CLOCKS[args.clock]
    torch.set_num_threads(args.threads)

    with tempfile.TemporaryDirectory() as workdir:
        hf, ours, task = hf_and_ours(args.size, args.vocab, args.ngram, workdir)
    d = task.target_dictionary
    baseline = transformer_like(args.size, task)
    to_hf = hf_ids(d, args.vocab)

    sample = batch(d, args.batch, args.src_len, args.tgt_len)
    ngram_loss = NgramLanguageLossCriterion(task, sentence_avg=False, label_smoothing=0.1)
    ls_loss = LabelSmoothedCrossEntropyCriterion(task, sentence_avg=False, label_smoothing=0.1)
    t_ours, t_base = interleaved([train_step(ours, ngram_loss, sample), train_step(baseline, ls_loss, sample)],
                                       args.warmup, args.repeat, clock, label="train")
    words = sample["ntokens"]

    gen_sample = batch(d, args.batch, args.src_len, 1, seed=1)
    g_ours, g_base, g_hf = interleaved([
        fairseq_generate(ours, d, gen_sample, args.beam, args.gen_len),
        fairseq_generate(baseline, d, gen_sample, args.beam, args.gen_len),
        hf_generate(hf, gen_sample, to_hf, args.beam, args.gen_len),
    ], args.warmup, args.repeat, clock, label="generate")
    generated = args.batch * args.gen_len

    params = sum(p.numel() for p in ours.parameters()) / 1e6
    base_params = sum(p.numel() for p in baseline.parameters()) / 1e6
    print(f"size {args.size} ({params:.1f}M params; transformer {base_params:.1f}M), ngram {args.ngram}, "
          f"threads {args.threads}, batch {args.batch}, source {args.src_len}, {args.clock} clock, "
          f"median of {args.repeat} after {args.warmup} warm-up")
    print()
    print("| measure | ProphetNet (ours) | baseline | ours / baseline |")
    print("| --- | ---: | ---: | ---: |")
    print(f"| training words/s (target {args.tgt_len}) vs fairseq transformer | {words / t_ours:.1f} | "
          f"{words / t_base:.1f} | {t_base / t_ours:.2f}x speed ({t_ours / t_base:.2f}x time) |")
    print(f"| generation tokens/s (beam {args.beam}, {args.gen_len} tokens) vs fairseq transformer | "
          f"{generated / g_ours:.1f} | {generated / g_base:.1f} | {g_base / g_ours:.2f}x speed "
          f"({g_ours / g_base:.2f}x time per token) |")
    print(f"| generation tokens/s (beam {args.beam}, {args.gen_len} tokens) vs HF ProphetNet generate, same weights | "
          f"{generated / g_ours:.1f} | {generated / g_hf:.1f} | {g_hf / g_ours:.2f}x speed |")


if __name__ == "__main__":
    main()
