"""Model archives through fairseq's ``from_pretrained`` with the plugin loaded: every member is
checked before any is written (fairseq_ext/compat/archives.py). Crafted ``.tar.gz`` files (``..``,
absolute names, a symlink and then a write through it, hard links, devices, FIFOs) are refused
naming the archive and the member, and nothing lands outside; a good archive loads; a URL is
never fetched."""

import io
import shutil
import tarfile
from pathlib import Path

import pytest

import user_dir  # noqa: F401  (installs the fixes, as --user-dir does)
from fairseq_ext.compat.archives import UnsafeArchiveError, extract_archive


def _add(archive, name, data=b"x", kind=tarfile.REGTYPE, linkname=""):
    info = tarfile.TarInfo(name)
    info.type, info.linkname = kind, linkname
    info.size = len(data) if kind == tarfile.REGTYPE else 0
    archive.addfile(info, io.BytesIO(data) if kind == tarfile.REGTYPE else None)


def _archive(path, members):
    with tarfile.open(path, "w:gz") as archive:
        for member in members:
            _add(archive, *member)
    return path


def _crafted(outside):
    """name -> members; each would write ``outside`` (or a device) if extracted as it is."""
    return {
        "dot-dot": [("model/model.pt",), (f"model/../../{outside.parent.name}/{outside.name}", b"pwned")],
        "absolute": [("model/model.pt",), (str(outside), b"pwned")],
        "symlink-then-write": [("model/link", b"", tarfile.SYMTYPE, str(outside.parent)),
                               (f"model/link/{outside.name}", b"pwned")],
        "relative-symlink-out": [("model/link", b"", tarfile.SYMTYPE, "../../.."), ("model/link/x", b"pwned")],
        "hard-link": [("model/hard", b"", tarfile.LNKTYPE, str(outside))],
        "inside-symlink": [("model/model.pt",), ("model/alias.pt", b"", tarfile.SYMTYPE, "model.pt")],
        "character-device": [("model/dev", b"", tarfile.CHRTYPE)],
        "block-device": [("model/blk", b"", tarfile.BLKTYPE)],
        "fifo": [("model/fifo", b"", tarfile.FIFOTYPE)],
    }


@pytest.mark.parametrize("case", list(_crafted(Path("/x/y"))))
@pytest.mark.parametrize("loader", ["fairseq_hub", "load_archive_file", "extract_archive"])
def test_crafted_archive_is_refused_and_nothing_lands_outside(case, loader, tmp_path):
    from fairseq import file_utils, hub_utils

    outside = tmp_path / "outside" / "pwned.pth"
    outside.parent.mkdir()
    (tmp_path / "work" / "deep").mkdir(parents=True)
    path = _archive(tmp_path / "work" / "deep" / "evil.tar.gz", _crafted(outside)[case])
    load = {
        "fairseq_hub": lambda: hub_utils.from_pretrained(str(path), "model.pt", str(tmp_path)),
        "load_archive_file": lambda: file_utils.load_archive_file(str(path)),
        "extract_archive": lambda: extract_archive(str(path), str(tmp_path / "work" / "deep" / "out")),
    }[loader]
    with pytest.raises(UnsafeArchiveError) as err:
        load()
    assert str(path) in str(err.value)
    assert not outside.exists() and not list(outside.parent.iterdir())
    assert path.is_file()  # the archive is left where it was


def test_a_good_archive_extracts_and_is_kept(tmp_path):
    from fairseq import file_utils

    path = _archive(tmp_path / "model.tar.gz", [("model/model.pt", b"weights"), ("model/dict.txt", b"a 1\n")])
    folder = Path(file_utils.load_archive_file(str(path)))
    assert folder.name == "model" and (folder / "model.pt").read_bytes() == b"weights"
    assert path.is_file()
    shutil.rmtree(folder.parent)


def test_a_good_model_archive_loads_through_the_hub(bart_tiny_checkpoint, aclsum_bin, tmp_path):
    from fairseq import hub_utils

    path = tmp_path / "model.tar.gz"
    with tarfile.open(path, "w:gz") as archive:
        archive.add(bart_tiny_checkpoint, "model/model.pt")
    loaded = hub_utils.from_pretrained(str(path), "model.pt", str(aclsum_bin))
    assert loaded["models"]


@pytest.mark.parametrize("url", ["https://example.invalid/model.tar.gz", "s3://bucket/model.tar.gz"])
def test_a_url_is_never_fetched(url, monkeypatch):
    from fairseq import file_utils

    def no_network(*args, **kwargs):
        raise AssertionError("the network was touched")

    monkeypatch.setattr(file_utils, "get_from_cache", no_network)
    monkeypatch.setattr(file_utils, "cached_path_from_pm", no_network)
    for load in (file_utils.load_archive_file, file_utils.cached_path):
        with pytest.raises(ValueError, match="never touches the network"):
            load(url)
