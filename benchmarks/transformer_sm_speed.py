"""Transformer-SM speed against fairseq's own ``transformer_lm`` of the same size.

Both models read the same joint rows ``<s> article <delim> summary`` (no padding):

* training words/s: forward + backward of the loss over a batch, in train mode (dropout on);
  the baseline is fairseq's ``transformer_lm`` with the LM loss on every token; ours is
  measured with the DAT loss (every token, the same work plus the source-embedding lookup)
  and with the ETT loss (summary tokens only);
* generation tokens/s: greedy incremental decoding of ``--summary`` tokens after the article,
  timing the decoding steps only (both caches hold the article; fairseq's ``transformer_lm``
  cannot prefill a prompt in one pass, so its cache is filled token by token beforehand);
  ours also end to end through fairseq's SequenceGenerator (beam 3, trigram blocking,
  article prefill included) for reference.

    OMP_NUM_THREADS=1 python -m benchmarks.transformer_sm_speed --size small --threads 1
"""

import argparse
import time
from argparse import Namespace

import torch
import torch.nn.functional as F
from fairseq.data import Dictionary
from fairseq.models.transformer_lm import TransformerLanguageModel, base_lm_architecture

import user_dir  # noqa: F401  (registers the plugin)
from benchmarks.timing import interleaved
from user_dir.criterions.transformer_sm import TransformerSMCriterion
from user_dir.models.transformer_sm import TransformerSMConfig, TransformerSMModel
from user_dir.tasks.transformer_sm import DELIMITER, TransformerSMTask, TransformerSMTaskConfig

SIZES = {
    "small": dict(embed_dim=256, ffn_embed_dim=1024, layers=4, attention_heads=4),
    "gpt": dict(embed_dim=768, ffn_embed_dim=3072, layers=12, attention_heads=12),
}


def build(size, vocab, article, summary):
    dictionary = Dictionary()
    for i in range(vocab):
        dictionary.add_symbol(f"w{i}")
    dictionary.add_symbol(DELIMITER)
    task = TransformerSMTask(TransformerSMTaskConfig(), dictionary, dictionary)
    dims = SIZES[size]
    ours = TransformerSMModel.build_model(
        TransformerSMConfig(**dims, max_positions=512, max_source_positions=article, max_target_positions=summary + 1),
        task,
    )
    lm_args = Namespace(
        decoder_embed_dim=dims["embed_dim"], decoder_ffn_embed_dim=dims["ffn_embed_dim"],
        decoder_layers=dims["layers"], decoder_attention_heads=dims["attention_heads"],
        decoder_learned_pos=True, no_scale_embedding=True, share_decoder_input_output_embed=True,
        activation_fn="gelu", dropout=0.1, attention_dropout=0.1, decoder_normalize_before=False,
        tokens_per_sample=article + summary, max_target_positions=article + summary,
    )  # fmt: skip
    base_lm_architecture(lm_args)
    baseline = TransformerLanguageModel.build_model(lm_args, task)
    return task, ours, baseline


def training_rates(task, ours, baseline, batch, article, summary, warmup, repeat):
    d = task.target_dictionary
    gen = torch.Generator().manual_seed(0)
    src = torch.randint(d.nspecial, len(d) - 1, (batch, article), generator=gen)
    src[:, 0] = d.bos()
    tgt = torch.randint(d.nspecial, len(d) - 1, (batch, summary), generator=gen)
    prev = torch.cat([torch.full((batch, 1), task.delimiter_index), tgt[:, :-1]], 1)
    sample = {
        "net_input": {"src_tokens": src, "src_lengths": torch.full((batch,), article), "prev_output_tokens": prev},
        "target": tgt, "ntokens": tgt.numel(), "nsentences": batch, "id": torch.arange(batch),
    }  # fmt: skip
    row = torch.cat([src, prev], 1)  # (B, M + N)
    row_target = torch.cat([src[:, 1:], prev, tgt[:, -1:]], 1)
    words = row.numel()

    def step_baseline():
        baseline.zero_grad()
        logits, _ = baseline(row)
        F.cross_entropy(logits.view(-1, logits.size(-1)), row_target.view(-1), reduction="sum").backward()

    def step_ours(criterion):
        def run():
            ours.zero_grad()
            criterion(ours, sample)[0].backward()

        return run

    ours.train()
    baseline.train()
    dat = TransformerSMCriterion(task, sentence_avg=False, label_smoothing=0.0, mode="dat")
    ett = TransformerSMCriterion(task, sentence_avg=False, label_smoothing=0.0, mode="ett")
    steps = [step_baseline, step_ours(dat), step_ours(ett)]
    base_t, dat_t, ett_t = interleaved(steps, warmup, repeat, time.perf_counter)
    return words / base_t, words / dat_t, words / ett_t


@torch.no_grad()
def generation_rates(task, ours, baseline, batch, article, summary, warmup, repeat):
    d = task.target_dictionary
    gen = torch.Generator().manual_seed(1)
    src = torch.randint(d.nspecial, len(d) - 1, (batch, article), generator=gen)
    src[:, 0] = d.bos()
    delim = torch.full((batch, 1), task.delimiter_index)
    ours.eval()
    baseline.eval()

    def decode_ours():
        encoder_out, state = ours.encoder(src), {}
        tokens = delim
        ours.decoder(tokens, encoder_out, incremental_state=state)  # prefill: article + <delim>
        start = time.perf_counter()
        for _ in range(summary):
            logits, _ = ours.decoder(tokens, encoder_out, incremental_state=state)
            tokens = torch.cat([tokens, F.log_softmax(logits[:, -1], -1).argmax(-1, keepdim=True)], 1)
        return time.perf_counter() - start

    def decode_baseline():
        state = {}
        row = torch.cat([src, delim], 1)
        for t in range(row.size(1)):  # fill the cache (not timed)
            baseline.decoder(row[:, : t + 1], incremental_state=state)
        start = time.perf_counter()
        for _ in range(summary):
            logits, _ = baseline.decoder(row, incremental_state=state)
            row = torch.cat([row, F.log_softmax(logits[:, -1], -1).argmax(-1, keepdim=True)], 1)
        return time.perf_counter() - start

    tokens = batch * summary
    base_t, ours_t = interleaved([decode_baseline, decode_ours], warmup, repeat, time.perf_counter)

    generator = task.build_generator(
        [ours], Namespace(beam=3, no_repeat_ngram_size=3, min_len=summary, max_len_b=summary)
    )
    sample = {"net_input": {"src_tokens": src, "src_lengths": torch.full((batch,), article)}, "id": torch.arange(batch)}
    (end_to_end,) = interleaved([lambda: task.inference_step(generator, [ours], sample)], 0, 1, time.perf_counter)
    return tokens / base_t, tokens / ours_t, tokens / end_to_end


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", choices=sorted(SIZES), default="small")
    parser.add_argument("--batch", type=int, default=4, help="rows per batch")
    parser.add_argument("--article", type=int, default=512, help="article tokens (<s> included)")
    parser.add_argument("--summary", type=int, default=110, help="summary tokens")
    parser.add_argument("--vocab", type=int, default=8000)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--warmup", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--skip-generation", action="store_true")
    args = parser.parse_args(argv)

    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    task, ours, baseline = build(args.size, args.vocab, args.article, args.summary)
    n_ours = sum(p.numel() for p in ours.parameters())
    n_base = sum(p.numel() for p in baseline.parameters())
    print(f"size={args.size} batch={args.batch} article={args.article} summary={args.summary} "
          f"vocab={args.vocab} threads={args.threads} params ours={n_ours} transformer_lm={n_base}")
    base, dat, ett = training_rates(task, ours, baseline, args.batch, args.article, args.summary,
                                    args.warmup, args.repeat)
    print("| measure | transformer_lm | transformer_sm | ratio (lm time / sm time) |")
    print("| --- | ---: | ---: | ---: |")
    print(f"| training words/s, DAT loss (all tokens) | {base:.0f} | {dat:.0f} | {dat / base:.3f} |")
    print(f"| training words/s, ETT loss (summary only) | {base:.0f} | {ett:.0f} | {ett / base:.3f} |")
    if not args.skip_generation:
        base_g, ours_g, end_to_end = generation_rates(task, ours, baseline, args.batch, args.article,
                                                      args.summary, args.warmup, args.repeat)
        print(f"| generation tokens/s, greedy decode steps | {base_g:.0f} | {ours_g:.0f} | {ours_g / base_g:.3f} |")
        print(f"| generation tokens/s, SequenceGenerator beam 3 + prefill (ours only) | - | {end_to_end:.0f} | - |")


if __name__ == "__main__":
    main()
