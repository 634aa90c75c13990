"""Converted GPT / GPT-2 weights: parity with Hugging Face ``transformers`` (randomly
initialized models as the oracle) and a fine-tuning start through fairseq-train."""

import pytest
import torch
from fairseq.data import Dictionary
from transformers import GPT2Config, GPT2LMHeadModel, OpenAIGPTConfig, OpenAIGPTLMHeadModel

import user_dir  # noqa: F401  (registers the plugin)
from fairseq_ext.cli.convert import main
from fairseq_ext.convert.transformer_sm import convert_config, convert_state_dict, hf_vocabulary_dictionary
from fairseq_ext.transformer_sm import DELIMITER, mean_row_norm
from parity import perturb_parameters
from user_dir.models.transformer_sm import TransformerSMConfig, TransformerSMModel
from user_dir.tasks.transformer_sm import TransformerSMTask, TransformerSMTaskConfig

VOCAB, POSITIONS = 60, 64
SIZES = dict(n_embd=32, n_layer=2, n_head=4, vocab_size=VOCAB, n_positions=POSITIONS)
#: parity configurations: the released activations (GPT-2 gelu_new; GPT-1 afn "gelu", the tanh
#: approximation in GPT-1's own table) and configurations unlike the defaults
CONFIGS = {
    "gpt2": ("gpt2", {}),
    "openai-gpt": ("openai-gpt", {}),
    "gpt2-relu-ffn48": ("gpt2", {"activation_function": "relu", "n_inner": 48}),
    "gpt2-exact-gelu": ("gpt2", {"activation_function": "gelu"}),
    "openai-gpt-relu": ("openai-gpt", {"afn": "relu"}),
}


def hf_model(kind, seed=0, **overrides):
    if kind == "gpt2":
        model = GPT2LMHeadModel(GPT2Config(**SIZES, bos_token_id=0, eos_token_id=0, **overrides))
    else:
        model = OpenAIGPTLMHeadModel(OpenAIGPTConfig(**SIZES, **overrides))
    return perturb_parameters(model.eval(), seed=seed)


def hf_models():
    return {"gpt2": hf_model("gpt2"), "openai-gpt": hf_model("openai-gpt")}


def hf_config(model):
    config = model.config.to_dict()
    config["model_type"] = model.config.model_type
    return config


def shuffled_dictionary(seed=0):
    """The HF ids in another order, with symbols GPT lacks in between (new rows)."""
    dictionary = Dictionary()
    order = torch.randperm(VOCAB, generator=torch.Generator().manual_seed(seed)).tolist()
    for i, hf_id in enumerate(order):
        dictionary.add_symbol(str(hf_id))
        if i == 10:
            dictionary.add_symbol("madeupword")
    dictionary.add_symbol(DELIMITER)
    return dictionary


def build(hf, source_embeddings, mode="continue", dictionary=None):
    if dictionary is None:
        dictionary = hf_vocabulary_dictionary(VOCAB)
        dictionary.add_symbol(DELIMITER)
    task = TransformerSMTask(TransformerSMTaskConfig(), dictionary, dictionary)
    config = hf_config(hf)
    args = convert_config(config)
    cfg = TransformerSMConfig(
        **args, no_source_embeddings=not source_embeddings, summary_positions=mode,
        max_source_positions=POSITIONS // 2, max_target_positions=POSITIONS // 2,
    )  # fmt: skip
    model = TransformerSMModel.build_model(cfg, task).eval()
    state = convert_state_dict(hf.state_dict(), config, dictionary, source_embeddings=source_embeddings)
    model.load_state_dict(state, strict=True)
    return model, dictionary, state


@pytest.fixture(scope="module")
def models():
    return hf_models()


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_converted_weights_match_transformers(name):
    """Perturbed weights, a dictionary in another order than HF's ids, and a padded batch of
    very different article and summary lengths (right-padded articles, the gap masked):
    every real position's next-token logits equal HF's on that row alone."""
    kind, overrides = CONFIGS[name]
    hf = hf_model(kind, seed=1, **overrides)
    model, dictionary, _ = build(hf, source_embeddings=False, dictionary=shuffled_dictionary())
    assert model.cfg.normalize_before == (kind == "gpt2")
    to_ours = torch.tensor([dictionary.index(str(i)) for i in range(VOCAB)])  # HF id -> our index
    gen = torch.Generator().manual_seed(3)
    lengths = [(25, 3), (4, 20), (1, 1)]  # (article, summary) per row
    rows = [torch.randint(0, VOCAB, (a + s,), generator=gen) for a, s in lengths]
    pad = dictionary.pad()
    article = torch.full((3, max(a for a, _ in lengths)), pad)
    summary = torch.full((3, max(s for _, s in lengths)), pad)
    for b, (a, s) in enumerate(lengths):
        article[b, :a] = to_ours[rows[b][:a]]
        summary[b, :s] = to_ours[rows[b][a:]]
    with torch.no_grad():
        summary_logits, extra = model(article, None, summary, article_logits=True)
        for b, (a, s) in enumerate(lengths):
            expected = hf(rows[b].unsqueeze(0)).logits[0]  # (a + s, VOCAB)
            ours = torch.cat([extra["article_logits"][b, :a], summary_logits[b, :s]])[:, to_ours]
            assert expected.abs().mean() > 0.3  # O(1) logits: nothing hides in small numbers
            torch.testing.assert_close(ours, expected, atol=1e-4, rtol=1e-5)


def test_converted_source_embeddings_follow_the_gpt_word_norms(models):
    model, dictionary, state = build(models["gpt2"], source_embeddings=True, mode="restart")
    words = state["decoder.embed.tokens.weight"]
    # the pretrained rows are GPT's own
    torch.testing.assert_close(words[dictionary.nspecial : dictionary.nspecial + VOCAB],
                               models["gpt2"].transformer.wte.weight.detach())
    norms = state["decoder.embed.sources.weight"].norm(dim=1)
    torch.testing.assert_close(norms, (0.5 * mean_row_norm(words, dictionary.pad())).expand(2))
    assert torch.count_nonzero(words[dictionary.pad()]) == 0


def test_unsupported_configs_are_refused(models):
    config = hf_config(models["gpt2"])
    with pytest.raises(ValueError, match="eps"):
        convert_config({**config, "layer_norm_epsilon": 1e-6})
    with pytest.raises(ValueError, match="model_type"):
        convert_config({**config, "model_type": "llama"})
    with pytest.raises(ValueError, match="scaling"):
        convert_config({**config, "scale_attn_by_inverse_layer_idx": True})
    with pytest.raises(ValueError, match="activation_function='silu'"):
        convert_config({**config, "activation_function": "silu"})
    with pytest.raises(ValueError, match="afn='swish'"):
        convert_config({**hf_config(models["openai-gpt"]), "afn": "swish"})


def test_released_activations_are_the_tanh_gelu(models):
    """GPT-1 and GPT-2 both use the tanh approximation (fairseq's gelu_accurate)."""
    assert convert_config(hf_config(models["gpt2"]))["activation_fn"] == "gelu_accurate"
    assert convert_config(hf_config(models["openai-gpt"]))["activation_fn"] == "gelu_accurate"
    from fairseq import options

    for arch in ("transformer_sm_gpt", "transformer_sm_gpt2"):  # the named sizes follow the released models
        args = options.parse_args_and_arch(options.get_training_parser(), [
            "data", "--user-dir", user_dir.hub.USER_DIR, "--task", "transformer_sm", "--arch", arch,
            "--criterion", "transformer_sm"])  # fmt: skip
        assert args.activation_fn == "gelu_accurate", arch


def test_cli_writes_a_checkpoint_that_fairseq_train_finetunes(models, tmp_path):
    """HF folder -> converter -> fairseq-preprocess with its dictionary -> fairseq-train
    --finetune-from-model: the first update starts from the GPT-2 weights."""
    from fairseq_cli import preprocess

    from harness import train

    hf_dir = tmp_path / "hf"
    models["gpt2"].save_pretrained(hf_dir)
    main(["transformer_sm", "--hf-dir", str(hf_dir), "--out", str(tmp_path / "conv")])
    flags = (tmp_path / "conv" / "args.txt").read_text().split()
    assert flags[:2] == ["--arch", "transformer_sm"] and "--normalize-before" in flags

    raw = tmp_path / "raw"
    raw.mkdir()
    gen = torch.Generator().manual_seed(0)
    for split, n in (("train", 8), ("valid", 4)):
        for side, length in (("source", 20), ("target", 6)):
            lines = [" ".join(map(str, torch.randint(0, VOCAB, (length,), generator=gen).tolist())) for _ in range(n)]
            (raw / f"{split}.{side}").write_text("\n".join(lines) + "\n")
    dict_path = str(tmp_path / "conv" / "dict.txt")
    preprocess.main(preprocess.options.get_preprocessing_parser().parse_args([
        "--source-lang", "source", "--target-lang", "target", "--trainpref", str(raw / "train"),
        "--validpref", str(raw / "valid"), "--destdir", str(tmp_path / "bin"),
        "--srcdict", dict_path, "--tgtdict", dict_path, "--workers", "1",
    ]))  # fmt: skip
    save = train(tmp_path / "bin", tmp_path / "ckpt", "transformer_sm", [
        *flags[2:], "--mode", "ett", "--finetune-from-model", str(tmp_path / "conv" / "model.pt"),
        "--max-source-positions", "32", "--max-target-positions", "16", "--batch-size", "4",
        "--max-update", "1", "--lr", "1e-9", "--dropout", "0", "--attention-dropout", "0",
        "--embed-dropout", "0", "--required-batch-size-multiple", "1",
    ], task="transformer_sm", criterion="transformer_sm")  # fmt: skip
    trained = torch.load(save / "checkpoint_last.pt", weights_only=True)["model"]
    converted = torch.load(tmp_path / "conv" / "model.pt", weights_only=True)["model"]
    assert trained.keys() == converted.keys()
    # one update at lr 1e-9 with adam moves each weight by at most ~1e-9
    for key in ("decoder.layers.1.fc2.weight", "decoder.embed.positions.weight"):
        torch.testing.assert_close(trained[key], converted[key], atol=1e-7, rtol=0)


def test_hf_text_roundtrip_with_a_local_tokenizer(tmp_path):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    from fairseq_ext.cli.hf_text import main as hf_text_main
    from fairseq_ext.transformer_sm import hf_text

    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=300, initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    bpe.train_from_iterator(["the cat sat on the mat", "a summary of the paper"] * 10, trainer)
    PreTrainedTokenizerFast(tokenizer_object=bpe).save_pretrained(tmp_path / "tok")

    (tmp_path / "in.txt").write_text("the cat sat on a paper mat\n\nan unseen wörd\n", encoding="utf-8")
    hf_text_main(["encode", "--tokenizer", str(tmp_path / "tok"),
                 "--inputs", str(tmp_path / "in.txt"), "--outputs", str(tmp_path / "out.ids")])
    lines = (tmp_path / "out.ids").read_text().splitlines()
    assert len(lines) == 3 and lines[1] == "" and all(s.isdigit() for s in lines[0].split())
    tokenizer = hf_text.load_tokenizer(str(tmp_path / "tok"))
    assert hf_text.decode_line(tokenizer, lines[0]) == "the cat sat on a paper mat"
    assert hf_text.decode_line(tokenizer, lines[2]) == "an unseen wörd"
    assert hf_text.decode_line(tokenizer, "<delim> " + lines[0] + " <unk>") == "the cat sat on a paper mat"
    with pytest.raises(ValueError, match="line 7"):
        hf_text.decode_line(tokenizer, "12 madeupword0000", line_number=7)
