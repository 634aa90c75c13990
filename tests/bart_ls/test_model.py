"""``bart_ls`` model: equals fairseq's BART on the same weights when one block covers the input,
converter (positions tiled, sentinels, pooling weights), padding invariance of the whole model."""

import re
from argparse import Namespace

import pytest
import torch
from fairseq import options, tasks
from fairseq.dataclass.utils import convert_namespace_to_omegaconf

import user_dir  # noqa: F401  (registers bart_ls and bart_summ_tiny)
from fairseq_ext.cli.convert import main as convert_main
from fairseq_ext.convert.bart_ls import convert_state_dict, tile_positions
from parity import BEAM_REORDERS, BEAMS, SENTENCES, incremental_with_reorders, perturb_parameters
from toys import toy_dictionary

VOCAB = 40
BART_POSITIONS = 64


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    """A data directory with just a joined dictionary (all a model needs to be built)."""
    path = tmp_path_factory.mktemp("bart_ls_dict")
    dictionary = toy_dictionary(VOCAB)
    for side in ("source", "target"):
        dictionary.save(str(path / f"dict.{side}.txt"))
    return path


def build(data_dir, arch, *flags):
    parser = options.get_training_parser()
    args = options.parse_args_and_arch(
        parser, [str(data_dir), "--task", "abstractive_summarization", "--arch", arch, "--user-dir",
                 user_dir.hub.USER_DIR, "--dropout", "0", *flags],
    )
    cfg = convert_namespace_to_omegaconf(args)
    task = tasks.setup_task(cfg.task)
    torch.manual_seed(0)
    return task, task.build_model(cfg.model).eval()


def batch(task, lengths, seed=0):
    """Left-padded sources of the given lengths (as fairseq collates them) and decoder inputs."""
    gen = torch.Generator().manual_seed(seed)
    dictionary = task.source_dictionary
    width = max(lengths)
    src = torch.full((len(lengths), width), dictionary.pad())
    for row, length in enumerate(lengths):
        src[row, width - length:-1] = torch.randint(dictionary.nspecial, len(dictionary), (length - 1,), generator=gen)
        src[row, -1] = dictionary.eos()
    prev = torch.randint(dictionary.nspecial, len(dictionary), (len(lengths), 7), generator=gen)
    prev[:, 0] = dictionary.eos()
    return src, torch.tensor(lengths), prev


def convert(bart, bart_ls_args, num_sentinels=0, pooling_layers=0):
    cfg = bart.args
    return convert_state_dict(
        bart.state_dict(), padding_idx=1, dict_size=len(bart.encoder.dictionary),
        max_source_positions=bart_ls_args["max_source_positions"], num_sentinels=num_sentinels,
        encoder_layers=cfg.encoder_layers, embed_dim=cfg.encoder_embed_dim, heads=cfg.encoder_attention_heads,
        pooling_layers=pooling_layers, pooling_kernel=6, pooling_stride=4, pooling_padding=3,
    )


SIZES = ["--encoder-layers", "2", "--decoder-layers", "1", "--encoder-embed-dim", "32", "--decoder-embed-dim", "32",
         "--encoder-ffn-embed-dim", "64", "--decoder-ffn-embed-dim", "64",
         "--encoder-attention-heads", "2", "--decoder-attention-heads", "2"]


@pytest.mark.parametrize("mechanism", ["block", "overlapping", "global"])
def test_one_block_equals_bart(data_dir, mechanism):
    """Block size >= input length, no pooling: the BART-LS forward is BART's forward (every
    BART weight perturbed, so a misplaced one shows; sources of 60, 9 and 1 tokens)."""
    task, bart = build(data_dir, "bart_summ_tiny", *SIZES, "--max-source-positions", str(BART_POSITIONS))
    perturb_parameters(bart, seed=10)
    _, bart_ls = build(
        data_dir, "bart_ls_tiny", *SIZES, "--max-source-positions", "256", "--encoder-attention", mechanism,
        "--block-size", "64", "--global-tokens", "4", "--pooling-layers", "0",
    )
    bart_ls.load_state_dict(convert(bart, {"max_source_positions": 256}))
    src, lengths, prev = batch(task, [60, 9, 1])
    with torch.no_grad():
        expected, _ = bart(src, lengths, prev)
        got, _ = bart_ls(src, lengths, prev)
    assert expected.std() > 0.3  # O(1) logits: nothing hides in small numbers
    torch.testing.assert_close(got, expected, atol=1e-4, rtol=1e-5)


def test_small_blocks_differ_from_bart(data_dir):
    """Sanity: with blocks shorter than the input, the encoder is no longer BART's."""
    task, bart = build(data_dir, "bart_summ_tiny", *SIZES, "--max-source-positions", str(BART_POSITIONS))
    _, bart_ls = build(data_dir, "bart_ls_tiny", *SIZES, "--max-source-positions", "256",
                       "--block-size", "8", "--pooling-layers", "0")
    bart_ls.load_state_dict(convert(bart, {"max_source_positions": 256}))
    src, lengths, _ = batch(task, [50])
    got = bart_ls.encoder(src, lengths)["encoder_out"][0]  # (T, B, C)
    expected = bart.encoder(src, lengths)["encoder_out"][0]
    assert (got - expected).abs().max() > 1e-3


@pytest.mark.parametrize("mechanism", ["block", "overlapping", "global"])
def test_model_outputs_do_not_depend_on_padding(data_dir, mechanism):
    task, model = build(data_dir, "bart_ls_tiny", "--encoder-attention", mechanism, "--block-size", "8",
                        "--global-tokens", "2", "--pooling-layers", "1")
    src, lengths, prev = batch(task, [45, 19])
    together, _ = model(src, lengths, prev)
    alone, _ = model(src[1:, -19:], lengths[1:], prev[1:])
    torch.testing.assert_close(together[1:], alone, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("mechanism", ["block", "overlapping", "global"])
def test_short_batches_at_the_default_block_and_global_sizes(data_dir, mechanism):
    """Block 1024 with 64 global tokens (the defaults): batches of at most 64 tokens work in
    every attention. Sources of 1 to 70 tokens, pooled top layer, padding-invariant."""
    task, model = build(data_dir, "bart_ls_tiny", "--encoder-attention", mechanism, "--block-size", "1024",
                        "--global-tokens", "64", "--pooling-layers", "1")
    perturb_parameters(model, seed=7)
    for lengths in ([1], [2], [64, 1], [70, 3, 1]):
        src, src_lengths, prev = batch(task, lengths, seed=len(lengths))
        with torch.no_grad():
            together, _ = model(src, src_lengths, prev)
            assert torch.isfinite(together).all()
            shortest = lengths[-1]
            alone, _ = model(src[-1:, -shortest:], src_lengths[-1:], prev[-1:])
        torch.testing.assert_close(together[-1:], alone, atol=1e-4, rtol=1e-4)


def test_converter_tiles_positions_and_adds_rows(data_dir):
    _, bart = build(data_dir, "bart_summ_tiny", *SIZES, "--max-source-positions", str(BART_POSITIONS))
    state = convert(bart, {"max_source_positions": 150}, num_sentinels=5, pooling_layers=1)
    old_pos = bart.state_dict()["encoder.embed_positions.weight"]  # (2 + 64, C)
    new_pos = state["encoder.embed_positions.weight"]
    assert new_pos.shape[0] == 2 + 150
    torch.testing.assert_close(new_pos[2 + 64: 2 + 128], old_pos[2:])
    torch.testing.assert_close(new_pos[2 + 128:], old_pos[2: 2 + 22])
    assert torch.equal(state["decoder.embed_positions.weight"], bart.state_dict()["decoder.embed_positions.weight"])
    tokens = state["encoder.embed_tokens.weight"]
    assert tokens.shape[0] == len(bart.encoder.dictionary) + 5
    assert torch.equal(tokens[:-5], bart.state_dict()["encoder.embed_tokens.weight"])
    assert "encoder.layers.1.self_attn.pooling.k_proj.weight" in state
    assert "encoder.layers.0.self_attn.pooling.k_proj.weight" not in state
    assert torch.equal(tile_positions(old_pos, 1, 64), old_pos)


@pytest.mark.parametrize(
    "flags,message",
    [(["--pooling-layers", "3"], "--pooling-layers 3 must be between 0 and --encoder-layers 2"),
     (["--pooling-layers", "-1"], "--pooling-layers -1"),
     (["--encoder-attention", "overlapping", "--block-size", "7"], "even --block-size"),
     (["--encoder-attention", "global", "--block-size", "8", "--global-tokens", "8"], "--global-tokens 8"),
     (["--pooling-kernel", "4", "--pooling-padding", "3"], "--pooling-padding 3"),
     (["--block-size", "0"], "--block-size must be positive")],
)
def test_converter_validates_flags_before_writing(data_dir, tmp_path, flags, message):
    """A bad value (e.g. negative pooling layer indices) is refused at conversion, naming the
    flag, before anything is written."""
    _, bart = build(data_dir, "bart_summ_tiny", *SIZES, "--max-source-positions", str(BART_POSITIONS))
    bart_path = tmp_path / "bart.pt"
    model_cfg = Namespace(encoder_layers=2, encoder_embed_dim=32, encoder_attention_heads=2)  # what fairseq saves
    torch.save({"cfg": {"model": model_cfg, "task": None}, "model": bart.state_dict()}, bart_path)
    out = tmp_path / "bart_ls"
    argv = ["bart_ls", "--bart", str(bart_path), "--dict", str(data_dir / "dict.source.txt"), "--out", str(out),
            "--arch", "bart_ls_tiny", "--max-source-positions", "128", "--num-sentinels", "0", "--block-size", "8",
            "--pooling-layers", "1", "--pooling-kernel", "4", "--pooling-stride", "3", "--pooling-padding", "2"]
    with pytest.raises(ValueError, match=re.escape(message)):
        convert_main(argv + flags)
    assert not out.exists()
    with pytest.raises(ValueError, match="--pooling-layers 3"):
        convert(bart, {"max_source_positions": 128}, pooling_layers=3)
    convert_main(argv + ["--pooling-layers", "2"])  # the whole encoder is fine
    assert (out / "model.pt").exists()


def test_model_build_validates_the_same_flags(data_dir):
    with pytest.raises(ValueError, match="--global-tokens 8"):
        build(data_dir, "bart_ls_tiny", "--encoder-attention", "global", "--block-size", "8", "--global-tokens", "8")
    with pytest.raises(ValueError, match="--pooling-padding 4"):
        build(data_dir, "bart_ls_tiny", "--pooling-kernel", "6", "--pooling-padding", "4")


def test_converter_rejects_a_foreign_dictionary(data_dir):
    _, bart = build(data_dir, "bart_summ_tiny", *SIZES)
    with pytest.raises(ValueError, match="dictionary has"):
        convert_state_dict(bart.state_dict(), padding_idx=1, dict_size=7, max_source_positions=256,
                               num_sentinels=0, encoder_layers=2, embed_dim=32, heads=2)


def test_bad_flags_raise(data_dir):
    with pytest.raises(ValueError, match="pooling-layers"):
        build(data_dir, "bart_ls_tiny", "--pooling-layers", "3")
    with pytest.raises(ValueError, match="even --block-size"):
        build(data_dir, "bart_ls_tiny", "--encoder-attention", "overlapping", "--block-size", "7")


@pytest.mark.parametrize("mechanism", ["block", "global"])
def test_incremental_decoding_equals_full_forward(data_dir, mechanism):
    """Step-by-step decoding over the block-sparse encoder's output, with beam search's reorders
    (within each sentence's beams, after the first step and in the middle of decoding, then a
    finished sentence leaving the batch), gives the teacher-forced logits of each beam's rows."""
    task, model = build(data_dir, "bart_ls_tiny", "--block-size", "8", "--encoder-attention", mechanism,
                        "--global-tokens", "2")
    perturb_parameters(model, seed=8)
    src, lengths, _ = batch(task, [30, 21, 1])
    src, lengths = src.repeat_interleave(BEAMS, 0), lengths.repeat_interleave(BEAMS, 0)
    _, _, prev = batch(task, [2] * SENTENCES * BEAMS, seed=9)  # a hypothesis per beam
    with torch.no_grad():
        live = {"encoder_out": model.encoder(src, lengths), "state": {}}

        def step(t, rows):
            logits, _ = model.decoder(prev[rows, : t + 1], encoder_out=live["encoder_out"],
                                      incremental_state=live["state"])
            return logits[:, -1]

        def reorder(order):
            model.decoder.reorder_incremental_state_scripting(live["state"], order)
            live["encoder_out"] = model.encoder.reorder_encoder_out(live["encoder_out"], order)

        steps, rows = incremental_with_reorders(step, reorder, len(src), prev.size(1), BEAM_REORDERS)
        full, _ = model(src[rows], lengths[rows], prev[rows])  # (B', U, V)
    torch.testing.assert_close(steps, full, atol=1e-4, rtol=1e-4)


def test_full_encoder_attention_rejects_pooling(data_dir):
    with pytest.raises(ValueError, match="pooling-layers 0"):
        build(data_dir, "bart_ls_tiny", "--encoder-attention", "full", "--pooling-layers", "1")
    _, model = build(data_dir, "bart_ls_tiny", "--encoder-attention", "full", "--pooling-layers", "0")
    assert type(model.encoder.layers[0].self_attn).__name__ == "MultiheadAttention"
