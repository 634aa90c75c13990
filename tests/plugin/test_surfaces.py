"""What a user touches, for every model family (fairseq's BART and the five of the plugin), on
a tiny model trained for one update at short limits (64 source, 24 target tokens) on real
ACLSum (sentencepiece; s2s-ft and ProphetNet's converted-checkpoint data: BERT WordPiece):

* fairseq-generate and fairseq-interactive without length flags take the model's limits, not
  the task's 1024;
* fairseq-interactive reads documents on stdin (a list of lengths reaches the task) and prints
  summaries;
* the hub: beam 4 then beam 1 on one object, bad input refused with an error that names it,
  input cleaned as ``preprocess`` cleans, the text codec found beside the data or the
  checkpoint or refused (never whitespace tokens);
* the validation generator's beam never reaches the loss;
* summaries of WordPiece data come out in their source's casing and spacing from fairseq-generate,
  fairseq-interactive and the hub (``--restore-surface``, on), those of sentencepiece data as
  they are.
"""

import contextlib
import io
import json
import logging
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from fairseq import distributed_utils, options, tasks
from fairseq.dataclass.utils import convert_namespace_to_omegaconf
from fairseq_cli import generate as generate_cli
from fairseq_cli import interactive as interactive_cli

from fairseq_ext.data.prepare_wordpiece import prepare_wordpiece
from fairseq_ext.data.surface import restore_surface
from harness import USER_DIR, parse_generate_output, prepare_corpus, read_lines, train
from user_dir import from_pretrained

pytestmark = pytest.mark.e2e

LIMIT = 6
SOURCE_LIMIT, TARGET_LIMIT = 64, 24
CODEC_FILES = ("spm.model", "vocab.txt")


@dataclass
class Family:
    task: str
    arch: str
    criterion: str
    data: str = "sentencepiece"
    train_args: list = field(default_factory=list)


FAMILIES = {
    "bart": Family("abstractive_summarization", "bart_summ_tiny", "label_smoothed_cross_entropy"),
    "bart_ls": Family("abstractive_summarization", "bart_ls_tiny", "label_smoothed_cross_entropy"),
    "prophetnet": Family("abstractive_summarization", "prophetnet_summ_tiny", "ngram_language_loss"),
    "prophetnet_wordpiece": Family("abstractive_summarization", "prophetnet_summ_tiny", "ngram_language_loss",
                                   data="wordpiece"),  # the data of converted HF checkpoints
    "zcodepp": Family("abstractive_summarization", "zcodepp_tiny", "label_smoothed_cross_entropy"),
    "s2s_ft": Family("s2s_ft_summarization", "s2s_ft_tiny", "s2s_ft", data="wordpiece"),
    "transformer_sm": Family("transformer_sm", "transformer_sm_tiny", "transformer_sm", train_args=["--mode", "ett"]),
}


@pytest.fixture(scope="module")
def corpora(tmp_path_factory):
    root = tmp_path_factory.mktemp("corpora")
    prepare_wordpiece("aclsum", root / "aclsum_wp", limit=LIMIT)
    return {
        "sentencepiece": prepare_corpus("aclsum", root / "aclsum", limit=LIMIT),
        "wordpiece": root / "aclsum_wp" / "bin",
    }


@pytest.fixture(scope="module", params=list(FAMILIES))
def trained(request, corpora, tmp_path_factory):
    """(family name, Family, data dir, checkpoint dir) of a model trained for one update."""
    family = FAMILIES[request.param]
    data = corpora[family.data]
    save = tmp_path_factory.mktemp(request.param)
    train(data, save, family.arch, [
        "--max-source-positions", str(SOURCE_LIMIT), "--max-target-positions", str(TARGET_LIMIT),
        "--max-update", "1", "--required-batch-size-multiple", "1", *family.train_args,
    ], task=family.task, criterion=family.criterion)  # fmt: skip
    return request.param, family, data, save


def _documents(data, n=4):
    return read_lines(data.parent / "raw" / "test.source")[:n]


def _generate(family, data, checkpoint, extra=(), kind="D"):
    argv = [str(data), "--user-dir", USER_DIR, "--task", family.task, "--path", str(checkpoint),
            "--gen-subset", "test", "--beam", "2", "--max-len-b", "6", "--batch-size", "4",
            "--required-batch-size-multiple", "1", "--num-workers", "0", *extra]
    args = options.parse_args_and_arch(options.get_generation_parser(), argv)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        generate_cli.main(args)
    return parse_generate_output(out.getvalue(), kind)


def _interactive(family, data, checkpoint, documents, monkeypatch, stdin=None, count=None, extra=()):
    count = count or len(documents)
    argv = [str(data), "--user-dir", USER_DIR, "--task", family.task, "--path", str(checkpoint),
            "--beam", "2", "--max-len-b", "6", "--buffer-size", str(count),
            "--batch-size", str(count), "--num-workers", "0", *extra]
    args = options.parse_args_and_arch(options.get_interactive_generation_parser(), argv)
    monkeypatch.setattr("sys.stdin", stdin or io.StringIO("".join(doc + "\n" for doc in documents)))
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        distributed_utils.call_main(convert_namespace_to_omegaconf(args), interactive_cli.main)
    return parse_generate_output(out.getvalue())


def _assert_text(summaries, n):
    assert len(summaries) == n
    assert all(s.strip() for s in summaries)
    assert not any("\u2581" in s or " ##" in s for s in summaries), summaries  # pieces decoded


# ---------------------------------------------------------------- limits (item 1)


def test_training_without_length_flags_takes_the_models_limits(trained):
    name, family, data, _ = trained
    argv = [str(data), "--user-dir", USER_DIR, "--task", family.task, "--arch", family.arch,
            "--criterion", family.criterion]
    cfg = convert_namespace_to_omegaconf(options.parse_args_and_arch(options.get_training_parser(), argv))
    task = tasks.setup_task(cfg.task)
    model = task.build_model(cfg.model)
    source, target = task.max_positions()
    assert isinstance(source, int) and isinstance(target, int) and source > SOURCE_LIMIT
    assert (source, target) == tuple(model.max_positions())


def test_generate_without_length_flags_uses_the_checkpoints_limits(trained, caplog):
    name, family, data, save = trained
    with caplog.at_level(logging.INFO):
        hyps = _generate(family, data, save / "checkpoint_last.pt")
    _assert_text(hyps, LIMIT)
    assert any(f"longer than {SOURCE_LIMIT} tokens" in r.getMessage() and "truncated" in r.getMessage()
               for r in caplog.records)


def test_a_larger_flag_than_the_model_takes_is_capped_with_a_warning(trained, caplog):
    name, family, data, save = trained
    with caplog.at_level(logging.WARNING):
        hyps = _generate(family, data, save / "checkpoint_last.pt", ["--max-source-positions", "4096"])
    _assert_text(hyps, LIMIT)
    assert any(f"--max-source-positions 4096 is more than the model takes: sources are limited to {SOURCE_LIMIT}"
               in r.getMessage() for r in caplog.records)


# ---------------------------------------------------------------- interactive (item 2)


def test_interactive_reads_documents_on_stdin_and_prints_summaries(trained, monkeypatch):
    name, family, data, save = trained
    documents = _documents(data)
    documents[1] = documents[1][:200]  # lengths that differ within the batch, one under the limit
    summaries = _interactive(family, data, save / "checkpoint_last.pt", documents, monkeypatch)
    _assert_text(summaries, len(documents))


def test_interactive_repairs_a_line_of_invalid_utf8_and_goes_on(trained, monkeypatch, caplog):
    """Issue #22 item 5: the bad line is repaired (U+FFFD, logged with its number) and every
    line, the ones after it included, gets a summary."""
    name, family, data, save = trained
    documents = _documents(data, 3)
    raw = b"".join(doc.encode() + b"\n" for doc in documents[:1]) + b"bad \xff\xfe bytes here .\n" + \
        b"".join(doc.encode() + b"\n" for doc in documents[1:])
    stdin = io.TextIOWrapper(io.BytesIO(raw), encoding="utf-8", errors="surrogateescape")
    with caplog.at_level(logging.WARNING):
        summaries = _interactive(family, data, save / "checkpoint_last.pt", [], monkeypatch, stdin=stdin,
                                 count=len(documents) + 1)
    assert len(summaries) == len(documents) + 1
    assert "<stdin> line 2: invalid UTF-8 at byte 4 replaced by U+FFFD" in caplog.text


# ---------------------------------------------------------------- hub (item 4)


def _validation_loss(data, checkpoint, overrides, generate_first=False):
    """The criterion's loss on 6 validation pairs of the model loaded with ``overrides``
    (after a beam-4 generation of them, with ``generate_first``)."""
    import torch
    from fairseq import checkpoint_utils

    models, cfg, task = checkpoint_utils.load_model_ensemble_and_task(
        [str(checkpoint)], arg_overrides={"data": str(data), **overrides})
    model = models[0].eval()
    task.load_dataset("valid")
    dataset = task.dataset("valid")
    sample = dataset.collater([dataset[i] for i in range(6)])
    if generate_first:
        task.inference_step(task.sequence_generator, [model], sample)
    with torch.no_grad():
        loss, _, _ = task.build_criterion(cfg.criterion)(model, sample)
    return loss.item()


@pytest.mark.parametrize("beam", [3, 4])
def test_the_validation_generator_s_beam_stays_out_of_the_loss(trained, beam):
    """``--eval-rouge`` with a beam above 1 builds the validation generator with the very model
    whose loss is computed: the loss of 6 pairs (not a multiple of 4) is the loss without it,
    before and after a beam search: the beam is the model's only while the generator runs."""
    name, family, data, save = trained
    checkpoint = save / "checkpoint_last.pt"
    plain = _validation_loss(data, checkpoint, {})
    rouge = {"eval_rouge": True, "eval_rouge_args": json.dumps({"beam": beam, "max_len_b": 6})}
    assert _validation_loss(data, checkpoint, rouge) == plain
    assert _validation_loss(data, checkpoint, rouge, generate_first=True) == plain


def test_hub_beam_4_then_1_then_3_on_one_object(trained):
    name, family, data, save = trained
    hub = from_pretrained(str(save), "checkpoint_last.pt", data_name_or_path=str(data))
    document = _documents(data, 1)[0]
    first = hub.summarize(document, beam=4, max_len_b=5)
    after = [hub.summarize(document, beam=beam, max_len_b=5) for beam in (1, 3, 4)]
    fresh = from_pretrained(str(save), "checkpoint_last.pt", data_name_or_path=str(data))
    assert after == [fresh.summarize(document, beam=beam, max_len_b=5) for beam in (1, 3, 4)]
    assert after[-1] == first


def test_hub_refuses_bad_input_naming_it(trained):
    name, family, data, save = trained
    hub = from_pretrained(str(save), "checkpoint_last.pt", data_name_or_path=str(data))
    document = _documents(data, 1)[0]
    refused = [
        (None, {}, TypeError, r"documents must be a string or a list of strings, got NoneType"),
        (42, {}, TypeError, r"got int"),
        (b"bytes", {}, TypeError, r"got bytes"),
        ({document: 1}, {}, TypeError, r"got a dict \(a mapping or a set has no document order"),
        ({document}, {}, TypeError, r"got a set"),
        (frozenset([document]), {}, TypeError, r"got a frozenset"),
        ([document, None], {}, TypeError, r"documents\[1\] is NoneType, not str"),
        ([document, 7], {}, TypeError, r"documents\[1\] is int, not str"),
        ([b"raw"], {}, TypeError, r"documents\[0\] is bytes, not str \(decode bytes to str first\)"),
        ([document, "\x00\x01\x07 \t\x0b\x7f"], {}, ValueError, r"positions \[1\] are empty after cleaning"),
        (["   "], {}, ValueError, r"positions \[0\] are empty"),
        (document, {"beam": 0}, ValueError, r"beam must be an integer >= 1, got 0"),
        (document, {"beam": 2.5}, ValueError, r"beam must be an integer >= 1, got 2.5"),
        (document, {"batch_size": 0}, ValueError, r"batch_size must be an integer >= 1, got 0"),
        (document, {"max_len_b": -1}, ValueError, r"max_len_b must be an integer >= 0"),
        (document, {"lenpen": "2"}, ValueError, r"lenpen must be a number"),
    ]
    for documents, kwargs, error, message in refused:
        with pytest.raises(error, match=message):
            hub.summarize(documents, **kwargs)
    assert hub.summarize([]) == []


def test_hub_cleans_input_as_preprocess_does(trained, caplog):
    name, family, data, save = trained
    hub = from_pretrained(str(save), "checkpoint_last.pt", data_name_or_path=str(data))
    document = " ".join(_documents(data, 1)[0].split()[:40])
    dirty = "\ufeff" + document.replace(" ", " \x00", 3).replace(" ", "\t\x07 ", 2) + "\r\n"
    with caplog.at_level(logging.WARNING):
        assert hub.summarize(dirty, beam=2, max_len_b=5) == hub.summarize(document, beam=2, max_len_b=5)
    repairs = " ".join(r.getMessage() for r in caplog.records)
    assert "NUL characters" in repairs and "control characters" in repairs
    with caplog.at_level(logging.WARNING):
        assert isinstance(hub.summarize(document + " caf\udce9", beam=2, max_len_b=5), str)
    assert any("invalid UTF-8" in r.getMessage() for r in caplog.records)


def test_hub_finds_the_text_codec_beside_the_data_or_the_checkpoint_or_refuses(trained, tmp_path):
    name, family, data, save = trained
    codec = next(data / f for f in CODEC_FILES if (data / f).is_file())
    bare = Path(shutil.copytree(data, tmp_path / "corpus" / "bin", ignore=shutil.ignore_patterns(*CODEC_FILES)))
    model_dir = tmp_path / "model"
    model_dir.mkdir()
    shutil.copyfile(save / "checkpoint_last.pt", model_dir / "checkpoint_last.pt")
    document = _documents(data, 1)[0]
    expected = from_pretrained(str(save), "checkpoint_last.pt", data_name_or_path=str(data)).summarize(
        document, beam=2, max_len_b=5)

    tried = rf"no sentencepiece model or WordPiece vocabulary .*{re.escape(str(bare / 'spm.model'))}"
    with pytest.raises(FileNotFoundError, match=tried + rf".*{re.escape(str(model_dir / 'vocab.txt'))}"):
        from_pretrained(str(model_dir), "checkpoint_last.pt", data_name_or_path=str(bare))
    for place in (model_dir, bare.parent):  # the checkpoint's directory, then the data's parent
        shutil.copyfile(codec, place / codec.name)
        hub = from_pretrained(str(model_dir), "checkpoint_last.pt", data_name_or_path=str(bare))
        assert hub.summarize(document, beam=2, max_len_b=5) == expected
        (place / codec.name).unlink()
    kind = "spm_model" if codec.name == "spm.model" else "wordpiece_vocab"
    hub = from_pretrained(str(model_dir), "checkpoint_last.pt", data_name_or_path=str(bare), **{kind: str(codec)})
    assert hub.summarize(document, beam=2, max_len_b=5) == expected


# ---------------------------------------------------------------- surface restoration


def test_restore_surface_is_on_for_wordpiece_data_only(corpora):
    """``--restore-surface`` defaults to on for every family's task; it applies where the data
    are WordPiece (s2s-ft's, converted ProphetNet's), not to sentencepiece data."""
    for name, family in FAMILIES.items():
        data = corpora[family.data]
        for flags, on in (([], True), (["--no-restore-surface"], False), (["--restore-surface"], True)):
            argv = [str(data), "--user-dir", USER_DIR, "--task", family.task, *flags]
            cfg = convert_namespace_to_omegaconf(options.parse_args_and_arch(options.get_generation_parser(), argv))
            task = tasks.setup_task(cfg.task)
            assert cfg.task.restore_surface is on, name
            assert task.restores_surface is (on and family.data == "wordpiece"), name


def test_generate_restores_the_summaries_of_wordpiece_data(trained):
    """fairseq-generate's D- lines (and S-, T-) are the library's restoration of the pieces
    joined (``--no-restore-surface``), each against its own raw document; s2s-ft's ignored
    ``--bpe sentencepiece`` (the main job's) changes nothing. Sentencepiece data: the same lines."""
    name, family, data, save = trained
    checkpoint = save / "checkpoint_last.pt"
    extra = ["--bpe", "sentencepiece", "--sentencepiece-model", str(data / "spm.model")] if name == "s2s_ft" else []
    plain = {kind: _generate(family, data, checkpoint, ["--no-restore-surface", *extra], kind) for kind in "DS"}
    restored = {kind: _generate(family, data, checkpoint, extra, kind) for kind in "DS"}
    if family.data != "wordpiece":
        assert restored == plain
        return
    documents = _documents(data, LIMIT)
    for kind in "DS":
        assert restored[kind] == [restore_surface(text, doc) for text, doc in zip(plain[kind], documents)]
    assert all(source[:1].isupper() and not plain_source[:1].isupper()
               for source, plain_source in zip(restored["S"], plain["S"]))  # the papers' capitals came back


def test_interactive_restores_the_summaries_of_wordpiece_data(trained, monkeypatch):
    """fairseq-interactive, one document a buffer: each summary restored against its input line."""
    name, family, data, save = trained
    checkpoint = save / "checkpoint_last.pt"
    documents = _documents(data, 3)
    plain = _interactive(family, data, checkpoint, documents, monkeypatch, count=1, extra=["--no-restore-surface"])
    restored = _interactive(family, data, checkpoint, documents, monkeypatch, count=1)
    expected = [restore_surface(s, doc) for s, doc in zip(plain, documents)] if family.data == "wordpiece" else plain
    assert restored == expected


def test_hub_restores_the_summaries_of_wordpiece_data(trained):
    name, family, data, save = trained
    hub = from_pretrained(str(save), "checkpoint_last.pt", data_name_or_path=str(data))
    documents = _documents(data, 3)
    plain = hub.summarize(documents, beam=2, max_len_b=6, restore_surface=False)
    restored = hub.summarize(documents, beam=2, max_len_b=6)
    expected = [restore_surface(s, doc) for s, doc in zip(plain, documents)] if family.data == "wordpiece" else plain
    assert restored == expected
    assert hub.summarize(documents, beam=2, max_len_b=6, restore_surface=True) == \
        [restore_surface(s, doc) for s, doc in zip(plain, documents)]
    off = from_pretrained(str(save), "checkpoint_last.pt", data_name_or_path=str(data), restore_surface=False)
    assert off.summarize(documents, beam=2, max_len_b=6) == plain
    with pytest.raises(TypeError, match="restore_surface must be True, False or None"):
        hub.summarize(documents, restore_surface="no")


def test_hub_names_a_missing_directory_or_checkpoint(trained, tmp_path):
    name, family, data, save = trained
    with pytest.raises(FileNotFoundError, match=rf"model directory not found: {re.escape(str(tmp_path))}/nowhere"):
        from_pretrained(str(tmp_path / "nowhere"), "checkpoint_last.pt", data_name_or_path=str(data))
    with pytest.raises(FileNotFoundError, match=r"checkpoint not found: .*checkpoint_best9\.pt \(checkpoints in "
                       r".*'checkpoint_last\.pt'"):
        from_pretrained(str(save), "checkpoint_best9.pt", data_name_or_path=str(data))
    with pytest.raises(FileNotFoundError, match=rf"data directory not found: {re.escape(str(tmp_path))}/no_data"):
        from_pretrained(str(save), "checkpoint_last.pt", data_name_or_path=str(tmp_path / "no_data"))
