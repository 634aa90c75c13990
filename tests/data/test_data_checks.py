"""Bad data is refused where it enters, with an error that names the file or the flag.

``preprocess.prepare``: an empty split, ``--vocab-size 0`` (or too small for the text), and
``--out`` below a file. The tasks, when they load a binarized split: a missing, empty,
truncated or unaligned ``.bin``/``.idx`` (fairseq 0.12.3 fails far away, or in ``forward()``
when a target ``.bin`` is missing, or with "cannot mmap an empty file").
"""

import shutil
from pathlib import Path

import pytest
import torch
from fairseq import options, tasks
from fairseq.data import indexed_dataset
from fairseq.dataclass.utils import convert_namespace_to_omegaconf

import user_dir  # noqa: F401  (registers the plugin)
from fairseq_ext.data import PrepareConfig, Report, clean_text, prepare
from fairseq_ext.data.binarized import BinarizedDataError, check_binarized
from harness import USER_DIR
from preprocess import prepare as prepare_cli

VOCAB = 300
PAIR = "source-target"


def _pair_dir(directory: Path, sizes: dict) -> Path:
    """A user corpus of ``sizes[split]`` short documents per split (0: empty files)."""
    directory.mkdir()
    for split, size in sizes.items():
        for side in ("source", "target"):
            lines = [f"{side} number {i} of the {split} split, a few words long ." for i in range(size)]
            (directory / f"{split}.{side}").write_text("".join(line + "\n" for line in lines))
    return directory


@pytest.fixture(scope="module")
def binarized(tmp_path_factory):
    """A binarized pair corpus: train 4, valid 3, test 2 documents."""
    root = tmp_path_factory.mktemp("data")
    corpus = _pair_dir(root / "corpus", {"train": 4, "valid": 3, "test": 2})
    prepare(PrepareConfig(corpus=str(corpus), out=root / "out", vocab_size=VOCAB))
    return root / "out" / "bin"


@pytest.fixture
def data(binarized, tmp_path):
    """A private copy of the binarized corpus, to damage."""
    return Path(shutil.copytree(binarized, tmp_path / "bin"))


def _load(data_dir, split="valid", task="abstractive_summarization", arch="bart_summ_tiny"):
    argv = [str(data_dir), "--user-dir", USER_DIR, "--task", task, "--arch", arch]
    cfg = convert_namespace_to_omegaconf(options.parse_args_and_arch(options.get_training_parser(), argv))
    task = tasks.setup_task(cfg.task)
    task.load_dataset(split)
    return task.dataset(split)


# ---------------------------------------------------------------- prepare


def test_prepare_refuses_an_empty_valid_split_naming_its_files(tmp_path):
    corpus = _pair_dir(tmp_path / "corpus", {"train": 4, "valid": 0, "test": 2})
    with pytest.raises(SystemExit, match=r"valid split is empty: .*valid\.source.*empty file"):
        prepare_cli.main(["--corpus", str(corpus), "--out", str(tmp_path / "out"), "--vocab-size", str(VOCAB)])
    assert not (tmp_path / "out").exists()


def test_prepare_refuses_a_split_left_empty_by_cleaning(tmp_path):
    corpus = _pair_dir(tmp_path / "corpus", {"train": 4, "valid": 2})
    (corpus / "valid.source").write_bytes(b"\x00\x01\n \t\n")  # NUL/control only: empty after cleaning
    with pytest.raises(SystemExit, match=r"valid split is empty: .*none of its 2 documents is left"):
        prepare_cli.main(["--corpus", str(corpus), "--out", str(tmp_path / "out"), "--vocab-size", str(VOCAB)])


@pytest.mark.parametrize("vocab,message", [
    ("0", r"--vocab-size must be at least 1, got 0"),
    ("-3", r"--vocab-size must be at least 1, got -3"),
    ("5", r"cannot train a 5-piece unigram model on the cleaned train\.source, train\.target: "
          r"Vocabulary size is smaller than required_chars"),
])
def test_prepare_refuses_a_vocabulary_size_it_cannot_train(tmp_path, vocab, message):
    corpus = _pair_dir(tmp_path / "corpus", {"train": 4, "valid": 2})
    with pytest.raises(SystemExit, match=message):
        prepare_cli.main(["--corpus", str(corpus), "--out", str(tmp_path / "out"), "--vocab-size", vocab])


@pytest.mark.parametrize("below", ["a_file/out", "a_file/deeper/out"])
def test_prepare_refuses_out_below_a_file(tmp_path, below):
    corpus = _pair_dir(tmp_path / "corpus", {"train": 4, "valid": 2})
    (tmp_path / "a_file").write_text("not a directory")
    out = tmp_path / below
    with pytest.raises(SystemExit, match=rf"{tmp_path / 'a_file'} is a file, not a directory"):
        prepare_cli.main(["--corpus", str(corpus), "--out", str(out), "--vocab-size", str(VOCAB)])


def test_prepare_refuses_out_that_is_a_file(tmp_path):
    corpus = _pair_dir(tmp_path / "corpus", {"train": 4, "valid": 2})
    (tmp_path / "out").write_text("not a directory")
    with pytest.raises(SystemExit, match=rf"--out {tmp_path / 'out'} is a file"):
        prepare_cli.main(["--corpus", str(corpus), "--out", str(tmp_path / "out"), "--vocab-size", str(VOCAB)])


# ---------------------------------------------------------------- binarized splits


def test_a_sound_split_loads(data):
    dataset = _load(data, "valid")
    assert len(dataset) == 3 and dataset.tgt is not None


def test_missing_target_bin_is_named_at_load(data):
    (data / f"valid.{PAIR}.target.bin").unlink()
    with pytest.raises(FileNotFoundError, match=rf"missing: .*valid\.{PAIR}\.target\.bin \(beside .*\.idx\)"):
        _load(data, "valid")


def test_missing_target_side_is_named_at_load(data):
    for suffix in ("bin", "idx"):
        (data / f"valid.{PAIR}.target.{suffix}").unlink()
    with pytest.raises(FileNotFoundError, match=rf"missing: .*valid\.{PAIR}\.target\.idx"):
        _load(data, "valid")


def test_truncated_bin_is_named_at_load(data):
    path = data / f"valid.{PAIR}.source.bin"
    path.write_bytes(path.read_bytes()[:-3])
    with pytest.raises(BinarizedDataError, match=rf"valid\.{PAIR}\.source\.bin has \d+ bytes but .*truncated"):
        _load(data, "valid")


def test_truncated_idx_is_named_at_load(data):
    path = data / f"valid.{PAIR}.target.idx"
    path.write_bytes(path.read_bytes()[:-5])
    with pytest.raises(BinarizedDataError, match=rf"valid\.{PAIR}\.target\.idx has \d+ bytes but its header"):
        _load(data, "valid")


def test_a_bin_idx_pair_from_different_binarizations_is_named(data):
    for suffix in ("bin",):  # test's tokens beside valid's index
        shutil.copyfile(data / f"test.{PAIR}.source.{suffix}", data / f"valid.{PAIR}.source.{suffix}")
    with pytest.raises(BinarizedDataError, match=rf"valid\.{PAIR}\.source\.bin has \d+ bytes but"):
        _load(data, "valid")


def test_source_and_target_with_different_counts_are_named(data):
    for suffix in ("bin", "idx"):  # test has 2 targets, valid 3 sources
        shutil.copyfile(data / f"test.{PAIR}.target.{suffix}", data / f"valid.{PAIR}.target.{suffix}")
    with pytest.raises(BinarizedDataError, match=rf"valid\.{PAIR}\.source\.idx has 3 examples but .*target\.idx has 2"):
        _load(data, "valid")


def test_an_empty_split_binarized_elsewhere_is_named(data):
    for side in ("source", "target"):  # what fairseq-preprocess writes for empty text files
        prefix = str(data / f"valid.{PAIR}.{side}")
        builder = indexed_dataset.make_builder(prefix + ".bin", "mmap", vocab_size=VOCAB)
        builder.finalize(prefix + ".idx")
    with pytest.raises(BinarizedDataError, match=rf"valid\.{PAIR}\.source\.idx holds no examples"):
        _load(data, "valid")


def test_the_cached_index_layout_is_checked_too(tmp_path):
    prefix = str(tmp_path / "lines")
    builder = indexed_dataset.make_builder(prefix + ".bin", "cached")
    for length in (3, 5, 2):
        builder.add_item(torch.arange(length, dtype=torch.int32))
    builder.finalize(prefix + ".idx")
    assert check_binarized(prefix) == 3
    Path(prefix + ".bin").write_bytes(Path(prefix + ".bin").read_bytes()[:-4])
    with pytest.raises(BinarizedDataError, match=r"lines\.bin has \d+ bytes but .*lines\.idx describes"):
        check_binarized(prefix)


def test_plain_text_tasks_check_their_split(tmp_path):
    prepare(PrepareConfig(corpus="wiki", out=tmp_path / "wiki", vocab_size=VOCAB, limit=2))
    data = tmp_path / "wiki" / "bin"
    path = data / "valid.bin"
    path.write_bytes(path.read_bytes()[:-2])
    with pytest.raises(BinarizedDataError, match=r"valid\.bin has \d+ bytes but"):
        _load(data, "valid", task="prophetnet_span_mask", arch="prophetnet_summ_tiny")


def test_lone_surrogates_are_repaired_and_counted_like_invalid_utf8():
    report = Report()
    assert clean_text("caf\udce9 au lait", "doc", report) == "caf\ufffd au lait"
    assert report.counts["invalid_utf8"] == 1 and report.locations["invalid_utf8"] == ["doc"]
    assert clean_text("plain", "doc2", report) == "plain" and report.counts["invalid_utf8"] == 1


# ---------------------------------------------------------------- index entries and spm.model (issue #22)
def _set_size(index, example, size):
    """Write ``size`` as example ``example``'s entry of an mmap ``.idx``."""
    import numpy as np

    from fairseq_ext.data.binarized import MMAP_HEADER

    raw = bytearray(index.read_bytes())
    raw[MMAP_HEADER + 4 * example: MMAP_HEADER + 4 * example + 4] = np.int32(size).tobytes()
    index.write_bytes(bytes(raw))


@pytest.mark.parametrize("example, size, message", [
    (0, -1, r"example 0 has a negative size \(-1\)"),
    (1, -(2**31), r"example 1 has a negative size"),
    (0, 2**31 - 1, r"example 1 starts at byte \d+, not \d+"),
    (2, 10**6, r"valid\.source-target\.source\.bin has \d+ bytes but"),
])
def test_idx_entries_negative_oversized_or_past_the_end_are_named(data, example, size, message):
    index = data / f"valid.{PAIR}.source.idx"
    _set_size(index, example, size)
    with pytest.raises(BinarizedDataError, match=message) as err:
        _load(data, "valid")
    assert "valid.source-target.source" in str(err.value)


@pytest.mark.parametrize("content", [b"", b"not a sentencepiece model\n", b"\x00" * 64])
def test_an_empty_or_non_model_spm_is_refused_naming_it(tmp_path, content):
    from fairseq_ext.data.spm import load_spm

    path = tmp_path / "spm.model"
    path.write_bytes(content)
    with pytest.raises(ValueError, match=rf"{path}.* (is empty|is not a sentencepiece model)"):
        load_spm(path)
