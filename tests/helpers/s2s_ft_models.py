"""The toy s2s-ft model and batch the s2s-ft model and pointer-generator tests share."""

from types import SimpleNamespace

import torch

import user_dir  # noqa: F401  (registers s2s_ft)
from toys import toy_dictionary
from user_dir.models.s2s_ft import S2SFTConfig, S2SFTModel

VOCAB = 40


def make_dictionary():
    return toy_dictionary(VOCAB, "<mask>")


def make_model(method, seed=0, **overrides):
    torch.manual_seed(seed)
    d = make_dictionary()
    sizes = dict(
        embed_dim=32, layers=2, attention_heads=4, ffn_embed_dim=64,
        max_positions=64, max_source_positions=24, max_target_positions=16,
    )  # fmt: skip
    cfg = S2SFTConfig(s2s_method=method, **{**sizes, **overrides})
    task = SimpleNamespace(source_dictionary=d, target_dictionary=d, cfg=SimpleNamespace(left_pad_target=False))
    return S2SFTModel.build_model(cfg, task).eval(), d


def batch(d, left_pad=True, seed=1):
    """Two sources of different lengths (padded) and two targets (right-padded)."""
    g = torch.Generator().manual_seed(seed)
    srcs = [torch.randint(d.nspecial, VOCAB, (n,), generator=g) for n in (7, 4)]
    tgts = [torch.randint(d.nspecial, VOCAB, (n,), generator=g) for n in (5, 3)]
    S, T = max(len(s) for s in srcs) + 1, max(len(t) for t in tgts) + 1
    src = torch.full((2, S), d.pad())
    prev = torch.full((2, T), d.pad())
    tgt = torch.full((2, T), d.pad())
    for i, (s, t) in enumerate(zip(srcs, tgts)):
        s = torch.cat([s, torch.tensor([d.eos()])])
        if left_pad:
            src[i, S - len(s) :] = s
        else:
            src[i, : len(s)] = s
        prev[i, : len(t) + 1] = torch.cat([torch.tensor([d.eos()]), t])
        tgt[i, : len(t) + 1] = torch.cat([t, torch.tensor([d.eos()])])
    return src, src.ne(d.pad()).sum(1), prev, tgt


def log_probs_through_beam_reorders(model, d):
    """Cached decoding of :data:`parity.SENTENCES` left-padded sources of 9, 4 and 1 tokens,
    :data:`parity.BEAMS` random hypotheses each, through :data:`parity.BEAM_REORDERS`: the
    normalized log-probabilities of every step ``(rows, steps, V)`` and the reordered
    ``(src, lengths, prev)`` that a full forward pass must turn into the same values."""
    from parity import BEAM_REORDERS, BEAMS, REORDER_STEPS, SENTENCES, incremental_with_reorders

    g = torch.Generator().manual_seed(5)
    src = torch.full((SENTENCES, 9), d.pad())
    for row, n in enumerate((9, 4, 1)):
        src[row, 9 - n :] = torch.randint(d.nspecial, VOCAB, (n,), generator=g)
        src[row, -1] = d.eos()
    src = src.repeat_interleave(BEAMS, 0)
    prev = torch.randint(d.nspecial, VOCAB, (len(src), REORDER_STEPS), generator=g)
    prev[:, 0] = d.eos()
    lengths = src.ne(d.pad()).sum(1)
    with torch.no_grad():
        live = {"encoder_out": model.encoder(src, lengths), "state": {}}

        def step(t, rows):
            out = model.decoder(prev[rows, : t + 1], live["encoder_out"], incremental_state=live["state"])
            return model.get_normalized_probs(out, log_probs=True)[:, -1]

        def reorder(order):
            model.decoder.reorder_incremental_state_scripting(live["state"], order)
            live["encoder_out"] = model.encoder.reorder_encoder_out(live["encoder_out"], order)

        steps, rows = incremental_with_reorders(step, reorder, len(src), prev.size(1), BEAM_REORDERS)
    return steps, (src[rows], lengths[rows], prev[rows])


def small_copy_model(d, seed, max_target_positions=24):
    """A pseudo-masked s2s-ft model with 2 copy heads over dictionary ``d``, its weights moved
    far from the default initialisation (deterministic in ``seed``), in eval mode."""
    torch.manual_seed(seed)
    cfg = S2SFTConfig(
        s2s_method="pseudo", embed_dim=32, layers=2, attention_heads=4, ffn_embed_dim=64,
        max_positions=64, max_source_positions=24, max_target_positions=max_target_positions, copy_heads=2,
    )
    task = SimpleNamespace(source_dictionary=d, target_dictionary=d, cfg=SimpleNamespace(left_pad_target=False))
    model = S2SFTModel.build_model(cfg, task).eval()
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn_like(p) * 0.5)
    return model


def cached_steps(model, src, lengths, prev):
    """Cached decoding of ``prev`` one token at a time (call under ``torch.no_grad()``): yields
    ``(step, decoder output, normalized log-probabilities (B, 1, V))`` for each step."""
    encoder_out, state = model.encoder(src, lengths), {}
    for step in range(prev.size(1)):
        out = model.decoder(prev[:, : step + 1], encoder_out, incremental_state=state)
        yield step, out, model.get_normalized_probs(out, log_probs=True)
