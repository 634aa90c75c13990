"""Transformer-SM against Hugging Face ``GPT2LMHeadModel.generate`` on the very same weights.

Memory (``--memory``): the HF model saved with ``save_pretrained`` and converted to ours by
``python -m fairseq_ext.cli.convert transformer_sm`` (as a user starts from GPT-2); each side
reads its files in a fresh process (ours through fairseq's ``load_model_ensemble_and_task``, as
fairseq-generate and the hub do; HF's ``from_pretrained``) and decodes the same articles once.

Our model is built as GPT-2 is (pre-LN blocks, a final LayerNorm, tanh GELU, summary positions
that continue after the article, no source embeddings: the paper's Transformer-LM ablation, the
one configuration a GPT-2 computes exactly), with random weights; the HF model gets those
weights (q, k, v packed into ``c_attn``, linears transposed into ``Conv1D``) and the same
vocabulary, ids = our dictionary's indices. Both continue the same articles
``<s> a_1 .. a_M <delim>`` by exactly ``--summary`` tokens (ours through fairseq's
SequenceGenerator as fairseq-generate runs it, prefill included; HF's ``generate`` with
``min_new_tokens = max_new_tokens``; ``<pad>`` suppressed on both sides, as fairseq does).
"""

import os
from argparse import Namespace

import torch
from fairseq import checkpoint_utils
from fairseq.data import Dictionary
from transformers import GPT2Config, GPT2LMHeadModel

import user_dir  # noqa: F401  (registers the plugin)
from fairseq_ext.cli.convert import main as convert
from user_dir.models.transformer_sm import TransformerSMConfig, TransformerSMModel
from user_dir.tasks.transformer_sm import DELIMITER, TransformerSMTask, TransformerSMTaskConfig

from . import Comparison

#: (layers, width, heads, vocabulary, article tokens, summary tokens, batch)
SIZES = {"paper": (12, 768, 12, 8000, 400, 64, 2), "small": (4, 256, 4, 8000, 200, 32, 2)}


def build(layers, width, heads, vocab, article, summary):
    dictionary = Dictionary()
    for i in range(vocab - dictionary.nspecial - 1):
        dictionary.add_symbol(f"w{i}")
    dictionary.add_symbol(DELIMITER)
    task = TransformerSMTask(TransformerSMTaskConfig(), dictionary, dictionary)
    cfg = TransformerSMConfig(embed_dim=width, ffn_embed_dim=4 * width, layers=layers, attention_heads=heads,
                              max_positions=article + summary + 1, normalize_before=True,
                              activation_fn="gelu_accurate", no_source_embeddings=True,
                              summary_positions="continue", max_source_positions=article,
                              max_target_positions=summary + 1)
    torch.manual_seed(0)
    ours = TransformerSMModel.build_model(cfg, task).eval()
    hf = hf_from_ours(ours, len(dictionary))
    prepare_for_decoding(ours)
    return task, ours, hf


def prepare_for_decoding(model):
    """What fairseq-generate, -interactive and the hub do to a model before decoding."""
    model.prepare_for_inference_(Namespace(generation=Namespace(beam=1)))


def hf_from_ours(ours, vocab):
    """A ``GPT2LMHeadModel`` holding ``ours``'s weights (the inverse of fairseq_ext.convert.transformer_sm)."""
    decoder = ours.decoder
    first = decoder.layers[0]
    config = GPT2Config(vocab_size=vocab, n_positions=decoder.embed.positions.weight.size(0),
                        n_embd=decoder.embed.tokens.weight.size(1), n_layer=len(decoder.layers),
                        n_head=first.self_attn.num_heads, n_inner=first.fc1.out_features,
                        activation_function="gelu_new", layer_norm_epsilon=first.final_layer_norm.eps,
                        resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0, bos_token_id=0, eos_token_id=2,
                        pad_token_id=1)
    hf = GPT2LMHeadModel(config).eval()
    state = {"transformer.wte.weight": decoder.embed.tokens.weight,
             "transformer.wpe.weight": decoder.embed.positions.weight,
             "transformer.ln_f.weight": decoder.layer_norm.weight, "transformer.ln_f.bias": decoder.layer_norm.bias,
             "lm_head.weight": decoder.embed.tokens.weight}
    for i, layer in enumerate(decoder.layers):
        attn, h = layer.self_attn, f"transformer.h.{i}."
        state[h + "attn.c_attn.weight"] = torch.cat([attn.q_proj.weight, attn.k_proj.weight, attn.v_proj.weight]).t()
        state[h + "attn.c_attn.bias"] = torch.cat([attn.q_proj.bias, attn.k_proj.bias, attn.v_proj.bias])
        state[h + "attn.c_proj.weight"] = attn.out_proj.weight.t()
        state[h + "attn.c_proj.bias"] = attn.out_proj.bias
        state[h + "mlp.c_fc.weight"], state[h + "mlp.c_fc.bias"] = layer.fc1.weight.t(), layer.fc1.bias
        state[h + "mlp.c_proj.weight"], state[h + "mlp.c_proj.bias"] = layer.fc2.weight.t(), layer.fc2.bias
        for norm, theirs in ((layer.self_attn_layer_norm, "ln_1"), (layer.final_layer_norm, "ln_2")):
            state[h + theirs + ".weight"], state[h + theirs + ".bias"] = norm.weight, norm.bias
    missing, unexpected = hf.load_state_dict({k: v.detach().contiguous() for k, v in state.items()}, strict=False)
    if unexpected or [m for m in missing if not m.endswith("attn.bias") and not m.endswith("masked_bias")]:
        raise RuntimeError(f"weights did not map: missing {missing}, unexpected {unexpected}")
    return hf


def decoders(task, ours, hf, batch, article, summary, beam):
    d = task.target_dictionary
    generator = torch.Generator().manual_seed(1)
    src = torch.randint(d.nspecial, len(d) - 1, (batch, article), generator=generator)
    src[:, 0] = d.bos()
    sample = {"net_input": {"src_tokens": src, "src_lengths": torch.full((batch,), article)}, "id": torch.arange(batch)}
    fairseq_generator = task.build_generator(
        [ours], Namespace(beam=beam, min_len=summary, max_len_a=0, max_len_b=summary)
    )
    prompt = torch.cat([src, torch.full((batch, 1), task.delimiter_index)], dim=1)
    out = {}

    def run_ours():
        hyps = task.inference_step(fairseq_generator, [ours], sample)
        out["ours"] = [h[0]["tokens"][:summary].tolist() for h in hyps]

    def run_hf():
        with torch.no_grad():
            tokens = hf.generate(input_ids=prompt, attention_mask=torch.ones_like(prompt), num_beams=beam,
                                 do_sample=False, min_new_tokens=summary, max_new_tokens=summary,
                                 suppress_tokens=[d.pad()], length_penalty=1.0, early_stopping=False)
        out["hf"] = tokens[:, prompt.size(1):].tolist()

    return run_ours, run_hf, out


def comparisons(args):
    layers, width, heads, vocab, article, summary, batch = SIZES[args.size]
    task, ours, hf = build(layers, width, heads, vocab, article, summary)
    rows = []
    for beam in (1, 3):
        run_ours, run_hf, out = decoders(task, ours, hf, batch, article, summary, beam)
        run_ours()
        run_hf()
        same = out["ours"] == out["hf"]
        rows.append(Comparison(
            f"{'greedy' if beam == 1 else f'beam {beam}'} decoding, {summary} new tokens", run_ours, run_hf,
            "HF GPT2LMHeadModel.generate", units=batch * summary,
            check=("same tokens" if same else "tokens differ") if beam == 1 else
                  ("same tokens" if same else "beam search rules differ; not compared"),
        ))
    setting = (f"{layers} layers, {width} wide, {heads} heads, vocabulary {vocab}; {article}-token articles, "
               f"batch {batch}, {summary} new tokens; same weights (ours -> GPT-2).")
    return setting, rows


MEMORY_SIDES = ("ours greedy", "HF greedy", "ours beam 3", "HF beam 3")


def memory_sides(args, workdir):
    layers, width, heads, vocab, article, summary, batch = SIZES[args.size]
    _, _, hf = build(layers, width, heads, vocab, article, summary)
    hf.save_pretrained(os.path.join(workdir, "hf"))
    convert(["transformer_sm", "--hf-dir", os.path.join(workdir, "hf"), "--out", os.path.join(workdir, "ours"),
             "--no-source-embeddings"])
    return MEMORY_SIDES


def memory_side(args, side, workdir, mark):
    layers, width, heads, vocab, article, summary, batch = SIZES[args.size]
    beam = 1 if side.endswith("greedy") else 3
    src = torch.randint(8, vocab - 8, (batch, article), generator=torch.Generator().manual_seed(1))
    if side.startswith("ours"):
        out = os.path.join(workdir, "ours")
        models, _, task = checkpoint_utils.load_model_ensemble_and_task(
            [os.path.join(out, "model.pt")],
            arg_overrides={"data": out, "max_source_positions": article, "max_target_positions": summary + 1})
        prepare_for_decoding(models[0])
        mark("loaded")
        src[:, 0] = task.source_dictionary.bos()
        generator = task.build_generator(models, Namespace(beam=beam, min_len=summary, max_len_a=0, max_len_b=summary))
        sample = {"net_input": {"src_tokens": src, "src_lengths": torch.full((batch,), article)},
                  "id": torch.arange(batch)}
        task.inference_step(generator, models, sample)
    else:
        hf = GPT2LMHeadModel.from_pretrained(os.path.join(workdir, "hf")).eval()
        mark("loaded")
        with torch.no_grad():
            hf.generate(input_ids=src, attention_mask=torch.ones_like(src), num_beams=beam, do_sample=False,
                        min_new_tokens=summary, max_new_tokens=summary)
