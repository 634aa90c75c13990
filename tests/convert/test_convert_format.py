"""The converters' shared parts: every family writes the one output format (``model.pt`` that
fairseq loads as written, ``args.txt`` that builds a model taking the state strictly, the
dictionary), no converter imports the plugin or patches fairseq, the embedding-row rule, the
vocabulary module and the command line's errors. Parity of each family with ``transformers``
is in its own test file."""

import json
import shutil
import subprocess
import sys
from argparse import Namespace

import pytest
import torch
from fairseq import checkpoint_utils, options, tasks
from fairseq.data import Dictionary
from fairseq.dataclass.utils import convert_namespace_to_omegaconf
from transformers import (
    BertConfig,
    BertForMaskedLM,
    DebertaV2Config,
    DebertaV2Model,
    GPT2Config,
    GPT2LMHeadModel,
)

import user_dir
from fairseq_ext.cli import convert as cli
from fairseq_ext.compat.checkpoint import safe_load
from fairseq_ext.convert.bart_ls import convert_state_dict
from fairseq_ext.convert.embeddings import RowCounts, embedding_rows, identity_map
from fairseq_ext.convert.validate import ConversionError
from fairseq_ext.convert.write import ARGS_FILE, CHECKPOINT_FILE, DICTIONARY_FILES, SHELL_WORD, model_flags
from fairseq_ext.data.wordpiece import bert_dictionary, fairseq_order, read_vocab, token_map, write_dictionary
from parity import perturb_parameters
from prophetnet_oracle import VOCAB, hf_prophetnet
from toys import toy_dictionary

NUM_SENTINELS = 3
LIMITS = ["--max-source-positions", "32", "--max-target-positions", "16"]  # what the 64 positions of GPT-2 hold


def _write_vocab(path, tokens):
    path.write_text("".join(t + "\n" for t in tokens), encoding="utf-8")
    return path


def _prophetnet(root):
    _, hf_dir = hf_prophetnet(root, ngram=2, vocab=VOCAB)  # perturbed, BERT-like vocabulary
    return ["prophetnet", "--hf-dir", str(hf_dir)], "abstractive_summarization", [], None


def _s2s_ft(root):
    config = BertConfig(vocab_size=len(VOCAB), hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                        intermediate_size=48, max_position_embeddings=64, pad_token_id=VOCAB.index("[PAD]"))
    perturb_parameters(BertForMaskedLM(config), seed=2).save_pretrained(root / "hf")
    _write_vocab(root / "hf" / "vocab.txt", VOCAB)
    write_dictionary(VOCAB, root / "dict.txt")
    return ["s2s_ft", "--hf-dir", str(root / "hf"), "--dict", str(root / "dict.txt")], "s2s_ft_summarization", [], None


def _transformer_sm(root):
    config = GPT2Config(n_embd=32, n_layer=2, n_head=4, vocab_size=50, n_positions=64, n_inner=48, bos_token_id=0,
                        eos_token_id=0)
    perturb_parameters(GPT2LMHeadModel(config), seed=3).save_pretrained(root / "hf")
    return ["transformer_sm", "--hf-dir", str(root / "hf")], "transformer_sm", LIMITS, None


def _zcodepp(root):
    config = DebertaV2Config(
        vocab_size=40, hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=48,
        max_position_embeddings=128, relative_attention=True, position_buckets=8, max_relative_positions=-1,
        pos_att_type=["p2c", "c2p"], share_att_key=True, norm_rel_ebd="layer_norm", layer_norm_eps=1e-7,
        type_vocab_size=0, position_biased_input=False,
    )  # fmt: skip
    perturb_parameters(DebertaV2Model(config), seed=4).save_pretrained(root / "hf")
    data = root / "data"  # a dictionary of DeBERTa's 40 rows (the converter maps no vocabulary)
    data.mkdir()
    dictionary = toy_dictionary(config.vocab_size - 4)  # 4: fairseq's specials
    for side in ("source", "target"):
        dictionary.save(str(data / f"dict.{side}.txt"))
    return ["zcodepp", "--hf-dir", str(root / "hf")], "abstractive_summarization", [], data


def _bart_ls(root):
    """A ``bart_summ_tiny`` checkpoint laid out as fairseq-train saves a legacy model."""
    dictionary = toy_dictionary(30)
    dictionary.save(str(root / "dict.txt"))
    for side in ("source", "target"):
        dictionary.save(str(root / f"dict.{side}.txt"))
    args = options.parse_args_and_arch(options.get_training_parser(), [
        str(root), "--user-dir", user_dir.hub.USER_DIR, "--task", "abstractive_summarization", "--arch",
        "bart_summ_tiny", "--max-source-positions", "64", "--max-target-positions", "32"])  # fmt: skip
    cfg = convert_namespace_to_omegaconf(args)
    bart = perturb_parameters(tasks.setup_task(cfg.task).build_model(cfg.model), seed=5)
    torch.save({"cfg": {"model": args, "task": {"_name": "abstractive_summarization"}}, "model": bart.state_dict(),
                "optimizer_history": [], "extra_state": {}}, root / "bart.pt")  # fmt: skip
    flags = ["--bart", str(root / "bart.pt"), "--dict", str(root / "dict.txt"), "--arch", "bart_ls_tiny",
             "--max-source-positions", "256", "--num-sentinels", str(NUM_SENTINELS), "--block-size", "16",
             "--global-tokens", "4", "--pooling-layers", "1", "--pooling-kernel", "4", "--pooling-stride", "3",
             "--pooling-padding", "2"]  # fmt: skip
    return ["bart_ls", *flags], "bart_ls_long_denoising", ["--num-sentinels", str(NUM_SENTINELS)], None


FAMILIES = {"prophetnet": _prophetnet, "s2s_ft": _s2s_ft, "transformer_sm": _transformer_sm, "zcodepp": _zcodepp,
            "bart_ls": _bart_ls}


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    """family -> (converter argv without --out, the task that reads the output, its flags, the
    data directory of the dictionary when the output has none)."""
    made = {}
    for name, make in FAMILIES.items():
        torch.manual_seed(0)
        made[name] = make(tmp_path_factory.mktemp(name))
    return made


@pytest.fixture(scope="module")
def converted(inputs, tmp_path_factory):
    outs = {}
    for name, (argv, *_) in inputs.items():
        out = tmp_path_factory.mktemp(f"{name}_out")
        assert cli.main([*argv, "--out", str(out)]) == str(out / CHECKPOINT_FILE)
        outs[name] = out
    return outs


def _model_from_flags(out, task, task_flags, data):
    """The model fairseq-train builds from ``$(cat OUT/args.txt)`` on data with OUT's dictionary."""
    flags = (out / ARGS_FILE).read_text().split()
    args = options.parse_args_and_arch(options.get_training_parser(), [
        str(data or out), "--user-dir", user_dir.hub.USER_DIR, "--task", task, *task_flags, *flags])  # fmt: skip
    cfg = convert_namespace_to_omegaconf(args)
    return flags, tasks.setup_task(cfg.task).build_model(cfg.model)


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_every_converter_writes_the_one_format(family, inputs, converted):
    """model.pt is a fairseq checkpoint with args naming args.txt's --arch; args.txt builds a
    model that takes the state strictly (fairseq-train --finetune-from-model); the dictionary
    sits beside it where the family has one."""
    out, (_, task, task_flags, data) = converted[family], inputs[family]
    state = safe_load(out / CHECKPOINT_FILE)
    assert isinstance(state["args"], Namespace) and state["cfg"] is None and state["last_optimizer_state"] is None
    flags, model = _model_from_flags(out, task, task_flags, data)
    assert flags[:2] == ["--arch", state["args"].arch]
    if family == "zcodepp":  # DeBERTa has no decoder: the encoder, as fairseq loads a component
        assert all(key.startswith("encoder.") for key in state["model"])
        checkpoint_utils.load_pretrained_component_from_model(model.encoder, str(out / CHECKPOINT_FILE))
        assert not (out / "dict.txt").exists()
        return
    model.load_state_dict(state["model"], strict=True)
    assert all((out / name).read_text() == (out / "dict.txt").read_text() for name in DICTIONARY_FILES)


@pytest.mark.parametrize("family", ["bart_ls", "prophetnet", "s2s_ft", "transformer_sm"])
def test_model_pt_loads_as_written(family, converted):
    """fairseq's own loader (fairseq-generate, the hubs) builds the model from the checkpoint's
    args alone, every option the converter did not set from the registered defaults."""
    out = converted[family]
    limits = {"max_source_positions": 32, "max_target_positions": 16} if family == "transformer_sm" else {}
    models, _, _ = checkpoint_utils.load_model_ensemble_and_task([str(out / CHECKPOINT_FILE)],
                                                                 arg_overrides={"data": str(out), **limits})
    written = safe_load(out / CHECKPOINT_FILE)["model"]
    loaded = models[0].state_dict()
    for key, value in written.items():
        if family == "bart_ls" and key.endswith(("embed_tokens.weight", "output_projection.weight")):
            value = value[: loaded[key].size(0)]  # abstractive_summarization: the sentinel rows are left out
        torch.testing.assert_close(loaded[key], value, rtol=0, atol=0, msg=key)


@pytest.mark.e2e  # runs Python processes
def test_no_converter_changes_fairseq_and_the_library_imports_no_plugin(inputs, tmp_path):
    """Every converter, run in a fresh process: no fairseq function replaced (the plugin's fixes
    and safe loader are installed by importing the plugin only), torch's weights-only allowlist
    as it was; the library (``fairseq_ext.convert``) imports no ``user_dir``, the converter
    program registers the plugin's names (a checkpoint it reads may select them) without its
    fixes."""
    families = {name: [*argv, "--out", str(tmp_path / name)] for name, (argv, *_) in inputs.items()}
    script = """
import importlib, json, sys, torch
from fairseq import checkpoint_utils, models, options
from fairseq.data import data_utils
from fairseq.distributed import utils as distributed_utils
from fairseq.models import distributed_fairseq_model
MODULES = (checkpoint_utils, models, options, data_utils, distributed_utils, distributed_fairseq_model)
def snapshot():
    return [{k: id(v) for k, v in vars(m).items() if callable(v)} for m in MODULES]
before, allowed = snapshot(), set(torch.serialization.get_safe_globals())
for family in json.loads(sys.argv[1]):
    importlib.import_module("fairseq_ext.convert." + family)
library_imports_plugin = "user_dir" in sys.modules
from fairseq_ext.cli.convert import main
report = {"library": library_imports_plugin}
for family, argv in json.loads(sys.argv[1]).items():
    main(argv)
    report[family] = {"user_dir": "user_dir" in sys.modules, "patched": snapshot() != before,
                       "allowlist": set(torch.serialization.get_safe_globals()) != allowed}
print(json.dumps(report))
"""
    run = subprocess.run([sys.executable, "-c", script, json.dumps(families)], capture_output=True, text=True,
                         timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    report = json.loads(run.stdout.strip().splitlines()[-1])
    assert report.pop("library") is False
    assert set(report) == set(FAMILIES)
    assert report == {family: {"user_dir": True, "patched": False, "allowlist": False} for family in FAMILIES}


# ---------------------------------------------------------------- the embedding-row rule


def test_embedding_rows_follow_the_dictionary():
    pretrained = torch.arange(12.0).view(6, 2)  # rows 0..5
    mapping = torch.tensor([3, -1, 0, 5, -1])  # symbol 1 (pad) and symbol 4 have no row; rows 1, 2, 4 unused
    rows, counts = embedding_rows(pretrained, mapping, std=2.0, pad=1, generator=torch.Generator().manual_seed(0))
    assert counts == RowCounts(pretrained=3, new=2, dropped=3)
    assert torch.equal(rows[[0, 2, 3]], pretrained[[3, 0, 5]])
    assert torch.equal(rows[1], torch.zeros(2))  # an unmapped padding row is zero
    assert rows[4].abs().sum() > 0
    expected = torch.randn(2, 2, generator=torch.Generator().manual_seed(0)) * 2.0
    assert torch.equal(rows[4], expected[1])  # drawn from N(0, std), in symbol order
    init = torch.full((5, 2), 7.0)
    rows, _ = embedding_rows(pretrained, mapping, init=init)
    assert torch.equal(rows[4], init[4]) and torch.equal(rows[1], init[1])  # the model's own rows


def test_embedding_rows_refuse_a_map_beyond_the_checkpoint():
    with pytest.raises(ConversionError, match="row 6, the checkpoint has 6 rows"):
        embedding_rows(torch.zeros(6, 2), torch.tensor([0, 6]))


def test_bart_ls_drops_the_mask_row_and_draws_sentinels_from_the_dictionary_rows():
    """A BART pre-training checkpoint has one <mask> row more than its dictionary: it is left
    out, and the sentinels are new rows with the spread of the dictionary's rows."""
    dict_size, generator = 10, torch.Generator().manual_seed(0)
    table = torch.randn(dict_size + 1, 4, generator=generator)
    table[-1] = 100.0  # the <mask> row: if it were kept or counted, the spread would show it
    state = {"encoder.embed_tokens.weight": table, "encoder.embed_positions.weight": torch.randn(10, 4)}
    out = convert_state_dict(state, padding_idx=1, dict_size=dict_size, max_source_positions=16, num_sentinels=2,
                                 encoder_layers=1, embed_dim=4, heads=1)
    tokens = out["encoder.embed_tokens.weight"]
    assert tokens.shape == (dict_size + 2, 4) and torch.equal(tokens[:dict_size], table[:dict_size])
    spread = float(table[:dict_size].std())
    draw = torch.randn(2, 4, generator=torch.Generator().manual_seed(0)) * spread
    assert torch.equal(tokens[dict_size:], draw)
    assert torch.equal(identity_map(4, 3), torch.tensor([0, 1, 2, -1]))


def test_prophetnet_vocabulary_shorter_than_the_rows_converts(tmp_path):
    """HF configs may round vocab_size up: the rows no token uses are left out (counted). The
    ProphetNet converter refused any difference before; the one rule takes the same view as
    the other families."""
    hf, hf_dir = hf_prophetnet(tmp_path, ngram=2, vocab=VOCAB, vocab_size=len(VOCAB) + 8)
    path = cli.main(["prophetnet", "--hf-dir", str(hf_dir), "--out", str(tmp_path / "out")])
    rows = safe_load(path)["model"]["encoder.embed_tokens.weight"]
    assert rows.shape[0] == len(VOCAB)
    order = fairseq_order(VOCAB)
    torch.testing.assert_close(rows, hf.prophetnet.word_embeddings.weight.detach()[order], rtol=0, atol=0)
    _write_vocab(hf_dir / "prophetnet.tokenizer", VOCAB + [f"x{i}" for i in range(9)])
    with pytest.raises(ConversionError, match="more than the embedding rows"):
        cli.main(["prophetnet", "--hf-dir", str(hf_dir), "--out", str(tmp_path / "out")])


# ---------------------------------------------------------------- the vocabulary module


def test_bert_vocabulary_in_fairseq_layout(tmp_path):
    tokens = read_vocab(_write_vocab(tmp_path / "vocab.txt", VOCAB + ["", ""]))  # blank lines at the end
    assert tokens == VOCAB
    dictionary = bert_dictionary(tokens)
    assert dictionary.symbols[:4] == ["[CLS]", "[PAD]", "[SEP]", "[UNK]"] and len(dictionary) == len(VOCAB)
    assert write_dictionary(tokens, tmp_path / "dict.txt") == len(VOCAB)
    loaded = Dictionary.load(str(tmp_path / "dict.txt"))  # as fairseq-preprocess --srcdict reads it
    assert loaded.symbols[4:] == dictionary.symbols[4:]
    ids = token_map(loaded.symbols, {t: i for i, t in enumerate(VOCAB)})  # <s> -> [CLS], ...
    assert ids.tolist() == fairseq_order(VOCAB).tolist()
    assert sorted(ids.tolist()) == list(range(len(VOCAB)))
    assert token_map(["<s>", "<mask>", "[MASK]", "zzz"], {"<s>": 0, "<mask>": 4}, names={"[MASK]": "<mask>"}).tolist() \
        == [0, 4, 4, -1]  # RoBERTa's names


@pytest.mark.parametrize("lines,message", [
    (["[PAD]", "[CLS]", "[SEP]", "[UNK]", "w0", "w1", "w0"], r"vocab.txt:7: 'w0' is listed twice \(first on line 5\)"),
    (["[PAD]", "[CLS]", "[SEP]", "[UNK]", "w\t0"], r"vocab.txt:5: a WordPiece must be one non-empty word"),
    (["[PAD]", "[CLS]", "", "[SEP]", "[UNK]"], r"vocab.txt:3: a WordPiece must be one non-empty word"),
    (["a", "b", "[PAD]"], r"not a BERT WordPiece vocabulary: no \[CLS\], \[SEP\], \[UNK\]"),
])  # fmt: skip
def test_bad_vocabularies_are_refused_naming_the_line(tmp_path, lines, message):
    """The two former copies disagreed: s2s-ft's kept the first of a repeated token (every
    later id shifted silently) and took a tab inside a token; both are refused now."""
    with pytest.raises(ValueError, match=message):
        read_vocab(_write_vocab(tmp_path / "vocab.txt", lines))


# ---------------------------------------------------------------- the command line


def test_refusals_are_one_line_naming_the_file_and_field(inputs, tmp_path, capsys):
    hf_dir = tmp_path / "gpt2"
    GPT2LMHeadModel(GPT2Config(n_embd=16, n_layer=1, n_head=2, vocab_size=20, n_positions=16, bos_token_id=0,
                               eos_token_id=0, activation_function="silu")).save_pretrained(hf_dir)
    capsys.readouterr()
    assert cli.run(["transformer_sm", "--hf-dir", str(hf_dir), "--out", str(tmp_path / "out")]) == 1
    error = capsys.readouterr().err.strip()
    assert "\n" not in error and "Traceback" not in error
    assert f"{hf_dir / 'config.json'}: activation_function='silu' is not supported" in error
    assert cli.run(["zcodepp", "--hf-dir", str(tmp_path / "nowhere"), "--out", str(tmp_path / "out")]) == 1
    assert "Hugging Face model folder not found" in capsys.readouterr().err


def test_help_lists_every_family(capsys):
    with pytest.raises(SystemExit) as exit_:
        cli.main(["--help"])
    assert exit_.value.code == 0
    help_text = capsys.readouterr().out
    assert all(family in help_text for family in FAMILIES)


# ---------------------------------------------------------------- hostile config.json (issue #22)
PAYLOAD = "__import__('pathlib').Path('PWNED').touch() or [1]"


@pytest.mark.parametrize("field, value", [
    ("hidden_dropout_prob", f"0.1 --adaptive-softmax-cutoff {PAYLOAD}"),  # a string in a float field
    ("attention_probs_dropout_prob", "0.1"),
    ("num_hidden_layers", "2"),
    ("num_hidden_layers", True),
    ("layer_norm_eps", [1e-12]),
    ("hidden_act", 1),
])
def test_hostile_config_json_is_refused_naming_the_file_and_field(field, value, inputs, tmp_path, capsys):
    argv = inputs["s2s_ft"][0]
    hf_dir = tmp_path / "hf"
    shutil.copytree(argv[argv.index("--hf-dir") + 1], hf_dir)
    config = json.loads((hf_dir / "config.json").read_text())
    config[field] = value
    (hf_dir / "config.json").write_text(json.dumps(config))
    argv = [*argv[:argv.index("--hf-dir") + 1], str(hf_dir), *argv[argv.index("--hf-dir") + 2:]]
    capsys.readouterr()
    assert cli.run([*argv, "--out", str(tmp_path / "out")]) == 1
    assert f"{hf_dir / 'config.json'}: {field}={value!r} is not supported" in capsys.readouterr().err
    assert not (tmp_path / "out" / ARGS_FILE).exists()


@pytest.mark.parametrize("value", ["0.1 --cpu", "$(touch PWNED)", "`id`", "*", "a;b", "--arch", "x'y", "", "a\nb",
                                   float("nan"), [1, 2], None.__class__])
def test_args_txt_holds_only_numbers_and_names(value):
    """The second line: whatever reaches the writer, a value that is not one word is refused."""
    with pytest.raises(ConversionError, match=r"model option dropout=.* cannot be written to args\.txt"):
        model_flags("s2s_ft_tiny", {"dropout": value})


def test_the_writer_refuses_before_writing_anything(tmp_path):
    """A hostile value that reached the writer (past every config check) leaves no file behind."""
    from fairseq_ext.convert.write import Converted, write_converted

    converted = Converted({}, "s2s_ft_tiny", {"dropout": f"0.1 --adaptive-softmax-cutoff {PAYLOAD}"}, "t", "c")
    with pytest.raises(ConversionError, match="dropout="):
        write_converted(tmp_path / "out", converted)
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_the_documented_command_reads_args_txt_as_written(family, converted, tmp_path):
    """``$(cat OUT/args.txt)`` in bash (word splitting and glob expansion, in a folder where a
    glob would match) gives exactly the words written, each a :data:`SHELL_WORD`."""
    out = converted[family]
    (tmp_path / "a_file").write_text("")
    run = subprocess.run(["bash", "-c", f'for w in $(cat "{out / ARGS_FILE}"); do printf "%s\\n" "$w"; done'],
                         capture_output=True, text=True, cwd=tmp_path, check=True)
    words = (out / ARGS_FILE).read_text().split()
    assert run.stdout.splitlines() == words
    assert all(SHELL_WORD.fullmatch(word) for word in words)
